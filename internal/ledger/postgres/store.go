// Package postgres is the ledger.Store for several replicas: one
// PostgreSQL database that every gateway writes its batches to, through a
// pgx connection pool.
//
// Every write is idempotent, keyed by request id (a reservation or a
// settlement written twice is written once), so a batch whose COMMIT was
// sent but whose answer was lost can be retried safely: the Writer's journal
// in front of the store replays what it holds until the store takes it.
//
// Times are stored as BIGINT microseconds since the Unix epoch, UTC, as in
// the SQLite store, so both answer usage queries with the same arithmetic.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// Options tunes a Store. Every zero field means its default.
type Options struct {
	// MaxConns bounds the pool. Default: the DSN's pool_max_conns, else 8.
	MaxConns int32
	// ConnectTimeout bounds one connection attempt. Default: the DSN's
	// connect_timeout, else 5s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds one WriteBatch, so that a database that stopped
	// answering (a partition, not a refusal) fails the batch and the
	// Writer's journal keeps the rows, instead of hanging. Default 30s.
	WriteTimeout time.Duration
	// MustExist refuses a database that holds no spillway ledger yet
	// (ErrNoLedger) instead of creating one: for the CLI, where a wrong
	// DSN must not read as an empty ledger. Default false: Open creates
	// the schema, as the gateway does at its first start.
	MustExist bool
}

// ErrNoLedger is returned by Open with MustExist for a database without a
// spillway ledger.
var ErrNoLedger = errors.New("ledger/postgres: no spillway ledger in this database (start the gateway against it first)")

const (
	defaultMaxConns       = 8
	defaultConnectTimeout = 5 * time.Second
	defaultWriteTimeout   = 30 * time.Second
)

// Store is the PostgreSQL ledger. It is safe for concurrent use, by one
// process or by several sharing the database.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	opts Options

	closeOnce sync.Once
}

var _ ledger.Store = (*Store)(nil)

// SchemaVersionError is returned by Open for a database written by a newer
// spillway: its schema is past every migration this binary knows.
type SchemaVersionError = sqlstore.SchemaVersionError

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq reads them), and brings its schema up to
// date under an advisory lock, so that replicas starting together migrate
// it once. Errors never contain the DSN's password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	return open(ctx, dsn, opts, time.Now)
}

func open(ctx context.Context, dsn string, opts Options, now func() time.Time) (_ *Store, err error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password on a best-effort basis only: say no
		// more than that it does not parse.
		return nil, fmt.Errorf("ledger/postgres: the DSN %s does not parse", Redact(dsn))
	}
	password := cfg.ConnConfig.Password
	defer func() { err = scrub(err, password) }()
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if opts.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	} else if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "spillway"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: %w", err)
	}
	s := &Store{pool: pool, now: now, opts: opts}
	if opts.MustExist {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
			pool.Close()
			return nil, fmt.Errorf("ledger/postgres: %w", err)
		}
		if !exists {
			pool.Close()
			return nil, ErrNoLedger
		}
	}
	if err := migrate(ctx, pool, now); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool; pending queries fail. The Writer must have been
// closed first so no batch is cut off.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ledger/postgres: %w", err)
	}
	return nil
}

// classify wraps a write error: constraint violations (SQLSTATE class 23)
// are the batch's fault (ledger.ErrRejected), anything else the store's.
func classify(op string, err error) error {
	if isConstraint(err) {
		return fmt.Errorf("ledger/postgres: %s: %w: %w", op, ledger.ErrRejected, err)
	}
	return fmt.Errorf("ledger/postgres: %s: %w", op, err)
}

func isConstraint(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23")
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func nullMicros(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

// scrubbed is an error whose text had the password cut out; it keeps the
// original for errors.Is and errors.As.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub removes password from err's text, should a driver error ever
// echo it.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), password, "xxxxx"), err: err}
}

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// Redact returns dsn fit for a log line: the password replaced by xxxxx,
// whether the DSN is a URL (user:password@, or a password= parameter) or
// key=value pairs. A URL that does not parse is not shown at all.
func Redact(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(a postgres:// URL that does not parse)"
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// querier adapts a pool or a transaction to sqlstore.Querier.
type querier struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (q querier) Query(ctx context.Context, sql string, args ...any) (sqlstore.ClosingRows, error) {
	return q.q.Query(ctx, sql, args...)
}

// begin starts a transaction; see pgx.TxOptions.
func (s *Store) begin(ctx context.Context) (pgx.Tx, error) {
	return s.pool.BeginTx(ctx, pgx.TxOptions{})
}
