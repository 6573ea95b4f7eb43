package ledger

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeStore records what each committed batch held, in write order
// ("R:id" for a reservation, "S:id" for a settlement).
type fakeStore struct {
	mu      sync.Mutex
	batches [][]string
	calls   int
	// fail, when set, decides each WriteBatch call's error (call counts
	// from 1).
	fail func(b *Batch, call int) error
	// block, when set, holds every WriteBatch until it is closed or the
	// writer's context ends; entered is signalled on each entry.
	block   chan struct{}
	entered chan struct{}
}

var errDisk = errors.New("disk I/O error")

func (f *fakeStore) WriteBatch(ctx context.Context, b *Batch) error {
	if f.entered != nil {
		select {
		case f.entered <- struct{}{}:
		default:
		}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		if err := f.fail(b, f.calls); err != nil {
			return err
		}
	}
	var rec []string
	for _, r := range b.Reservations {
		rec = append(rec, "R:"+r.RequestID)
	}
	for _, s := range b.Settlements {
		rec = append(rec, "S:"+s.Request.RequestID)
	}
	f.batches = append(f.batches, rec)
	return nil
}

func (f *fakeStore) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeStore) committed() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

func (f *fakeStore) RecoverOpen(context.Context, string) ([]Released, error) { return nil, nil }
func (f *fakeStore) Spends(context.Context, time.Time) ([]Spend, error)      { return nil, nil }
func (f *fakeStore) Usage(context.Context, UsageQuery) ([]UsageRow, error)   { return nil, nil }
func (f *fakeStore) Repair(context.Context) ([]Repaired, error)              { return nil, nil }
func (f *fakeStore) AdminKeys(context.Context) ([]AdminKey, error)           { return nil, nil }
func (f *fakeStore) RotateAdminKey(context.Context, *AdminKey) error         { return nil }
func (f *fakeStore) CreateKey(context.Context, *Key) error                   { return nil }
func (f *fakeStore) KeyByHash(context.Context, []byte) (*Key, error)         { return nil, ErrNotFound }
func (f *fakeStore) Keys(context.Context) ([]Key, error)                     { return nil, nil }
func (f *fakeStore) RevokeKey(context.Context, string, time.Time) error      { return nil }
func (f *fakeStore) SetBudget(context.Context, *Budget) error                { return nil }
func (f *fakeStore) Budgets(context.Context) ([]Budget, error)               { return nil, nil }
func (f *fakeStore) Close() error                                            { return nil }

var _ Store = (*fakeStore)(nil)

// sleeps records backoff waits instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) bool {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err() == nil
}

func testWriter(t *testing.T, f *fakeStore, opts WriterOptions) (*Writer, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	w := newWriter(f, opts, time.Now, sl.sleep)
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w, sl
}

func settlement(id string) *Settlement {
	return &Settlement{
		Request:  Request{RequestID: id, Status: StatusOK, Attempts: 1},
		Attempts: []Attempt{{RequestID: id, Seq: 0}},
	}
}

