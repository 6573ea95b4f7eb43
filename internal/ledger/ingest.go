package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ingestion defaults (WriterOptions).
const (
	defaultIngestEvery = 500 * time.Millisecond
	defaultIngestBatch = 2000
	defaultMaxPending  = 100_000
	// maxIngestBackoff caps the wait between two failed ingests: the
	// journal holds the rows meanwhile, so ingestion never gives up.
	maxIngestBackoff = 2 * time.Second
)

// pendingSet is the journal's records not yet in the store, in journal
// order. A reservation whose settlement arrives while both are pending is
// dropped: the store only ever needs reservations still open when they are
// ingested (for RecoverOpen), so a request that settles within one ingest
// interval costs the store its request and attempt rows alone.
type pendingSet struct {
	items []pendingItem
	open  map[string]int // request id -> index of its pending reservation
	live  int            // items not dropped
	next  int            // first item not yet committed (resumed after a failure)
	// segs are the journal segments that hold exactly this set's records:
	// deleted once the set is in the store.
	segs []uint64
	// waiters are released with the set's ingest result: Sync calls, and
	// Settle calls whose journal append failed.
	waiters []*waiter
}

type pendingItem struct {
	res     Reservation
	set     *Settlement // nil for a reservation
	dropped bool        // a reservation settled before ingestion
}

func newPendingSet() *pendingSet { return &pendingSet{open: map[string]int{}} }

func (p *pendingSet) addReservation(r *Reservation) {
	p.open[r.RequestID] = len(p.items)
	p.items = append(p.items, pendingItem{res: *r})
	p.live++
}

func (p *pendingSet) addSettlement(s *Settlement) {
	id := s.Request.RequestID
	if i, ok := p.open[id]; ok {
		p.items[i].dropped = true
		p.items[i].res = Reservation{}
		delete(p.open, id)
		p.live--
	}
	p.items = append(p.items, pendingItem{set: s})
	p.live++
}

// left counts the reservations and settlements not yet committed.
func (p *pendingSet) left() (res, set int) {
	for i := p.next; i < len(p.items); i++ {
		switch it := &p.items[i]; {
		case it.set != nil:
			set++
		case !it.dropped:
			res++
		}
	}
	return res, set
}

// lost is the *WriteError of a set given up after tries.
func (p *pendingSet) lost(tries int, err error) *WriteError {
	res, set := p.left()
	return &WriteError{Reservations: res, Settlements: set, Tries: tries, Err: err}
}

func (p *pendingSet) empty() bool {
	return len(p.items) == 0 && len(p.segs) == 0 && len(p.waiters) == 0
}

// reset empties p for reuse, dropping its references for the GC.
func (p *pendingSet) reset() {
	clear(p.items)
	p.items = p.items[:0]
	clear(p.open)
	clear(p.waiters)
	p.waiters = p.waiters[:0]
	p.segs = p.segs[:0]
	p.live, p.next = 0, 0
}

// commitSet writes p's items from p.next on, in transactions of at most
// chunk items, advancing p.next past each committed one, so a retry after
// a store failure resumes where it stopped. A transaction the store rejects
// for its content is split in halves, in order, down to the offending
// record, which is reported to rejected and skipped; any other error is
// returned. b is reused for every transaction.
func commitSet(ctx context.Context, s Store, p *pendingSet, b *Batch, chunk int, rejected func(*WriteError)) error {
	for p.next < len(p.items) {
		end := min(p.next+chunk, len(p.items))
		if err := commitRange(ctx, s, p.items[p.next:end], b, rejected); err != nil {
			return err
		}
		p.next = end
	}
	return nil
}

