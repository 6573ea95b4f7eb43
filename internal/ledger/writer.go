package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// WriterOptions tunes a Writer. Every zero field means its default.
type WriterOptions struct {
	// MaxBatch is the most queued items (reservations plus settlements)
	// one transaction holds. Default 512.
	MaxBatch int
	// MaxDelay bounds how long a batch keeps filling once its first item
	// is taken. Default: with a Journal, never wait (a batch is what was
	// queued when the previous append returned, so batches grow with the
	// load by themselves); without one, 2ms. Negative means never wait. A
	// batch stops filling as soon as the queue stays empty after the
	// writer has let the producers run, so a lone settler is not delayed
	// by MaxDelay: it only caps the wait while items keep arriving.
	//
	// Why no wait with a Journal: an append is one write(2), and under
	// load the wait to fill made most handlers wait in Settle before
	// their final byte (106 of 128 at c=128). A gateway at c=128 (stream,
	// 3 interleaved rounds, load average ~20) without it: settle wait p50
	// 7.6 -> 4.5 ms, p99 80 -> 71 ms, CPU per request within the noise,
	// 3x the appends (11,394 vs 3,722 batches). The writer alone with
	// 32-128 settlers saturating both cores (BenchmarkWriterSettle) does
	// batch less without it and spends about 10% more CPU per settlement.
	MaxDelay time.Duration
	// QueueSize is how many items may wait for the writer. Default 8192.
	// A full queue blocks Reserve, Settle and SettleAsync until the writer
	// takes items (backpressure: the store is slower than the traffic).
	QueueSize int
	// Log receives retry warnings and lost-row errors. Default: discard.
	Log *slog.Logger
	// OnError, when set, is called with every error that loses rows: a
	// batch that failed after its retries or was rejected (a *WriteError,
	// on the writer's goroutine), an invalid SettleAsync or a Reserve after
	// Close (on the caller's). It must not block. Default: log only.
	OnError func(error)

	// Journal, when set, puts a durable journal in front of the store: a
	// group commit is one write(2) to the journal instead of a store
	// transaction, and a background ingester moves the records into the
	// store in large batches (see Journal). The Writer owns it from
	// NewWriter on and closes it in Close. Nil (the default): every batch
	// is a store transaction, as a store that is cheap to commit to, or a
	// test, may want.
	Journal *Journal
	// Fsync makes every journal append also fsync(2) the segment (and the
	// directory when a segment is created), so that a settlement survives
	// a power loss or kernel crash too, at the cost of a disk flush per
	// group commit on the request path. Default false: a settlement
	// survives any process death once Settle returns, as with SQLite's
	// WAL at synchronous=NORMAL. No effect without a Journal.
	Fsync bool
	// IngestEvery is the longest a journal record waits for ingestion
	// into the store. Default 500ms. Usage read from the store lags by
	// up to this much unless Sync is called first.
	IngestEvery time.Duration
	// IngestBatch is how many pending records start an ingest before
	// IngestEvery, and the most one store transaction of ingestion
	// holds. Default 2000.
	IngestBatch int
	// MaxPending bounds the records waiting for ingestion (held in
	// memory as well as in the journal): past it, group commits wait for
	// the store (backpressure, as a full queue). Default 100000.
	MaxPending int

	// Watch lists the files the ledger lives in (the store's database
	// file; with a Journal, its lock file is watched too). One deleted or
	// replaced while the process runs makes the ledger unavailable until
	// a restart: the process would go on writing where no restart reads.
	Watch []string
	// CheckEvery is how often the watched files and their file system's
	// free space are checked, and a failed journal probed. Default 1s.
	CheckEvery time.Duration
	// MinFreeBytes: with less free space than this under the first watched
	// file, the ledger is unavailable (admission stops before a write
	// fails). Default 32 MiB; negative turns the check off.
	MinFreeBytes int64

	// ingestTick, when set (tests), replaces the IngestEvery ticker.
	ingestTick <-chan time.Time
	// free, when set (tests), replaces the free-space query.
	free func(dir string) (uint64, bool)
}

// Retry policy for a failed commit: bounded, doubling, no jitter (there is
// one writer per store, so no herd to spread).
const (
	defaultRetries = 5
	defaultBackoff = 5 * time.Millisecond
	maxBackoff     = 200 * time.Millisecond
	// fillYields is how many times in a row a filling batch yields to the
	// producers on an empty queue before it commits.
	fillYields = 2
)

