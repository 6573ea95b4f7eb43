package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/ledgertest"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return openTemp(t) })
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func versions(t *testing.T, db *sql.DB) map[int]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out[v] = at
	}
	return out
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	t.Run("newer schema refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := rawDB(t, path).Exec(`INSERT INTO schema_migrations VALUES (?, 0)`, SchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, path)
		var sv *SchemaVersionError
		if !errors.As(err, &sv) || sv.Have != SchemaVersion+1 || sv.Known != SchemaVersion {
			t.Fatalf("Open(newer) = %v, want *SchemaVersionError{%d, %d}", err, SchemaVersion+1, SchemaVersion)
		}
	})
	t.Run("failed migration rolls back", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db")
		db := rawDB(t, path)
		// A database at version 1 where something already took a name
		// migration 2 creates: migration 2 fails whole.
		for _, q := range []string{
			`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
			migration1,
			`INSERT INTO schema_migrations VALUES (1, 0)`,
			`CREATE INDEX requests_org ON requests (org)`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Open(ctx, path); err == nil {
			t.Fatal("Open succeeded over a clashing index")
		}
		if v := versions(t, db); len(v) != 1 {
			t.Errorf("versions after a failed migration = %v, want only 1", v)
		}
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'requests_started_at'`).Scan(&n)
		if n != 0 {
			t.Error("migration 2's first index survived its failed transaction")
		}
		// Cleared, the next Open continues from version 1.
		if _, err := db.Exec(`DROP INDEX requests_org`); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("Open after the fix: %v", err)
		}
		s.Close()
		if v := versions(t, db); len(v) != SchemaVersion {
			t.Errorf("versions = %v, want 1..%d", v, SchemaVersion)
		}
	})
	t.Run("fresh then reopen is idempotent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		db := rawDB(t, path)
		first := versions(t, db)
		if len(first) != SchemaVersion {
			t.Fatalf("fresh versions = %v, want 1..%d", first, SchemaVersion)
		}
		for v := 1; v <= SchemaVersion; v++ {
			if _, ok := first[v]; !ok {
				t.Errorf("version %d missing", v)
			}
		}
		for range 2 {
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			s.Close()
		}
		if again := versions(t, db); !reflect.DeepEqual(again, first) {
			t.Errorf("versions after reopening = %v, want unchanged %v", again, first)
		}
	})
}

// schemaColumns lists every table.column in the database.
func schemaColumns(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p
		WHERE m.type = 'table' ORDER BY m.name, p.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		out = append(out, tbl+"."+col)
	}
	return out
}

// TestSchemaIsContentFree holds the schema to an allowlist: a new column
// must be added here on purpose, and none may carry content.
func TestSchemaIsContentFree(t *testing.T) {
	s := openTemp(t)
	allowed := map[string][]string{
		"schema_migrations": {"version", "applied_at"},
		"keys":              {"id", "hash", "prefix", "org", "team", "models", "created_at", "revoked_at", "residency", "priority"},
		"admin_keys":        {"id", "hash", "prefix", "created_at", "revoked_at"},
		"budgets":           {"scope", "id", "credit_micro_usd", "daily_cap_micro_usd", "rpm", "tpm", "updated_at"},
		"reservations": {"request_id", "key_id", "org", "team", "public_model", "amount_micro", "created_at",
			"settled_at", "released_at", "owner"},
		"requests": {"request_id", "org", "team", "key_id", "public_model", "exact_model", "deployment",
			"route_depth", "attempts", "status", "failure_class", "input_tokens", "output_tokens", "cached_tokens",
			"cost_micro_usd", "cost_status", "reserved_micro_usd", "streamed", "first_token_ms", "latency_ms",
			"started_at", "finished_at", "exercise"},
		"attempts": {"request_id", "seq", "deployment", "failure_class", "http_status", "input_tokens",
			"output_tokens", "cost_micro_usd", "first_byte_ms", "duration_ms", "started_at"},
		"usage_daily": {"day", "finished_day", "org", "team", "key_id", "public_model", "deployment", "requests",
			"succeeded", "failed", "failed_over", "attempts", "input_tokens", "output_tokens", "cached_tokens",
			"cost_micro_usd"},
		"spend_totals":   {"scope", "id", "total_micro_usd"},
		"repair_pending": {"request_id"},
		"ledger_meta":    {"name", "value"},
	}
	var want []string
	for tbl, cols := range allowed {
		for _, c := range cols {
			want = append(want, tbl+"."+c)
		}
	}
	got := schemaColumns(t, s.r)
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("schema columns:\n got %v\nwant %v", got, want)
	}
	for _, c := range got {
		for _, bad := range []string{"prompt", "response", "content", "message", "body", "text", "input_text", "output_text"} {
			if strings.Contains(c, bad) {
				t.Errorf("column %s looks like content (%q)", c, bad)
			}
		}
	}
}

// TestPragmas pins the durability contract: WAL with synchronous=NORMAL
// (a committed transaction survives a process kill), foreign keys on, a
// busy timeout, read-only readers, and checkpoints only by the checkpointer.
func TestPragmas(t *testing.T) {
	s := openTemp(t)
	for _, c := range []struct {
		name string
		db   *sql.DB
		want map[string]string
	}{
		{"writer", s.w, map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1",
			"busy_timeout": "5000", "query_only": "0", "wal_autocheckpoint": "0"}},
		{"reader", s.r, map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1",
			"busy_timeout": "5000", "query_only": "1"}},
	} {
		for p, want := range c.want {
			var got string
			if err := c.db.QueryRow("PRAGMA " + p).Scan(&got); err != nil || got != want {
				t.Errorf("%s: PRAGMA %s = %q (%v), want %q", c.name, p, got, err, want)
			}
		}
	}
	if _, err := s.r.Exec(`DELETE FROM keys`); err == nil {
		t.Error("a reader connection wrote")
	}
}
