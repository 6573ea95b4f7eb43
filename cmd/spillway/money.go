package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
	"github.com/spillway-gw/spillway/internal/server"
)

// ledgerFlags are the flags that find the ledger: --db, or the config's
// ledger path.
type ledgerFlags struct {
	db, config *string
}

func addLedgerFlags(fs *flag.FlagSet) ledgerFlags {
	return ledgerFlags{
		db:     fs.String("db", "", "the ledger file (default: the config's ledger.path)"),
		config: fs.String("config", "examples/mock.yaml", "config whose ledger.path to use when --db is not given"),
	}
}

func (lf ledgerFlags) open(ctx context.Context) (*sqlite.Store, error) {
	path, err := lf.path()
	if err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, path)
}

func (lf ledgerFlags) path() (string, error) {
	if *lf.db != "" {
		return *lf.db, nil
	}
	cfg, err := catalog.Load(*lf.config)
	if err != nil {
		return "", err
	}
	return cfg.Ledger.Path, nil
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
func (l *limitFlags) limits(fs *flag.FlagSet, creditName string) server.Limits {
	var out server.Limits
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

// runKeys manages virtual keys directly in the ledger (the gateway picks
// changes up within seconds).
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: spillway keys create|list|revoke [flags]")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLedgerFlags(fs)
	switch sub {
	case "create":
		org := fs.String("org", "", "the key's organisation (required)")
		team := fs.String("team", "", "the key's team (required)")
		models := fs.String("models", "", "comma-separated public model names the key may call (default: all)")
		lim := addLimitFlags(fs, "budget-usd")
		if err := fs.Parse(args); err != nil {
			return err
		}
		st, err := lf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
		kr := &server.KeyRequest{Org: *org, Team: *team, Limits: lim.limits(fs, "budget-usd")}
		if *models != "" {
			kr.Models = strings.Split(*models, ",")
		}
		kc, err := server.CreateKey(ctx, st, kr, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s for org %s, team %s. The key is shown once; keep it:\n%s\n", kc.ID, kc.Org, kc.Team, kc.Key)
		return nil
	case "list":
		if err := fs.Parse(args); err != nil {
			return err
		}
		st, err := lf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
		ks, err := server.ListKeys(ctx, st)
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
	case "revoke":
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: spillway keys revoke KEY_ID")
		}
		st, err := lf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.RevokeKey(ctx, fs.Arg(0), time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		return nil
	}
	return fmt.Errorf("unknown keys command %q (create, list, revoke)", sub)
}

// runBudgets sets and lists budgets at org, team, key or model scope.
func runBudgets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: spillway budgets set|list [flags]")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("budgets "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLedgerFlags(fs)
	switch sub {
	case "set":
		scope := fs.String("scope", "", "org, team, key or model (required)")
		id := fs.String("id", "", "the org or team name, key id, or public model name (required)")
		lim := addLimitFlags(fs, "credit-usd")
		if err := fs.Parse(args); err != nil {
			return err
		}
		switch *scope {
		case ledger.ScopeOrg, ledger.ScopeTeam, ledger.ScopeKey, ledger.ScopeModel:
		default:
			return fmt.Errorf("--scope must be org, team, key or model")
		}
		if *id == "" {
			return fmt.Errorf("--id is required")
		}
		l := lim.limits(fs, "credit-usd")
		b, err := l.Budget(*scope, *id, time.Now())
		if err != nil {
			return err
		}
		st, err := lf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.SetBudget(ctx, b); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set %s %s\n", *scope, *id)
		return nil
	case "list":
		if err := fs.Parse(args); err != nil {
			return err
		}
		st, err := lf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
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
	}
	return fmt.Errorf("unknown budgets command %q (set, list)", sub)
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

// runUsage prints usage from the ledger as a table, CSV or JSON.
func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLedgerFlags(fs)
	from := fs.String("from", "", "start, RFC 3339 or YYYY-MM-DD (default: all)")
	to := fs.String("to", "", "end, exclusive (default: now)")
	groupBy := fs.String("group-by", "model,deployment", "comma-separated: org, team, key, model, deployment, day")
	format := fs.String("format", "table", "table, csv or json")
	var filters [5]*string
	for i, f := range []string{"org", "team", "key", "model", "deployment"} {
		filters[i] = fs.String(f, "", "only this "+f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := url.Values{"from": {*from}, "to": {*to}, "group_by": {*groupBy}}
	for i, f := range []string{"org", "team", "key", "model", "deployment"} {
		v.Set(f, *filters[i])
	}
	q, pub := server.ParseUsageQuery(v, time.Now())
	if pub != nil {
		return fmt.Errorf("%s", pub.Message)
	}
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
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
	server.SortUsage(rows)
	switch *format {
	case "csv":
		return server.WriteUsageCSV(stdout, q.GroupBy, rows)
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
}

// runLedger is "spillway ledger repair": the start-up repair, on demand
// (for a ledger that reporting tools read while no gateway runs).
func runLedger(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "repair" {
		return fmt.Errorf("usage: spillway ledger repair [--db FILE | --config FILE]")
	}
	fs := flag.NewFlagSet("ledger repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLedgerFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	if err := repairLedger(ctx, st, log, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "the ledger's figures are all within bounds")
	return nil
}