// defaultMaxDelay is MaxDelay's default: no fill wait in front of a
// journal append, 2ms in front of a store transaction.
func defaultMaxDelay(journal bool) time.Duration {
	if journal {
		return -1
	}
	return 2 * time.Millisecond
}

// WriteError reports rows lost to the ledger: a batch the store refused or
// that kept failing after its retries. Settle callers whose settlement was
// in it receive it.
type WriteError struct {
	Reservations int // reservations in the failed batch
	Settlements  int // settlements in the failed batch
	Tries        int // WriteBatch calls made
	Err          error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("ledger: batch of %d reservations and %d settlements lost after %d tries: %v",
		e.Reservations, e.Settlements, e.Tries, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// Writer is the ledger's group-commit writer: callers queue reservations
// and settlements, and one goroutine writes them to the Store in batches,
// one transaction per batch, in queue order. Every method is safe for
// concurrent use.
//
// Order: items are committed in the order they were queued, so a request's
// reservation (queued first by the goroutine that later settles it) is
// never committed after its settlement.
type Writer struct {
	s    Store
	opts WriterOptions
	log  *slog.Logger

	q chan item
	// closed refuses new items; inflight counts sends between their check
	// of closed and their completion, so the final drain knows when no
	// more can arrive (see drain). Neither makes Close wait for a lock
	// that a sender blocked on a full queue holds.
	closed   atomic.Bool
	inflight atomic.Int64

	quit      chan struct{} // closed by Close: drain and exit
	closeOnce sync.Once
	done      chan struct{} // closed when the goroutine has exited
	ctx       context.Context
	abort     context.CancelFunc // Close's ctx ended: stop retrying

	waiters sync.Pool // *waiter

	retries int
	backoff time.Duration
	sleep   func(context.Context, time.Duration) bool
	now     func() time.Time

	// Owned by the writer goroutine; reused batch to batch.
	buf   []item
	batch Batch
	jbuf  []byte // one group commit's journal records

	// Journal mode (j != nil): the appender (the writer goroutine) and the
	// ingester share the pending sets under jmu; jcond signals the
	// appender waiting for room (MaxPending) that a set was taken.
	j          *Journal
	jmu        sync.Mutex
	jcond      *sync.Cond
	cur, spare *pendingSet
	ingestGone bool          // the ingester exited: never wait for room
	kick       chan struct{} // ask the ingester to ingest now
	appendDone chan struct{} // closed by the appender after its drain
	ingestDone chan struct{} // closed when the ingester has exited
	ingesting  atomic.Int64  // records of the set being ingested (Stats)
	// curLive mirrors cur.live (written under jmu) so that Stats, read on
	// every metrics scrape, never waits behind a journal write or fsync.
	curLive atomic.Int64
	// Owned by the ingester.
	ibatch       Batch
	ingestFailed bool // a set was given up: keep every segment from now on

	st  stats
	lag lag

	avail        availability
	storeFailing atomic.Bool   // the ingester's last store write failed
	monitorDone  chan struct{} // closed when the storage monitor has exited
}

type item struct {
	res  Reservation
	set  *Settlement // nil for a reservation
	w    *waiter     // nil unless a Settle or Sync call waits
	sync bool        // a Sync marker: no row
	at   int64       // when it was accepted (UnixNano), for Lag
}

// waiter carries one Settle call's result; pooled, its channel has room
// for the one result so the writer never blocks on a caller that left.
type waiter struct{ ch chan error }

// NewWriter starts the writer's goroutine (and, with a Journal, its
// ingester); Close stops them. A Journal whose leftover segments Recover
// has not replayed is ingested first (without releasing reservations: that
// is Recover's job at start-up).
func NewWriter(s Store, opts WriterOptions) *Writer {
	return newWriter(s, opts, time.Now, sleepCtx)
}

func newWriter(s Store, opts WriterOptions, now func() time.Time, sleep func(context.Context, time.Duration) bool) *Writer {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 512
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = defaultMaxDelay(opts.Journal != nil)
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 8192
	}
	if opts.IngestEvery <= 0 {
		opts.IngestEvery = defaultIngestEvery
	}
	if opts.IngestBatch <= 0 {
		opts.IngestBatch = defaultIngestBatch
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = defaultMaxPending
	}
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = defaultCheckEvery
	}
	if opts.MinFreeBytes == 0 {
		opts.MinFreeBytes = defaultMinFreeBytes
	}
	if opts.free == nil {
		opts.free = freeBytes
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		s:       s,
		opts:    opts,
		log:     log,
		q:       make(chan item, opts.QueueSize),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		ctx:     ctx,
		abort:   cancel,
		retries: defaultRetries,
		backoff: defaultBackoff,
		sleep:   sleep,
		now:     now,
		buf:     make([]item, 0, opts.MaxBatch),

		monitorDone: make(chan struct{}),
	}
	w.waiters.New = func() any { return &waiter{ch: make(chan error, 1)} }
	if j := opts.Journal; j != nil {
		w.j = j
		w.ibatch.Owner = j.id
		w.jcond = sync.NewCond(&w.jmu)
		w.cur, w.spare = newPendingSet(), newPendingSet()
		w.kick = make(chan struct{}, 1)
		w.appendDone = make(chan struct{})
		w.ingestDone = make(chan struct{})
		if len(j.leftovers) > 0 {
			// Recover was not called: ingest what an earlier process left
			// before anything new (a segment that cannot be read stays on
			// disk for Recover).
			if _, err := j.load(w.cur, &Recovery{}); err != nil {
				w.log.Error("ledger: journal leftovers not ingested", "err", err)
				w.cur.reset()
			}
			j.leftovers = nil
		}
		w.curLive.Store(int64(w.cur.live))
		go w.ingestLoop()
	}
	watch := opts.Watch
	if w.j != nil {
		watch = append(slices.Clip(watch), w.j.path+".lock")
	}
	files, err := watchFiles(watch)
	if err != nil {
		w.log.Error("ledger: a file the ledger lives in is missing", "err", err)
		w.avail.set(downGone, err.Error())
	}
	go func() {
		defer close(w.monitorDone)
		if len(files) > 0 {
			w.monitor(files)
		}
	}()
	go w.run()
	return w
}

