package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/ledgertest"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// TestConformance holds the PostgreSQL store to the rules every ledger
// store keeps (the SQLite store runs the same suite).
func TestConformance(t *testing.T) {
	testDSN(t)
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return openFresh(t) })
}

// TestMigrateConcurrently: replicas starting at once against an empty
// database each get a working store, and every migration is applied
// exactly once; opening again changes nothing.
func TestMigrateConcurrently(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	const replicas = 4
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			s, err := Open(ctx, dsn, Options{MaxConns: 2})
			if err == nil {
				err = s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{ledgertest.Settlement(fmt.Sprint("r", i), 1, 1)}})
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer s.Close()
	var versions []int
	rows, _ := s.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(versions, want) || SchemaVersion != len(want) {
		t.Errorf("schema_migrations = %v, want %v, once each", versions, want)
	}
	if u, err := s.Usage(ctx, ledger.UsageQuery{}); err != nil || u[0].Requests != replicas {
		t.Errorf("usage = %+v, %v; want %d requests, one per replica", u, err, replicas)
	}
}

// TestNewerSchemaRefused: a database a newer spillway migrated is not
// written by this one.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, dsn, Options{})
	var ve *SchemaVersionError
	if !errors.As(err, &ve) || ve.Have != 99 || ve.Known != SchemaVersion {
		t.Errorf("Open of a version-99 database = %v, want a SchemaVersionError", err)
	}
}

// TestSchemaMatchesSQLite: at the same schema version both stores have
// the same tables with the same columns (the ledger's content-free
// allowlist is checked on the SQLite schema; this keeps PostgreSQL's equal).
func TestSchemaMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg := openFresh(t)
	if sqlite.SchemaVersion != SchemaVersion {
		t.Fatalf("SQLite schema version %d, PostgreSQL %d: add the migration to both stores", sqlite.SchemaVersion, SchemaVersion)
	}
	path := filepath.Join(t.TempDir(), "l.db")
	lite, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	lite.Close()
	db, err := sql.Open("sqlite", path) // the driver the sqlite store registers
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string][]string{}
	lrows, err := db.QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p
	WHERE m.type = 'table' ORDER BY m.name, p.name`)
	if err != nil {
		t.Fatal(err)
	}
	for lrows.Next() {
		var tbl, col string
		if err := lrows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		want[tbl] = append(want[tbl], col)
	}
	lrows.Close()
	got := map[string][]string{}
	rows, err := pg.pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
	WHERE table_schema = current_schema() ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		got[tbl] = append(got[tbl], col)
	}
	rows.Close()
	if len(got) != len(want) {
		t.Errorf("tables: PostgreSQL %v, SQLite %v", keysOf(got), keysOf(want))
	}
	for tbl, cols := range want {
		if !slices.Equal(got[tbl], cols) {
			t.Errorf("table %s: PostgreSQL columns %v, SQLite %v", tbl, got[tbl], cols)
		}
	}
}

func keysOf(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestRedact: a DSN shown in a log line or an error never carries its
// password, in any of the forms libpq reads.
func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://spw:s3cret@db:5432/ledger?sslmode=require", "postgres://spw:xxxxx@db:5432/ledger?sslmode=require"},
		{"postgresql://spw:p%40ss@db/ledger", "postgresql://spw:xxxxx@db/ledger"},
		{"postgres://spw@db/ledger?password=s3cret&sslmode=disable", "postgres://spw@db/ledger?password=xxxxx&sslmode=disable"},
		{"postgres://db/ledger", "postgres://db/ledger"},
		{"host=db user=spw password=s3cret dbname=ledger", "host=db user=spw password=xxxxx dbname=ledger"},
		{"host=db password = 's3 cr\\'et' dbname=ledger", "host=db password = xxxxx dbname=ledger"},
		{"host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{"postgres://spw:s3cret@db:bad port/x", "(a postgres:// URL that does not parse)"},
	} {
		got := Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "s3") {
			t.Errorf("Redact(%q) = %q still holds the password", c.in, got)
		}
	}
}

// TestOpenErrorHidesPassword: a database that cannot be reached, or a DSN
// that does not parse, is reported without the password.
func TestOpenErrorHidesPassword(t *testing.T) {
	const canary = "canary-pw-7f3a"
	for _, dsn := range []string{
		"postgres://spw:" + canary + "@127.0.0.1:1/ledger?connect_timeout=2",
		"host=127.0.0.1 port=1 user=spw password=" + canary + " dbname=ledger connect_timeout=2",
		"postgres://spw:" + canary + "@127.0.0.1:1/ledger?sslmode=bogus",
		"host=127.0.0.1 port=notaport password=" + canary,
	} {
		_, err := Open(context.Background(), dsn, Options{})
		if err == nil {
			t.Fatalf("Open(%s) succeeded", Redact(dsn))
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
}

// TestMustExist: the CLI's open refuses a database without a ledger
// rather than creating an empty one; once the gateway made it, it opens.
func TestMustExist(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	if _, err := Open(ctx, dsn, Options{MustExist: true}); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("Open(MustExist) of an empty database = %v, want ErrNoLedger", err)
	}
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, dsn, Options{MustExist: true})
	if err != nil {
		t.Fatalf("Open(MustExist) of a ledger: %v", err)
	}
	s.Close()
}