func commitRange(ctx context.Context, s Store, items []pendingItem, b *Batch, rejected func(*WriteError)) error {
	b.Reservations, b.Settlements = b.Reservations[:0], b.Settlements[:0]
	for i := range items {
		switch it := &items[i]; {
		case it.set != nil:
			b.Settlements = append(b.Settlements, *it.set)
		case !it.dropped:
			b.Reservations = append(b.Reservations, it.res)
		}
	}
	nr, ns := len(b.Reservations), len(b.Settlements)
	if nr+ns == 0 {
		return nil
	}
	err := s.WriteBatch(ctx, b)
	clear(b.Reservations) // drop references for the GC
	clear(b.Settlements)
	if err == nil || !errors.Is(err, ErrRejected) {
		return err
	}
	if nr+ns == 1 {
		rejected(&WriteError{Reservations: nr, Settlements: ns, Tries: 1, Err: err})
		return nil
	}
	mid := len(items) / 2
	if err := commitRange(ctx, s, items[:mid], b, rejected); err != nil {
		return err
	}
	return commitRange(ctx, s, items[mid:], b, rejected)
}

// appendJournal is a group commit in journal mode: the batch's records go
// to the journal in one write, then into the pending set, and the Settle
// calls in it are released. If the journal write fails, the batch is not
// lost: its Settle calls wait for the store instead, which the ingester is
// asked to write at once.
func (w *Writer) appendJournal(items []item) {
	b := w.jbuf[:0]
	nres, nset := 0, 0
	for i := range items {
		switch it := &items[i]; {
		case it.sync:
		case it.set != nil:
			b = appendSettlement(b, it.set)
			nset++
		default:
			b = appendReservation(b, &it.res)
			nres++
		}
	}
	w.jbuf = b
	start := w.now()
	kick := false
	w.jmu.Lock()
	// Backpressure: the store is far behind (slower than the traffic);
	// wait for the ingester to take the pending set. A store that keeps
	// failing makes the ledger unavailable instead: admission stops, and
	// nothing in flight hangs.
	for w.cur.live >= w.opts.MaxPending && !w.ingestGone {
		if w.storeFailing.Load() {
			w.avail.set(downStore, "the store keeps failing and the journal's pending records reached max_pending")
			break
		}
		w.kickIngest()
		w.jcond.Wait()
	}
	var err error
	gone := w.avail.has(downGone)
	switch {
	case gone:
		// The journal's file is unlinked: a write would "succeed" where no
		// restart reads it.
		err = w.avail.err()
	case len(b) > 0:
		var seg uint64
		seg, err = w.j.append(b, w.opts.Fsync)
		if seg != 0 {
			w.cur.segs = append(w.cur.segs, seg)
		}
		if err != nil {
			w.avail.set(downJournal, "the journal cannot be written: "+describe(err))
		} else {
			w.avail.clear(downJournal)
		}
	}
	for i := range items {
		switch it := &items[i]; {
		case it.sync:
			w.cur.waiters = append(w.cur.waiters, it.w)
			kick = true
		case it.set != nil:
			if err != nil && it.w != nil {
				// Its caller waits to deliver the answer: it will not,
				// and the settlement (kept for the store) charges nothing.
				undelivered(it.set)
				if gone {
					it.w.ch <- err
				} else {
					it.w.ch <- &UnavailableError{Reason: reasonNames[downJournal], Detail: describe(err)}
				}
				it.w = nil
				kick = true
			}
			w.cur.addSettlement(it.set)
		default:
			w.cur.addReservation(&it.res)
		}
	}
	if w.cur.live >= w.opts.IngestBatch {
		kick = true
	}
	if w.cur.live > 0 && len(items) > 0 {
		w.lag.appended(items[0].at)
	}
	w.curLive.Store(int64(w.cur.live))
	w.jmu.Unlock()
	switch {
	case err != nil && !gone:
		w.st.journalFailures.Add(1)
		w.log.Error("ledger: journal append failed; the batch's answers are withheld and charge nothing", "err", err)
	case err != nil:
		// Gone: reported once, by the monitor.
	case nres+nset > 0:
		w.st.committed(nres, nset, w.now().Sub(start))
	}
	for i := range items {
		if it := &items[i]; it.w != nil && !it.sync {
			it.w.ch <- nil
		}
		items[i] = item{}
	}
	if kick {
		w.kickIngest()
	}
}

