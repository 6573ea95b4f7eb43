package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/drill"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/mock"
)

// drillModel is the exact model of the drill's pool, and its public name.
const drillModel = "claude-sonnet-4-5"

// drillKeyEnv holds the credential of a drill deployment whose adapter needs
// one (Bedrock); the mocks accept any.
const drillKeyEnv = "SPILLWAY_DRILL_MOCK_KEY"

// drillRung is one mock deployment of the drill's pool. Prices differ per
// rung (and have fractional micro-dollars), so a cost taken at the wrong
// rung's price, or rounded down, is caught.
type drillRung struct {
	id, kind string
	price    string
	extra    string // more YAML for the deployment
}

func drillRungs() []drillRung {
	rs := []drillRung{
		{id: "p-openai", kind: catalog.KindOpenAI, price: "{input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3}",
			// The primary fails 38% of its requests for the whole run. Eight
			// consecutive failures (not two) open its circuit and its error
			// rate may reach 75% before a cooldown, so it stays mostly in
			// rotation and its failures are failed over request by request
			// instead of being hidden behind an always-open circuit; it
			// still opens now and then, and recovers through its probe.
			extra: "failure_threshold: 8, max_error_rate: 0.75, "},
		{id: "s-anthropic", kind: catalog.KindAnthropic, price: "{input_per_mtok: 2.5, output_per_mtok: 12.5, cached_input_per_mtok: 0.25}"},
		{id: "t-gemini", kind: catalog.KindGemini, price: "{input_per_mtok: 1.25, output_per_mtok: 10, cached_input_per_mtok: 0.3125}"},
	}
	if _, ok := registry().Get(catalog.KindBedrock); ok {
		rs = append(rs, drillRung{id: "q-bedrock", kind: catalog.KindBedrock, price: "{input_per_mtok: 3.3, output_per_mtok: 16.5, cached_input_per_mtok: 0.33}"})
	}
	return rs
}

// Silence bounds and health of every drill deployment: short, so that a
// silent provider costs 300ms (streams) or 1s (non-streamed answers, which
// only the total bounds), and an open, suppressed or cooling circuit
// half-opens after 1s: several times per phase even in the short drill.
const drillTimeouts = "{connect: 1s, first_byte: 300ms, idle: 300ms, total: 1s}"
const drillHealth = "open_for: 1s, suppress_for: 1s, cooldown: 1s, window: 10s, min_samples: 20, last_resort_every: 250ms"

// drillPool names the pool's rungs in order, for the report.
func drillPool() string {
	var ids []string
	for _, r := range drillRungs() {
		ids = append(ids, r.id)
	}
	return strings.Join(ids, " > ")
}

// drillConfig is the YAML of the drill's gateway: head (its ledger and
// shared state) and the pool of mocks.
func drillConfig(rs []drillRung, addrs []string, head string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("deployments:\n")
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.id
		fmt.Fprintf(&b, "  - id: %s\n    provider: %s\n    base_url: http://%s\n    model: mock-%s\n", r.id, r.kind, addrs[i], r.id)
		fmt.Fprintf(&b, "    price: %s\n    context_window: 200000\n    max_output_tokens: 8192\n", r.price)
		fmt.Fprintf(&b, "    timeouts: %s\n    health: {%s%s}\n", drillTimeouts, r.extra, drillHealth)
		if r.kind == catalog.KindBedrock {
			fmt.Fprintf(&b, "    region: us-east-1\n    credential_env: %s\n", drillKeyEnv)
		}
	}
	fmt.Fprintf(&b, "pools:\n  - id: drill\n    model: %s\n    deployments: [%s]\n", drillModel, strings.Join(ids, ", "))
	b.WriteString("    equivalence: {by: spillway drill, date: \"2026-01-01\", evidence: drill-mocks-answer-alike}\n")
	fmt.Fprintf(&b, "routes:\n  - model: %s\n    pool: drill\n", drillModel)
	return b.String()
}

