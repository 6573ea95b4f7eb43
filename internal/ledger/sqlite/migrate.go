package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. Never edit or reorder a released migration: add one.
//
// No table has a prompt, response or any content column: the ledger is
// content-free by contract (a test checks every column against an
// allowlist). Times are INTEGER microseconds since the Unix epoch, UTC.
func migrations() [SchemaVersion]string {
	return [...]string{migration1, migration2, migration3, migration4, migration5, migration6, migration7, migration8, migration9}
}

// SchemaVersion is the schema version this binary writes.
const SchemaVersion = len([...]string{migration1, migration2, migration3, migration4, migration5, migration6, migration7, migration8, migration9})

// migration1: the tables.
const migration1 = `
CREATE TABLE keys (
	id          TEXT PRIMARY KEY,
	hash        BLOB NOT NULL UNIQUE,
	prefix      TEXT NOT NULL,
	org         TEXT NOT NULL,
	team        TEXT NOT NULL,
	models      TEXT NOT NULL,          -- JSON array of public model names; [] = all
	created_at  INTEGER NOT NULL,
	revoked_at  INTEGER                 -- NULL while the key is valid
);
CREATE TABLE budgets (
	scope               TEXT NOT NULL CHECK (scope IN ('org','team','key','model')),
	id                  TEXT NOT NULL,
	credit_micro_usd    INTEGER,        -- NULL = no limit
	daily_cap_micro_usd INTEGER,        -- NULL = no limit
	rpm                 INTEGER NOT NULL DEFAULT 0,
	tpm                 INTEGER NOT NULL DEFAULT 0,
	updated_at          INTEGER NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE TABLE reservations (
	request_id    TEXT PRIMARY KEY,
	key_id        TEXT NOT NULL,
	org           TEXT NOT NULL,
	team          TEXT NOT NULL,
	public_model  TEXT NOT NULL,
	amount_micro  INTEGER NOT NULL,
	created_at    INTEGER NOT NULL,
	settled_at    INTEGER,              -- set in the settling transaction
	released_at   INTEGER               -- set by RecoverOpen after a crash
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
	input_tokens        INTEGER NOT NULL,
	output_tokens       INTEGER NOT NULL,
	cached_tokens       INTEGER NOT NULL,
	cost_micro_usd      INTEGER NOT NULL,
	cost_status         TEXT NOT NULL,
	reserved_micro_usd  INTEGER NOT NULL,
	streamed            INTEGER NOT NULL,
	first_token_ms      INTEGER NOT NULL,
	latency_ms          INTEGER NOT NULL,
	started_at          INTEGER NOT NULL,
	finished_at         INTEGER NOT NULL
);
CREATE TABLE attempts (
	request_id     TEXT NOT NULL REFERENCES requests (request_id),
	seq            INTEGER NOT NULL,
	deployment     TEXT NOT NULL,
	failure_class  TEXT NOT NULL,
	http_status    INTEGER NOT NULL,
	input_tokens   INTEGER NOT NULL,
	output_tokens  INTEGER NOT NULL,
	cost_micro_usd INTEGER NOT NULL,
	first_byte_ms  INTEGER NOT NULL,
	duration_ms    INTEGER NOT NULL,
	started_at     INTEGER NOT NULL,
	PRIMARY KEY (request_id, seq)
) WITHOUT ROWID;
`

// migration2: indexes for usage reports, and for finding open reservations
// at start-up without scanning every settled one.
const migration2 = `
CREATE INDEX requests_started_at ON requests (started_at);
CREATE INDEX requests_key ON requests (key_id, started_at);
CREATE INDEX requests_org ON requests (org, started_at);
CREATE INDEX requests_team ON requests (team, started_at);
CREATE INDEX requests_model ON requests (public_model, started_at);
CREATE INDEX requests_deployment ON requests (deployment, started_at);
CREATE INDEX reservations_open ON reservations (created_at)
	WHERE settled_at IS NULL AND released_at IS NULL;
`