// Reserve queues r. It never waits for I/O; it blocks only while the queue
// is full. After Close, r is dropped and reported to OnError (ErrClosed).
func (w *Writer) Reserve(r Reservation) {
	if err := w.send(item{res: r}); err != nil {
		w.report(fmt.Errorf("ledger: reservation %q dropped: %w", r.RequestID, err))
	}
}

// Settle queues s and waits until it is durable: the journal write holding
// it has returned (with a Journal) or the store transaction holding it has
// committed (without). It returns nil, or the *WriteError that lost it
// (ErrInvalidSettlement or ErrClosed when s was not queued). The gateway
// calls it just before a response's final byte, so a caller who got the
// whole answer always has a durable settled row. With a Journal, a row the
// store later refuses for its content is reported to OnError only.
//
// Queueing blocks only while the queue is full (whatever ctx says, so
// that a settlement is never silently left out). If ctx ends while s waits
// for its commit, Settle returns ctx.Err() and s is still committed. The
// Writer owns s from the call until its commit: do not modify it.
func (w *Writer) Settle(ctx context.Context, s *Settlement) error {
	if err := validSettlement(s); err != nil {
		return err
	}
	wt := w.waiters.Get().(*waiter)
	start := w.now()
	if err := w.send(item{set: s, w: wt}); err != nil {
		w.waiters.Put(wt)
		return err
	}
	select {
	case err := <-wt.ch:
		w.waiters.Put(wt)
		w.st.wait.record(w.now().Sub(start))
		return err
	case <-ctx.Done():
		// The writer will still deliver into wt.ch; wt is not reused.
		return ctx.Err()
	}
}

// SettleAsync queues s without waiting (the caller is gone, or the answer
// was already sent). Failures go to OnError. The Writer owns s from now
// on: do not modify it.
func (w *Writer) SettleAsync(s *Settlement) {
	err := validSettlement(s)
	if err == nil {
		err = w.send(item{set: s})
	}
	if err != nil {
		w.report(fmt.Errorf("ledger: settlement %q dropped: %w", s.Request.RequestID, err))
	}
}

