package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

const microsPerDay = int64(24 * time.Hour / time.Microsecond)

// dimColumn maps each usage dimension to its SQL expression. Only these
// fixed fragments ever reach the SQL text; every value is a parameter.
func dimColumn(name string) string {
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
		return "(started_at / 86400000000)" // microsPerDay
	}
	panic("ledger/postgres: unvalidated dimension") // Validate runs first
}

// The counting rules mirror ledger.Request's Succeeded, Failed and
// FailedOver methods; the conformance suite holds them together. SUM of a
// BIGINT is NUMERIC in PostgreSQL: cast back (a sum past int64 fails, as
// SQLite's does; the Writer's bounds make that impossible).
const usageAggregates = `COUNT(*),
	COUNT(*) FILTER (WHERE status = 'ok'),
	COUNT(*) FILTER (WHERE status IN ('failed', 'interrupted')),
	COUNT(*) FILTER (WHERE route_depth >= 0 AND (route_depth > 0 OR attempts > 1)),
	COALESCE(SUM(attempts), 0)::bigint,
	COALESCE(SUM(input_tokens), 0)::bigint,
	COALESCE(SUM(output_tokens), 0)::bigint,
	COALESCE(SUM(cached_tokens), 0)::bigint,
	COALESCE(SUM(cost_micro_usd), 0)::bigint`

// buildUsage turns q into parameterised SQL. The text depends only on which
// names q uses (validated against the allowlist), never on a value.
func buildUsage(q *ledger.UsageQuery) (string, []any, error) {
	if err := q.Validate(); err != nil {
		return "", nil, err
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for _, g := range q.GroupBy {
		b.WriteString(dimColumn(g))
		b.WriteString(", ")
	}
	b.WriteString(usageAggregates)
	b.WriteString("\nFROM requests WHERE true")
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if !q.From.IsZero() {
		b.WriteString(" AND started_at >= " + arg(micros(q.From)))
	}
	if !q.To.IsZero() {
		b.WriteString(" AND started_at < " + arg(micros(q.To)))
	}
	for _, name := range ledger.Dimensions() { // fixed order: stable SQL text
		v, ok := q.Filters[name]
		if !ok {
			continue
		}
		if name == ledger.DimDay {
			d, _ := ledger.ParseDay(v) // validated above
			b.WriteString(" AND started_at >= " + arg(micros(d)))
			b.WriteString(" AND started_at < " + arg(micros(d.Add(24*time.Hour))))
			continue
		}
		b.WriteString(" AND " + dimColumn(name) + " = " + arg(v))
	}
	if len(q.GroupBy) > 0 {
		b.WriteString("\nGROUP BY ")
		for i := range q.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, i+1)
		}
		// Byte order, whatever the database's collation: the order the
		// SQLite store and the reference give.
		b.WriteString("\nORDER BY ")
		for i, g := range q.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			if g == ledger.DimDay {
				fmt.Fprint(&b, i+1)
			} else {
				b.WriteString(dimColumn(g) + ` COLLATE "C"`)
			}
		}
	}
	return b.String(), args, nil
}

// Usage reports settled requests over [From, To) of their start time,
// grouped and filtered by the ledger's dimensions. Rows come ordered by the
// group values (byte order); with no GroupBy there is exactly one (total)
// row.
func (s *Store) Usage(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, error) {
	text, args, err := buildUsage(&q)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
	}
	defer rows.Close()
	var out []ledger.UsageRow
	groups := make([]any, len(q.GroupBy))
	for rows.Next() {
		var u ledger.UsageRow
		texts := make([]string, len(q.GroupBy))
		var day int64
		for i, g := range q.GroupBy {
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
			return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
		}
		u.Group = make(map[string]string, len(q.GroupBy))
		for i, g := range q.GroupBy {
			if g == ledger.DimDay {
				u.Group[g] = ledger.DayOf(time.UnixMicro(day * microsPerDay))
			} else {
				u.Group[g] = texts[i]
			}
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
	}
	return out, nil
}

// Spends sums settled cost per scope (org, team, key, and model = the public
// model), in total and for requests that finished at or after dayStart.
// Empty scope ids (no team) are left out, and so are scopes that never
// spent. One scan of the requests table, grouped by the four scope columns
// together and folded here.
func (s *Store) Spends(ctx context.Context, dayStart time.Time) ([]ledger.Spend, error) {
	rows, err := s.pool.Query(ctx, `SELECT org, team, key_id, public_model,
	SUM(cost_micro_usd)::bigint,
	COALESCE(SUM(cost_micro_usd) FILTER (WHERE finished_at >= $1), 0)::bigint
	FROM requests WHERE cost_micro_usd <> 0
	GROUP BY org, team, key_id, public_model`, micros(dayStart))
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
	}
	defer rows.Close()
	type scope struct{ kind, id string }
	sums := map[scope]*ledger.Spend{}
	for rows.Next() {
		var ids [4]string
		var total, today int64
		if err := rows.Scan(&ids[0], &ids[1], &ids[2], &ids[3], &total, &today); err != nil {
			return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
		}
		for i, kind := range [4]string{ledger.ScopeOrg, ledger.ScopeTeam, ledger.ScopeKey, ledger.ScopeModel} {
			if ids[i] == "" {
				continue
			}
			k := scope{kind, ids[i]}
			sp := sums[k]
			if sp == nil {
				sp = &ledger.Spend{Scope: kind, ID: ids[i]}
				sums[k] = sp
			}
			sp.TotalMicro += total
			sp.TodayMicro += today
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
	}
	out := make([]ledger.Spend, 0, len(sums))
	for _, sp := range sums {
		out = append(out, *sp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
