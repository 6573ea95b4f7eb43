package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// journalWriter is a Writer with a journal in a fresh directory over f.
// Unless opts says otherwise its ingest ticker never fires: ingests happen
// on IngestBatch, Sync and Close only, so tests decide when.
func journalWriter(t *testing.T, f *fakeStore, opts WriterOptions) (*Writer, string, *sleeps) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db.journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Journal = j
	if opts.ingestTick == nil {
		opts.ingestTick = make(chan time.Time)
	}
	sl := &sleeps{}
	w := newWriter(f, opts, time.Now, sl.sleep)
	t.Cleanup(func() {
		// Bounded: a test that failed with the store blocked ends anyway.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w, path, sl
}

// segmentsOf lists the journal's segment files on disk.
func segmentsOf(t *testing.T, path string) []uint64 {
	t.Helper()
	j := &Journal{path: path}
	segs, err := j.segments()
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// recordsOf decodes every segment on disk, in order.
func recordsOf(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, seq := range segmentsOf(t, path) {
		data, err := os.ReadFile((&Journal{path: path}).segment(seq))
		if err != nil {
			t.Fatal(err)
		}
		decodeRecords(data[len(segMagic):], func(r *record) {
			if r.set != nil {
				out = append(out, "S:"+r.set.Request.RequestID)
			} else {
				out = append(out, "R:"+r.res.RequestID)
			}
		})
	}
	return out
}

func flat(b [][]string) []string {
	var out []string
	for _, x := range b {
		out = append(out, x...)
	}
	return out
}

func mustSync(t *testing.T, w *Writer) {
	t.Helper()
	if err := w.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// Settle returns once the journal holds the settlement, whatever the store
// is doing; the store gets it when ingestion runs.
func TestJournalSettleDoesNotWaitForTheStore(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w, path, _ := journalWriter(t, f, WriterOptions{})
	w.Reserve(Reservation{RequestID: "a"})
	if err := w.Settle(context.Background(), settlement("a")); err != nil {
		t.Fatalf("Settle = %v", err)
	}
	if got := recordsOf(t, path); !slices.Equal(got, []string{"R:a", "S:a"}) {
		t.Errorf("journal holds %v right after Settle, want [R:a S:a]", got)
	}
	if n := f.callCount(); n != 0 || w.Stats().Pending != 1 {
		t.Errorf("store calls %d, pending %d: want none yet, one settlement pending", n, w.Stats().Pending)
	}
	close(f.block)
	mustSync(t, w)
	// Settled before ingestion: the reservation never reaches the store.
	if got := f.committed(); !slices.Equal(flat(got), []string{"S:a"}) {
		t.Errorf("store got %v, want the settlement alone", got)
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left after ingestion, want none", segs)
	}
}

// Only reservations still open at ingestion are written, and a later
// ingest writes their settlement.
func TestJournalWritesOnlyOpenReservations(t *testing.T) {
	f := &fakeStore{}
	w, path, _ := journalWriter(t, f, WriterOptions{})
	w.Reserve(Reservation{RequestID: "long"})
	w.Reserve(Reservation{RequestID: "short"})
	w.SettleAsync(settlement("short"))
	w.SettleAsync(settlement("refused")) // no reservation at all
	mustSync(t, w)
	w.SettleAsync(settlement("long"))
	mustSync(t, w)
	want := [][]string{{"R:long", "S:short", "S:refused"}, {"S:long"}}
	if got := f.committed(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("store got %v, want %v", got, want)
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left, want none", segs)
	}
	if st := w.Stats(); st.Ingests != 2 || st.Ingested != 4 || st.Pending != 0 {
		t.Errorf("stats %+v: want 2 ingests of 4 records, nothing pending", st)
	}
}

// Segments rotate at every ingest and are deleted once ingested: the
// journal holds only what the store does not have yet.
func TestJournalCompaction(t *testing.T) {
	f := &fakeStore{}
	w, path, _ := journalWriter(t, f, WriterOptions{})
	var seen []uint64
	for round := range 3 {
		for i := range 5 {
			w.SettleAsync(settlement(fmt.Sprintf("r%d-%d", round, i)))
		}
		waitFor(t, "appended", func() bool { return w.Stats().Pending == 5 })
		segs := segmentsOf(t, path)
		if len(segs) != 1 {
			t.Fatalf("round %d: segments %v, want one", round, segs)
		}
		seen = append(seen, segs[0])
		mustSync(t, w)
		if segs := segmentsOf(t, path); len(segs) != 0 {
			t.Fatalf("round %d: segments %v after ingest, want none", round, segs)
		}
	}
	if !slices.IsSorted(seen) || seen[0] == seen[2] {
		t.Errorf("segment numbers %v: want a new, higher one per round", seen)
	}
	if n := len(flat(f.committed())); n != 15 {
		t.Errorf("%d settlements ingested, want 15", n)
	}
}

// Below IngestBatch, records wait for the ticker; at IngestBatch pending
// records ingestion starts at once; a transaction holds at most
// IngestBatch records.
func TestJournalIngestBatching(t *testing.T) {
	f := &fakeStore{}
	tick := make(chan time.Time)
	w, _, _ := journalWriter(t, f, WriterOptions{IngestBatch: 10, ingestTick: tick})
	var want []string
	for i := range 3 {
		w.SettleAsync(settlement(fmt.Sprint("t", i)))
		want = append(want, fmt.Sprint("S:t", i))
	}
	waitFor(t, "appended", func() bool { return w.Stats().Pending == 3 })
	if n := f.callCount(); n != 0 {
		t.Fatalf("%d store calls below IngestBatch before the tick", n)
	}
	tick <- time.Now()
	waitFor(t, "ingested on the tick", func() bool { return len(flat(f.committed())) == 3 })

	for i := range 25 {
		w.SettleAsync(settlement(fmt.Sprint("s", i)))
		want = append(want, fmt.Sprint("S:s", i))
	}
	// Fewer than IngestBatch may stay pending, no more.
	waitFor(t, "ingested without a tick", func() bool { return len(flat(f.committed())) >= 3+16 })
	// The tick must find the rest in the journal: a settlement still on
	// its way to a group commit would wait for a tick that never comes.
	waitFor(t, "all appended", func() bool { return w.Stats().Settlements == 28 })
	tick <- time.Now()
	waitFor(t, "the rest on the tick", func() bool { return len(flat(f.committed())) == 28 })
	for _, b := range f.committed() {
		if len(b) > 10 {
			t.Errorf("a transaction of %d records, IngestBatch 10", len(b))
		}
	}
	if got := flat(f.committed()); !slices.Equal(got, want) {
		t.Errorf("ingested %v, want %v in order", got, want)
	}
}

// A store that fails is retried with a capped backoff for as long as it
// takes: the journal holds the rows, Settle never waits for it, nothing is
// lost or written twice.
func TestJournalStoreFailureIsRetried(t *testing.T) {
	f := &fakeStore{fail: func(_ *Batch, call int) error {
		if call <= 8 {
			return errDisk
		}
		return nil
	}}
	var reported []error
	var mu sync.Mutex
	w, path, sl := journalWriter(t, f, WriterOptions{OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	if err := w.Settle(context.Background(), settlement("a")); err != nil {
		t.Fatalf("Settle = %v, want nil: the journal has it", err)
	}
	mustSync(t, w)
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(sl.d, want) {
		t.Errorf("backoff %v, want %v", sl.d, want)
	}
	if got := f.committed(); !slices.Equal(flat(got), []string{"S:a"}) {
		t.Errorf("store got %v", got)
	}
	if len(reported) != 0 {
		t.Errorf("OnError got %v: a retried ingest loses nothing", reported)
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left", segs)
	}
}

// A record the store refuses for its content costs only itself.
func TestJournalRejectedRecordIsIsolated(t *testing.T) {
	f := &fakeStore{fail: func(b *Batch, _ int) error {
		for _, s := range b.Settlements {
			if s.Request.RequestID == "bad" {
				return fmt.Errorf("constraint: %w", ErrRejected)
			}
		}
		return nil
	}}
	var reported []error
	var mu sync.Mutex
	w, _, _ := journalWriter(t, f, WriterOptions{OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	for _, id := range []string{"g1", "g2", "bad", "g3"} {
		w.Reserve(Reservation{RequestID: id})
		w.SettleAsync(settlement(id))
	}
	mustSync(t, w)
	got := flat(f.committed())
	slices.Sort(got)
	if !slices.Equal(got, []string{"S:g1", "S:g2", "S:g3"}) {
		t.Errorf("store got %v, want every good settlement", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var we *WriteError
	if len(reported) != 1 || !errors.As(reported[0], &we) || !errors.Is(we, ErrRejected) || we.Settlements != 1 {
		t.Errorf("OnError got %v, want the one rejected settlement", reported)
	}
	if w.Stats().Lost != 1 {
		t.Errorf("Lost = %d, want 1", w.Stats().Lost)
	}
}

// When the journal cannot be written, the ledger is unavailable at once:
// a Settle waiting to deliver its answer fails without waiting for the
// store (the answer is withheld), its settlement goes to the store
// uncharged, and the next append that succeeds makes the ledger available.
func TestJournalAppendFailureMakesTheLedgerUnavailable(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w, path, _ := journalWriter(t, f, WriterOptions{})
	w.SettleAsync(settlement("first")) // opens a segment
	waitFor(t, "first appended", func() bool { return w.Stats().Pending == 1 })
	if err := w.Unavailable(); err != nil {
		t.Fatalf("Unavailable before any failure = %v", err)
	}
	// Swap the segment for a read-only handle: the next write fails.
	w.jmu.Lock()
	ro, err := os.Open(w.j.segment(w.j.seq))
	if err != nil {
		t.Fatal(err)
	}
	w.j.f.Close()
	w.j.f = ro
	w.jmu.Unlock()
	b := settlement("b")
	b.Request.CostMicroUSD, b.Request.CostStatus = 700, CostPriced
	b.Attempts[0].CostMicroUSD = 700
	// The store is blocked: Settle must not wait for it.
	if err := w.Settle(context.Background(), b); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Settle = %v, want ErrUnavailable", err)
	}
	if b.Request.CostMicroUSD != 0 || b.Attempts[0].CostMicroUSD != 0 || b.Request.Status != StatusFailed ||
		b.Request.FailureClass != ClassLedgerUnavailable || b.Request.CostStatus != CostNone {
		t.Errorf("the withheld answer's settlement = %+v, want uncharged and failed as ledger_unavailable", b.Request)
	}
	if err := w.Unavailable(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "journal cannot be written") {
		t.Errorf("Unavailable = %v, want the journal's failure", err)
	}
	close(f.block)
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := flat(f.committed()); !slices.Equal(got, []string{"S:first", "S:b"}) {
		t.Errorf("store got %v", got)
	}
	if st := w.Stats(); st.JournalFailures != 1 {
		t.Errorf("JournalFailures = %d, want 1", st.JournalFailures)
	}
	// The journal recovers: the next append starts a new segment.
	if err := w.Settle(context.Background(), settlement("c")); err != nil {
		t.Fatal(err)
	}
	if err := w.Unavailable(); err != nil {
		t.Errorf("Unavailable after a good append = %v", err)
	}
	if got := recordsOf(t, path); !slices.Equal(got, []string{"S:c"}) {
		t.Errorf("journal after the failure holds %v, want [S:c]", got)
	}
}

// Close appends everything queued, ingests it, deletes the segments and
// releases the journal's lock.
func TestJournalCloseFlushes(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	path := filepath.Join(t.TempDir(), "l.db.journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(f, WriterOptions{Journal: j, IngestBatch: 50, ingestTick: make(chan time.Time)}, time.Now, (&sleeps{}).sleep)
	for i := range 300 {
		w.Reserve(Reservation{RequestID: fmt.Sprint("a", i)})
		w.SettleAsync(settlement(fmt.Sprint("a", i)))
	}
	w.Reserve(Reservation{RequestID: "open"})
	<-f.entered
	closed := make(chan error, 1)
	go func() { closed <- w.Close(context.Background()) }()
	waitFor(t, "closed", w.closed.Load)
	close(f.block)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	settled := map[string]int{}
	for _, r := range flat(f.committed()) {
		settled[r]++
	}
	for i := range 300 {
		if id := fmt.Sprint("S:a", i); settled[id] != 1 {
			t.Errorf("%s ingested %d times, want once", id, settled[id])
		}
	}
	if settled["R:open"] != 1 {
		t.Error("the open reservation was not ingested")
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left after Close", segs)
	}
	j2, err := OpenJournal(path)
	if err != nil {
		t.Fatalf("reopening after Close: %v", err)
	}
	j2.Close()
}

// A Close whose deadline passes while the store hangs keeps the journal:
// the next start replays it, so nothing Settle acknowledged is lost.
func TestJournalCloseDeadlineKeepsSegments(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	path := filepath.Join(t.TempDir(), "l.db.journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(f, WriterOptions{Journal: j, ingestTick: make(chan time.Time)}, time.Now, (&sleeps{}).sleep)
	w.Reserve(Reservation{RequestID: "a"})
	if err := w.Settle(context.Background(), settlement("a")); err != nil {
		t.Fatal(err)
	}
	w.Reserve(Reservation{RequestID: "open"})
	synced := make(chan error, 1)
	go func() { synced <- w.Sync(context.Background()) }()
	<-f.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled) = %v", err)
	}
	if err := <-synced; err == nil {
		t.Error("Sync returned nil though the store never took the rows")
	}
	waitFor(t, "writer gone", func() bool {
		select {
		case <-w.done:
			return true
		default:
			return false
		}
	})
	if got := recordsOf(t, path); !slices.Equal(got, []string{"R:a", "S:a", "R:open"}) {
		t.Fatalf("journal kept %v, want everything", got)
	}
	// The next start.
	j2, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	f2 := &fakeStore{}
	rec, err := j2.Recover(context.Background(), f2)
	if err != nil {
		t.Fatal(err)
	}
	if got := f2.committed(); !slices.Equal(flat(got), []string{"R:open", "S:a"}) {
		t.Errorf("replayed %v, want the open reservation and the settlement", got)
	}
	if rec.Segments != 1 || rec.Reservations != 2 || rec.Settlements != 1 || rec.TornBytes != 0 {
		t.Errorf("recovery %+v", rec)
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left after Recover", segs)
	}
}

func TestJournalIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db.journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(path); !errors.Is(err, ErrJournalLocked) {
		t.Errorf("second OpenJournal = %v, want ErrJournalLocked", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := OpenJournal(path)
	if err != nil {
		t.Fatalf("OpenJournal after Close = %v", err)
	}
	j2.Close()
}

// writeSegment leaves a segment as a dead process would: records, then
// perhaps part of one more.
func writeSegment(t *testing.T, path string, seq uint64, recs []record, torn int) {
	t.Helper()
	b := []byte(segMagic)
	for _, r := range recs {
		if r.set != nil {
			b = appendSettlement(b, r.set)
		} else {
			b = appendReservation(b, &r.res)
		}
	}
	if torn > 0 {
		b = append(b, appendSettlement(nil, settlement("torn"))[:torn]...)
	}
	if err := os.WriteFile((&Journal{path: path}).segment(seq), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func resRec(id string) record { return record{res: Reservation{RequestID: id}} }
func setRec(id string) record { return record{set: settlement(id)} }

// Recover replays the segments in order in one pass (a torn tail is
// ignored), deletes them, then releases; replaying twice writes nothing
// twice (the store skips settled requests) and an unreadable segment stops
// it with the journal intact.
func TestRecover(t *testing.T) {
	t.Run("foreign file refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db.journal")
		if err := os.WriteFile(path+".0000000001", []byte("not a journal segment"), 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if _, err := j.Recover(context.Background(), &fakeStore{}); err == nil {
			t.Fatal("Recover accepted a foreign file")
		}
		if segs := segmentsOf(t, path); len(segs) != 1 {
			t.Errorf("segments %v: the foreign file must stay", segs)
		}
	})
	t.Run("store down keeps the journal", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db.journal")
		writeSegment(t, path, 1, []record{resRec("a"), setRec("a")}, 0)
		j, err := OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if _, err := j.Recover(context.Background(), &fakeStore{fail: func(*Batch, int) error { return errDisk }}); !errors.Is(err, errDisk) {
			t.Fatalf("Recover = %v, want the store's error", err)
		}
		if segs := segmentsOf(t, path); len(segs) != 1 {
			t.Errorf("segments %v: must stay for the next try", segs)
		}
	})
	t.Run("replays in order, torn tail ignored", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "l.db.journal")
		writeSegment(t, path, 7, []record{resRec("a"), resRec("b"), setRec("a")}, 0)
		writeSegment(t, path, 8, []record{resRec("c"), setRec("b"), setRec("d")}, 11)
		j, err := OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeStore{}
		rec, err := j.Recover(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"R:c", "S:a", "S:b", "S:d"}
		if got := flat(f.committed()); !slices.Equal(got, want) {
			t.Errorf("replayed %v, want %v", got, want)
		}
		if rec.Segments != 2 || rec.Reservations != 3 || rec.Settlements != 3 || rec.TornBytes != 11 {
			t.Errorf("recovery %+v", rec)
		}
		if segs := segmentsOf(t, path); len(segs) != 0 {
			t.Errorf("segments %v left", segs)
		}
		// The next segment numbers continue past the replayed ones.
		if _, err := j.append([]byte{}, false); err != nil || j.seq != 9 {
			t.Errorf("next segment %d (%v), want 9", j.seq, err)
		}
		j.Close()
	})
}

// A Writer given a journal that was not recovered ingests the leftovers
// before anything new, so nothing an earlier process acknowledged is lost
// or reordered.
func TestWriterIngestsLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db.journal")
	writeSegment(t, path, 3, []record{resRec("old"), setRec("old"), resRec("open")}, 5)
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStore{}
	w := newWriter(f, WriterOptions{Journal: j, ingestTick: make(chan time.Time)}, time.Now, (&sleeps{}).sleep)
	w.SettleAsync(settlement("new"))
	mustSync(t, w)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := flat(f.committed()); !slices.Equal(got, []string{"R:open", "S:old", "S:new"}) {
		t.Errorf("store got %v", got)
	}
	if segs := segmentsOf(t, path); len(segs) != 0 {
		t.Errorf("segments %v left", segs)
	}
}

// With the store stuck, MaxPending bounds what waits in memory: group
// commits stop until ingestion takes the pending set, then resume.
func TestJournalBackpressure(t *testing.T) {
	f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	w, _, _ := journalWriter(t, f, WriterOptions{MaxPending: 4, MaxBatch: 1, IngestBatch: 1000})
	w.SettleAsync(settlement("first"))
	waitFor(t, "first appended", func() bool { return w.Stats().Pending == 1 })
	go w.Sync(context.Background()) // the ingester takes [first] and hangs in the store
	<-f.entered
	for i := range 20 {
		w.SettleAsync(settlement(fmt.Sprint("s", i)))
	}
	// Pending counts the set being ingested ([first]) and the 4 waiting.
	waitFor(t, "the writer to stop at MaxPending", func() bool {
		st := w.Stats()
		return st.Pending == 1+4 && st.Queued == 15
	})
	close(f.block)
	mustSync(t, w)
	if n := len(flat(f.committed())); n != 21 {
		t.Errorf("%d settlements ingested, want 21", n)
	}
}

func TestWriterSync(t *testing.T) {
	t.Run("without a journal, waits for the commit", func(t *testing.T) {
		f := &fakeStore{}
		w, _ := testWriter(t, f, WriterOptions{})
		w.SettleAsync(settlement("a"))
		mustSync(t, w)
		if got := flat(f.committed()); !slices.Equal(got, []string{"S:a"}) {
			t.Errorf("store got %v after Sync", got)
		}
	})
	t.Run("nothing pending", func(t *testing.T) {
		f := &fakeStore{}
		w, _, _ := journalWriter(t, f, WriterOptions{})
		mustSync(t, w)
		if n := f.callCount(); n != 0 {
			t.Errorf("an idle Sync called the store %d times", n)
		}
	})
	t.Run("after Close", func(t *testing.T) {
		f := &fakeStore{}
		w, _, _ := journalWriter(t, f, WriterOptions{})
		w.SettleAsync(settlement("a"))
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		mustSync(t, w)
		if got := flat(f.committed()); !slices.Equal(got, []string{"S:a"}) {
			t.Errorf("store got %v", got)
		}
	})
	t.Run("context ends first", func(t *testing.T) {
		f := &fakeStore{block: make(chan struct{}), entered: make(chan struct{}, 1)}
		w, _, _ := journalWriter(t, f, WriterOptions{})
		w.SettleAsync(settlement("a"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Sync(ctx) }()
		<-f.entered
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Sync = %v, want context.Canceled", err)
		}
		close(f.block)
	})
}

// Closing the Writer stops the ingester too.
func TestJournalNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "l.db.journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(&fakeStore{}, WriterOptions{Journal: j})
	for i := range 20 {
		w.SettleAsync(settlement(fmt.Sprint("r", i)))
	}
	mustSync(t, w)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

// BenchmarkJournalOverhead is the request path's cost with a journal and a
// store that costs nothing: Reserve plus a Settle that waits for its
// journal write, from GOMAXPROCS×4 concurrent callers; ingestion included.
func BenchmarkJournalOverhead(b *testing.B) {
	j, err := OpenJournal(filepath.Join(b.TempDir(), "l.db.journal"))
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(&nopStore{}, WriterOptions{Journal: j})
	defer w.Close(context.Background())
	r, s := benchRows()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Reserve(r)
			if err := w.Settle(context.Background(), s); err != nil {
				b.Error(err)
				return
			}
		}
	})
	st := w.Stats()
	b.ReportMetric(st.AvgBatch, "items/batch")
}

// A ledger file deleted (or replaced) while serving makes the ledger
// unavailable within a check, for good: writes would land in an unlinked
// file no restart reads. A Settle waiting to deliver then fails at once.
func TestDeletedLedgerIsUnavailable(t *testing.T) {
	for _, victim := range []string{"db", "journal lock"} {
		t.Run(victim, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "l.db")
			if err := os.WriteFile(db, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			f := &fakeStore{}
			w, path, _ := journalWriter(t, f, WriterOptions{Watch: []string{db}, CheckEvery: 5 * time.Millisecond, MinFreeBytes: -1})
			if err := w.Settle(context.Background(), settlement("before")); err != nil {
				t.Fatal(err)
			}
			gone := db
			if victim != "db" {
				gone = path + ".lock"
			}
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the deletion noticed", func() bool { return w.Unavailable() != nil })
			if err := w.Unavailable(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "deleted or replaced") {
				t.Errorf("Unavailable = %v", err)
			}
			after := settlement("after")
			if err := w.Settle(context.Background(), after); !errors.Is(err, ErrUnavailable) {
				t.Errorf("Settle after the deletion = %v, want ErrUnavailable", err)
			}
			if after.Request.Status != StatusFailed || after.Request.FailureClass != ClassLedgerUnavailable {
				t.Errorf("settlement after the deletion = %+v", after.Request)
			}
			// A new file at the path is another file: still unavailable.
			if err := os.WriteFile(gone, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // several checks
			if w.Unavailable() == nil {
				t.Error("a replaced file made the ledger available again")
			}
		})
	}
}

// Below min_free_bytes the ledger is unavailable before any write fails,
// and available again once the space is back.
func TestLowDiskIsUnavailable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var free atomic.Uint64
	free.Store(1 << 20)
	w, _, _ := journalWriter(t, &fakeStore{}, WriterOptions{Watch: []string{db}, CheckEvery: 5 * time.Millisecond,
		MinFreeBytes: 32 << 20, free: func(string) (uint64, bool) { return free.Load(), true }})
	waitFor(t, "the low disk noticed", func() bool { return w.Unavailable() != nil })
	if err := w.Unavailable(); !strings.Contains(err.Error(), "1024 KiB free under") {
		t.Errorf("Unavailable = %v", err)
	}
	free.Store(1 << 30)
	waitFor(t, "the space back", func() bool { return w.Unavailable() == nil })
}

// After a failed append, the monitor's probe makes the ledger available
// again without waiting for traffic (admission is stopped meanwhile).
func TestJournalProbeRestoresAvailability(t *testing.T) {
	w, path, _ := journalWriter(t, &fakeStore{}, WriterOptions{CheckEvery: 5 * time.Millisecond, MinFreeBytes: -1})
	w.avail.set(downJournal, "the journal cannot be written: no space left on device")
	waitFor(t, "the probe", func() bool { return w.Unavailable() == nil })
	if _, err := os.Stat(path + ".probe"); !os.IsNotExist(err) {
		t.Errorf("the probe file was left behind: %v", err)
	}
}
