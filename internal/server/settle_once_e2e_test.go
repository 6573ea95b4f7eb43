package server_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/server"
)

// countingStore counts every settlement and reservation the gateway's
// ledger writer hands the store, per request id: a request settled twice
// shows here even where the store would skip the second row. With gate
// set, batches that settle wait for it (a slow disk).
type countingStore struct {
	ledger.Store
	mu          sync.Mutex
	settled     map[string]int
	reserved    map[string]int
	gate        chan struct{}
	gateReached chan struct{} // closed when a settling batch first waits at gate
	reachedOnce sync.Once
}

func (s *countingStore) WriteBatch(ctx context.Context, b *ledger.Batch) error {
	if s.gate != nil && len(b.Settlements) > 0 {
		s.reachedOnce.Do(func() { close(s.gateReached) })
		<-s.gate
	}
	s.mu.Lock()
	for _, st := range b.Settlements {
		s.settled[st.Request.RequestID]++
	}
	for _, r := range b.Reservations {
		s.reserved[r.RequestID]++
	}
	s.mu.Unlock()
	return s.Store.WriteBatch(ctx, b)
}

// onceHarness is the test gateway with its ledger writer over a counting
// store, and a key-scope credit so every scope's hold is visible.
type onceHarness struct {
	*harness
	counts *countingStore
	writer *ledger.Writer
}

func newOnceHarness(t *testing.T, gated bool, transport func(*catalog.Deployment, http.RoundTripper) http.RoundTripper, rungs ...rungSpec) *onceHarness {
	t.Helper()
	oh := &onceHarness{}
	oh.harness = newHarnessOpts(t, nil, func(o *server.Options) {
		oh.counts = &countingStore{Store: o.Store, settled: map[string]int{}, reserved: map[string]int{}}
		if gated {
			oh.counts.gate, oh.counts.gateReached = make(chan struct{}), make(chan struct{})
		}
		oh.writer = ledger.NewWriter(oh.counts, ledger.WriterOptions{MinFreeBytes: -1})
		o.Ledger = oh.writer
		o.Transport = transport
	}, rungs...)
	t.Cleanup(func() {
		if oh.counts.gate != nil {
			select {
			case <-oh.counts.gate:
			default:
				close(oh.counts.gate)
			}
		}
		_ = oh.writer.Close(context.Background())
	})
	oh.setBudget(t, `{"scope":"key","id":"`+oh.keyRec.ID+`","credit_usd":10}`)
	return oh
}

