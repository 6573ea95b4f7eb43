package ledger

import (
	"context"
	"sync"
	"testing"
	"time"
)

// lagClock is a clock tests move by hand.
type lagClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *lagClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *lagClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Without a journal, a record lags from its acceptance until its group
// commit: a store that hangs makes the lag grow with the oldest record's
// age, and the commit brings it back to 0.
func TestWriterLagStoreHangs(t *testing.T) {
	clk := &lagClock{now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := newWriter(f, WriterOptions{MaxDelay: -1}, clk.Now, (&sleeps{}).sleep)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	if l := w.Lag(); l != 0 {
		t.Fatalf("idle writer: lag %v, want 0", l)
	}
	w.SettleAsync(settlement("a"))
	<-f.entered // the writer is committing a, and the store hangs
	clk.Advance(3 * time.Second)
	w.SettleAsync(settlement("b")) // queued behind a, younger
	clk.Advance(time.Second)
	if l := w.Lag(); l != 4*time.Second {
		t.Errorf("store hanging on a for 4s: lag %v, want 4s", l)
	}
	if s := w.Stats(); s.Lag != 4*time.Second {
		t.Errorf("Stats().Lag %v, want 4s", s.Lag)
	}
	close(f.block)
	waitFor(t, "both commits", func() bool { return f.callCount() == 2 && w.Lag() == 0 })
}

// With a journal, a record lags until it is ingested into the store: it
// is durable once appended, but the store, which usage reads, has it only
// after ingestion.
func TestWriterLagJournal(t *testing.T) {
	clk := &lagClock{now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	j, err := OpenJournal(t.TempDir() + "/l.db.journal")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(f, WriterOptions{Journal: j, MaxDelay: -1, ingestTick: make(chan time.Time)}, clk.Now, (&sleeps{}).sleep)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	if err := w.Settle(t.Context(), settlement("a")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if l := w.Lag(); l != 2*time.Second {
		t.Errorf("appended 2s ago, not ingested: lag %v, want 2s", l)
	}
	synced := make(chan error, 1)
	go func() { synced <- w.Sync(context.Background()) }() // ingests now; the store hangs
	<-f.entered
	clk.Advance(time.Second)
	w.SettleAsync(settlement("b"))
	waitFor(t, "b appended", func() bool { return w.Stats().Pending == 2 })
	if l := w.Lag(); l != 3*time.Second {
		t.Errorf("a being ingested for 1s after 2s pending: lag %v, want 3s", l)
	}
	close(f.block)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if l := w.Lag(); l != time.Second {
		t.Errorf("a ingested, b pending for 1s: lag %v, want 1s", l)
	}
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l := w.Lag(); l != 0 {
		t.Errorf("everything ingested: lag %v, want 0", l)
	}
}
