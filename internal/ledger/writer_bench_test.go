package ledger

import (
	"context"
	"testing"
)

// nopStore commits instantly: what is left is the Writer's own cost on the
// request path (queueing, waking, releasing).
type nopStore struct{ fakeStore }

func (*nopStore) WriteBatch(context.Context, *Batch) error { return nil }

// BenchmarkWriterOverhead is the Writer's cost per request with a store
// that costs nothing: Reserve plus a Settle that waits for its "commit",
// from GOMAXPROCS×4 concurrent callers.
func BenchmarkWriterOverhead(b *testing.B) {
	w := NewWriter(&nopStore{}, WriterOptions{})
	defer w.Close(context.Background())
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		s := settlement("r")
		r := Reservation{RequestID: "r"}
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
