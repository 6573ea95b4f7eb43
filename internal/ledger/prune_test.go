package ledger

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakePruner has rows requests older than the cut; each Prune deletes up
// to limit of them, or fails while fail is set.
type fakePruner struct {
	mu      sync.Mutex
	rows    int
	fail    error
	calls   int
	befores []time.Time
}

func (f *fakePruner) Prune(_ context.Context, before time.Time, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.befores = append(f.befores, before)
	if f.fail != nil {
		return 0, f.fail
	}
	n := min(limit, f.rows)
	f.rows -= n
	return n, nil
}

// TestRunPrunerBatches: a run deletes everything older than the retention
// in batches of at most Batch, then waits for the next run; the
// retention is counted back from the clock.
func TestRunPrunerBatches(t *testing.T) {
	now := time.Date(2026, 6, 1, 15, 0, 0, 0, time.UTC)
	f := &fakePruner{rows: 5}
	runs := make(chan int, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunPruner(ctx, f, PruneOptions{Retention: 90 * 24 * time.Hour, Batch: 2, Every: time.Millisecond,
			Pause: time.Microsecond, Now: func() time.Time { return now },
			Done: func(n int, err error) {
				if err != nil {
					t.Errorf("run: %v", err)
				}
				runs <- n
			}})
	}()
	if n := <-runs; n != 5 {
		t.Errorf("first run pruned %d, want 5", n)
	}
	if n := <-runs; n != 0 {
		t.Errorf("second run pruned %d, want 0", n)
	}
	cancel()
	<-done // RunPruner returns when its context ends
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls < 4 { // 2 + 2 + 1 + the empty one
		t.Errorf("%d Prune calls, want at least 4 (batches of 2)", f.calls)
	}
	if want := now.Add(-90 * 24 * time.Hour); !f.befores[0].Equal(want) {
		t.Errorf("pruned before %v, want %v", f.befores[0], want)
	}
}

// TestRunPrunerFailsAndRetries: a failing store costs a run, not the
// pruner; zero retention (forever) never prunes.
func TestRunPrunerFailsAndRetries(t *testing.T) {
	f := &fakePruner{rows: 3, fail: errors.New("database down")}
	runs := make(chan error, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunPruner(ctx, f, PruneOptions{Retention: 24 * time.Hour, Every: time.Millisecond,
			Done: func(n int, err error) { runs <- err }})
	}()
	if err := <-runs; err == nil {
		t.Error("a failing Prune reported no error")
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	for err := range runs {
		if err == nil {
			break
		}
	}
	cancel()
	<-done
	if f.rows != 0 {
		t.Errorf("%d rows left after the store came back", f.rows)
	}

	never := &fakePruner{rows: 3}
	RunPruner(context.Background(), never, PruneOptions{}) // returns at once
	if never.calls != 0 {
		t.Errorf("retention 0 pruned (%d calls)", never.calls)
	}
}