// migration3: every index on requests is paid on every insert, and those
// inserts were most of what the ledger cost per request. Keep the two that
// a key's own usage (any virtual key may ask, often) and a time range lean
// on; drop org, team, model and deployment, which only an operator's
// reports filter on: those scan their time range instead. Measured
// (BenchmarkStoreIngest, BenchmarkUsage, 50,000 rows): ingesting a
// settlement 39 -> 29 µs CPU; one org's day 3 -> 6 ms, one org's week
// 25 -> 22 ms, grouped by model and deployment 174 -> 147 ms.
const migration3 = `
DROP INDEX requests_org;
DROP INDEX requests_team;
DROP INDEX requests_model;
DROP INDEX requests_deployment;
`

// migration4: the admin credential, created at the first start and
// rotated by the CLI; only its hash is stored.
const migration4 = `
CREATE TABLE admin_keys (
	id          TEXT PRIMARY KEY,
	hash        BLOB NOT NULL UNIQUE,
	prefix      TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	revoked_at  INTEGER                 -- NULL while the key is valid
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
ALTER TABLE requests ADD COLUMN exercise INTEGER NOT NULL DEFAULT 0;
`

// migration7: what grows with traffic stays cheap to read. usage_daily
// holds the usage counters per (day started, day finished, org, team, key,
// public model, deployment), spend_totals every budget scope's spend
// since the ledger began: WriteBatch keeps both in the settling
// transaction (see ledger.Aggregates), usage over whole days and start-up
// spend read them instead of the request rows, and pruning raw rows
// (ledger.retention) never touches them. Figures are counted bounded as
// Repair leaves them (ledger.Request.Bounded; the literals are
// ledger.MaxTokens and ledger.MaxCostMicro when this was written), and
// repair_pending lists the requests Repair must look at, so that start-up
// never scans the ledger for them. ledger_meta holds raw_kept_from: the
// first stored micro whose raw rows are complete (set by Prune).
//
// The backfill reads every request row once (see the migration's
// benchmark for its time on 10 million rows).
const migration7 = `
CREATE TABLE usage_daily (
	day             INTEGER NOT NULL,   -- started_at / 86400000000
	finished_day    INTEGER NOT NULL,   -- finished_at / 86400000000
	org             TEXT NOT NULL,
	team            TEXT NOT NULL,
	key_id          TEXT NOT NULL,
	public_model    TEXT NOT NULL,
	deployment      TEXT NOT NULL,
	requests        INTEGER NOT NULL,
	succeeded       INTEGER NOT NULL,
	failed          INTEGER NOT NULL,
	failed_over     INTEGER NOT NULL,
	attempts        INTEGER NOT NULL,
	input_tokens    INTEGER NOT NULL,
	output_tokens   INTEGER NOT NULL,
	cached_tokens   INTEGER NOT NULL,
	cost_micro_usd  INTEGER NOT NULL,
	PRIMARY KEY (day, finished_day, org, team, key_id, public_model, deployment)
) WITHOUT ROWID;
CREATE INDEX usage_daily_finished ON usage_daily (finished_day);
CREATE TABLE spend_totals (
	scope           TEXT NOT NULL,
	id              TEXT NOT NULL,
	total_micro_usd INTEGER NOT NULL,
	PRIMARY KEY (scope, id)
) WITHOUT ROWID;
CREATE TABLE repair_pending (request_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE ledger_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO usage_daily
SELECT started_at / 86400000000, finished_at / 86400000000, org, team, key_id, public_model, deployment,
	COUNT(*), SUM(status = 'ok'), SUM(status IN ('failed', 'interrupted')),
	SUM(route_depth >= 0 AND (route_depth > 0 OR attempts > 1)), SUM(attempts),
	SUM(CASE WHEN input_tokens BETWEEN 0 AND 100000000 THEN input_tokens ELSE 0 END),
	SUM(CASE WHEN output_tokens BETWEEN 0 AND 100000000 THEN output_tokens ELSE 0 END),
	SUM(CASE WHEN cached_tokens BETWEEN 0 AND 100000000 THEN cached_tokens ELSE 0 END),
	SUM(CASE WHEN cost_micro_usd BETWEEN 0 AND 10000000000000 THEN cost_micro_usd
		WHEN reserved_micro_usd BETWEEN 0 AND 10000000000000 THEN reserved_micro_usd ELSE 0 END)
FROM requests GROUP BY 1, 2, 3, 4, 5, 6, 7;
INSERT INTO spend_totals
SELECT 'org', org, SUM(cost_micro_usd) FROM usage_daily WHERE org <> '' GROUP BY org HAVING SUM(cost_micro_usd) <> 0
UNION ALL
SELECT 'team', team, SUM(cost_micro_usd) FROM usage_daily WHERE team <> '' GROUP BY team HAVING SUM(cost_micro_usd) <> 0
UNION ALL
SELECT 'key', key_id, SUM(cost_micro_usd) FROM usage_daily WHERE key_id <> '' GROUP BY key_id HAVING SUM(cost_micro_usd) <> 0
UNION ALL
SELECT 'model', public_model, SUM(cost_micro_usd) FROM usage_daily WHERE public_model <> '' GROUP BY public_model HAVING SUM(cost_micro_usd) <> 0;
INSERT INTO repair_pending
SELECT request_id FROM requests WHERE input_tokens NOT BETWEEN 0 AND 100000000
	OR output_tokens NOT BETWEEN 0 AND 100000000 OR cached_tokens NOT BETWEEN 0 AND 100000000
	OR cost_micro_usd NOT BETWEEN 0 AND 10000000000000 OR reserved_micro_usd NOT BETWEEN 0 AND 10000000000000
UNION
SELECT request_id FROM attempts WHERE input_tokens NOT BETWEEN 0 AND 100000000
	OR output_tokens NOT BETWEEN 0 AND 100000000 OR cost_micro_usd NOT BETWEEN 0 AND 10000000000000;
`

