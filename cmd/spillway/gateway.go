package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/provider/anthropic"
	"github.com/spillway-gw/spillway/internal/provider/bedrock"
	"github.com/spillway-gw/spillway/internal/provider/gemini"
	"github.com/spillway-gw/spillway/internal/provider/openai"
	"github.com/spillway-gw/spillway/internal/redisstate"
	"github.com/spillway-gw/spillway/internal/server"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// registry lists every provider adapter spillway ships.
func registry() *provider.Registry {
	r := provider.NewRegistry()
	r.Register(catalog.KindOpenAI, openai.New())
	r.Register(catalog.KindAnthropic, anthropic.New())
	r.Register(catalog.KindGemini, gemini.New())
	r.Register(catalog.KindBedrock, bedrock.New())
	return r
}

// refreshEvery is how often keys and budgets changed by another process
// (the CLI) are picked up.
const refreshEvery = 5 * time.Second

// fsyncEnv, set to true, turns on WriterOptions.Fsync: an
// fsync per group commit, so that settlements survive a power loss too.
const fsyncEnv = "SPILLWAY_LEDGER_FSYNC"

// gateway is the assembled gateway and what must be closed after it.
type gateway struct {
	*server.Server
	store ledger.Store
	// ledgerDesc names the ledger for start-up lines: its file, or
	// "postgres" and the DSN without its password.
	ledgerDesc string
	writer     *ledger.Writer
	auth       *keys.Authenticator
	budget     *budget.Accountant
	// shared is the shared-state client (nil: shared_state none).
	shared *redisstate.Client
	tracer *tracing.Tracer
	log    *slog.Logger
	// stopPruner stops the ledger's pruner (ledger.retention) and waits
	// for it; never nil once openGateway returned.
	stopPruner func()
}

// openGateway opens the ledger and its journal (path.journal.N), replays
// what an earlier process left in the journal, releases reservations a
// crash left open, seeds budgets and spend, and assembles the server.
// Background refreshers run until ctx ends; call close after the HTTP
// server has drained.
// gatewayOption tunes openGateway.
type gatewayOption func(*gatewaySetup)

type gatewaySetup struct {
	// ledgerPath is the ledger file; default the config's ledger.path as
	// written (serve passes it resolved: see statePath).
	ledgerPath string
	// configPath names the config file in problems (the DSN's variable
	// unset); default "config".
	configPath string
	server     []func(*server.Options)
}

// withConfigPath names the config file the gateway was started from.
func withConfigPath(path string) gatewayOption {
	return func(g *gatewaySetup) { g.configPath = path }
}

// withAccessLog writes one access-log line per request to w, by hand
// (the hot path's logging), instead of through slog.
func withAccessLog(w io.Writer) gatewayOption {
	return func(g *gatewaySetup) {
		g.server = append(g.server, func(o *server.Options) { o.AccessLog = w })
	}
}

// withLedgerPath opens the ledger at path instead of ledger.path as
// written in the config.
func withLedgerPath(path string) gatewayOption {
	return func(g *gatewaySetup) { g.ledgerPath = path }
}

