package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

const (
	sqlInsertReservation = `INSERT INTO reservations
	(request_id, key_id, org, team, public_model, amount_micro, created_at, owner)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (request_id) DO NOTHING`

	sqlInsertRequest = `INSERT INTO requests
	(request_id, org, team, key_id, public_model, exact_model, deployment,
	 route_depth, attempts, status, failure_class, input_tokens, output_tokens,
	 cached_tokens, cost_micro_usd, cost_status, reserved_micro_usd, streamed,
	 first_token_ms, latency_ms, started_at, finished_at, exercise)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (request_id) DO NOTHING`

	sqlInsertAttempt = `INSERT INTO attempts
	(request_id, seq, deployment, failure_class, http_status, input_tokens,
	 output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// sqlCloseReservations closes, once per batch, every open reservation
	// whose request is settled: those of the batch's settlements, and a
	// reservation that reached the store after its settlement (the
	// journal's replay or ingestion order never needs that, but the store
	// does not rely on it). The loop runs over the open reservations only
	// (the reservations_open partial index): a handful, requests in flight,
	// instead of one statement per settlement. ?1 is now, ?2 the stored
	// value of a zero FinishedAt.
	sqlCloseReservations = `UPDATE reservations SET settled_at = (
		SELECT CASE WHEN r.finished_at = ?2 THEN ?1 ELSE r.finished_at END
		FROM requests AS r WHERE r.request_id = reservations.request_id)
	WHERE settled_at IS NULL AND released_at IS NULL
	AND EXISTS (SELECT 1 FROM requests AS r WHERE r.request_id = reservations.request_id)`
)

// WriteBatch writes b in one transaction: reservations first (a repeated
// reservation is ignored), then each settlement's request row and its
// attempt rows, then the closing of every open reservation whose request
// is settled (whichever batch brought either). A settlement whose request
// id is already settled is skipped whole, attempts included. Attempt rows are
// keyed by the settlement's request id (Attempt.RequestID is not read).
// A constraint violation fails the whole batch with ledger.ErrRejected.
// b is not retained.
func (s *Store) WriteBatch(ctx context.Context, b *ledger.Batch) (err error) {
	s.rewindWAL(ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger/sqlite: begin: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	// The transaction ends with ctx (database/sql rolls it back between
	// two statements); its statements run without ctx's Done channel,
	// which would cost the driver a watcher goroutine per statement.
	ctx = context.WithoutCancel(ctx)
	if len(b.Reservations) > 0 {
		st := tx.StmtContext(ctx, s.insReservation)
		for i := range b.Reservations {
			r := &b.Reservations[i]
			if _, err := st.ExecContext(ctx, r.RequestID, r.KeyID, r.Org, r.Team,
				r.PublicModel, r.AmountMicro, micros(r.CreatedAt), b.Owner); err != nil {
				return classify("reservation", err)
			}
		}
	}
	if len(b.Settlements) > 0 {
		if err := s.settleAll(ctx, tx, b.Settlements); err != nil {
			return err
		}
	}
	if len(b.Reservations)+len(b.Settlements) > 0 {
		if _, err := tx.StmtContext(ctx, s.closeRes).ExecContext(ctx, micros(s.now()), micros(time.Time{})); err != nil {
			return classify("close reservations", err)
		}
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := tx.Commit(); err != nil {
		return classify("commit", err)
	}
	s.wrote(len(b.Reservations) + 3*len(b.Settlements))
	return nil
}

// settleAll writes settlements many rows per statement; when one of them
// turns out to be settled already (a replay), it undoes that and writes
// them one by one, skipping the settled ones whole. Then it adds exactly
// the settlements it inserted to the daily aggregates and spend totals.
func (s *Store) settleAll(ctx context.Context, tx *sql.Tx, sets []ledger.Settlement) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT settle`); err != nil {
		return classify("savepoint", err)
	}
	agg := &s.agg
	agg.Reset()
	dup, err := s.settleMulti(ctx, tx, sets)
	if err != nil {
		return err
	}
	if dup {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO settle`); err != nil {
			return classify("savepoint", err)
		}
		req := tx.StmtContext(ctx, s.insRequest)
		att := tx.StmtContext(ctx, s.insAttempt)
		for i := range sets {
			inserted, err := settle(ctx, req, att, &sets[i])
			if err != nil {
				return err
			}
			if inserted {
				agg.Add(&sets[i])
			}
		}
	} else {
		for i := range sets {
			agg.Add(&sets[i])
		}
	}
	if _, err := tx.ExecContext(ctx, `RELEASE settle`); err != nil {
		return classify("savepoint", err)
	}
	return s.writeAggregates(ctx, tx, agg)
}

// settle writes one settlement, unless its request is settled already
// (inserted false).
func settle(ctx context.Context, req, att *sql.Stmt, st *ledger.Settlement) (inserted bool, err error) {
	r := &st.Request
	res, err := req.ExecContext(ctx, r.RequestID, r.Org, r.Team, r.KeyID, r.PublicModel,
		r.ExactModel, r.Deployment, r.RouteDepth, r.Attempts, r.Status, r.FailureClass,
		r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicroUSD, r.CostStatus,
		r.ReservedMicroUSD, r.Streamed, r.FirstTokenMS, r.LatencyMS,
		micros(r.StartedAt), micros(r.FinishedAt), r.Exercise)
	if err != nil {
		return false, classify("request", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, classify("request", err)
	} else if n == 0 {
		return false, nil // already settled: never twice
	}
	for i := range st.Attempts {
		a := &st.Attempts[i]
		if _, err := att.ExecContext(ctx, r.RequestID, a.Seq, a.Deployment, a.FailureClass,
			a.HTTPStatus, a.InputTokens, a.OutputTokens, a.CostMicroUSD, a.FirstByteMS,
			a.DurationMS, micros(a.StartedAt)); err != nil {
			return false, classify("attempt", err)
		}
	}
	return true, nil
}

// RecoverOpen releases every reservation of owner's (or of no owner, or
// older than ledger.OrphanAfter) that is neither settled nor released (the
// gateway died between reserving and settling) and returns them. Call it
// at start-up, before owner's Writer runs: a reservation of its still in
// flight would be released too. A second call returns nothing.
func (s *Store) RecoverOpen(ctx context.Context, owner string) (_ []ledger.Released, err error) {
	orphaned := micros(s.now().Add(-ledger.OrphanAfter))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: recover: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	out, err := sqlstore.List(ctx, reader{tx}, sqlstore.ScanReleased, `SELECT `+sqlstore.ReleasedColumns+`
	FROM reservations WHERE settled_at IS NULL AND released_at IS NULL AND (owner IN (?1, '') OR created_at < ?2)
	ORDER BY created_at, request_id`, owner, orphaned)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: recover: %w", err)
	}
	if len(out) == 0 {
		return nil, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, `UPDATE reservations SET released_at = ?
	WHERE settled_at IS NULL AND released_at IS NULL AND (owner IN (?2, '') OR created_at < ?3)`, micros(s.now()), owner, orphaned); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: recover: release: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: recover: commit: %w", err)
	}
	return out, nil
}