// Sync returns once everything queued before it (by Reserve, Settle or
// SettleAsync calls that returned before Sync was called) is in the store,
// so that a usage query sees it; it forces an ingest at once and is cheap
// when nothing is pending. Without a Journal it waits for the group commit
// in progress. After Close, it waits for Close's flush and returns nil.
// The error is the store's (a *WriteError) or ctx's.
func (w *Writer) Sync(ctx context.Context) error {
	wt := w.waiters.Get().(*waiter)
	if err := w.send(item{sync: true, w: wt}); err != nil {
		w.waiters.Put(wt)
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case err := <-wt.ch:
		w.waiters.Put(wt)
		return err
	case <-ctx.Done():
		// The writer will still deliver into wt.ch; wt is not reused.
		return ctx.Err()
	}
}

func (w *Writer) send(it item) error {
	w.inflight.Add(1)
	defer w.inflight.Add(-1)
	if w.closed.Load() {
		return ErrClosed
	}
	it.at = w.now().UnixNano()
	w.q <- it
	return nil
}

// The figures a row may hold. A settlement outside them is refused before
// it is written, so no row can poison a sum (SQLite's SUM fails on
// overflow, which once kept a gateway from starting).
const (
	// MaxTokens bounds each token count of one request.
	MaxTokens = 100_000_000
	// MaxCostMicro bounds one request's cost and reservation: $10M.
	MaxCostMicro = 10_000_000_000_000
)

// Sane reports whether every count is within [0, MaxTokens].
func Sane(counts ...int) bool {
	for _, n := range counts {
		if n < 0 || n > MaxTokens {
			return false
		}
	}
	return true
}

// SaneCost reports whether a cost is within [0, MaxCostMicro].
func SaneCost(micro int64) bool { return micro >= 0 && micro <= MaxCostMicro }

// validSettlement refuses what would make a whole batch fail later or
// poison the ledger: no request id, impossible figures, attempts that
// belong to another request or share a seq.
func validSettlement(s *Settlement) error {
	if s == nil || s.Request.RequestID == "" {
		return fmt.Errorf("%w: no request id", ErrInvalidSettlement)
	}
	r := &s.Request
	if !Sane(r.InputTokens, r.OutputTokens, r.CachedTokens) || !SaneCost(r.CostMicroUSD) || !SaneCost(r.ReservedMicroUSD) {
		return fmt.Errorf("%w: impossible figures (tokens %d/%d/%d, cost %d, reserved %d)", ErrInvalidSettlement,
			r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicroUSD, r.ReservedMicroUSD)
	}
	for i := range s.Attempts {
		a := &s.Attempts[i]
		if !Sane(a.InputTokens, a.OutputTokens, 0) || !SaneCost(a.CostMicroUSD) {
			return fmt.Errorf("%w: attempt %d has impossible figures", ErrInvalidSettlement, a.Seq)
		}
		if a.RequestID != "" && a.RequestID != s.Request.RequestID {
			return fmt.Errorf("%w: attempt %d belongs to another request", ErrInvalidSettlement, a.Seq)
		}
		for j := range i {
			if s.Attempts[j].Seq == a.Seq {
				return fmt.Errorf("%w: attempt seq %d repeated", ErrInvalidSettlement, a.Seq)
			}
		}
	}
	return nil
}

// Close stops taking items, commits everything queued and stops the
// goroutine. With a Journal, that means appending it, then waiting until
// the store has every record (a failing store is retried), deleting the
// segments and closing the journal. If ctx ends first, retries stop, what
// is left fails with the store's error (with a Journal, it stays in the
// journal for the next start's Recover), and Close returns ctx's error
// without waiting further; the goroutines exit as soon as the store
// returns. Close may be called again to wait once more.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.quit)
	})
	select {
	case <-w.done:
		<-w.monitorDone // it exits on quit, within a check
		return nil
	case <-ctx.Done():
		w.abort()
		return fmt.Errorf("ledger: writer close: %w", ctx.Err())
	}
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.abort()
	for {
		var it item
		select {
		case it = <-w.q:
		case <-w.quit:
			w.drain()
			if w.j != nil {
				close(w.appendDone)
				<-w.ingestDone
			}
			return
		}
		w.buf = append(w.buf[:0], it)
		w.lag.taking(&it)
		w.fill()
		w.commit(w.buf)
		w.lag.committed()
	}
}

