package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// ledgerFlags are the flags that find the ledger: --db, or the config's
// ledger.path, found as serve finds it (--config, $SPILLWAY_CONFIG,
// ./spillway.yaml; relative to --data-dir or the config's directory).
type ledgerFlags struct {
	db, config, dataDir *string
}

func addLedgerFlags(fs *flag.FlagSet) ledgerFlags {
	return ledgerFlags{
		db:      fs.String("db", "", "the ledger file (default: the config's ledger.path)"),
		config:  fs.String("config", "", "the gateway's config (default: $"+configEnv+", else ./"+defaultConfigFile+")"),
		dataDir: fs.String("data-dir", os.Getenv(dataDirEnv), "where a relative ledger.path lives (default: $"+dataDirEnv+", else the config file's directory)"),
	}
}

// open opens the ledger, which must exist: creating it is the gateway's
// job, and a misspelled path must not read as an empty ledger.
func (lf ledgerFlags) open(ctx context.Context) (ledger.Store, error) {
	if st, ok, err := lf.openShared(ctx); ok {
		return st, err
	}
	path, err := lf.path()
	if err != nil {
		return nil, err
	}
	ok, err := ledgerExists(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		from := "--db"
		if *lf.db == "" {
			cfg, _ := lf.configPath()
			from = "ledger.path of " + cfg
		}
		return nil, errNoLedger(path, from)
	}
	return sqlite.Open(ctx, path)
}

// withStore runs f with the ledger open (see open), and closes it after.
func (lf ledgerFlags) withStore(ctx context.Context, f func(ledger.Store) error) error {
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

// configPath is the config file the flags name or imply.
func (lf ledgerFlags) configPath() (string, error) { return findConfig(*lf.config) }

func (lf ledgerFlags) path() (string, error) {
	if *lf.db != "" {
		return *lf.db, nil
	}
	cfgPath, err := lf.configPath()
	if err != nil {
		return "", err
	}
	cfg, err := catalog.Load(cfgPath)
	if err != nil {
		return "", err
	}
	p := cfg.Ledger.Path
	if p == "" {
		p = "spillway.db"
	}
	return statePath(p, cfgPath, *lf.dataDir), nil
}

// limitFlags are the budget and rate flags shared by keys create and
// budgets set.
type limitFlags struct {
	credit, daily *float64
	rpm, tpm      *int
	set           map[string]bool
}

func addLimitFlags(fs *flag.FlagSet, creditName string) *limitFlags {
	return &limitFlags{
		credit: fs.Float64(creditName, 0, "total spend allowed, USD"),
		daily:  fs.Float64("daily-cap-usd", 0, "spend allowed per UTC day, USD"),
		rpm:    fs.Int("rpm", 0, "requests per minute (0 = no limit)"),
		tpm:    fs.Int("tpm", 0, "tokens per minute (0 = no limit)"),
	}
}

// limits returns only the limits given on the command line (a given 0 is a
// real limit of zero).
func (l *limitFlags) limits(fs *flag.FlagSet, creditName string) ledger.Limits {
	var out ledger.Limits
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case creditName:
			out.CreditUSD = l.credit
		case "daily-cap-usd":
			out.DailyCapUSD = l.daily
		}
	})
	out.RPM, out.TPM = *l.rpm, *l.tpm
	return out
}

const keysUsage = `usage:
  spillway keys create --org O --team T [--budget-usd N] [--daily-cap-usd N] [--rpm N] [--tpm N] [--models a,b]
  spillway keys list
  spillway keys revoke KEY_ID

Virtual keys, kept in the ledger; a running gateway picks changes up within
seconds. Run "spillway keys <command> --help" for a command's flags.
`

var keysSubs = []string{"create", "list", "revoke"}

// runKeys manages virtual keys directly in the ledger (the gateway picks
// changes up within seconds).
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, args, err := subcommand("keys", keysUsage, keysSubs, args, stderr)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return keysCreate(ctx, args, stdout, stderr)
	case "list":
		return keysList(ctx, args, stdout, stderr)
	}
	return keysRevoke(ctx, args, stdout, stderr)
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys create", `usage: spillway keys create --org O --team T [flags]

