package catalog

import (
	"strings"
	"testing"
)

// Unhappy paths first: every way a ledger block is refused, each naming
// its field and line (the routeopts base config is 14 lines).
func TestLedgerRefusals(t *testing.T) {
	tests := []struct {
		name, block string
		wants       []want
	}{
		{"unknown driver", "ledger: {driver: mysql}\n", []want{{14, "ledger.driver", `"mysql" is not a ledger driver this build has (sqlite, postgres)`}}},
		{"dsn written in the file", "ledger: {driver: postgres, dsn_env: \"postgres://spw:s3cret@db/ledger\"}\n",
			[]want{{14, "ledger.dsn_env", "not an environment variable name"}}},
		{"unknown key", "ledger: {driver: postgres, dsn: x}\n", []want{{14, "ledger.dsn", "unknown"}}},
		{"line of a nested field", "ledger:\n  driver: postgres\n  dsn_env: \"host=db password=s3cret\"\n", []want{{16, "ledger.dsn_env", "not an environment variable name"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := parseProblems(t, optsBase+tc.block)
			requireProblems(t, ps, tc.wants...)
			if strings.Contains(ps.Error(), "s3cret") {
				t.Errorf("a problem shows the DSN's password: %v", ps)
			}
		})
	}
}

// sqlite by default, exactly as before (no dsn_env in the served config);
// postgres reads its DSN from SPILLWAY_LEDGER_DSN unless told otherwise.
func TestLedgerDefaults(t *testing.T) {
	for _, tc := range []struct {
		block, driver, env string
	}{
		{"", LedgerSQLite, ""},
		{"ledger: {path: x.db}\n", LedgerSQLite, ""},
		{"ledger: {driver: postgres}\n", LedgerPostgres, DefaultLedgerDSNEnv},
		{"ledger: {driver: postgres, dsn_env: LEDGER_URL}\n", LedgerPostgres, "LEDGER_URL"},
	} {
		c, err := Parse([]byte(optsBase+tc.block), "t.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		if l := c.Ledger; l.Driver != tc.driver || l.DSNEnv != tc.env {
			t.Errorf("%q: driver %q, dsn_env %q; want %q, %q", tc.block, l.Driver, l.DSNEnv, tc.driver, tc.env)
		}
	}
}

// A dsn_env with the sqlite driver does nothing: a warning, not an error.
func TestLedgerWarnings(t *testing.T) {
	c, errs, warns := Check([]byte(optsBase+"ledger: {dsn_env: LEDGER_URL}\n"), "w.yaml")
	if len(errs) != 0 || c == nil {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns, want{14, "ledger.dsn_env", "the driver is sqlite"})
}

// LedgerDSN reads the variable at start-up; unset or empty is a problem on
// the ledger's line, and the DSN itself never appears in one.
func TestLedgerDSN(t *testing.T) {
	c, err := Parse([]byte(optsBase+"ledger:\n  driver: postgres\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if _, ps := c.LedgerDSN("t.yaml", lookup); len(ps) != 1 || ps[0].Line != 14 || !strings.Contains(ps[0].Msg, "SPILLWAY_LEDGER_DSN") || !strings.Contains(ps[0].Msg, "not set") {
		t.Errorf("unset: %v", ps)
	}
	env[DefaultLedgerDSNEnv] = ""
	if _, ps := c.LedgerDSN("t.yaml", lookup); len(ps) != 1 || !strings.Contains(ps[0].Msg, "empty") {
		t.Errorf("empty: %v", ps)
	}
	env[DefaultLedgerDSNEnv] = "postgres://spw:s3cret@db/ledger"
	if dsn, ps := c.LedgerDSN("t.yaml", lookup); dsn != env[DefaultLedgerDSNEnv] || ps != nil {
		t.Errorf("set: %q, %v", dsn, ps)
	}
	lite, _ := Parse([]byte(optsBase), "t.yaml")
	if dsn, ps := lite.LedgerDSN("t.yaml", lookup); dsn != "" || ps != nil {
		t.Errorf("sqlite: %q, %v; want nothing read", dsn, ps)
	}
}