// drain commits what is left after Close. A sender that saw closed false
// may still be sending (perhaps blocked on a full queue), so drain keeps
// taking until it has seen no send in flight: every send that will ever
// happen completed before that observation (a later one sees closed), and
// the take that follows it empties the queue for good.
func (w *Writer) drain() {
	w.buf = w.buf[:0]
	for {
		last := w.inflight.Load() == 0
		for w.take() {
			if len(w.buf) == w.opts.MaxBatch {
				w.commit(w.buf)
				w.buf = w.buf[:0]
			}
		}
		if last {
			if len(w.buf) > 0 {
				w.commit(w.buf)
			}
			return
		}
		runtime.Gosched() // let the senders finish
	}
}

// fill takes queued items into w.buf until MaxBatch, until MaxDelay has
// passed since the first, or until the queue stays empty after yielding to
// the producers fillYields times in a row. Yielding (not sleeping) lets the
// callers a commit just released queue their next items, so batches grow
// under load at no cost to a lone caller.
func (w *Writer) fill() {
	if w.opts.MaxDelay < 0 {
		w.take()
		return
	}
	var deadline time.Time
	yields := 0
	for len(w.buf) < w.opts.MaxBatch {
		if w.take() {
			yields = 0
			continue
		}
		if yields == fillYields {
			return
		}
		now := w.now()
		if deadline.IsZero() {
			deadline = now.Add(w.opts.MaxDelay)
		} else if !now.Before(deadline) {
			return
		}
		runtime.Gosched()
		yields++
	}
}

// take moves what is queued now into w.buf, up to MaxBatch; it reports
// whether it took anything.
func (w *Writer) take() bool {
	took := false
	for len(w.buf) < w.opts.MaxBatch {
		select {
		case it := <-w.q:
			w.buf = append(w.buf, it)
			took = true
		default:
			return took
		}
	}
	return took
}

// commit writes items in one transaction and releases their waiters. A
// batch the store rejects for its content is split in halves, in order, so
// one bad row costs only itself; any other failure is retried as a whole.
func (w *Writer) commit(items []item) {
	if w.j != nil {
		w.appendJournal(items)
		return
	}
	err := w.write(items)
	if err != nil && errors.Is(err, ErrRejected) && len(items) > 1 {
		mid := len(items) / 2
		w.commit(items[:mid])
		w.commit(items[mid:])
		return
	}
	if err != nil {
		w.st.failed.Add(int64(len(items)))
		w.report(err)
	}
	for i := range items {
		if wt := items[i].w; wt != nil {
			wt.ch <- err
		}
		items[i] = item{} // drop references for the GC
	}
}

// write is one batch's WriteBatch with bounded retries.
func (w *Writer) write(items []item) error {
	b := &w.batch
	b.Reservations = b.Reservations[:0]
	b.Settlements = b.Settlements[:0]
	for i := range items {
		switch it := &items[i]; {
		case it.sync:
		case it.set != nil:
			b.Settlements = append(b.Settlements, *it.set)
		default:
			b.Reservations = append(b.Reservations, it.res)
		}
	}
	if len(b.Reservations)+len(b.Settlements) == 0 {
		return nil // Sync markers alone
	}
	defer func() {
		clear(b.Settlements) // drop references for the GC
		clear(b.Reservations)
	}()
	backoff := w.backoff
	tries := 0
	for {
		tries++
		start := w.now()
		err := w.s.WriteBatch(w.ctx, b)
		if err == nil {
			w.st.committed(len(b.Reservations), len(b.Settlements), w.now().Sub(start))
			return nil
		}
		if errors.Is(err, ErrRejected) || tries > w.retries || w.ctx.Err() != nil {
			return &WriteError{Reservations: len(b.Reservations), Settlements: len(b.Settlements), Tries: tries, Err: err}
		}
		w.st.retries.Add(1)
		w.log.Warn("ledger: batch commit failed, retrying", "tries", tries, "backoff", backoff, "err", err)
		if !w.sleep(w.ctx, backoff) {
			return &WriteError{Reservations: len(b.Reservations), Settlements: len(b.Settlements), Tries: tries, Err: err}
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (w *Writer) report(err error) {
	w.log.Error("ledger: rows lost", "err", err)
	if w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