func (w *Writer) kickIngest() {
	select {
	case w.kick <- struct{}{}:
	default: // one is pending already
	}
}

// ingestLoop is the ingester goroutine: every IngestEvery, or when kicked
// (IngestBatch pending, a Sync, a failed append), it moves the pending set
// into the store. After the appender has drained (Close), it ingests what
// is left, closes the journal and exits.
func (w *Writer) ingestLoop() {
	defer close(w.ingestDone)
	tick := w.opts.ingestTick
	if tick == nil {
		t := time.NewTicker(w.opts.IngestEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.kick:
		case <-tick:
		case <-w.appendDone:
			w.ingestOnce()
			w.jmu.Lock()
			w.ingestGone = true
			w.jcond.Broadcast()
			err := w.j.Close()
			w.jmu.Unlock()
			if err != nil {
				w.log.Warn("ledger: closing the journal", "err", err)
			}
			return
		}
		w.ingestOnce()
	}
}

// ingestOnce takes the pending set, starts a new journal segment for what
// comes next, writes the set to the store and deletes its segments.
func (w *Writer) ingestOnce() {
	w.jmu.Lock()
	p := w.cur
	if p.empty() {
		w.jmu.Unlock()
		return
	}
	w.cur, w.spare = w.spare, nil
	w.j.cut() // p's segments end here: they hold p's records only
	w.ingesting.Store(int64(p.live))
	w.curLive.Store(int64(w.cur.live))
	w.lag.ingest()
	w.jcond.Broadcast()
	w.jmu.Unlock()

	err := w.ingestSet(p)
	w.ingesting.Store(0)
	w.lag.ingestDone()
	if err != nil {
		// Given up (Close's deadline): the segments stay for the next
		// start's Recover, and so must every later one.
		if !w.ingestFailed {
			w.log.Warn("ledger: ingestion stopped at close; the journal keeps the rest for the next start", "err", err)
		}
		w.ingestFailed = true
	} else if !w.ingestFailed {
		w.j.remove(p.segs, w.log)
	}
	for _, wt := range p.waiters {
		wt.ch <- err
	}
	p.reset()
	w.jmu.Lock()
	w.spare = p
	w.jmu.Unlock()
}

// ingestSet writes p to the store, retrying with a capped backoff until it
// succeeds: the journal holds the rows meanwhile, so nothing is lost by
// waiting. Only Close's deadline (the writer's context) stops it.
func (w *Writer) ingestSet(p *pendingSet) error {
	backoff := w.backoff
	for tries := 1; ; tries++ {
		if w.ingestFailed {
			return p.lost(0, errIngestAbandoned)
		}
		start := w.now()
		items := p.live
		err := commitSet(w.ctx, w.s, p, &w.ibatch, w.opts.IngestBatch, w.rejected)
		if err == nil {
			if items > 0 {
				w.st.ingested(items, w.now().Sub(start))
			}
			w.storeFailing.Store(false)
			w.avail.clear(downStore)
			return nil
		}
		w.storeFailing.Store(true)
		if w.ctx.Err() != nil {
			return p.lost(tries, err)
		}
		w.st.retries.Add(1)
		w.log.Warn("ledger: ingesting the journal into the store failed, retrying", "tries", tries, "backoff", backoff, "err", err)
		if !w.sleep(w.ctx, backoff) {
			return p.lost(tries, err)
		}
		backoff = min(2*backoff, maxIngestBackoff)
	}
}

// errIngestAbandoned is what the waiters of a set get after an earlier set
// was given up: the journal keeps both for the next start.
var errIngestAbandoned = fmt.Errorf("ledger: ingestion abandoned at close: %w", ErrClosed)

// rejected reports a record the store refused for its content: lost.
func (w *Writer) rejected(e *WriteError) {
	w.st.failed.Add(int64(e.Reservations + e.Settlements))
	w.report(e)
}
