package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
)

const microsPerDay = int64(24 * time.Hour / time.Microsecond)

// dimColumn maps each usage dimension to its column in the union of
// usage_daily and request rows that buildUsage reads. Only these fixed
// fragments ever reach the SQL text; every value is a parameter.
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
		return "day" // started_at / 86400000000 (ledger.DayNumber)
	}
	panic("ledger/postgres: unvalidated dimension") // Validate runs first
}

// Both branches of a usage query yield these columns: usage_daily's rows
// as they are, request rows counted one each by the rules of
// ledger.Request's Succeeded, Failed and FailedOver methods, figures
// bounded as ledger.Request.Bounded says (the conformance suite holds
// them together). SUM of a BIGINT is NUMERIC in PostgreSQL: cast back (a
// sum past int64 fails, as SQLite's does).
const (
	usageDailyBranch = `SELECT day, org, team, key_id, public_model, deployment, requests, succeeded,
	failed, failed_over, attempts, input_tokens, output_tokens, cached_tokens, cost_micro_usd
	FROM usage_daily WHERE true`
	// usageRawBranch's measures carry a sign marker: "" to count the
	// rows, "-" to subtract them (see ledger.UsagePlan.Less).
	usageRawBranch = `SELECT started_at / 86400000000 AS day, org, team, key_id, public_model, deployment,
	±1::bigint AS requests, ±(status = 'ok')::int::bigint AS succeeded,
	±(status IN ('failed', 'interrupted'))::int::bigint AS failed,
	±(route_depth >= 0 AND (route_depth > 0 OR attempts > 1))::int::bigint AS failed_over, ±attempts::bigint AS attempts,
	±(CASE WHEN input_tokens BETWEEN 0 AND 100000000 THEN input_tokens ELSE 0 END) AS input_tokens,
	±(CASE WHEN output_tokens BETWEEN 0 AND 100000000 THEN output_tokens ELSE 0 END) AS output_tokens,
	±(CASE WHEN cached_tokens BETWEEN 0 AND 100000000 THEN cached_tokens ELSE 0 END) AS cached_tokens,
	±(CASE WHEN cost_micro_usd BETWEEN 0 AND 10000000000000 THEN cost_micro_usd
		WHEN reserved_micro_usd BETWEEN 0 AND 10000000000000 THEN reserved_micro_usd ELSE 0 END) AS cost_micro_usd
	FROM requests WHERE started_at >= `
	usageAggregates = `COALESCE(SUM(requests), 0)::bigint, COALESCE(SUM(succeeded), 0)::bigint,
	COALESCE(SUM(failed), 0)::bigint, COALESCE(SUM(failed_over), 0)::bigint, COALESCE(SUM(attempts), 0)::bigint,
	COALESCE(SUM(input_tokens), 0)::bigint, COALESCE(SUM(output_tokens), 0)::bigint,
	COALESCE(SUM(cached_tokens), 0)::bigint, COALESCE(SUM(cost_micro_usd), 0)::bigint`
)

// buildUsage turns q, planned as p, into parameterised SQL: whole days
// from usage_daily, partial days from request rows. The text depends only
// on which names q uses (validated against the allowlist) and on p's
// shape, never on a value.
func buildUsage(q *ledger.UsageQuery, p *ledger.UsagePlan) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	filters := func() {
		for _, name := range ledger.Dimensions() { // fixed order: stable SQL text
			v, ok := q.Filters[name]
			if !ok || name == ledger.DimDay { // the day is in the plan's range
				continue
			}
			b.WriteString(" AND " + dimColumn(name) + " = " + arg(v))
		}
	}
	b.WriteString("SELECT ")
	for _, g := range q.GroupBy {
		b.WriteString(dimColumn(g))
		b.WriteString(", ")
	}
	b.WriteString(usageAggregates)
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
		b.WriteString(usageDailyBranch)
		if p.HasFromDay {
			b.WriteString(" AND day >= " + arg(p.FromDay))
		}
		if p.HasToDay {
			b.WriteString(" AND day < " + arg(p.ToDay))
		}
		filters()
	}
	for _, d := range p.Days {
		next()
		b.WriteString(usageDailyBranch + " AND day = " + arg(d))
		filters()
	}
	for i, spans := range [2][]ledger.RawSpan{p.Raw, p.Less} {
		sign := []string{"", "-"}[i]
		for _, r := range spans {
			next()
			b.WriteString(strings.ReplaceAll(usageRawBranch, "±", sign) + arg(r.Lo) + " AND started_at < " + arg(r.Hi))
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
	return b.String(), args
}

// Usage reports settled requests over [From, To) of their start time,
// grouped and filtered by the ledger's dimensions. Rows come ordered by the
// group values (byte order); with no GroupBy there is exactly one (total)
// row. Whole UTC days are read from the daily aggregates (never pruned),
// the partial days at either end of the range from request rows; a
// partial day the retention has pruned is refused with a
// *ledger.PrunedError.
func (s *Store) Usage(ctx context.Context, q ledger.UsageQuery) (_ []ledger.UsageRow, err error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	// One snapshot for the pruning horizon and the rows it guards.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	kept, err := rawKeptFrom(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
	}
	plan, err := ledger.PlanUsage(&q, kept, micros(s.now()))
	if err != nil {
		return nil, err
	}
	text, args := buildUsage(&q, &plan)
	rows, err := tx.Query(ctx, text, args...)
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

// Spends returns settled cost per scope (org, team, key, and model = the
// public model): in total, from spend_totals, and for requests that
// finished on or after dayStart's UTC day (dayStart is truncated to its
// day), from that day's usage_daily rows; one statement, one snapshot.
// Empty scope ids (no team) are left out, and so are scopes that never
// spent. It reads a few rows per scope, however long the ledger's history:
// start-up calls it.
func (s *Store) Spends(ctx context.Context, dayStart time.Time) ([]ledger.Spend, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.scope, t.id, t.total_micro_usd, COALESCE(d.today, 0)::bigint
	FROM spend_totals AS t LEFT JOIN (
		SELECT s.scope, s.id, SUM(u.cost_micro_usd) AS today FROM usage_daily AS u
		CROSS JOIN LATERAL (VALUES ('org', u.org), ('team', u.team), ('key', u.key_id), ('model', u.public_model)) AS s (scope, id)
		WHERE u.finished_day >= $1 AND u.cost_micro_usd <> 0 GROUP BY 1, 2
	) AS d ON d.scope = t.scope AND d.id = t.id`, ledger.DayNumber(micros(dayStart.UTC().Truncate(24*time.Hour))))
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
	}
	defer rows.Close()
	var out []ledger.Spend
	for rows.Next() {
		var sp ledger.Spend
		if err := rows.Scan(&sp.Scope, &sp.ID, &sp.TotalMicro, &sp.TodayMicro); err != nil {
			return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: spends: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// metaRawKeptFrom names ledger_meta's row holding the first stored micro
// whose raw rows are complete (absent: nothing pruned).
const metaRawKeptFrom = "raw_kept_from"

// rawKeptFrom reads the first stored micro whose raw rows are complete:
// math.MinInt64 when nothing was ever pruned.
func rawKeptFrom(ctx context.Context, tx pgx.Tx) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `SELECT value FROM ledger_meta WHERE name = $1`, metaRawKeptFrom).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return math.MinInt64, nil
	}
	return v, err
}
