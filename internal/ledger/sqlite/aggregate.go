package sqlite

import (
	"context"
	"database/sql"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// The daily aggregates and spend totals (migration 7), added to in the
// settling transaction from the settlements it inserted.
const (
	sqlAddDaily = `INSERT INTO usage_daily
	(day, finished_day, org, team, key_id, public_model, deployment, requests, succeeded, failed,
	 failed_over, attempts, input_tokens, output_tokens, cached_tokens, cost_micro_usd)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (day, finished_day, org, team, key_id, public_model, deployment) DO UPDATE SET
	requests = requests + excluded.requests, succeeded = succeeded + excluded.succeeded,
	failed = failed + excluded.failed, failed_over = failed_over + excluded.failed_over,
	attempts = attempts + excluded.attempts, input_tokens = input_tokens + excluded.input_tokens,
	output_tokens = output_tokens + excluded.output_tokens, cached_tokens = cached_tokens + excluded.cached_tokens,
	cost_micro_usd = cost_micro_usd + excluded.cost_micro_usd`

	sqlAddSpend = `INSERT INTO spend_totals (scope, id, total_micro_usd) VALUES (?, ?, ?)
	ON CONFLICT (scope, id) DO UPDATE SET total_micro_usd = total_micro_usd + excluded.total_micro_usd`

	sqlAddRepair = `INSERT INTO repair_pending (request_id) VALUES (?) ON CONFLICT (request_id) DO NOTHING`
)

// writeAggregates adds agg to the aggregate tables inside tx: one
// statement per distinct group (a batch of thousands of settlements from a
// handful of keys and models is a handful of rows).
func (s *Store) writeAggregates(ctx context.Context, tx *sql.Tx, agg *ledger.Aggregates) error {
	if len(agg.Days) > 0 {
		st := tx.StmtContext(ctx, s.insDaily)
		for _, g := range agg.SortedDays() {
			t := agg.Days[g]
			if _, err := st.ExecContext(ctx, g.Day, g.FinishedDay, g.Org, g.Team, g.KeyID, g.PublicModel, g.Deployment,
				t.Requests, t.Succeeded, t.Failed, t.FailedOver, t.Attempts, t.InputTokens, t.OutputTokens,
				t.CachedTokens, t.CostMicroUSD); err != nil {
				return classify("usage_daily", err)
			}
		}
	}
	if len(agg.Spend) > 0 {
		st := tx.StmtContext(ctx, s.insSpend)
		for _, sc := range agg.SortedSpend() {
			if _, err := st.ExecContext(ctx, sc.Scope, sc.ID, agg.Spend[sc]); err != nil {
				return classify("spend_totals", err)
			}
		}
	}
	if len(agg.Repair) > 0 {
		st := tx.StmtContext(ctx, s.insRepair)
		for _, id := range agg.Repair {
			if _, err := st.ExecContext(ctx, id); err != nil {
				return classify("repair_pending", err)
			}
		}
	}
	return nil
}