func openGateway(ctx context.Context, holder *catalog.Holder, log *slog.Logger, stdout io.Writer, opts ...gatewayOption) (*gateway, error) {
	cfg := holder.Load().Config()
	setup := gatewaySetup{ledgerPath: cfg.Ledger.Path}
	for _, o := range opts {
		o(&setup)
	}
	ledgerPath := setup.ledgerPath
	fsync := false
	if v := os.Getenv(fsyncEnv); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", fsyncEnv, v)
		}
		fsync = b
	}
	opened, err := openLedgerStore(ctx, cfg, cmp.Or(setup.configPath, "config"), ledgerPath)
	if err != nil {
		return nil, err
	}
	store := opened.Store
	if opened.fresh {
		// Said loudly: a ledger deleted since the last run looks the same,
		// and its keys and usage are gone.
		abs, _ := filepath.Abs(ledgerPath)
		log.Warn("no ledger at the configured path: created a new, empty one", "path", abs)
		fmt.Fprintf(stdout, "created a new, empty ledger at %s (if one was there before, its keys and usage are not in it)\n", abs)
	}
	g := &gateway{store: store, ledgerDesc: opened.desc}
	ok := false
	defer func() {
		if !ok {
			store.Close()
		}
	}()
	journal, err := ledger.OpenJournal(ledgerPath + ".journal")
	if err != nil {
		return nil, fmt.Errorf("opening the ledger's journal: %w", err)
	}
	defer func() {
		if !ok {
			journal.Close()
		}
	}()
	// Before anything reads spend: the journal holds settlements the
	// store may not have yet.
	rec, err := journal.Recover(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("replaying the ledger's journal: %w", err)
	}
	if rec.Segments > 0 {
		log.Info("replayed the ledger journal", "segments", rec.Segments, "reservations", rec.Reservations,
			"settlements", rec.Settlements, "torn_bytes", rec.TornBytes, "rejected", rec.Rejected)
	}
	if rec.Rejected > 0 {
		log.Error("the ledger refused records replayed from its journal", "rejected", rec.Rejected)
	}
	released := rec.Released
	if len(released) > 0 {
		var total int64
		for _, r := range released {
			total += r.AmountMicro
			log.Warn("released a reservation left open by a crash", "request_id", r.RequestID, "key", r.KeyID, "amount_micro_usd", r.AmountMicro)
		}
		fmt.Fprintf(stdout, "released %d reservations left open by an earlier crash (%s USD held)\n", len(released), usd(total))
	}
	// Before spend is summed: a row with impossible figures (from a gateway
	// older than the writer's bounds) would fail every sum.
	if err := repairLedger(ctx, store, log, stdout); err != nil {
		return nil, err
	}
	g.budget = budget.New(nil)
	if err := loadBudgets(ctx, store, g.budget, true); err != nil {
		return nil, err
	}
	g.auth = keys.NewAuthenticator(store, log, nil)
	if err := g.auth.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("loading virtual keys: %w", err)
	}
	if g.auth.Count() == 0 {
		// A fresh ledger: one key so the gateway is usable at once.
		secret, k, err := keys.New(ctx, store, "default", "default", nil, time.Now())
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "no virtual keys yet: created %s for org default, team default (shown once; keep it):\n  %s\n", k.ID, secret)
	}
	// The admin credential exists from the first start, as the first key
	// does: stored hashed, printed once, rotated by spillway admin rotate.
	// An operator who sets SPILLWAY_ADMIN_KEY has chosen one already.
	admin := keys.NewAdminAuth(store, os.Getenv("SPILLWAY_ADMIN_KEY"))
	if err := admin.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("loading the admin key: %w", err)
	}
	if !admin.FromStore() && os.Getenv("SPILLWAY_ADMIN_KEY") == "" {
		secret, _, err := keys.NewAdmin(ctx, store, time.Now())
		if err != nil {
			return nil, fmt.Errorf("creating the admin key: %w", err)
		}
		if err := admin.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("loading the admin key: %w", err)
		}
		fmt.Fprintf(stdout, "no admin key yet: created one for /v1/admin/*, spillway health and explain (shown once; keep it; spillway admin rotate makes a new one):\n  %s\n", secret)
	}
	go admin.Run(ctx, refreshEvery, func(err error) { log.Warn("refreshing the admin key", "err", err) })
	go g.auth.Run(ctx, refreshEvery)
	go refreshBudgets(ctx, store, g.budget, log)
	g.writer = ledger.NewWriter(store, ledger.WriterOptions{Log: log, Journal: journal, Fsync: fsync,
		Watch: opened.watch, MinFreeBytes: cfg.Ledger.MinFreeBytes})
	g.stopPruner = startPruner(ctx, cfg, store, log)
	defer func() {
		if !ok {
			g.stopPruner() // before the store closes
		}
	}()
	ic := cfg.Idempotency
	so := server.Options{
		Catalog:      holder,
		Registry:     registry(),
		AdminKey:     os.Getenv("SPILLWAY_ADMIN_KEY"),
		Admin:        admin,
		Log:          log,
		Auth:         g.auth,
		Budget:       g.budget,
		Ledger:       g.writer,
		Store:        store,
		Idempotency:  idempotency.New(idempotency.Options{MaxEntries: ic.MaxEntries, MaxBytes: ic.MaxBytes, TTL: ic.TTL.D()}),
		AccessSample: accessSampler(cfg),
	}
	for _, o := range setup.server {
		o(&so)
	}
	if g.shared, err = openSharedState(cfg, cmp.Or(setup.configPath, "config"), log, &so); err != nil {
		return nil, err
	}
	if g.tracer, err = openTracer(ctx, cfg, log); err != nil {
		return nil, err
	}
	g.log, so.Tracer = log, g.tracer
	g.Server = server.New(so)
	ok = true
	return g, nil
}

// close flushes the ledger and closes it.
func (g *gateway) close(ctx context.Context) error {
	g.stopPruner()
	if g.shared != nil {
		defer g.shared.Close()
	}
	closeTracer(g.tracer, g.log)
	err := g.writer.Close(ctx)
	if cerr := g.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// repairLedger rewrites the ledger's rows with impossible figures, logging
// each and printing a summary; nothing when there are none.
func repairLedger(ctx context.Context, store ledger.Store, log *slog.Logger, stdout io.Writer) error {
	fixed, err := store.Repair(ctx)
	if err != nil {
		return fmt.Errorf("repairing the ledger: %w", err)
	}
	for _, r := range fixed {
		row := "request"
		if r.Seq >= 0 {
			row = fmt.Sprintf("attempt %d", r.Seq)
		}
		log.Warn("repaired a ledger row with impossible figures", "request_id", r.RequestID, "row", row, "what", r.What)
		fmt.Fprintf(stdout, "repaired ledger row %s (%s): %s\n", r.RequestID, row, r.What)
	}
	if len(fixed) > 0 {
		fmt.Fprintf(stdout, "repaired %d ledger rows with impossible figures (negative or beyond %d tokens / %s USD)\n",
			len(fixed), ledger.MaxTokens, usd(ledger.MaxCostMicro))
	}
	return nil
}

// loadBudgets sets the accountant's limits from the ledger, and with spend
// also what every scope has spent.
func loadBudgets(ctx context.Context, store ledger.Store, a *budget.Accountant, spend bool) error {
	bs, err := store.Budgets(ctx)
	if err != nil {
		return fmt.Errorf("loading budgets: %w", err)
	}
	a.SetBudgets(bs)
	if !spend {
		return nil
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	sp, err := store.Spends(ctx, day)
	if err != nil {
		return fmt.Errorf("loading spend: %w", err)
	}
	a.LoadSpend(sp, day)
	return nil
}

// refreshBudgets picks up budgets set by another process until ctx ends.
func refreshBudgets(ctx context.Context, store ledger.Store, a *budget.Accountant, log *slog.Logger) {
	t := time.NewTicker(refreshEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := loadBudgets(ctx, store, a, false); err != nil && ctx.Err() == nil {
				log.Warn("refreshing budgets", "err", err)
			}
		}
	}
}

// usd formats micro-dollars.
func usd(micro int64) string { return fmt.Sprintf("%d.%06d", micro/1e6, micro%1e6) }
