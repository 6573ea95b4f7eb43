package ledger

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// WriterStats describes a Writer's work so far. With a Journal, a "commit"
// is a group commit's journal append; ingestion into the store is counted
// apart.
type WriterStats struct {
	Batches      int64 // committed group commits (transactions, or journal appends)
	Reservations int64 // reservations committed
	Settlements  int64 // settlements committed (duplicates the store skipped included)
	Retries      int64 // failed WriteBatch calls that were retried
	Lost         int64 // items whose batch finally failed or was rejected
	MaxBatch     int64 // most items in one committed batch
	AvgBatch     float64
	// Commit latency: one WriteBatch call that committed (approximate
	// quantiles, within 1/8 of the value).
	CommitP50, CommitP99, CommitMax time.Duration
	// Settle latency: a Settle call from queueing to its release, the
	// time the gateway's final byte waits for the ledger.
	SettleP50, SettleP99, SettleMax time.Duration
	Queued                          int // items waiting for the writer now

	// Journal mode only.
	Ingests  int64 // store transactions series that ingested a pending set
	Ingested int64 // records ingested (reservations settled before ingestion are not counted)
	// Ingest latency: one pending set into the store.
	IngestP50, IngestP99, IngestMax time.Duration
	Pending                         int   // records not in the store yet (being ingested included)
	JournalFailures                 int64 // group commits whose journal append failed (their answers withheld)

	// Unavailable names why the ledger cannot make rows durable now (see
	// UnavailableError.Reason); "" while it can.
	Unavailable string
	// Lag is the age of the oldest accepted record not in the store yet
	// (see Writer.Lag).
	Lag time.Duration
}

// Stats returns a snapshot of the Writer's counters.
func (w *Writer) Stats() WriterStats {
	ws := WriterStats{
		Batches:      w.st.batches.Load(),
		Reservations: w.st.reservations.Load(),
		Settlements:  w.st.settlements.Load(),
		Retries:      w.st.retries.Load(),
		Lost:         w.st.failed.Load(),
		MaxBatch:     w.st.maxBatch.Load(),
		Queued:       len(w.q),
	}
	if ws.Batches > 0 {
		ws.AvgBatch = float64(ws.Reservations+ws.Settlements) / float64(ws.Batches)
	}
	ws.CommitP50, ws.CommitP99, ws.CommitMax = w.st.commit.quantiles()
	ws.SettleP50, ws.SettleP99, ws.SettleMax = w.st.wait.quantiles()
	ws.Ingests = w.st.ingests.Load()
	ws.Ingested = w.st.ingestedRows.Load()
	ws.IngestP50, ws.IngestP99, ws.IngestMax = w.st.ingest.quantiles()
	ws.JournalFailures = w.st.journalFailures.Load()
	if e, ok := w.avail.err().(*UnavailableError); ok {
		ws.Unavailable = e.Reason
	}
	if w.j != nil {
		ws.Pending = int(w.curLive.Load() + w.ingesting.Load())
	}
	ws.Lag = w.Lag()
	return ws
}

type stats struct {
	batches, reservations, settlements atomic.Int64
	retries, failed, maxBatch          atomic.Int64
	commit, wait                       histogram

	ingests, ingestedRows, journalFailures atomic.Int64
	ingest                                 histogram
}

func (s *stats) ingested(rows int, d time.Duration) {
	s.ingests.Add(1)
	s.ingestedRows.Add(int64(rows))
	s.ingest.record(d)
}

func (s *stats) committed(res, set int, d time.Duration) {
	s.batches.Add(1)
	s.reservations.Add(int64(res))
	s.settlements.Add(int64(set))
	n := int64(res + set)
	for {
		m := s.maxBatch.Load()
		if n <= m || s.maxBatch.CompareAndSwap(m, n) {
			break
		}
	}
	s.commit.record(d)
}

// histogram is a lock-free log-linear latency histogram: 8 buckets per
// power of two, so a quantile is within 1/8 of the true value. Recording
// is two atomic adds; reading takes a consistent-enough snapshot.
type histogram struct {
	counts [64 * 8]atomic.Uint64
	max    atomic.Int64
}

func bucketOf(ns uint64) int {
	if ns < 8 {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // >= 3
	return e*8 + int(ns>>(e-3)&7)
}

// bucketValue is the middle of bucket i.
func bucketValue(i int) uint64 {
	if i < 8 {
		return uint64(i)
	}
	e, m := i/8, uint64(i%8)
	lo := (8 + m) << (e - 3)
	return lo + (uint64(1)<<(e-3))/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))].Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (h *histogram) quantiles() (p50, p99, mx time.Duration) {
	var snap [len(h.counts)]uint64
	var total uint64
	for i := range h.counts {
		snap[i] = h.counts[i].Load()
		total += snap[i]
	}
	if total == 0 {
		return 0, 0, 0
	}
	return h.at(&snap, total, 0.50), h.at(&snap, total, 0.99), time.Duration(h.max.Load())
}

func (h *histogram) at(snap *[64 * 8]uint64, total uint64, q float64) time.Duration {
	rank := uint64(q*float64(total-1)) + 1
	var c uint64
	for i, n := range snap {
		c += n
		if c >= rank {
			v := time.Duration(bucketValue(i))
			if mx := time.Duration(h.max.Load()); v > mx {
				v = mx
			}
			return v
		}
	}
	return time.Duration(h.max.Load())
}
