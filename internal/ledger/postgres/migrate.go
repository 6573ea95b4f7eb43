package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. The versions are the SQLite store's (internal/ledger/sqlite):
// version N holds the same tables and columns in both, in each engine's
// dialect. Never edit or reorder a released migration: add one, to both
// stores.
//
// No table has a prompt, response or any content column: the ledger is
// content-free by contract. Times are BIGINT microseconds since the Unix
// epoch, UTC. Counts and costs are BIGINT: a row an older gateway wrote
// from a hostile provider may hold any int64 until Repair rewrites it.
//
// Per-scope aggregates (migration 7) are counted from exactly the
// settlements WriteBatch inserted (the RETURNING set of the requests
// insert, see sqlSettle), in the same statement: a replayed settlement is
// never counted twice.
func migrations() [SchemaVersion]string {
	return [...]string{migration1, migration2, migration3, migration4, migration5, migration6, migration7, migration8, migration9}
}

// SchemaVersion is the schema version this binary writes.
const SchemaVersion = 9

// migrateLock is the advisory lock key every spillway holds while it
// migrates (a transaction-scoped lock: nothing is left held if a
// connection dies, and it works through a transaction-pooling proxy).
// 0x5350574C is "SPWL".
const migrateLock int64 = 0x5350574C_00000001

const migration1 = `
CREATE TABLE keys (
	id          TEXT PRIMARY KEY,
	hash        BYTEA NOT NULL UNIQUE,
	prefix      TEXT NOT NULL,
	org         TEXT NOT NULL,
	team        TEXT NOT NULL,
	models      TEXT[] NOT NULL,        -- public model names; {} = all
	created_at  BIGINT NOT NULL,
	revoked_at  BIGINT                  -- NULL while the key is valid
);
CREATE TABLE budgets (
	scope               TEXT NOT NULL CHECK (scope IN ('org','team','key','model')),
	id                  TEXT NOT NULL,
	credit_micro_usd    BIGINT,         -- NULL = no limit
	daily_cap_micro_usd BIGINT,         -- NULL = no limit
	rpm                 INTEGER NOT NULL DEFAULT 0,
	tpm                 INTEGER NOT NULL DEFAULT 0,
	updated_at          BIGINT NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE TABLE reservations (
	request_id    TEXT PRIMARY KEY,
	key_id        TEXT NOT NULL,
	org           TEXT NOT NULL,
	team          TEXT NOT NULL,
	public_model  TEXT NOT NULL,
	amount_micro  BIGINT NOT NULL,
	created_at    BIGINT NOT NULL,
	settled_at    BIGINT,               -- set in the settling transaction
	released_at   BIGINT                -- set by RecoverOpen after a crash
);
CREATE TABLE requests (
	request_id          TEXT PRIMARY KEY, -- a settlement can never be written twice
	org                 TEXT NOT NULL,
	team                TEXT NOT NULL,
	key_id              TEXT NOT NULL,
	public_model        TEXT NOT NULL,
	exact_model         TEXT NOT NULL,
	deployment          TEXT NOT NULL,
	route_depth         INTEGER NOT NULL,
	attempts            INTEGER NOT NULL,
	status              TEXT NOT NULL,
	failure_class       TEXT NOT NULL,
	input_tokens        BIGINT NOT NULL,
	output_tokens       BIGINT NOT NULL,
	cached_tokens       BIGINT NOT NULL,
	cost_micro_usd      BIGINT NOT NULL,
	cost_status         TEXT NOT NULL,
	reserved_micro_usd  BIGINT NOT NULL,
	streamed            BOOLEAN NOT NULL,
	first_token_ms      BIGINT NOT NULL,
	latency_ms          BIGINT NOT NULL,
	started_at          BIGINT NOT NULL,
	finished_at         BIGINT NOT NULL
);
-- No foreign key to requests: its per-row check was a third of an
-- ingest's time, and sqlSettle inserts attempts only for the requests
-- it inserted itself. Pruning deletes a request's attempts with it.
CREATE TABLE attempts (
	request_id     TEXT NOT NULL,
	seq            INTEGER NOT NULL,
	deployment     TEXT NOT NULL,
	failure_class  TEXT NOT NULL,
	http_status    INTEGER NOT NULL,
	input_tokens   BIGINT NOT NULL,
	output_tokens  BIGINT NOT NULL,
	cost_micro_usd BIGINT NOT NULL,
	first_byte_ms  BIGINT NOT NULL,
	duration_ms    BIGINT NOT NULL,
	started_at     BIGINT NOT NULL,
	PRIMARY KEY (request_id, seq)
);
`

