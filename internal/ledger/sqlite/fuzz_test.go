package sqlite

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// FuzzUsage holds the usage query builder to its promise: the SQL text
// depends only on which allowlisted names a query uses and on its plan's
// shape (whole days, partial days), never on a value, and every query
// either runs or fails with ErrInvalidQuery.
func FuzzUsage(f *testing.F) {
	f.Add("org,day", "key", "key_1", "2026-03-01", int64(0), int64(0))
	f.Add("model,deployment", "org", "x'); DROP TABLE requests; --", "", int64(1), int64(1<<60))
	f.Add("team", "team", "", "1999-12-31", int64(-5), int64(5))
	f.Add("prompt", "content", "?", "2026-02-30", int64(9), int64(1))
	s := openTemp(f)
	ctx := context.Background()
	r, st := crashSettlement("r1", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err := s.WriteBatch(ctx, &ledger.Batch{Reservations: []ledger.Reservation{r}, Settlements: []ledger.Settlement{*st}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, groups, name, value, day string, from, to int64) {
		q := ledger.UsageQuery{Filters: map[string]string{name: value}}
		if day != "" {
			q.Filters[ledger.DimDay] = day
		}
		if groups != "" {
			q.GroupBy = strings.Split(groups, ",")
		}
		if from != 0 {
			q.From = time.UnixMicro(from)
		}
		if to != 0 {
			q.To = time.UnixMicro(to)
		}
		err := q.Validate()
		var plan ledger.UsagePlan
		if err == nil {
			plan, err = ledger.PlanUsage(&q, math.MinInt64, time.Now().UnixMicro())
		}
		if err != nil {
			if !errors.Is(err, ledger.ErrInvalidQuery) {
				t.Fatalf("Validate/PlanUsage error %v is not ErrInvalidQuery", err)
			}
			if _, err := s.Usage(ctx, q); !errors.Is(err, ledger.ErrInvalidQuery) {
				t.Fatalf("Usage = %v, want ErrInvalidQuery", err)
			}
			return
		}
		text, args := usageSQL().BuildUsage(&q, &plan)
		// The same names with other values give the same SQL text.
		other := ledger.UsageQuery{GroupBy: q.GroupBy, Filters: map[string]string{}}
		for k, v := range q.Filters {
			if k == ledger.DimDay {
				other.Filters[k] = "2000-01-01"
			} else {
				other.Filters[k] = v + "~other"
			}
		}
		text2, args2 := usageSQL().BuildUsage(&other, &plan)
		if text2 != text || len(args2) != len(args) {
			t.Fatalf("SQL depends on values:\n%s\n%s", text, text2)
		}
		rows, err := s.Usage(ctx, q)
		if err != nil {
			t.Fatalf("Usage(%+v): %v", q, err)
		}
		if len(q.GroupBy) == 0 && len(rows) != 1 {
			t.Fatalf("no group-by gave %d rows", len(rows))
		}
		var n int64
		for _, row := range rows {
			n += row.Requests
		}
		if n > 1 {
			t.Fatalf("%d requests counted out of 1", n)
		}
	})
}
