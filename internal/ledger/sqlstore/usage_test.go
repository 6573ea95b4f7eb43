package sqlstore

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// TestBuildUsagePlaceholders: every value is a parameter, numbered in
// order for PostgreSQL, and only the dialect's collation differs.
func TestBuildUsagePlaceholders(t *testing.T) {
	q := ledger.UsageQuery{GroupBy: []string{ledger.DimModel, ledger.DimDay}, Filters: map[string]string{ledger.DimOrg: "o'; --"}}
	p := ledger.UsagePlan{Aggregates: true, HasFromDay: true, FromDay: 3, Raw: []ledger.RawSpan{{Lo: 1, Hi: 2}}}
	pg := UsageSQL{Daily: "D WHERE true", Raw: "R ±x FROM requests WHERE started_at >= ", Sums: "S", Param: Dollar, Collate: `COLLATE "C"`}
	text, args := pg.BuildUsage(&q, &p)
	want := `SELECT public_model, day, S
FROM (D WHERE true AND day >= $1 AND org = $2
UNION ALL
R x FROM requests WHERE started_at >= $3 AND started_at < $4 AND org = $5) AS u
GROUP BY 1, 2
ORDER BY public_model COLLATE "C", 2`
	if text != want || len(args) != 5 || args[1] != "o'; --" {
		t.Errorf("PostgreSQL:\n%s\nargs %v", text, args)
	}
	lite := pg
	lite.Param, lite.Collate = Question, ""
	text, _ = lite.BuildUsage(&q, &p)
	if strings.Contains(text, "$") || !strings.HasSuffix(text, "ORDER BY 1, 2") {
		t.Errorf("SQLite:\n%s", text)
	}
}