// migration2: the indexes that SQLite's migrations 2 and 3 leave: a time
// range, a key's own usage, and the open reservations found at start-up
// and closed by every batch. (SQLite's migration 2 also made org, team,
// model and deployment indexes that its migration 3 dropped as costing
// every insert more than they saved; they were never made here.)
const migration2 = `
CREATE INDEX requests_started_at ON requests (started_at);
CREATE INDEX requests_key ON requests (key_id, started_at);
CREATE INDEX reservations_open ON reservations (created_at)
	WHERE settled_at IS NULL AND released_at IS NULL;
`

// migration3: nothing (SQLite's dropped indexes this schema never made);
// the version is kept so that both stores count alike.
const migration3 = `SELECT 1;`

// migration4: the admin credential; only its hash is stored.
const migration4 = `
CREATE TABLE admin_keys (
	id          TEXT PRIMARY KEY,
	hash        BYTEA NOT NULL UNIQUE,
	prefix      TEXT NOT NULL,
	created_at  BIGINT NOT NULL,
	revoked_at  BIGINT                  -- NULL while the key is valid
);
`

// migration5: a key's residency, which routing enforces.
const migration5 = `
ALTER TABLE keys ADD COLUMN residency TEXT NOT NULL DEFAULT '';
`

// migration6: a key's priority, which shedding reads, and whether a
// request was routed to a secondary rung first to exercise it.
const migration6 = `
ALTER TABLE keys ADD COLUMN priority TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN exercise BOOLEAN NOT NULL DEFAULT false;
`

