package ledger

import (
	"context"
	"testing"
	"time"
)

// discardStore commits every batch instantly, so a benchmark sees the
// Writer's own cost: queueing, batching, copying rows into the batch.
type discardStore struct{ fakeStore }

func (*discardStore) WriteBatch(context.Context, *Batch) error { return nil }

// benchRows is one request's reservation and settlement with one attempt,
// shaped like the gateway's. The settlement is shared and never modified,
// so no per-op allocation is the benchmark's own.
func benchRows() (Reservation, *Settlement) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	r := Reservation{RequestID: "69019ca84b267c506431a2ff", KeyID: "key_a6ccdb6a7161", Org: "acme", Team: "search",
		PublicModel: "claude-sonnet-4-5", AmountMicro: 960_045, CreatedAt: now}
	s := &Settlement{
		Request: Request{RequestID: r.RequestID, Org: r.Org, Team: r.Team, KeyID: r.KeyID, PublicModel: r.PublicModel,
			ExactModel: "claude-sonnet-4-5", Deployment: "anthropic-direct", Attempts: 1, Status: "ok", InputTokens: 1200,
			OutputTokens: 300, CostMicroUSD: 8_100, CostStatus: "priced", ReservedMicroUSD: r.AmountMicro, Streamed: true,
			FirstTokenMS: 420, LatencyMS: 2_900, StartedAt: now, FinishedAt: now.Add(2900 * time.Millisecond)},
		Attempts: []Attempt{{RequestID: r.RequestID, Deployment: "anthropic-direct", HTTPStatus: 200, InputTokens: 1200,
			OutputTokens: 300, CostMicroUSD: 8_100, FirstByteMS: 420, DurationMS: 2_900, StartedAt: now}},
	}
	return r, s
}

// BenchmarkEnqueue is what the request path pays to hand the ledger one
// request's rows without waiting: Reserve before the first attempt,
// SettleAsync after the answer. The writer drains meanwhile, so a full
// queue's backpressure is part of the figure when the producer outruns it.
func BenchmarkEnqueue(b *testing.B) {
	w := NewWriter(&discardStore{}, WriterOptions{})
	r, s := benchRows()
	b.ReportAllocs()
	for b.Loop() {
		w.Reserve(r)
		w.SettleAsync(s)
	}
	b.StopTimer()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEnqueueParallel is the same from every core at once, as
// concurrent requests settle.
func BenchmarkEnqueueParallel(b *testing.B) {
	w := NewWriter(&discardStore{}, WriterOptions{})
	r, s := benchRows()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Reserve(r)
			w.SettleAsync(s)
		}
	})
	b.StopTimer()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}
