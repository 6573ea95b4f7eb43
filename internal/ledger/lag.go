package ledger

import (
	"sync/atomic"
	"time"
)

// lag tracks when the oldest record the Writer accepted and the store
// does not have yet was accepted, in three places a record waits in
// turn: the batch the writer goroutine is filling or committing, and
// with a Journal the pending set (appended, not ingested) and the set
// being ingested. Each holds a UnixNano, 0 when empty. The queue between
// a caller and the writer goroutine is not tracked: the goroutine takes
// from it as soon as it is free, so what waits there is younger than the
// batch it is busy with.
type lag struct {
	batch, pending, ingesting atomic.Int64
}

// Lag is the age of the oldest ledger record accepted (by Reserve, Settle
// or SettleAsync) that is not in the store yet: queued for a group
// commit, being committed, or with a Journal appended but not yet
// ingested. 0 when every accepted record is in the store. A healthy
// ledger's lag stays under the group commit's delay, or with a Journal
// under IngestEvery (500ms by default); a store that is down or slower
// than the traffic makes it grow.
func (w *Writer) Lag() time.Duration {
	oldest := int64(0)
	for _, at := range [...]int64{w.lag.batch.Load(), w.lag.pending.Load(), w.lag.ingesting.Load()} {
		if at != 0 && (oldest == 0 || at < oldest) {
			oldest = at
		}
	}
	if oldest == 0 {
		return 0
	}
	return max(0, time.Duration(w.now().UnixNano()-oldest))
}

// taking notes the first item of a batch the writer goroutine took.
func (l *lag) taking(it *item) { l.batch.Store(it.at) }

// committed notes that the writer goroutine's batch is committed (with a
// Journal: appended, and now pending; see appended).
func (l *lag) committed() { l.batch.Store(0) }

// appended notes a batch appended to the journal's pending set; oldest is
// its first item's acceptance. Called under jmu.
func (l *lag) appended(oldest int64) {
	l.pending.CompareAndSwap(0, oldest)
}

// ingest notes the pending set taken for ingestion (under jmu), and done
// its end.
func (l *lag) ingest()     { l.ingesting.Store(l.pending.Swap(0)) }
func (l *lag) ingestDone() { l.ingesting.Store(0) }
