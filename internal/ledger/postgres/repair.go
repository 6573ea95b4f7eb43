package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// Repair rewrites request and attempt rows whose figures are out of
// bounds, in one transaction, and returns what it changed. Such rows
// could only come from a gateway older than the writer's bounds check; one
// of them made every SUM over the ledger fail, start-up included. A
// request's impossible cost becomes its reservation (what the caller
// agreed to risk), or 0 when that is impossible too; impossible counts
// become 0. A serving attempt's impossible cost follows its request's.
//
// It reads only the requests listed in repair_pending (WriteBatch lists
// every settlement with a figure out of bounds, migration 7 listed the
// older ones), so start-up never scans the ledger for them; the daily
// aggregates counted those figures bounded already (ledger.Request.Bounded)
// and do not change.
func (s *Store) Repair(ctx context.Context) (_ []ledger.Repaired, err error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Claim the listed requests (a batch committing meanwhile lists more
	// for the next Repair; a rollback puts these back).
	prows, err := tx.Query(ctx, `DELETE FROM repair_pending RETURNING request_id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	pending, err := pgx.CollectRows(prows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	if len(pending) == 0 {
		return nil, tx.Commit(ctx)
	}
	fixes, err := sqlstore.List(ctx, querier{tx}, sqlstore.ScanRequestFix, `SELECT `+sqlstore.RequestFixColumns+` FROM requests WHERE
	request_id = ANY($1) AND (`+sqlstore.RequestOutOfBounds()+`) ORDER BY request_id COLLATE "C"`, pending)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	var done []ledger.Repaired
	for _, f := range fixes {
		done = append(done, f.Fix())
		if _, err := tx.Exec(ctx, `UPDATE requests SET input_tokens = $1, output_tokens = $2,
		cached_tokens = $3, cost_micro_usd = $4, reserved_micro_usd = $5 WHERE request_id = $6`,
			f.InputTokens, f.OutputTokens, f.CachedTokens, f.CostMicroUSD, f.ReservedMicroUSD, f.RequestID); err != nil {
			return nil, fmt.Errorf("ledger/postgres: repair %s: %w", f.RequestID, err)
		}
	}

	afixes, err := sqlstore.List(ctx, querier{tx}, sqlstore.ScanAttemptFix, `SELECT `+sqlstore.AttemptFixColumns+` FROM attempts a
	JOIN requests r ON r.request_id = a.request_id WHERE
	a.request_id = ANY($1) AND (`+sqlstore.AttemptOutOfBounds()+`)
	ORDER BY a.request_id COLLATE "C", a.seq`, pending)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	for _, f := range afixes {
		done = append(done, f.Fix())
		if _, err := tx.Exec(ctx, `UPDATE attempts SET input_tokens = $1, output_tokens = $2,
		cost_micro_usd = $3 WHERE request_id = $4 AND seq = $5`, f.InputTokens, f.OutputTokens, f.CostMicroUSD, f.RequestID, f.Seq); err != nil {
			return nil, fmt.Errorf("ledger/postgres: repair %s/%d: %w", f.RequestID, f.Seq, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: commit: %w", err)
	}
	return done, nil
}
