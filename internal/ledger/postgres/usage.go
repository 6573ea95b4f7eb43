package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// The usage query's text in PostgreSQL's dialect (sqlstore.UsageSQL says
// what each part yields). SUM of a BIGINT is NUMERIC in PostgreSQL: cast
// back (a sum past int64 fails, as SQLite's does).
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
	` + sqlstore.RawFigures
	usageAggregates = `COALESCE(SUM(requests), 0)::bigint, COALESCE(SUM(succeeded), 0)::bigint,
	COALESCE(SUM(failed), 0)::bigint, COALESCE(SUM(failed_over), 0)::bigint, COALESCE(SUM(attempts), 0)::bigint,
	COALESCE(SUM(input_tokens), 0)::bigint, COALESCE(SUM(output_tokens), 0)::bigint,
	COALESCE(SUM(cached_tokens), 0)::bigint, COALESCE(SUM(cost_micro_usd), 0)::bigint`
)

// usageSQL is the usage query in PostgreSQL's dialect.
func usageSQL() *sqlstore.UsageSQL {
	return &sqlstore.UsageSQL{Store: "ledger/postgres", Daily: usageDailyBranch, Raw: usageRawBranch,
		Sums: usageAggregates, Param: sqlstore.Dollar,
		// Byte order, whatever the database's collation: the order the
		// SQLite store and the reference give.
		Collate: `COLLATE "C"`,
	}
}

// Usage reports settled requests over [From, To) of their start time,
// grouped and filtered by the ledger's dimensions. Rows come ordered by the
// group values (byte order); with no GroupBy there is exactly one (total)
// row. Whole UTC days are read from the daily aggregates (never pruned),
// the partial days at either end of the range from request rows; a
// partial day the retention has pruned is refused with a
// *ledger.PrunedError.
func (s *Store) Usage(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	// One snapshot for the pruning horizon and the rows it guards.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: usage: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return usageSQL().Usage(ctx, querier{tx}, &q, micros(s.now()))
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
	ledger.SortSpends(out)
	return out, nil
}
