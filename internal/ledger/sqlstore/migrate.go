package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// MigrateTx is the transaction one migration runs in, begun by the
// dialect so that it excludes every other process migrating the same
// database (SQLite's immediate transaction, PostgreSQL's advisory lock)
// and finds schema_migrations existing.
type MigrateTx interface {
	// Version is the newest version schema_migrations records (0: none).
	Version(ctx context.Context) (int, error)
	// Apply runs one migration's statements and records it as version,
	// applied at micros.
	Apply(ctx context.Context, migration string, version int, micros int64) error
	Commit(ctx context.Context) error
	// Rollback ends the transaction if Commit did not; after a Commit it
	// does nothing.
	Rollback(ctx context.Context)
}

// Migrator applies a store's migrations.
type Migrator struct {
	// Store names the store in errors ("ledger/sqlite").
	Store string
	// Migrations are applied in order: Migrations[i] brings the schema to
	// version i+1.
	Migrations []string
	// Begin starts one migration's transaction.
	Begin func(ctx context.Context) (MigrateTx, error)
	// Now stamps each migration's applied_at.
	Now func() time.Time
}

// SchemaVersionError is returned for a database written by a newer
// spillway: its schema is past every migration this binary knows.
type SchemaVersionError struct {
	Store string // the store, as Migrator.Store names it
	Have  int    // the database's schema version
	Known int    // the newest version this binary knows
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("%s: database schema version %d is newer than this binary's %d", e.Store, e.Have, e.Known)
}

// Migrate applies every migration past the database's version, each in
// its own transaction together with its schema_migrations row, so that
// processes starting at once apply each exactly once (the others wait,
// then find it applied) and a crash mid-way leaves a consistent older
// version that the next start continues. On an up-to-date database it
// changes nothing; on a newer one it fails with a *SchemaVersionError.
func (m *Migrator) Migrate(ctx context.Context) error {
	for {
		done, err := m.one(ctx)
		if err != nil || done {
			return err
		}
	}
}

// one applies the next migration, if any. The version is read inside the
// migration's transaction, so no two processes apply the same one.
func (m *Migrator) one(ctx context.Context) (done bool, err error) {
	tx, err := m.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: migrate: %w", m.Store, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	have, err := tx.Version(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: migrate: read version: %w", m.Store, err)
	}
	known := len(m.Migrations)
	if have > known {
		return false, &SchemaVersionError{Store: m.Store, Have: have, Known: known}
	}
	if have == known {
		// Committed, not rolled back: what Begin did to find the version
		// (PostgreSQL creates schema_migrations) is kept.
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("%s: migrate: commit: %w", m.Store, err)
		}
		return true, nil
	}
	if err := tx.Apply(ctx, m.Migrations[have], have+1, m.Now().UnixMicro()); err != nil {
		return false, fmt.Errorf("%s: migration %d: %w", m.Store, have+1, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("%s: migration %d: commit: %w", m.Store, have+1, err)
	}
	return false, nil
}
