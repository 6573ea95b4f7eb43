package main

import (
	"context"
	"log/slog"

	"github.com/spillway-gw/spillway/internal/accesslog"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// startPruner runs the ledger's pruner (ledger.retention) in a goroutine
// of its own until ctx ends or the returned stop is called; stop waits for
// it to return, so the store can be closed after. Retention 0 (forever),
// or a store that does not prune, starts nothing.
func startPruner(ctx context.Context, cfg *catalog.Config, store ledger.Store, log *slog.Logger) (stop func()) {
	p, ok := store.(ledger.Pruner)
	retention := cfg.Ledger.Retention.D()
	if !ok || retention <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ledger.RunPruner(ctx, p, ledger.PruneOptions{Retention: retention, Log: log})
	}()
	return func() {
		cancel()
		<-done
	}
}

// accessSampler is the access log's sampling (log.access); nil when every
// line is written.
func accessSampler(cfg *catalog.Config) *accesslog.Sampler {
	return accesslog.New(cfg.Log.Access.Rates())
}
