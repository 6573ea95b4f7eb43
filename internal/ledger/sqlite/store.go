// Package sqlite is the embedded ledger.Store: one SQLite file in WAL mode,
// one writer connection for group-committed batches and a small pool of
// read-only connections for lookups and usage queries.
//
// Durability: synchronous=NORMAL in WAL mode makes every committed
// transaction survive a crash of the process (kill -9), because the commit
// has been written to the WAL through the operating system before COMMIT
// returns; only a power loss or kernel crash can lose the last commits
// before the next checkpoint. That is the contract the gateway states.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// readers is the size of the read-only pool; reads are short (key lookups,
// usage reports), WAL readers never block the writer.
const readers = 4

// busyTimeout is how long a connection waits on another process's lock
// (a second gateway, the CLI) before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// checkpointEvery is how many rows the writer commits between two kicks of
// the checkpointer (~1.5 MB of WAL).
const checkpointEvery = 4096

// restartFrames is the WAL length (in pages: 16 MiB at the default 4 KiB
// page) past which the checkpointer has the writer rewind the WAL (see
// checkpointer).
const restartFrames = 4096

// Store is the SQLite ledger. It is safe for concurrent use.
type Store struct {
	w   *sql.DB // one connection: batches and admin writes, serialised
	r   *sql.DB // read-only pool
	cp  *sql.DB // one connection: WAL checkpoints, off the commit path
	now func() time.Time

	// The checkpointer goroutine, owned by the Store: kicked by WriteBatch
	// every checkpointEvery rows, stopped by Close.
	kick      chan struct{}
	stop      chan struct{}
	stopped   chan struct{} // nil until the checkpointer runs
	rowsMu    sync.Mutex
	rowsSince int
	rewind    atomic.Bool // the WAL is long: the writer checkpoints once
	ckMu      sync.Mutex  // one checkpoint at a time, so the writer's completes
	// Checkpoint thresholds: checkpointEvery and restartFrames, smaller in
	// tests.
	ckptRows, rewindFrames int
	// beforeCommit, when set (tests), runs inside WriteBatch's transaction.
	beforeCommit func()

	closeOnce sync.Once
	closeErr  error

	insReservation *sql.Stmt
	insRequest     *sql.Stmt
	insAttempt     *sql.Stmt
	closeRes       *sql.Stmt
	multiRequests  rowStmts
	multiAttempts  rowStmts

	insDaily  *sql.Stmt
	insSpend  *sql.Stmt
	insRepair *sql.Stmt

	// Reused by settleMulti and settleAll, inside a write transaction.
	args    []any
	attRows []attemptRow
	agg     ledger.Aggregates
}

var _ ledger.Store = (*Store)(nil)

// SchemaVersionError is returned by Open for a database written by a newer
// spillway: its schema is past every migration this binary knows.
type SchemaVersionError = sqlstore.SchemaVersionError

// Open opens (creating it if missing) the ledger at path and brings its
// schema up to date. It refuses a database from a newer schema version
// with a *SchemaVersionError.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, time.Now)
}

func open(ctx context.Context, path string, now func() time.Time) (_ *Store, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: %w", err)
	}
	w, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, now: now, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		ckptRows: checkpointEvery, rewindFrames: restartFrames}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := migrate(ctx, w, now); err != nil {
		return nil, err
	}
	// Readers open only after migration so that their first connection
	// sees the final schema and never races the WAL switch.
	s.r, err = sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open readers: %w", err)
	}
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	if err := s.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open readers: %w", err)
	}
	s.cp, err = sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open checkpointer: %w", err)
	}
	s.cp.SetMaxOpenConns(1)
	s.cp.SetMaxIdleConns(1)
	if err := s.cp.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: open checkpointer: %w", err)
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	s.stopped = make(chan struct{})
	go s.checkpointer()
	return s, nil
}

// checkpointer copies the WAL back into the database file when kicked.
// The writer connection never checkpoints on its own
// (wal_autocheckpoint=0), so the fsyncs a checkpoint needs stay off the
// commit path; a PASSIVE checkpoint never blocks the writer or readers.
//
// Under constant writes that is not enough: SQLite rewinds the WAL only
// when a write transaction begins with every frame already copied back,
// and the writer's next transaction always begins after its own latest
// commit. So once the WAL passes rewindFrames, the checkpointer asks the
// writer to checkpoint once itself, between two transactions (rewindWAL):
// by then nearly every frame is copied, so that costs the tail and the
// fsyncs, about once per rewindFrames of WAL, and the next commit starts
// the WAL over.
func (s *Store) checkpointer() {
	for {
		select {
		case <-s.kick:
			s.checkpoint()
		case <-s.stop:
			close(s.stopped)
			return
		}
	}
}

