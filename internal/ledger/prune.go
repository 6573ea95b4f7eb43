package ledger

import (
	"context"
	"log/slog"
	"time"
)

// PruneOptions configure RunPruner. Every zero field means its default.
type PruneOptions struct {
	// Retention is how long raw request, attempt and reservation rows are
	// kept, counted in whole UTC days: rows that started before the UTC
	// day of now minus Retention are pruned. Zero keeps them forever
	// (RunPruner returns at once). Daily aggregates are kept for good.
	Retention time.Duration
	// Batch is the most requests one transaction deletes. Default 1000:
	// on SQLite a batch holds the single writer, so settlements wait for
	// it at most that long (~55 ms on SQLite at load average 25).
	Batch int
	// Every is how often pruning runs (and the wait before the first
	// run, so that start-up never waits for it). Default 1h.
	Every time.Duration
	// Pause is the least wait between two batches of one run; a batch
	// that took longer is followed by a pause as long as it took, so
	// pruning never takes more than half of the store's writer. Default
	// 10ms.
	Pause time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives one line per run that pruned something (default: none).
	Log *slog.Logger
	// Done, when set, is called after every run with how many requests
	// it pruned and its error (tests, metrics).
	Done func(pruned int, err error)
}

const (
	defaultPruneBatch = 1000
	defaultPruneEvery = time.Hour
	defaultPrunePause = 10 * time.Millisecond
)

// RunPruner prunes p's raw rows older than o.Retention, now and then, in
// bounded batches, until ctx ends; it returns when ctx ends (or at once
// when Retention is zero). The caller owns the goroutine it runs in and
// must let it return before closing the store.
func RunPruner(ctx context.Context, p Pruner, o PruneOptions) {
	if o.Retention <= 0 {
		return
	}
	o.Batch = cmpOr(o.Batch, defaultPruneBatch)
	o.Every = cmpOr(o.Every, defaultPruneEvery)
	o.Pause = cmpOr(o.Pause, defaultPrunePause)
	if o.Now == nil {
		o.Now = time.Now
	}
	t := time.NewTimer(o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := pruneOnce(ctx, p, &o)
		if o.Done != nil {
			o.Done(n, err)
		}
		if o.Log != nil && (n > 0 || (err != nil && ctx.Err() == nil)) {
			if err != nil {
				o.Log.Warn("pruning the ledger's raw rows", "pruned_requests", n, "err", err)
			} else {
				o.Log.Info("pruned the ledger's raw rows", "pruned_requests", n,
					"before", o.Now().Add(-o.Retention).UTC().Format(DayLayout))
			}
		}
		t.Reset(o.Every)
	}
}

// pruneOnce deletes, batch by batch, everything older than the retention.
func pruneOnce(ctx context.Context, p Pruner, o *PruneOptions) (int, error) {
	before := o.Now().Add(-o.Retention)
	total := 0
	for {
		start := time.Now()
		n, err := p.Prune(ctx, before, o.Batch)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
		pause := max(o.Pause, time.Since(start))
		w := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			w.Stop()
			return total, ctx.Err()
		case <-w.C:
		}
	}
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
