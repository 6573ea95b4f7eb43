package sqlite

import (
	"context"
	"fmt"

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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	fixes, err := sqlstore.List(ctx, reader{tx}, sqlstore.ScanRequestFix, `SELECT `+sqlstore.RequestFixColumns+` FROM requests WHERE
	request_id IN (SELECT request_id FROM repair_pending) AND (`+sqlstore.RequestOutOfBounds()+`) ORDER BY request_id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	var done []ledger.Repaired
	for _, f := range fixes {
		done = append(done, f.Fix())
		if _, err := tx.ExecContext(ctx, `UPDATE requests SET input_tokens = ?, output_tokens = ?,
		cached_tokens = ?, cost_micro_usd = ?, reserved_micro_usd = ? WHERE request_id = ?`,
			f.InputTokens, f.OutputTokens, f.CachedTokens, f.CostMicroUSD, f.ReservedMicroUSD, f.RequestID); err != nil {
			return nil, fmt.Errorf("ledger/sqlite: repair %s: %w", f.RequestID, err)
		}
	}

	afixes, err := sqlstore.List(ctx, reader{tx}, sqlstore.ScanAttemptFix, `SELECT `+sqlstore.AttemptFixColumns+` FROM attempts a
	JOIN requests r ON r.request_id = a.request_id WHERE
	a.request_id IN (SELECT request_id FROM repair_pending) AND (`+sqlstore.AttemptOutOfBounds()+`)
	ORDER BY a.request_id, a.seq`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	for _, f := range afixes {
		done = append(done, f.Fix())
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET input_tokens = ?, output_tokens = ?,
		cost_micro_usd = ? WHERE request_id = ? AND seq = ?`, f.InputTokens, f.OutputTokens, f.CostMicroUSD, f.RequestID, f.Seq); err != nil {
			return nil, fmt.Errorf("ledger/sqlite: repair %s/%d: %w", f.RequestID, f.Seq, err)
		}
	}
	// The transaction holds the write lock: no batch listed more meanwhile.
	if _, err := tx.ExecContext(ctx, `DELETE FROM repair_pending`); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: commit: %w", err)
	}
	return done, nil
}
