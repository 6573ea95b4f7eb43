package sqlstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// DimColumn maps each usage dimension to its column in the union of
// usage_daily and request rows that BuildUsage reads. Only these fixed
// fragments ever reach the SQL text; every value is a parameter.
func DimColumn(name string) string {
	switch name {
	case ledger.DimOrg:
		return "org"
	case ledger.DimTeam:
		return "team"
	case ledger.DimKey:
		return "key_id"
	case ledger.DimModel:
		return "public_model"
	case ledger.DimDeployment:
		return "deployment"
	case ledger.DimDay:
		return "day" // started_at / 86400000000 (ledger.DayNumber)
	}
	panic("ledger/sqlstore: unvalidated dimension") // Validate runs first
}

// MetaRawKeptFrom names ledger_meta's row holding the first stored micro
// whose raw rows are complete (absent: nothing pruned); Prune raises it.
const MetaRawKeptFrom = "raw_kept_from"

// RawFigures ends every dialect's UsageSQL.Raw: request rows' figures,
// each after the sign marker, bounded as ledger.Request.Bounded says (the
// literals are ledger.MaxTokens and ledger.MaxCostMicro), then the
// span's start.
const RawFigures = `±(CASE WHEN input_tokens BETWEEN 0 AND 100000000 THEN input_tokens ELSE 0 END) AS input_tokens,
	±(CASE WHEN output_tokens BETWEEN 0 AND 100000000 THEN output_tokens ELSE 0 END) AS output_tokens,
	±(CASE WHEN cached_tokens BETWEEN 0 AND 100000000 THEN cached_tokens ELSE 0 END) AS cached_tokens,
	±(CASE WHEN cost_micro_usd BETWEEN 0 AND 10000000000000 THEN cost_micro_usd
		WHEN reserved_micro_usd BETWEEN 0 AND 10000000000000 THEN reserved_micro_usd ELSE 0 END) AS cost_micro_usd
	FROM requests WHERE started_at >= `

// UsageSQL is one dialect's text for a usage query. Both branches yield
// the same columns: usage_daily's rows as they are, request rows counted
// one each by the rules of ledger.Request's Succeeded, Failed and
// FailedOver methods, figures bounded as ledger.Request.Bounded says (the
// conformance suite holds them together).
type UsageSQL struct {
	// Store names the store in errors ("ledger/sqlite").
	Store string
	// Daily selects usage_daily's columns and ends in a WHERE clause that
	// holds (conditions follow as " AND ...").
	Daily string
	// Raw selects request rows as Daily's columns, each measure prefixed
	// by the sign marker ± ("" counts the rows, "-" subtracts them: see
	// ledger.UsagePlan.Less), and ends in "WHERE started_at >= " (the
	// span's bounds follow).
	Raw string
	// Sums are the outer query's nine measures, summed over the union.
	Sums string
	// Param is the placeholder of the n-th argument (from 1).
	Param func(n int) string
	// Collate, when set, follows each text group column in ORDER BY, so
	// rows come in byte order whatever the database's collation. Empty:
	// groups are ordered by position (the column's own order is byte
	// order already).
	Collate string
}

// Usage answers q, validated, through r: a read transaction, so that the
// pruning horizon and the rows it guards come from one snapshot. now
// (micros) ends a range open at the top. A query the plan refuses fails
// as ledger.PlanUsage says (a *ledger.PrunedError for pruned rows).
func (d *UsageSQL) Usage(ctx context.Context, r Querier, q *ledger.UsageQuery, now int64) ([]ledger.UsageRow, error) {
	kept, err := List(ctx, r, ScanInt64, `SELECT value FROM ledger_meta WHERE name = `+d.Param(1), MetaRawKeptFrom)
	if err != nil {
		return nil, fmt.Errorf("%s: usage: %w", d.Store, err)
	}
	from := int64(math.MinInt64) // nothing was ever pruned
	if len(kept) > 0 {
		from = kept[0]
	}
	plan, err := ledger.PlanUsage(q, from, now)
	if err != nil {
		return nil, err
	}
	text, args := d.BuildUsage(q, &plan)
	rows, err := r.Query(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: usage: %w", d.Store, err)
	}
	defer rows.Close()
	out, err := scanUsage(rows, q.GroupBy)
	if err != nil {
		return nil, fmt.Errorf("%s: usage: %w", d.Store, err)
	}
	return out, nil
}