// settledOnce checks that the one request the test sent was reserved
// once and settled exactly once, with one request row, its status one of
// want,
// no reservation left open, and every scope's hold released, its spend
// the row's cost. It returns the row.
func (oh *onceHarness) settledOnce(t *testing.T, want ...string) reqRow {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var id string
	for {
		if err := oh.writer.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		oh.counts.mu.Lock()
		for k := range oh.counts.settled {
			id = k
		}
		settled, reserved := len(oh.counts.settled), len(oh.counts.reserved)
		oh.counts.mu.Unlock()
		if settled > 0 || time.Now().After(deadline) {
			if settled != 1 || reserved != 1 {
				t.Fatalf("%d requests settled, %d reserved; want one of each", settled, reserved)
			}
			break
		}
		time.Sleep(5 * time.Millisecond) // a caller who left is settled without waiting
	}
	// Settle has returned everywhere it was called once the handler is
	// done; a second settlement would follow the first within the request.
	time.Sleep(50 * time.Millisecond)
	if err := oh.writer.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	oh.counts.mu.Lock()
	ns, nr := oh.counts.settled[id], oh.counts.reserved[id]
	oh.counts.mu.Unlock()
	if ns != 1 || nr != 1 {
		t.Fatalf("%s: settled %d times, reserved %d times", id, ns, nr)
	}
	n, row, _ := oh.rows(t, id)
	if n != 1 || !slices.Contains(want, row.status) {
		t.Fatalf("%s: %d rows %+v, want one %q", id, n, row, want)
	}
	var open int
	if err := oh.db(t).QueryRow(`SELECT count(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d reservations left open", open)
	}
	for _, s := range oh.budget.Snapshot() {
		if s.HeldMicro != 0 || s.SpentMicro != row.cost {
			t.Errorf("scope %s/%s holds %d, spent %d; want 0 held and the row's %d spent", s.Kind, s.ID, s.HeldMicro, s.SpentMicro, row.cost)
		}
	}
	return row
}

// stream starts a streamed chat and hands each chunk's index to next,
// which says whether to go on reading; it cancels the request when next
// says stop.
func (oh *onceHarness) stream(t *testing.T, next func(i int) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := oh.client()
	s := c.Chat.Completions.NewStreaming(ctx, hello())
	for i := 0; s.Next(); i++ {
		if !next(i) {
			cancel()
			break
		}
	}
	_ = s.Close()
}

// TestSettledExactlyOnce: however a request ends (its caller leaving at
// each phase of a stream, its provider failing after commit, a panic, an
// interrupt racing the caller's exit), it is reserved once and settled
// exactly once, and every budget hold is released once at the charged
// amount.
func TestSettledExactlyOnce(t *testing.T) {
	t.Run("caller leaves before the first byte", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			oh := newOnceHarness(t, false, nil, rungSpec{"primary", "openai"})
			oh.fault("primary", "delay=3s")
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			c := oh.client()
			if stream {
				s := c.Chat.Completions.NewStreaming(ctx, hello())
				for s.Next() {
				}
			} else {
				_, _ = c.Chat.Completions.New(ctx, hello())
			}
			if row := oh.settledOnce(t, "cancelled"); row.cost != 0 {
				t.Errorf("cost %d before anything was delivered", row.cost)
			}
		})
	})
	t.Run("caller leaves mid-stream", func(t *testing.T) {
		oh := newOnceHarness(t, false, nil, rungSpec{"primary", "openai"})
		oh.fault("primary", "stall_after=3;tokens=20")
		oh.stream(t, func(i int) bool { return i < 3 }) // the role chunk and 3 content chunks
		if row := oh.settledOnce(t, "cancelled"); row.out != 3 {
			t.Errorf("%+v: want the 3 delivered tokens", row)
		}
	})
	t.Run("caller leaves while its settlement is written", func(t *testing.T) {
		oh := newOnceHarness(t, true, nil, rungSpec{"primary", "openai"})
		oh.fault("primary", "tokens=5")
		done := make(chan struct{})
		go func() {
			defer close(done)
			oh.stream(t, func(int) bool { return true })
		}()
		// The answer's end waits on its durable row; the caller leaves
		// meanwhile, then the disk catches up.
		<-oh.counts.gateReached
		oh.gw.CloseClientConnections()
		<-done
		close(oh.counts.gate)
		if row := oh.settledOnce(t, "ok"); row.out != 5 {
			t.Errorf("%+v: want the whole answer's 5 tokens", row)
		}
	})
	t.Run("caller reads to the end", func(t *testing.T) {
		oh := newOnceHarness(t, false, nil, rungSpec{"primary", "openai"})
		oh.stream(t, func(int) bool { return true })
		oh.settledOnce(t, "ok")
	})
	t.Run("provider fails after commit", func(t *testing.T) {
		for _, kind := range []string{"openai", "anthropic"} {
			t.Run(kind, func(t *testing.T) {
				oh := newOnceHarness(t, false, nil, rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				oh.fault("primary", "die_after=4;tokens=20")
				oh.stream(t, func(int) bool { return true })
				if row := oh.settledOnce(t, "interrupted"); row.out != 4 {
					t.Errorf("%+v: want the 4 delivered tokens", row)
				}
			})
		}
	})
	t.Run("panic in the handler", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			oh := newOnceHarness(t, false, func(_ *catalog.Deployment, base http.RoundTripper) http.RoundTripper {
				return &panicky{base: base}
			}, rungSpec{"primary", "openai"})
			if r := chat(t, oh.harness, stream, hello()); r.err == nil {
				t.Fatal("the panicking request succeeded")
			}
			oh.settledOnce(t, "failed")
		})
	})
	t.Run("interrupt races the caller's exit", func(t *testing.T) {
		for range 5 {
			oh := newOnceHarness(t, false, nil, rungSpec{"primary", "openai"})
			oh.fault("primary", "die_after=3;tokens=20")
			// The caller leaves at the third content chunk, as the provider
			// dies after it: the interrupt and the caller's exit race.
			oh.stream(t, func(j int) bool { return j < 3 })
			if row := oh.settledOnce(t, "cancelled", "interrupted"); row.out != 3 {
				t.Errorf("%+v: want the 3 delivered tokens", row)
			}
		}
	})
}
