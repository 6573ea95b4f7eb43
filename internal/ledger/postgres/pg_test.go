package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testEnv names the database the tests may fill (each test in a schema of
// its own, dropped afterwards). .ci/run starts a throwaway cluster and sets
// it (.ci/postgres).
const testEnv = "SPILLWAY_TEST_POSTGRES"

// testDSN returns the test database's DSN. Unset, the test is skipped
// (a developer's machine without PostgreSQL); set, the database must
// answer: CI fails rather than skip.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(testEnv)
	if dsn == "" {
		t.Skipf("%s is unset: the PostgreSQL ledger tests need a database (.ci/run starts one with .ci/postgres; "+
			"or export %s=postgres://user:password@127.0.0.1:5432/db)", testEnv, testEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s is set but the database does not answer: %v", testEnv, scrub(err, passwordOf(dsn)))
	}
	c.Close(ctx)
	return dsn
}

func passwordOf(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// freshSchema makes an empty schema and returns a DSN whose connections
// use it (search_path), so that every store a test opens starts empty.
// The schema is dropped when the test ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("dropping schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Logf("dropping schema %s: %v", name, err)
		}
	})
	// A generous connect timeout: SCRAM authentication is CPU work, slow
	// on a CI machine whose cores are busy.
	return withParam(withParam(dsn, "search_path", name), "connect_timeout", "20")
}

// withParam adds a run-time parameter to a URL or key=value DSN.
func withParam(dsn, k, v string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + k + "=" + v
	}
	return dsn + " " + k + "=" + v
}

func openFresh(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), freshSchema(t), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
