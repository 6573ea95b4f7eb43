package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeDB is a database with a schema_migrations table: each migration
// "applied" is recorded, and a commit makes a transaction's work stay.
type fakeDB struct {
	versions []int // committed
	applied  []string
	failOn   string // a migration whose Apply fails
}

type fakeTx struct {
	db      *fakeDB
	pending []int
	steps   []string
	done    bool
}

func (t *fakeTx) Version(context.Context) (int, error) {
	if len(t.db.versions) == 0 {
		return 0, nil
	}
	return t.db.versions[len(t.db.versions)-1], nil
}

func (t *fakeTx) Apply(_ context.Context, m string, v int, _ int64) error {
	if m == t.db.failOn {
		return errors.New("syntax error")
	}
	t.steps, t.pending = append(t.steps, m), append(t.pending, v)
	return nil
}

func (t *fakeTx) Commit(context.Context) error {
	t.db.versions = append(t.db.versions, t.pending...)
	t.db.applied = append(t.db.applied, t.steps...)
	t.done = true
	return nil
}

func (t *fakeTx) Rollback(context.Context) {}

func migrator(db *fakeDB, steps ...string) *Migrator {
	return &Migrator{Store: "ledger/fake", Migrations: steps, Now: time.Now,
		Begin: func(context.Context) (MigrateTx, error) { return &fakeTx{db: db}, nil }}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	db := &fakeDB{}
	if err := migrator(db, "a", "b").Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// A newer binary continues where the older stopped.
	if err := migrator(db, "a", "b", "c").Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := db.applied; len(got) != 3 || got[0] != "a" || got[2] != "c" || db.versions[2] != 3 {
		t.Fatalf("applied %v, versions %v", got, db.versions)
	}
	// An older binary refuses the newer schema.
	var sv *SchemaVersionError
	err := migrator(db, "a").Migrate(ctx)
	if !errors.As(err, &sv) || sv.Have != 3 || sv.Known != 1 ||
		err.Error() != "ledger/fake: database schema version 3 is newer than this binary's 1" {
		t.Fatalf("older binary: %v", err)
	}
	// A failing migration leaves the versions before it, and says which.
	db = &fakeDB{failOn: "b"}
	err = migrator(db, "a", "b", "c").Migrate(ctx)
	if err == nil || err.Error() != "ledger/fake: migration 2: syntax error" || len(db.versions) != 1 {
		t.Fatalf("failing migration: %v, versions %v", err, db.versions)
	}
}
