package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// benchSettlement is the benchmarked unit: one request row and two attempt
// rows (a failed hop, then the serving rung), as a failover produces.
func benchSettlement(id string, at time.Time) (ledger.Reservation, *ledger.Settlement) {
	r := ledger.Reservation{RequestID: id, KeyID: "key_bench", Org: "acme", Team: "search",
		PublicModel: "claude-sonnet-4-5", AmountMicro: 120_000, CreatedAt: at}
	s := &ledger.Settlement{
		Request: ledger.Request{RequestID: id, Org: "acme", Team: "search", KeyID: "key_bench",
			PublicModel: "claude-sonnet-4-5", ExactModel: "claude-sonnet-4-5", Deployment: "bedrock-us",
			RouteDepth: 1, Attempts: 2, Status: ledger.StatusOK, InputTokens: 1200, OutputTokens: 300,
			CostMicroUSD: 8100, CostStatus: ledger.CostPriced, ReservedMicroUSD: 120_000, Streamed: true,
			FirstTokenMS: 420, LatencyMS: 2140, StartedAt: at, FinishedAt: at.Add(2140 * time.Millisecond)},
		Attempts: []ledger.Attempt{
			{Seq: 0, Deployment: "anthropic-direct", FailureClass: "provider_unavailable", HTTPStatus: 529,
				DurationMS: 240, StartedAt: at},
			{Seq: 1, Deployment: "bedrock-us", HTTPStatus: 200, InputTokens: 1200, OutputTokens: 300,
				CostMicroUSD: 8100, FirstByteMS: 180, DurationMS: 1900, StartedAt: at.Add(240 * time.Millisecond)},
		},
	}
	return r, s
}

func openBench(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkWriterSettle is raw ledger throughput: settlements per second
// through the group-commit Writer, each a Reserve then a Settle that waits
// for its commit, from 1, 32 and 128 concurrent settlers.
func BenchmarkWriterSettle(b *testing.B) {
	for _, settlers := range []int{1, 32, 128} {
		b.Run(fmt.Sprintf("settlers=%d", settlers), func(b *testing.B) {
			s := openBench(b)
			w := ledger.NewWriter(s, ledger.WriterOptions{})
			var next atomic.Int64
			lat := make([][]time.Duration, settlers)
			at := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU()
			var wg sync.WaitGroup
			for g := range settlers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						r, st := benchSettlement(fmt.Sprintf("req-%d", n), at.Add(time.Duration(n)*time.Millisecond))
						t0 := time.Now()
						w.Reserve(r)
						if err := w.Settle(context.Background(), st); err != nil {
							b.Error(err)
							return
						}
						lat[g] = append(lat[g], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			el, cpu := time.Since(start), processCPU()-cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			if err := w.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			reportLatency(b, lat)
			st := w.Stats()
			b.ReportMetric(float64(b.N)/el.Seconds(), "settles/s")
			b.ReportMetric(st.AvgBatch, "items/batch")
			b.ReportMetric(float64(st.CommitP50.Microseconds()), "commit-p50-µs")
			b.ReportMetric(float64(st.CommitP99.Microseconds()), "commit-p99-µs")
		})
	}
}

// BenchmarkSyncPerRequest is the baseline a synchronous ledger pays: one
// transaction (reservation and settlement) per request, from 1 and 32
// concurrent callers sharing the store's single writer connection.
func BenchmarkSyncPerRequest(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := openBench(b)
			var next atomic.Int64
			lat := make([][]time.Duration, callers)
			at := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU()
			var wg sync.WaitGroup
			for g := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						r, st := benchSettlement(fmt.Sprintf("req-%d", n), at.Add(time.Duration(n)*time.Millisecond))
						t0 := time.Now()
						err := s.WriteBatch(context.Background(), &ledger.Batch{
							Reservations: []ledger.Reservation{r}, Settlements: []ledger.Settlement{*st}})
						if err != nil {
							b.Error(err)
							return
						}
						lat[g] = append(lat[g], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			el, cpu := time.Since(start), processCPU()-cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			reportLatency(b, lat)
			b.ReportMetric(float64(b.N)/el.Seconds(), "settles/s")
		})
	}
}

// BenchmarkStoreWriteBatch is the store alone: one transaction of 128
// reservations and 128 settlements (3 rows each); ns/op is per batch.
func BenchmarkStoreWriteBatch(b *testing.B) {
	s := openBench(b)
	at := time.Now()
	const size = 128
	batch := &ledger.Batch{Reservations: make([]ledger.Reservation, size), Settlements: make([]ledger.Settlement, size)}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range b.N {
		for j := range size {
			r, st := benchSettlement(fmt.Sprintf("req-%d-%d", i, j), at.Add(time.Duration(i*size+j)*time.Millisecond))
			batch.Reservations[j], batch.Settlements[j] = r, *st
		}
		if err := s.WriteBatch(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*size), "cpu-µs/settle")
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "settles/s")
}

func reportLatency(b *testing.B, per [][]time.Duration) {
	var all []time.Duration
	for _, l := range per {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