// BuildUsage turns q, planned as p, into parameterised SQL: whole days
// from usage_daily, partial days from request rows. The text depends only
// on which names q uses (validated against the allowlist) and on p's
// shape, never on a value.
func (d *UsageSQL) BuildUsage(q *ledger.UsageQuery, p *ledger.UsagePlan) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	filters := func() {
		for _, name := range ledger.Dimensions() { // fixed order: stable SQL text
			v, ok := q.Filters[name]
			if !ok || name == ledger.DimDay { // the day is in the plan's range
				continue
			}
			b.WriteString(" AND " + DimColumn(name) + " = " + arg(v))
		}
	}
	b.WriteString("SELECT ")
	for _, g := range q.GroupBy {
		b.WriteString(DimColumn(g))
		b.WriteString(", ")
	}
	b.WriteString(d.Sums)
	b.WriteString("\nFROM (")
	branches := 0
	next := func() {
		if branches > 0 {
			b.WriteString("\nUNION ALL\n")
		}
		branches++
	}
	if p.Aggregates {
		next()
		b.WriteString(d.Daily)
		if p.HasFromDay {
			b.WriteString(" AND day >= " + arg(p.FromDay))
		}
		if p.HasToDay {
			b.WriteString(" AND day < " + arg(p.ToDay))
		}
		filters()
	}
	for _, day := range p.Days {
		next()
		b.WriteString(d.Daily + " AND day = " + arg(day))
		filters()
	}
	for i, spans := range [2][]ledger.RawSpan{p.Raw, p.Less} {
		sign := []string{"", "-"}[i]
		for _, r := range spans {
			next()
			b.WriteString(strings.ReplaceAll(d.Raw, "±", sign) + arg(r.Lo) + " AND started_at < " + arg(r.Hi))
			filters()
		}
	}
	b.WriteString(") AS u")
	if len(q.GroupBy) > 0 {
		b.WriteString("\nGROUP BY ")
		for i := range q.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, i+1)
		}
		if len(p.Less) > 0 {
			// A group whose rows were all subtracted is not in the range.
			b.WriteString("\nHAVING SUM(requests) <> 0")
		}
		b.WriteString("\nORDER BY ")
		for i, g := range q.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			if g == ledger.DimDay || d.Collate == "" {
				fmt.Fprint(&b, i+1)
			} else {
				b.WriteString(DimColumn(g) + " " + d.Collate)
			}
		}
	}
	return b.String(), args
}

// scanUsage reads the rows of a query BuildUsage wrote for groupBy: the
// group columns (the day as its day number), then the nine measures.
func scanUsage(rows Rows, groupBy []string) ([]ledger.UsageRow, error) {
	var out []ledger.UsageRow
	groups := make([]any, len(groupBy))
	for rows.Next() {
		var u ledger.UsageRow
		texts := make([]string, len(groupBy))
		var day int64
		for i, g := range groupBy {
			if g == ledger.DimDay {
				groups[i] = &day
			} else {
				groups[i] = &texts[i]
			}
		}
		dst := append(groups[:len(groups):len(groups)],
			&u.Requests, &u.Succeeded, &u.Failed, &u.FailedOver, &u.Attempts,
			&u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.CostMicroUSD)
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		u.Group = make(map[string]string, len(groupBy))
		for i, g := range groupBy {
			if g == ledger.DimDay {
				u.Group[g] = ledger.DayOf(time.UnixMicro(day * ledger.MicrosPerDay))
			} else {
				u.Group[g] = texts[i]
			}
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