// runDrill assembles mocks, a gateway on a fresh ledger and a key, all in
// process on loopback, and runs the chaos drill against them. It returns an
// error when an invariant broke.
func runDrill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("drill", `usage: spillway drill [flags]

The seeded chaos drill: a pool of mock deployments under faults, every
dialect, invariants checked; exits non-zero when one broke.`, stderr)
	short := fs.Bool("short", false, fmt.Sprintf("the CI drill (%d requests) instead of the long one (%d)", drill.ShortRequests, drill.LongRequests))
	n := fs.Int("requests", 0, "requests to send (default: by mode)")
	conc := fs.Int("concurrency", 32, "requests in flight at once")
	rate := fs.Float64("rate", 0, fmt.Sprintf("most requests started per second, -1 for no cap (default %d short, %d long)", drill.ShortRate, drill.LongRate))
	seed := fs.Uint64("seed", 1, "seed of the request schedule and the mocks' faults")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	logPath := fs.String("log", "", "write the gateway's log (JSON, debug level) to this file, to investigate a failure; with --replicas each replica's (its serve log) to FILE.0, FILE.1, ...")
	var rf replicaFlags
	rf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfg := drill.Config{Seed: *seed, Requests: *n, Concurrency: *conc, Short: *short, Rate: *rate}
	if !*quiet {
		cfg.Progress = stderr
	}
	log := slog.New(slog.DiscardHandler)
	if *logPath != "" && *rf.n == 0 { // replicas log to logPath.N
		f, err := os.Create(*logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		log = slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	fmt.Fprintf(stdout, "pool %s, every rung: timeouts %s, health {%s}; the primary also {%s}\n",
		drillPool(), drillTimeouts, drillHealth, strings.TrimSuffix(drillRungs()[0].extra, ", "))
	var rep *drill.Report
	var err error
	if *rf.n != 0 {
		rep, err = drillReplicas(ctx, cfg, rf, *logPath, stdout)
	} else {
		rep, err = drillOnce(ctx, cfg, log)
	}
	if rep != nil {
		rep.WriteText(stdout)
		if *jsonPath != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				return errors.Join(err, fmt.Errorf("writing %s: %w", *jsonPath, jerr))
			}
		}
	}
	return err
}

// drillMocks starts the pool's mock deployments on loopback; stop shuts
// them down (stalled requests cut first, so at once).
func drillMocks(rs []drillRung, seed uint64) (mocks []*mock.Mock, addrs []string, stop func(), err error) {
	for _, r := range rs {
		if r.kind == catalog.KindBedrock && os.Getenv(drillKeyEnv) == "" {
			// The Bedrock adapter signs only with a credential; the mock
			// takes any. Set for this process (and its replicas) only.
			if err := os.Setenv(drillKeyEnv, "drill"); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for i, r := range rs {
		m, err := mock.New(r.kind, mock.Options{Name: r.id, Seed: int64(seed) + int64(i)})
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		addr, stopServer, err := listenLoopback(m)
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		stops = append(stops, stopServer, m.Close) // run backwards: m.Close first
		mocks, addrs = append(mocks, m), append(addrs, addr)
	}
	return mocks, addrs, stop, nil
}

// drillOnce builds the drill's world, runs the drill and tears it down.
func drillOnce(ctx context.Context, cfg drill.Config, log *slog.Logger) (*drill.Report, error) {
	rs := drillRungs()
	mocks, addrs, stopMocks, err := drillMocks(rs, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer stopMocks()
	dir, err := os.MkdirTemp("", "spillway-drill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ledgerPath := filepath.Join(dir, "drill.db")
	cfgPath := filepath.Join(dir, "drill.yaml")
	if err := os.WriteFile(cfgPath, []byte(drillConfig(rs, addrs, fmt.Sprintf("ledger:\n  path: %q\n", ledgerPath))), 0o644); err != nil {
		return nil, err
	}
	snap, err := catalog.LoadSnapshot(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("the drill's config: %w", err)
	}
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	gw, err := openGateway(bg, catalog.NewHolder(snap), log, io.Discard)
	if err != nil {
		return nil, err
	}
	defer gw.close(context.Background())
	secret, _, err := keys.New(ctx, gw.store, "drill", "drill", nil, time.Now())
	if err != nil {
		return nil, err
	}
	// Refresh now rather than wait for the next tick: the key was made
	// after the authenticator loaded.
	if err := gw.auth.Refresh(ctx); err != nil {
		return nil, err
	}
	gwAddr, stopGW, err := listenLoopback(gw)
	if err != nil {
		return nil, err
	}
	defer stopGW()
	t := drill.Target{
		BaseURL:    "http://" + gwAddr,
		Key:        secret,
		Model:      drillModel,
		LedgerPath: ledgerPath,
		Flush: func(ctx context.Context) error {
			stopBG()
			return gw.close(ctx)
		},
	}
	return runOnRungs(ctx, t, cfg, snap, rs, mocks)
}

// runOnRungs gives t the drill's rungs, each deployment as the config
// loaded it with its mock, and runs the drill.
func runOnRungs(ctx context.Context, t drill.Target, cfg drill.Config, snap *catalog.Snapshot, rs []drillRung, mocks []*mock.Mock) (*drill.Report, error) {
	for i, r := range rs {
		d, ok := snap.Deployment(r.id)
		if !ok {
			return nil, fmt.Errorf("the drill's config lost deployment %s", r.id)
		}
		t.Rungs = append(t.Rungs, drill.Rung{Deployment: d, Mock: mocks[i]})
	}
	return drill.Run(ctx, t, cfg)
}