// migration8: each reservation names the journal (the replica) that wrote
// it (ledger.Batch.Owner), so a replica starting up releases only the
// reservations it left open itself, never those other replicas have in
// flight. Rows written before it have no owner (the empty string) and any replica's
// recovery releases them, as before.
const migration8 = `
ALTER TABLE reservations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
`

// migration9: a key's own usage (any virtual key may ask, often) reads
// its rows of usage_daily by index instead of every key's. Measured on
// 10 million requests (1,000 keys, 30 days): see BenchmarkHistory.
const migration9 = `
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
`

// migrate applies every migration past the database's version; see
// sqlstore.Migrator. Each runs in an immediate (write-locked) transaction,
// so two processes opening one file at once never apply one twice.
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
)`); err != nil {
		return fmt.Errorf("ledger/sqlite: migrate: %w", err)
	}
	steps := migrations()
	m := sqlstore.Migrator{Store: "ledger/sqlite", Migrations: steps[:], Now: now,
		Begin: func(ctx context.Context) (sqlstore.MigrateTx, error) {
			tx, err := db.BeginTx(ctx, nil) // immediate: see dsn
			if err != nil {
				return nil, err
			}
			return migrateTx{tx}, nil
		}}
	return m.Migrate(ctx)
}

// migrateTx is one migration's transaction.
type migrateTx struct{ tx *sql.Tx }

func (t migrateTx) Version(ctx context.Context) (have int, err error) {
	err = t.tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	return have, err
}

func (t migrateTx) Apply(ctx context.Context, migration string, version int, micros int64) error {
	if _, err := t.tx.ExecContext(ctx, migration); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, micros)
	return err
}

func (t migrateTx) Commit(context.Context) error { return t.tx.Commit() }
func (t migrateTx) Rollback(context.Context)     { t.tx.Rollback() }