// waitFor polls cond, yielding, for up to a few seconds: for states another
// goroutine reaches without any clock involved.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func TestWriterRefusesInvalidSettlements(t *testing.T) {
	f := &fakeStore{}
	w, _ := testWriter(t, f, WriterOptions{})
	dupSeq := settlement("r1")
	dupSeq.Attempts = append(dupSeq.Attempts, Attempt{Seq: 0})
	foreign := settlement("r2")
	foreign.Attempts[0].RequestID = "other"
	with := func(id string, f func(*Settlement)) *Settlement {
		s := settlement(id)
		f(s)
		return s
	}
	for name, s := range map[string]*Settlement{
		"nil":             nil,
		"no request id":   {},
		"seq repeated":    dupSeq,
		"foreign attempt": foreign,
		"input overflow":  with("r3", func(s *Settlement) { s.Request.InputTokens = 1<<63 - 1 }),
		"negative output": with("r4", func(s *Settlement) { s.Request.OutputTokens = -1 }),
		"cached too many": with("r5", func(s *Settlement) { s.Request.CachedTokens = MaxTokens + 1 }),
		"cost overflow":   with("r6", func(s *Settlement) { s.Request.CostMicroUSD = MaxCostMicro + 1 }),
		"negative cost":   with("r7", func(s *Settlement) { s.Request.CostMicroUSD = -3 }),
		"reserved huge":   with("r8", func(s *Settlement) { s.Request.ReservedMicroUSD = 1 << 62 }),
		"attempt tokens":  with("r9", func(s *Settlement) { s.Attempts[0].OutputTokens = -7 }),
		"attempt cost":    with("r10", func(s *Settlement) { s.Attempts[0].CostMicroUSD = 1 << 62 }),
	} {
		if err := w.Settle(context.Background(), s); !errors.Is(err, ErrInvalidSettlement) {
			t.Errorf("%s: Settle = %v, want ErrInvalidSettlement", name, err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.committed(); len(got) != 0 {
		t.Errorf("invalid settlements were written: %v", got)
	}
}

func TestWriterStoreFailsForGood(t *testing.T) {
	f := &fakeStore{fail: func(*Batch, int) error { return errDisk }}
	var reported []error
	var mu sync.Mutex
	w, sl := testWriter(t, f, WriterOptions{OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	err := w.Settle(context.Background(), settlement("r1"))
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, errDisk) {
		t.Fatalf("Settle = %v, want a *WriteError wrapping the store's error", err)
	}
	if we.Tries != defaultRetries+1 || we.Settlements != 1 || we.Reservations != 0 {
		t.Errorf("WriteError = %+v, want %d tries of 1 settlement", we, defaultRetries+1)
	}
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if !slices.Equal(sl.d, want) {
		t.Errorf("backoff = %v, want %v", sl.d, want)
	}
	mu.Lock()
	if len(reported) != 1 || !errors.As(reported[0], &we) {
		t.Errorf("OnError got %v, want the one *WriteError", reported)
	}
	mu.Unlock()
	st := w.Stats()
	if st.Lost != 1 || st.Retries != int64(defaultRetries) || st.Batches != 0 {
		t.Errorf("stats = %+v, want 1 lost, %d retries, 0 batches", st, defaultRetries)
	}
}

func TestWriterRetriesThenCommits(t *testing.T) {
	f := &fakeStore{fail: func(_ *Batch, call int) error {
		if call <= 2 {
			return errDisk
		}
		return nil
	}}
	w, sl := testWriter(t, f, WriterOptions{})
	if err := w.Settle(context.Background(), settlement("r1")); err != nil {
		t.Fatalf("Settle = %v, want nil after two retried failures", err)
	}
	if !slices.Equal(sl.d, []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}) {
		t.Errorf("backoff = %v", sl.d)
	}
	if st := w.Stats(); st.Retries != 2 || st.Batches != 1 || st.Lost != 0 {
		t.Errorf("stats = %+v, want 2 retries, 1 batch", st)
	}
}

// A row the store rejects costs only itself: the batch is split in order
// and its neighbours commit.
func TestWriterIsolatesRejectedRows(t *testing.T) {
	f := &fakeStore{
		block:   make(chan struct{}),
		entered: make(chan struct{}, 1),
		fail: func(b *Batch, _ int) error {
			for _, s := range b.Settlements {
				if s.Request.RequestID == "bad" {
					return fmt.Errorf("constraint: %w", ErrRejected)
				}
			}
			return nil
		},
	}
	var asyncErrs []error
	var mu sync.Mutex
	w, sl := testWriter(t, f, WriterOptions{OnError: func(err error) {
		mu.Lock()
		asyncErrs = append(asyncErrs, err)
		mu.Unlock()
	}})
	// Hold the writer in a first batch while the next one queues up.
	w.SettleAsync(settlement("first"))
	<-f.entered
	ids := []string{"g1", "g2", "bad", "g3", "g4"}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		w.Reserve(Reservation{RequestID: id})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Settle(context.Background(), settlement(id))
		}()
		waitFor(t, id+" queued", func() bool { return w.Stats().Queued == 2*(i+1) })
	}
	close(f.block)
	wg.Wait()
	for i, id := range ids {
		if id == "bad" {
			if !errors.Is(errs[i], ErrRejected) {
				t.Errorf("Settle(bad) = %v, want ErrRejected", errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("Settle(%s) = %v, want nil", id, errs[i])
		}
	}
	var flat []string
	for _, b := range f.committed() {
		flat = append(flat, b...)
	}
	// Every reservation and every good settlement, in queue order (a
	// batch writes its reservations before its settlements).
	// The batch of ten is rejected and halved: [g1 g2 bad-reservation]
	// commits; [bad g3 g4] is rejected, halved again down to bad alone.
	want := []string{"S:first", "R:g1", "R:g2", "R:bad", "S:g1", "S:g2", "R:g3", "R:g4", "S:g3", "S:g4"}
	if !slices.Equal(flat, want) {
		t.Errorf("committed %v\nwant      %v", flat, want)
	}
	if len(sl.d) != 0 {
		t.Errorf("a rejection was retried: %v", sl.d)
	}
	mu.Lock()
	if len(asyncErrs) != 1 || !errors.Is(asyncErrs[0], ErrRejected) {
		t.Errorf("OnError = %v, want the one rejection", asyncErrs)
	}
	mu.Unlock()
}

// N concurrent Settle calls share commits: while one transaction runs, the
// rest queue and go out together.
func TestWriterBatchesConcurrentSettles(t *testing.T) {
	const n = 64
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w, _ := testWriter(t, f, WriterOptions{})
	errs := make(chan error, n)
	go func() { errs <- w.Settle(context.Background(), settlement("s0")) }()
	<-f.entered
	for i := 1; i < n; i++ {
		go func() { errs <- w.Settle(context.Background(), settlement(fmt.Sprint("s", i))) }()
	}
	waitFor(t, "all settles queued", func() bool { return w.Stats().Queued == n-1 })
	close(f.block)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := f.committed()
	if len(got) != 2 || len(got[1]) != n-1 {
		t.Fatalf("%d Settle calls took %d commits (sizes %v), want 2: the first and all the rest", n, len(got), sizes(got))
	}
	st := w.Stats()
	if st.Batches != 2 || st.MaxBatch != n-1 || st.Settlements != n || st.AvgBatch != n/2 {
		t.Errorf("stats = %+v", st)
	}
}

func sizes(b [][]string) []int {
	var out []int
	for _, x := range b {
		out = append(out, len(x))
	}
	return out
}

func TestWriterIsFIFO(t *testing.T) {
	t.Run("one producer, many small batches", func(t *testing.T) {
		f := &fakeStore{}
		w, _ := testWriter(t, f, WriterOptions{MaxBatch: 7})
		var want []string
		for i := range 500 {
			id := fmt.Sprint("r", i)
			w.Reserve(Reservation{RequestID: id})
			w.SettleAsync(settlement(id))
			want = append(want, "R:"+id, "S:"+id)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Each batch holds the next items of the queue, its reservations
		// written before its settlements.
		next := 0
		for _, b := range f.committed() {
			if len(b) > 7 {
				t.Fatalf("batch of %d items, MaxBatch 7", len(b))
			}
			chunk := slices.Clone(want[next : next+len(b)])
			slices.SortStableFunc(chunk, func(x, y string) int { return int(x[0]) - int(y[0]) })
			if !slices.Equal(b, chunk) {
				t.Fatalf("batch %v, want the queue's next items %v", b, chunk)
			}
			next += len(b)
		}
		if next != len(want) {
			t.Errorf("%d items committed, want %d", next, len(want))
		}
	})
	t.Run("many producers: reservation never after settlement", func(t *testing.T) {
		f := &fakeStore{}
		w, _ := testWriter(t, f, WriterOptions{MaxBatch: 5})
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 40 {
					id := fmt.Sprintf("g%d-%d", g, i)
					w.Reserve(Reservation{RequestID: id})
					if err := w.Settle(context.Background(), settlement(id)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		where := map[string]int{}
		for i, b := range f.committed() {
			for _, it := range b {
				if _, dup := where[it]; dup {
					t.Fatalf("%s committed twice", it)
				}
				where[it] = i
			}
		}
		if len(where) != 2*16*40 {
			t.Fatalf("%d items committed, want %d", len(where), 2*16*40)
		}
		for it, i := range where {
			if it[0] == 'S' && where["R"+it[1:]] > i {
				t.Errorf("%s committed in batch %d before its reservation (batch %d)", it, i, where["R"+it[1:]])
			}
		}
	})
}

func TestWriterSettleContext(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w, _ := testWriter(t, f, WriterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Settle(ctx, settlement("left")) }()
	<-f.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Settle after cancel = %v, want context.Canceled", err)
	}
	close(f.block)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.committed(); len(got) != 1 || !slices.Equal(got[0], []string{"S:left"}) {
		t.Errorf("committed %v: a settlement whose caller left must still be written", got)
	}
}

func TestWriterClose(t *testing.T) {
	t.Run("flushes the queue", func(t *testing.T) {
		f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
		var reported []error
		var mu sync.Mutex
		w, _ := testWriter(t, f, WriterOptions{MaxBatch: 16, OnError: func(err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		}})
		for i := range 300 {
			w.SettleAsync(settlement(fmt.Sprint("a", i)))
		}
		<-f.entered
		closed := make(chan error, 1)
		go func() { closed <- w.Close(context.Background()) }()
		// Close refuses new work at once, even before the flush ends.
		waitFor(t, "closed", w.closed.Load)
		close(f.block)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range f.committed() {
			n += len(b)
		}
		if n != 300 {
			t.Errorf("Close flushed %d of 300", n)
		}
		if err := w.Settle(context.Background(), settlement("late")); !errors.Is(err, ErrClosed) {
			t.Errorf("Settle after Close = %v, want ErrClosed", err)
		}
		w.Reserve(Reservation{RequestID: "late"})
		w.SettleAsync(settlement("late"))
		mu.Lock()
		if len(reported) != 2 || !errors.Is(reported[0], ErrClosed) || !errors.Is(reported[1], ErrClosed) {
			t.Errorf("OnError = %v, want two ErrClosed", reported)
		}
		mu.Unlock()
		if err := w.Close(context.Background()); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})
	t.Run("waits for a sender blocked on a full queue", func(t *testing.T) {
		f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
		w, _ := testWriter(t, f, WriterOptions{QueueSize: 1})
		w.SettleAsync(settlement("a")) // taken, its commit hangs
		<-f.entered
		w.SettleAsync(settlement("b")) // fills the queue
		sent := make(chan struct{})
		go func() {
			w.SettleAsync(settlement("c")) // blocks: the queue is full
			close(sent)
		}()
		waitFor(t, "c blocked", func() bool { return w.inflight.Load() == 1 })
		closed := make(chan error, 1)
		go func() { closed <- w.Close(context.Background()) }()
		waitFor(t, "closed", w.closed.Load)
		close(f.block)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		<-sent
		var flat []string
		for _, b := range f.committed() {
			flat = append(flat, b...)
		}
		if !slices.Equal(flat, []string{"S:a", "S:b", "S:c"}) {
			t.Errorf("committed %v, want a, b and the blocked c", flat)
		}
	})
	t.Run("deadline stops the retries", func(t *testing.T) {
		// The store hangs until the writer gives up on it.
		f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
		w, _ := testWriter(t, f, WriterOptions{})
		settled := make(chan error, 1)
		go func() { settled <- w.Settle(context.Background(), settlement("stuck")) }()
		<-f.entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Close(cancelled) = %v, want context.Canceled", err)
		}
		var we *WriteError
		if err := <-settled; !errors.As(err, &we) || !errors.Is(err, context.Canceled) {
			t.Errorf("the stuck Settle got %v, want a *WriteError of the abandoned commit", err)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Errorf("Close after abandon = %v, want nil once the goroutine is gone", err)
		}
		select {
		case <-w.done:
		default:
			t.Error("writer goroutine still running after Close returned nil")
		}
	})
}

func TestHistogram(t *testing.T) {
	for _, ns := range []uint64{0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 12345, 1 << 20, 3<<30 + 17, 1 << 62} {
		v := bucketValue(bucketOf(ns))
		lo, hi := float64(ns)*(1-1.0/8), float64(ns)*(1+1.0/8)
		if float64(v) < lo || float64(v) > hi {
			t.Errorf("bucketValue(bucketOf(%d)) = %d, not within 1/8", ns, v)
		}
	}
	var h histogram
	if p50, p99, mx := h.quantiles(); p50 != 0 || p99 != 0 || mx != 0 {
		t.Errorf("empty histogram: %v %v %v", p50, p99, mx)
	}
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	p50, p99, mx := h.quantiles()
	near := func(got, want time.Duration) bool {
		return got >= want*7/8 && got <= want*9/8
	}
	if !near(p50, 500*time.Microsecond) || !near(p99, 990*time.Microsecond) || mx != time.Millisecond {
		t.Errorf("quantiles of 1..1000µs: p50 %v p99 %v max %v", p50, p99, mx)
	}
}
