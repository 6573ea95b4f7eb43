package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

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
	c.validateRetention(p)
}

// MaxRetention bounds ledger.retention (a hundred years: "forever" is 0).
const MaxRetention = 36500 * 24 * time.Hour

// Retention is ledger.retention: how long raw ledger rows are kept; 0
// keeps them forever.
type Retention time.Duration

// D returns the retention as a time.Duration (0: forever).
func (r Retention) D() time.Duration { return time.Duration(r) }

// UnmarshalYAML reads whole days ("90d"), a Go duration ("2160h"), or
// "forever" / 0 (keep forever). Negative values are refused.
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a retention such as \"90d\", got %s", describe(n))
	}
	if n.ShortTag() == "!!null" {
		return nil
	}
	v := strings.TrimSpace(n.Value)
	switch {
	case v == "0" || v == "forever":
		*r = 0
		return nil
	case strings.HasSuffix(v, "d"):
		days, err := strconv.ParseInt(strings.TrimSuffix(v, "d"), 10, 64)
		if err != nil || days < 0 || days > int64(MaxRetention/(24*time.Hour)) {
			return fmt.Errorf("retention %q: write whole days such as \"90d\" (at most %dd), or \"forever\"", v, MaxRetention/(24*time.Hour))
		}
		*r = Retention(time.Duration(days) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("retention %q: write whole days such as \"90d\", a Go duration such as \"2160h\", or \"forever\"", v)
	}
	if d < 0 {
		return fmt.Errorf("retention %q is negative", v)
	}
	*r = Retention(d)
	return nil
}

// MarshalYAML writes whole days as "Nd", anything else as a Go duration.
func (r Retention) MarshalYAML() (any, error) {
	d := time.Duration(r)
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour)), nil
	}
	return d.String(), nil
}

// validateRetention: raw rows are pruned by whole UTC days, so a retention
// is at least one.
func (c *Config) validateRetention(p *problems) {
	if r := c.Ledger.Retention.D(); r != 0 && (r < 24*time.Hour || r > MaxRetention) {
		p.add("ledger.retention", 0, "%s is outside 1d..%dd (raw rows are pruned by whole UTC days; 0 or \"forever\" keeps them)",
			r, MaxRetention/(24*time.Hour))
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
	return c.fromEnv(file, "ledger.dsn_env", l.DSNEnv, "the PostgreSQL ledger's DSN", lookupEnv)
}

// fromEnv is the value of the variable name, which the setting field
// names, or the problem on field's line when it is unset or empty. The
// value (a secret: a DSN, a URL with a password) is never put in a
// Problem; what says what the variable holds.
func (c *Config) fromEnv(file, field, name, what string, lookupEnv func(string) (string, bool)) (string, Problems) {
	p := &problems{file: file, lines: c.lines}
	switch v, ok := lookupEnv(name); {
	case !ok:
		p.add(field, 0, "environment variable %s (%s) is not set", name, what)
	case v == "":
		p.add(field, 0, "environment variable %s (%s) is empty", name, what)
	default:
		return v, nil
	}
	return "", p.ps
}
