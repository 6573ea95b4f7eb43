package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// Reader reads a ledger file it never writes: a ledger.Auditor for a
// check of the file (spillway drill), alone or beside a running gateway.
type Reader struct {
	db *sql.DB
}

var _ ledger.Auditor = (*Reader)(nil)

// OpenReader opens the ledger at path read only. Unlike Open it neither
// creates nor migrates anything: a missing file is an error.
func OpenReader(ctx context.Context, path string) (*Reader, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(readers)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger/sqlite: open: %w", err)
	}
	return &Reader{db: db}, nil
}

// Close closes the reader.
func (r *Reader) Close() error { return r.db.Close() }

// RequestRows lists stored request rows by request id; see ledger.Auditor.
func (r *Reader) RequestRows(ctx context.Context, after string, limit int) ([]ledger.Request, error) {
	return requestRows(ctx, r.db, after, limit)
}

// AttemptRows lists attempt rows by (request id, seq); see ledger.Auditor.
func (r *Reader) AttemptRows(ctx context.Context, after ledger.AttemptKey, limit int) ([]ledger.Attempt, error) {
	return attemptRows(ctx, r.db, after, limit)
}

// ReservationStates counts the reservations by state; see ledger.Auditor.
func (r *Reader) ReservationStates(ctx context.Context) (ledger.ReservationStates, error) {
	return reservationStates(ctx, r.db)
}

// RequestRows lists stored request rows by request id; see ledger.Auditor.
func (s *Store) RequestRows(ctx context.Context, after string, limit int) ([]ledger.Request, error) {
	return requestRows(ctx, s.r, after, limit)
}

// AttemptRows lists attempt rows by (request id, seq); see ledger.Auditor.
func (s *Store) AttemptRows(ctx context.Context, after ledger.AttemptKey, limit int) ([]ledger.Attempt, error) {
	return attemptRows(ctx, s.r, after, limit)
}

// ReservationStates counts the reservations by state; see ledger.Auditor.
func (s *Store) ReservationStates(ctx context.Context) (ledger.ReservationStates, error) {
	return reservationStates(ctx, s.r)
}

func requestRows(ctx context.Context, db *sql.DB, after string, limit int) (_ []ledger.Request, err error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	out, err := sqlstore.List(ctx, reader{db}, sqlstore.ScanRequest, `SELECT `+sqlstore.RequestColumns+`
		FROM requests WHERE request_id IN (
			SELECT DISTINCT request_id FROM requests WHERE request_id > ? ORDER BY request_id LIMIT ?)
		ORDER BY request_id`, after, limit)
	return out, readErr("request rows", err)
}

func attemptRows(ctx context.Context, db *sql.DB, after ledger.AttemptKey, limit int) (_ []ledger.Attempt, err error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	out, err := sqlstore.List(ctx, reader{db}, sqlstore.ScanAttempt, `SELECT `+sqlstore.AttemptColumns+`
		FROM attempts WHERE (request_id, seq) > (?, ?) ORDER BY request_id, seq LIMIT ?`, after.RequestID, after.Seq, limit)
	return out, readErr("attempt rows", err)
}

func reservationStates(ctx context.Context, db *sql.DB) (_ ledger.ReservationStates, err error) {
	var st ledger.ReservationStates
	if err := db.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(settled_at IS NULL AND released_at IS NULL), 0),
		COALESCE(SUM(released_at IS NOT NULL), 0),
		COALESCE(SUM(settled_at IS NOT NULL), 0) FROM reservations`).Scan(&st.Open, &st.Released, &st.Settled); err != nil {
		return st, readErr("reservation states", err)
	}
	if st.Open == 0 {
		return st, nil
	}
	st.OpenIDs, err = sqlstore.List(ctx, reader{db}, sqlstore.ScanString, `SELECT request_id FROM reservations
		WHERE settled_at IS NULL AND released_at IS NULL ORDER BY created_at, request_id LIMIT ?`, ledger.MaxOpenIDs)
	return st, readErr("reservation states", err)
}

// readErr wraps a read error with the operation; nil stays nil.
func readErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return classify(op, err)
}
