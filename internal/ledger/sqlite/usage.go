package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// The usage query's text in SQLite's dialect (sqlstore.UsageSQL says what
// each part yields).
const (
	usageDailyBranch = `SELECT day, org, team, key_id, public_model, deployment, requests, succeeded,
	failed, failed_over, attempts, input_tokens, output_tokens, cached_tokens, cost_micro_usd
	FROM usage_daily WHERE 1 = 1`
	// usageRawBranch's measures carry a sign marker: "" to count the
	// rows, "-" to subtract them (see ledger.UsagePlan.Less).
	usageRawBranch = `SELECT started_at / 86400000000 AS day, org, team, key_id, public_model, deployment,
	±1 AS requests, ±(status = 'ok') AS succeeded, ±(status IN ('failed', 'interrupted')) AS failed,
	±(route_depth >= 0 AND (route_depth > 0 OR attempts > 1)) AS failed_over, ±attempts AS attempts,
	` + sqlstore.RawFigures
	usageAggregates = `COALESCE(SUM(requests), 0), COALESCE(SUM(succeeded), 0), COALESCE(SUM(failed), 0),
	COALESCE(SUM(failed_over), 0), COALESCE(SUM(attempts), 0), COALESCE(SUM(input_tokens), 0),
	COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(cost_micro_usd), 0)`
)

// usageSQL is the usage query in SQLite's dialect.
func usageSQL() *sqlstore.UsageSQL {
	return &sqlstore.UsageSQL{Store: "ledger/sqlite", Daily: usageDailyBranch, Raw: usageRawBranch,
		Sums: usageAggregates, Param: sqlstore.Question}
}

// Usage reports settled requests over [From, To) of their start time,
// grouped and filtered by the ledger's dimensions. Rows come ordered by the
// group values; with no GroupBy there is exactly one (total) row.
// Succeeded, Failed and FailedOver count as ledger.Request's methods of the
// same names say. Whole UTC days are read from the daily aggregates
// (however old: they are never pruned), the partial days at either end of
// the range from request rows; a partial day the retention has pruned is
// refused with a *ledger.PrunedError.
func (s *Store) Usage(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	// One read transaction: the pruning horizon and the rows it guards
	// are read from the same snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: usage: %w", err)
	}
	defer tx.Rollback()
	return usageSQL().Usage(ctx, reader{tx}, &q, micros(s.now()))
}

// Spends returns settled cost per scope (org, team, key, and model = the
// public model): in total, from spend_totals, and for requests that
// finished on or after dayStart's UTC day (dayStart is truncated to its
// day), from that day's usage_daily rows. Empty scope ids (no team) are
// left out, and so are scopes that never spent. It reads a few rows per
// scope, however long the ledger's history: start-up calls it.
func (s *Store) Spends(ctx context.Context, dayStart time.Time) (_ []ledger.Spend, err error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
	}
	defer tx.Rollback()
	type scope struct{ kind, id string }
	sums := map[scope]*ledger.Spend{}
	rows, err := tx.QueryContext(ctx, `SELECT scope, id, total_micro_usd FROM spend_totals`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
	}
	for rows.Next() {
		sp := &ledger.Spend{}
		if err := rows.Scan(&sp.Scope, &sp.ID, &sp.TotalMicro); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
		}
		sums[scope{sp.Scope, sp.ID}] = sp
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
	}
	rows, err = tx.QueryContext(ctx, `SELECT org, team, key_id, public_model, SUM(cost_micro_usd)
	FROM usage_daily WHERE finished_day >= ? AND cost_micro_usd <> 0
	GROUP BY org, team, key_id, public_model`, ledger.DayNumber(micros(dayStart.UTC().Truncate(24*time.Hour))))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ids [4]string
		var today int64
		if err := rows.Scan(&ids[0], &ids[1], &ids[2], &ids[3], &today); err != nil {
			return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
		}
		for i, kind := range [4]string{ledger.ScopeOrg, ledger.ScopeTeam, ledger.ScopeKey, ledger.ScopeModel} {
			if sp := sums[scope{kind, ids[i]}]; sp != nil {
				sp.TodayMicro += today
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: spends: %w", err)
	}
	out := make([]ledger.Spend, 0, len(sums))
	for _, sp := range sums {
		out = append(out, *sp)
	}
	ledger.SortSpends(out)
	return out, nil
}