// migration7: the daily aggregates, spend totals, the requests Repair
// must look at, and the pruning horizon, as SQLite's migration 7 (whose
// comment says why); backfilled from the request rows, figures bounded as
// Repair leaves them (the literals are ledger.MaxTokens and
// ledger.MaxCostMicro).
const migration7 = `
CREATE TABLE usage_daily (
	day             BIGINT NOT NULL,    -- started_at / 86400000000
	finished_day    BIGINT NOT NULL,    -- finished_at / 86400000000
	org             TEXT NOT NULL,
	team            TEXT NOT NULL,
	key_id          TEXT NOT NULL,
	public_model    TEXT NOT NULL,
	deployment      TEXT NOT NULL,
	requests        BIGINT NOT NULL,
	succeeded       BIGINT NOT NULL,
	failed          BIGINT NOT NULL,
	failed_over     BIGINT NOT NULL,
	attempts        BIGINT NOT NULL,
	input_tokens    BIGINT NOT NULL,
	output_tokens   BIGINT NOT NULL,
	cached_tokens   BIGINT NOT NULL,
	cost_micro_usd  BIGINT NOT NULL,
	PRIMARY KEY (day, finished_day, org, team, key_id, public_model, deployment)
);
CREATE INDEX usage_daily_finished ON usage_daily (finished_day);
CREATE TABLE spend_totals (
	scope           TEXT NOT NULL,
	id              TEXT NOT NULL,
	total_micro_usd BIGINT NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE TABLE repair_pending (request_id TEXT PRIMARY KEY);
CREATE TABLE ledger_meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO usage_daily
SELECT started_at / 86400000000, finished_at / 86400000000, org, team, key_id, public_model, deployment,
	COUNT(*), COUNT(*) FILTER (WHERE status = 'ok'), COUNT(*) FILTER (WHERE status IN ('failed', 'interrupted')),
	COUNT(*) FILTER (WHERE route_depth >= 0 AND (route_depth > 0 OR attempts > 1)), SUM(attempts),
	SUM(CASE WHEN input_tokens BETWEEN 0 AND 100000000 THEN input_tokens ELSE 0 END),
	SUM(CASE WHEN output_tokens BETWEEN 0 AND 100000000 THEN output_tokens ELSE 0 END),
	SUM(CASE WHEN cached_tokens BETWEEN 0 AND 100000000 THEN cached_tokens ELSE 0 END),
	SUM(CASE WHEN cost_micro_usd BETWEEN 0 AND 10000000000000 THEN cost_micro_usd
		WHEN reserved_micro_usd BETWEEN 0 AND 10000000000000 THEN reserved_micro_usd ELSE 0 END)
FROM requests GROUP BY 1, 2, 3, 4, 5, 6, 7;
INSERT INTO spend_totals
SELECT s.scope, s.id, SUM(u.cost_micro_usd) FROM usage_daily AS u
CROSS JOIN LATERAL (VALUES ('org', u.org), ('team', u.team), ('key', u.key_id), ('model', u.public_model)) AS s (scope, id)
WHERE s.id <> '' GROUP BY s.scope, s.id HAVING SUM(u.cost_micro_usd) <> 0;
INSERT INTO repair_pending
SELECT request_id FROM requests WHERE input_tokens NOT BETWEEN 0 AND 100000000
	OR output_tokens NOT BETWEEN 0 AND 100000000 OR cached_tokens NOT BETWEEN 0 AND 100000000
	OR cost_micro_usd NOT BETWEEN 0 AND 10000000000000 OR reserved_micro_usd NOT BETWEEN 0 AND 10000000000000
UNION
SELECT request_id FROM attempts WHERE input_tokens NOT BETWEEN 0 AND 100000000
	OR output_tokens NOT BETWEEN 0 AND 100000000 OR cost_micro_usd NOT BETWEEN 0 AND 10000000000000;
`

// migration8: each reservation's owner, as SQLite's migration 8 (whose
// comment says why). A column with a constant default is added without
// rewriting the table.
const migration8 = `
ALTER TABLE reservations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
`

// migration9: a key's own usage reads its usage_daily rows by index, as
// SQLite's migration 9.
const migration9 = `
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
`

// migrate applies every migration past the database's version; see
// sqlstore.Migrator. Each runs under the advisory lock, so that replicas
// starting at once apply each migration exactly once.
func migrate(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) error {
	steps := migrations()
	m := sqlstore.Migrator{Store: "ledger/postgres", Migrations: steps[:], Now: now,
		Begin: func(ctx context.Context) (sqlstore.MigrateTx, error) { return beginMigration(ctx, pool) }}
	return m.Migrate(ctx)
}

// beginMigration begins one migration's transaction, takes the advisory
// lock, and makes sure schema_migrations exists.
func beginMigration(ctx context.Context, pool *pgxpool.Pool) (sqlstore.MigrateTx, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Under the lock: CREATE TABLE IF NOT EXISTS races itself otherwise.
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at BIGINT NOT NULL
)`); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return migrateTx{tx}, nil
}

// migrateTx is one migration's transaction, holding the advisory lock.
type migrateTx struct{ tx pgx.Tx }

func (t migrateTx) Version(ctx context.Context) (have int, err error) {
	err = t.tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	return have, err
}

func (t migrateTx) Apply(ctx context.Context, migration string, version int, micros int64) error {
	// The simple protocol: a migration is several statements.
	if _, err := t.tx.Exec(ctx, migration, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, version, micros)
	return err
}

func (t migrateTx) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }
func (t migrateTx) Rollback(ctx context.Context)     { t.tx.Rollback(ctx) }
