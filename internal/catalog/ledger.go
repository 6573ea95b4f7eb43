package catalog

// Ledger.Driver values.
const (
	LedgerSQLite   = "sqlite"   // embedded: one file, one process (the default)
	LedgerPostgres = "postgres" // one database that every replica shares
)

// DefaultLedgerDSNEnv is the variable that holds the PostgreSQL ledger's
// DSN when ledger.dsn_env is not set.
const DefaultLedgerDSNEnv = "SPILLWAY_LEDGER_DSN"

// applyLedgerDefaults fills what only the postgres driver reads; with
// sqlite dsn_env stays empty, so the served config shows nothing for it.
func (c *Config) applyLedgerDefaults() {
	l := &c.Ledger
	setDefault(&l.Driver, LedgerSQLite)
	if l.Driver == LedgerPostgres {
		setDefault(&l.DSNEnv, DefaultLedgerDSNEnv)
	}
}

// validateLedger checks the driver and the DSN's variable name: the DSN
// itself (with its password) never sits in the file.
func (c *Config) validateLedger(p *problems) {
	l := &c.Ledger
	switch l.Driver {
	case LedgerSQLite, LedgerPostgres:
	default:
		p.add("ledger.driver", 0, "%q is not a ledger driver this build has (sqlite, postgres)", l.Driver)
	}
	if l.DSNEnv != "" && !envVarRE.MatchString(l.DSNEnv) {
		p.add("ledger.dsn_env", 0, "%s is not an environment variable name: put the NAME of the variable holding the PostgreSQL DSN here, never the DSN", notShown(l.DSNEnv))
	}
}

// ledgerWarnings warns about ledger settings that do nothing.
func (c *Config) ledgerWarnings(p *problems) {
	if l := &c.Ledger; l.Driver == LedgerSQLite && l.DSNEnv != "" {
		p.add("ledger.dsn_env", 0, "set, but the driver is sqlite: the ledger is the file ledger.path (driver: postgres reads the DSN)")
	}
}

// LedgerDSN returns the PostgreSQL ledger's DSN, read from the variable
// ledger.dsn_env names through lookupEnv (e.g. os.LookupEnv), or the
// problem (with its line) when that variable is unset or empty. It never
// puts the DSN in a Problem. With the sqlite driver it returns "", nil.
func (c *Config) LedgerDSN(file string, lookupEnv func(string) (string, bool)) (string, Problems) {
	l := &c.Ledger
	if l.Driver != LedgerPostgres {
		return "", nil
	}
	p := &problems{file: file, lines: c.lines}
	switch v, ok := lookupEnv(l.DSNEnv); {
	case !ok:
		p.add("ledger.dsn_env", 0, "environment variable %s (the PostgreSQL ledger's DSN) is not set", l.DSNEnv)
	case v == "":
		p.add("ledger.dsn_env", 0, "environment variable %s (the PostgreSQL ledger's DSN) is empty", l.DSNEnv)
	default:
		return v, nil
	}
	return "", p.ps
}