Creates a virtual key and prints its secret once. Limits given here are the
key's own (key scope); --models restricts it to models the config routes.`, stderr)
	lf := addLedgerFlags(fs)
	org := fs.String("org", "", "the key's organisation (required)")
	team := fs.String("team", "", "the key's team (required)")
	models := fs.String("models", "", "comma-separated public model names the key may call (default: all)")
	residency := fs.String("residency", "", "where the key's requests' data must stay (e.g. eu): routed only to deployments with that residency")
	priority := fs.String("priority", "", "the key's requests' priority when a route sheds (low, normal, high, critical), and the most a request may claim in its priority header (default normal)")
	lim := addLimitFlags(fs, "budget-usd")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *org == "" || *team == "" {
		return usageErrorf("--org and --team are required")
	}
	if _, ok := catalog.ParsePriority(*priority); !ok {
		return usageErrorf("--priority %q is not one of %s", *priority, strings.Join(catalog.PriorityNames[:], ", "))
	}
	kr := &keys.Request{Org: *org, Team: *team, Residency: *residency, Priority: *priority, Limits: lim.limits(fs, "budget-usd")}
	if *models != "" {
		for m := range strings.SplitSeq(*models, ",") {
			if m = strings.TrimSpace(m); m != "" {
				kr.Models = append(kr.Models, m)
			}
		}
		if err := lf.checkRouted("--models", kr.Models...); err != nil {
			return err
		}
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		kc, err := keys.Create(ctx, st, kr, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s for org %s, team %s. The key is shown once; keep it:\n%s\n", kc.ID, kc.Org, kc.Team, kc.Key)
		return nil
	})
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys list", "usage: spillway keys list [flags]\n\nLists the virtual keys (never their secrets).", stderr)
	lf := addLedgerFlags(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		ks, err := keys.List(ctx, st)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPREFIX\tORG\tTEAM\tMODELS\tCREATED\tREVOKED")
		for _, k := range ks {
			rev := "-"
			if k.RevokedAt != nil {
				rev = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Org, k.Team, orDash(strings.Join(k.Models, ",")), k.CreatedAt.Format(time.RFC3339), rev)
		}
		return tw.Flush()
	})
}

func keysRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys revoke", "usage: spillway keys revoke [flags] KEY_ID\n\nRevokes a virtual key by its id (key_…, as spillway keys list shows it).", stderr)
	lf := addLedgerFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("give one key id: spillway keys revoke KEY_ID (spillway keys list shows the keys)")
	}
	id := fs.Arg(0)
	if strings.HasPrefix(id, keys.SecretPrefix) {
		// Never echo a secret back.
		return usageErrorf("that is a key's secret, not its id: revoke takes the id (key_…) that spillway keys list shows")
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		k, err := findKey(ctx, st, id)
		if err != nil {
			return err
		}
		if !k.RevokedAt.IsZero() {
			fmt.Fprintf(stdout, "%s was already revoked at %s\n", id, k.RevokedAt.Format(time.RFC3339))
			return nil
		}
		if err := st.RevokeKey(ctx, id, time.Now()); errors.Is(err, ledger.ErrNotFound) {
			return noKey(id)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", id)
		return nil
	})
}

// findKey returns the key with id, or an error that says where the ids are.
func findKey(ctx context.Context, st ledger.Store, id string) (*ledger.Key, error) {
	ks, err := st.Keys(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ks {
		if ks[i].ID == id {
			return &ks[i], nil
		}
	}
	return nil, noKey(id)
}

func noKey(id string) error {
	return fmt.Errorf("no key with id %q (spillway keys list shows the keys)", id)
}

const budgetsUsage = `usage:
  spillway budgets set --scope org|team|key|model --id ID [--credit-usd N] [--daily-cap-usd N] [--rpm N] [--tpm N]
  spillway budgets list

Budgets and rate limits by scope, kept in the ledger; a running gateway
picks changes up within seconds. Run "spillway budgets <command> --help" for
a command's flags.
`

var budgetsSubs = []string{"set", "list"}

// runBudgets sets and lists budgets at org, team, key or model scope.
func runBudgets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, args, err := subcommand("budgets", budgetsUsage, budgetsSubs, args, stderr)
	if err != nil {
		return err
	}
	if sub == "set" {
		return budgetsSet(ctx, args, stdout, stderr)
	}
	return budgetsList(ctx, args, stdout, stderr)
}

func budgetsSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("budgets set", `usage: spillway budgets set --scope org|team|key|model --id ID [flags]

Sets one scope's limits, replacing what it had. --id is the org or team
name, the key id (key_…), or a public model name the config routes.`, stderr)
	lf := addLedgerFlags(fs)
	scope := fs.String("scope", "", "org, team, key or model (required)")
	id := fs.String("id", "", "the org or team name, key id, or public model name (required)")
	lim := addLimitFlags(fs, "credit-usd")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if !ledger.IsScope(*scope) {
		return usageErrorf("--scope must be org, team, key or model")
	}
	if *id == "" {
		return usageErrorf("--id is required (the %s's %s)", *scope, map[string]string{ledger.ScopeOrg: "name",
			ledger.ScopeTeam: "name", ledger.ScopeKey: "id, from spillway keys list", ledger.ScopeModel: "public name"}[*scope])
	}
	l := lim.limits(fs, "credit-usd")
	b, err := l.Budget(*scope, *id, time.Now())
	if err != nil {
		return usageErrorf("%v", err)
	}
	if *scope == ledger.ScopeModel {
		if err := lf.checkRouted("--scope model --id", *id); err != nil {
			return err
		}
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		if err := checkBudgetOwner(ctx, st, *scope, *id, stderr); err != nil {
			return err
		}
		if err := st.SetBudget(ctx, b); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set %s %s\n", *scope, *id)
		return nil
	})
}

