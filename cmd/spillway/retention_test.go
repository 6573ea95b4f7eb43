package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// TestStartPrunerStops: with a retention the pruner runs in its own
// goroutine and stop returns once it has (the store may close after);
// without one nothing starts.
func TestStartPrunerStops(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, retention := range []catalog.Retention{0, catalog.Retention(90 * 24 * time.Hour)} {
		cfg := &catalog.Config{}
		cfg.Ledger.Retention = retention
		stop := startPruner(context.Background(), cfg, s, nil)
		done := make(chan struct{})
		go func() { stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("retention %v: stop did not return", retention.D())
		}
	}
	if accessSampler(&catalog.Config{}) != nil {
		t.Error("no log.access: a sampler, want nil (every line written)")
	}
}
