package ledger

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ParamError is a usage query's parameter that cannot be read: Param names
// it (from, to, group_by) for the caller. It wraps ErrInvalidQuery.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Msg }

// Unwrap makes a ParamError an ErrInvalidQuery.
func (e *ParamError) Unwrap() error { return ErrInvalidQuery }

func paramErr(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// ParseUsageQuery reads a usage report's parameters, as the admin API and
// the CLI take them: from and to (RFC 3339 or YYYY-MM-DD; by default from
// the UTC midnight 30 days ago up to now), group_by (comma-separated dimensions) and the
// filters org, team, key, model and deployment. A parameter that cannot be
// read is a *ParamError.
func ParseUsageQuery(v map[string][]string, now time.Time) (UsageQuery, error) {
	get := func(k string) string {
		if vs := v[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	q := UsageQuery{Filters: map[string]string{}}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		s := get(f.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, s); err != nil {
				return q, paramErr(f.name, "%s must be RFC 3339 or YYYY-MM-DD", f.name)
			}
		}
		*f.dst = t
	}
	// Defaults a reader expects: up to now, from the UTC midnight 30 days
	// before the end: whole days, which the daily aggregates answer
	// however old (ledger.retention prunes only request rows).
	if q.To.IsZero() {
		q.To = now.UTC()
	}
	if q.From.IsZero() {
		q.From = q.To.UTC().AddDate(0, 0, -30).Truncate(24 * time.Hour)
	}
	if !q.From.Before(q.To) {
		return q, paramErr("from", "from (%s) must be before to (%s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	if g := get("group_by"); g != "" {
		for _, name := range strings.Split(g, ",") {
			switch name = strings.TrimSpace(name); name {
			case DimOrg, DimTeam, DimKey, DimModel, DimDeployment, DimDay:
				q.GroupBy = append(q.GroupBy, name)
			default:
				return q, paramErr("group_by", "cannot group by %q (org, team, key, model, deployment, day)", name)
			}
		}
	}
	for _, f := range []string{DimOrg, DimTeam, DimKey, DimModel, DimDeployment} {
		if val := get(f); val != "" {
			q.Filters[f] = val
		}
	}
	return q, nil
}

// WriteUsageCSV writes a usage report as CSV: the group's columns, then the
// counts, then the cost in dollars.
func WriteUsageCSV(w io.Writer, groupBy []string, rows []UsageRow) error {
	cw := csv.NewWriter(w)
	head := append(append([]string{}, groupBy...), "requests", "succeeded", "failed", "failed_over", "attempts", "input_tokens", "output_tokens", "cached_tokens", "cost_usd")
	_ = cw.Write(head)
	for _, r := range rows {
		rec := make([]string, 0, len(head))
		for _, g := range groupBy {
			rec = append(rec, r.Group[g])
		}
		for _, n := range []int64{r.Requests, r.Succeeded, r.Failed, r.FailedOver, r.Attempts, r.InputTokens, r.OutputTokens, r.CachedTokens} {
			rec = append(rec, strconv.FormatInt(n, 10))
		}
		rec = append(rec, FormatUSD(r.CostMicroUSD))
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// SortUsage orders rows by cost, dearest first; ties keep their order.
func SortUsage(rows []UsageRow) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].CostMicroUSD > rows[j].CostMicroUSD })
}

// SortSpends orders spends by scope kind, then id: the order every
// Store.Spends returns.
func SortSpends(s []Spend) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Scope != s[j].Scope {
			return s[i].Scope < s[j].Scope
		}
		return s[i].ID < s[j].ID
	})
}

// FormatUSD writes micro-dollars as a decimal dollar amount with six
// places ("0.000123", "-1.500000").
func FormatUSD(micro int64) string {
	neg := micro < 0
	if neg {
		micro = -micro
	}
	frac := strconv.FormatInt(micro%1_000_000, 10)
	s := strconv.FormatInt(micro/1_000_000, 10) + "." + strings.Repeat("0", 6-len(frac)) + frac
	if neg {
		s = "-" + s
	}
	return s
}