// checkBudgetOwner refuses a budget for a key that does not exist, and
// warns (without refusing: a budget may be set before its keys are made)
// when no key belongs to an org or team.
func checkBudgetOwner(ctx context.Context, st ledger.Store, scope, id string, stderr io.Writer) error {
	if scope != ledger.ScopeKey && scope != ledger.ScopeOrg && scope != ledger.ScopeTeam {
		return nil
	}
	ks, err := st.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range ks {
		if (scope == ledger.ScopeKey && k.ID == id) || (scope == ledger.ScopeOrg && k.Org == id) || (scope == ledger.ScopeTeam && k.Team == id) {
			return nil
		}
	}
	if scope == ledger.ScopeKey {
		return noKey(id)
	}
	fmt.Fprintf(stderr, "warning: no key belongs to %s %q yet; the budget is set anyway and applies to the keys created for it (check the spelling: spillway keys list shows the keys)\n", scope, id)
	return nil
}

func budgetsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("budgets list", "usage: spillway budgets list [flags]\n\nLists every scope's limits.", stderr)
	lf := addLedgerFlags(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		bs, err := st.Budgets(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SCOPE\tID\tCREDIT USD\tDAILY CAP USD\tRPM\tTPM")
		for _, b := range bs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.Scope, b.ID, optUSD(b.CreditMicroUSD), optUSD(b.DailyCapMicroUSD), optInt(b.RPM), optInt(b.TPM))
		}
		return tw.Flush()
	})
}

func optUSD(p *int64) string {
	if p == nil {
		return "-"
	}
	return usd(*p)
}

func optInt(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// usageFormats are the output formats of spillway usage.
var usageFormats = []string{"table", "csv", "json"}

// runUsage prints usage from the ledger as a table, CSV or JSON.
func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("usage", `usage: spillway usage [flags]

Usage from the ledger (and what a running gateway's journal holds), grouped
and filtered, as a table, CSV or JSON.`, stderr)
	lf := addLedgerFlags(fs)
	from := fs.String("from", "", "start, RFC 3339 or YYYY-MM-DD (default: all)")
	to := fs.String("to", "", "end, exclusive (default: now)")
	groupBy := fs.String("group-by", "model,deployment", "comma-separated: org, team, key, model, deployment, day")
	format := fs.String("format", "table", "table, csv or json")
	var filters [5]*string
	for i, f := range []string{"org", "team", "key", "model", "deployment"} {
		filters[i] = fs.String(f, "", "only this "+f)
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if !slices.Contains(usageFormats, *format) {
		return usageErrorf("--format %q: the formats are %s", *format, strings.Join(usageFormats, ", "))
	}
	v := url.Values{"from": {*from}, "to": {*to}, "group_by": {*groupBy}}
	for i, f := range []string{"org", "team", "key", "model", "deployment"} {
		v.Set(f, *filters[i])
	}
	q, err := ledger.ParseUsageQuery(v, time.Now())
	if err != nil {
		return usageErrorf("%v", err)
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		// A running gateway's journal holds what it acknowledged in the last
		// ingest interval: counted here too, as /v1/usage counts it.
		path, _ := lf.path()
		if _, err := ledger.CatchUp(ctx, path+".journal", st); err != nil {
			return err
		}
		rows, err := st.Usage(ctx, q)
		if err != nil {
			return err
		}
		ledger.SortUsage(rows)
		switch *format {
		case "csv":
			return ledger.WriteUsageCSV(stdout, q.GroupBy, rows)
		case "json":
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, g := range q.GroupBy {
			fmt.Fprintf(tw, "%s\t", strings.ToUpper(g))
		}
		fmt.Fprintln(tw, "REQUESTS\tOK\tFAILED\tFAILED OVER\tATTEMPTS\tINPUT\tOUTPUT\tCACHED\tCOST USD\t")
		for _, r := range rows {
			for _, g := range q.GroupBy {
				fmt.Fprintf(tw, "%s\t", orDash(r.Group[g]))
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Requests, r.Succeeded, r.Failed, r.FailedOver, r.Attempts,
				r.InputTokens, r.OutputTokens, r.CachedTokens, usd(r.CostMicroUSD))
		}
		return tw.Flush()
	})
}

const ledgerUsage = `usage:
  spillway ledger repair [--db FILE | --config FILE]

Rewrites ledger rows with impossible figures (negative or overflowing
tokens or costs), saying which and how. The gateway does it at start-up too.
`

var ledgerSubs = []string{"repair"}

// runLedger is "spillway ledger repair": the start-up repair, on demand
// (for a ledger that reporting tools read while no gateway runs).
func runLedger(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_, args, err := subcommand("ledger", ledgerUsage, ledgerSubs, args, stderr)
	if err != nil {
		return err
	}
	fs := newFlags("ledger repair", ledgerUsage, stderr)
	lf := addLedgerFlags(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		log := slog.New(slog.DiscardHandler)
		if err := repairLedger(ctx, st, log, stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "the ledger's figures are all within bounds")
		return nil
	})
}