// checkpoint is one kick's work: a PASSIVE checkpoint, and a rewind request
// when the WAL is long. A failed checkpoint is retried at the next kick;
// the WAL only grows meanwhile, nothing is lost.
func (s *Store) checkpoint() {
	if s.rewind.Load() {
		return // leave the lock to the writer's pending rewind
	}
	var busy, frames, done int
	s.ckMu.Lock()
	err := s.cp.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
	s.ckMu.Unlock()
	if err == nil && frames >= s.rewindFrames {
		s.rewind.Store(true)
	}
}

// rewindWAL runs, on the writer connection and outside any transaction,
// the checkpoint the checkpointer asked for; if the checkpointer is busy
// it waits for the next batch rather than for the checkpointer. Errors are
// ignored: the next kick asks again.
func (s *Store) rewindWAL(ctx context.Context) {
	if !s.rewind.Load() || !s.ckMu.TryLock() {
		return
	}
	defer s.ckMu.Unlock()
	s.rewind.Store(false)
	s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
}

// wrote counts committed rows and kicks the checkpointer now and then.
func (s *Store) wrote(rows int) {
	s.rowsMu.Lock()
	s.rowsSince += rows
	due := s.rowsSince >= s.ckptRows
	if due {
		s.rowsSince = 0
	}
	s.rowsMu.Unlock()
	if due {
		select {
		case s.kick <- struct{}{}:
		default: // one is already pending
		}
	}
}

// dsn builds a file: URI so that any path (spaces, '?', '#') reaches SQLite
// intact; the underscore keys are the driver's and SQLite ignores them.
func dsn(abs string, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	// NORMAL: durable against a process kill in WAL mode (see package doc).
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "on")
	// Only the checkpointer goroutine checkpoints (see checkpointer).
	q.Add("_pragma", "wal_autocheckpoint(0)")
	// After a checkpoint, shrink a WAL that a burst grew past 64 MiB.
	q.Add("_pragma", "journal_size_limit(67108864)")
	if readOnly {
		q.Set("_query_only", "on")
	} else {
		// Take the write lock at BEGIN: a deferred transaction that
		// upgrades later can fail with SQLITE_BUSY without waiting.
		q.Set("_txlock", "immediate")
		// 2 MiB of page cache per writing connection (the writer and the
		// checkpointer), about SQLite's own default: 16 MiB cost a gateway 19 MB
		// of RSS under load (76 -> 57 MB against a bare proxy's 45) and
		// bought no ingest throughput (cpu-µs per settlement, median of 3
		// interleaved rounds, 80k rows: 26.0 at 2 MiB, 28.5 at 16 MiB);
		// pages that miss are read from the OS's page cache.
		q.Add("_pragma", "cache_size(-2048)")
		q.Add("_pragma", "temp_store(MEMORY)")
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.insReservation, sqlInsertReservation},
		{&s.insRequest, sqlInsertRequest},
		{&s.insAttempt, sqlInsertAttempt},
		{&s.closeRes, sqlCloseReservations},
		{&s.insDaily, sqlAddDaily},
		{&s.insSpend, sqlAddSpend},
		{&s.insRepair, sqlAddRepair},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("ledger/sqlite: prepare: %w", err)
		}
		*p.dst = st
	}
	return s.prepareMulti(ctx)
}

// Close checkpoints the WAL into the database file and closes every
// connection. Pending reads fail; the Writer must have been closed first
// so no batch is cut off.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	var errs []error
	if s.stopped != nil {
		close(s.stop)
		<-s.stopped
	}
	if s.cp != nil {
		// Best effort: a later Open replays whatever WAL is left.
		s.cp.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
		errs = append(errs, s.cp.Close())
	}
	stmts := []*sql.Stmt{s.insReservation, s.insRequest, s.insAttempt, s.closeRes, s.insDaily, s.insSpend, s.insRepair}
	stmts = append(append(stmts, s.multiRequests[:]...), s.multiAttempts[:]...)
	for _, st := range stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// classify wraps a write error: constraint violations are the batch's
// fault (ledger.ErrRejected), anything else is the store's.
func classify(op string, err error) error {
	if isConstraint(err) {
		return fmt.Errorf("ledger/sqlite: %s: %w: %w", op, ledger.ErrRejected, err)
	}
	return fmt.Errorf("ledger/sqlite: %s: %w", op, err)
}

func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// Times are stored as INTEGER microseconds since the Unix epoch, UTC;
// optional ones as NULL when zero.
func micros(t time.Time) int64 { return t.UnixMicro() }

func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// reader adapts a pool or a transaction to sqlstore.Querier.
type reader struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (r reader) Query(ctx context.Context, query string, args ...any) (sqlstore.ClosingRows, error) {
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return closingRows{rows}, nil
}

// closingRows is *sql.Rows as sqlstore.ClosingRows wants it.
type closingRows struct{ *sql.Rows }

func (r closingRows) Close() { r.Rows.Close() }
