package sqlite_test

import (
	"context"
	"database/sql"
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
	s, _ := openBenchPath(b)
	return s
}

func openBenchPath(b *testing.B) (*sqlite.Store, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "ledger.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, path
}

// BenchmarkWriterSettle is raw ledger throughput: settlements per second
// through the group-commit Writer, each a Reserve then a Settle that waits
// until it is durable, from 1, 32 and 128 concurrent settlers; "direct"
// commits every group to SQLite, "journal" appends it to the journal and
// ingests in the background. Settles/s and CPU per settlement include
// Close, so the final ingest is paid for: everything is in SQLite at the
// end of either mode.
func BenchmarkWriterSettle(b *testing.B) {
	for _, mode := range []string{"direct", "journal"} {
		for _, settlers := range []int{1, 32, 128} {
			b.Run(fmt.Sprintf("%s/settlers=%d", mode, settlers), func(b *testing.B) {
				benchWriterSettle(b, mode == "journal", settlers)
			})
		}
	}
}

func benchWriterSettle(b *testing.B, journal bool, settlers int) {
	s, path := openBenchPath(b)
	opts := ledger.WriterOptions{}
	if journal {
		j, err := ledger.OpenJournal(path + ".journal")
		if err != nil {
			b.Fatal(err)
		}
		opts.Journal = j
	}
	w := ledger.NewWriter(s, opts)
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
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	el, cpu := time.Since(start), processCPU()-cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	reportLatency(b, lat)
	st := w.Stats()
	b.ReportMetric(float64(b.N)/el.Seconds(), "settles/s")
	b.ReportMetric(st.AvgBatch, "items/batch")
	b.ReportMetric(float64(st.CommitP50.Microseconds()), "commit-p50-µs")
	b.ReportMetric(float64(st.CommitP99.Microseconds()), "commit-p99-µs")
	if journal {
		b.ReportMetric(float64(st.Ingested)/max(float64(st.Ingests), 1), "rows/ingest")
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

// droppedIndexes are the usage indexes migration 3 dropped; the "v2"
// variants of the benchmarks put them back, for the before/after figures.
var droppedIndexes = []string{
	`CREATE INDEX requests_org ON requests (org, started_at)`,
	`CREATE INDEX requests_team ON requests (team, started_at)`,
	`CREATE INDEX requests_model ON requests (public_model, started_at)`,
	`CREATE INDEX requests_deployment ON requests (deployment, started_at)`,
}

// openIndexed opens a store with migration 2's indexes when v2 is set.
func openIndexed(b *testing.B, v2 bool) *sqlite.Store {
	s, path := openBenchPath(b)
	if v2 {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for _, q := range droppedIndexes {
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

// BenchmarkStoreIngest is what the journal's ingester asks of the store:
// one transaction of 2,000 settlements (two attempts each) whose
// reservations were settled before ingestion, so no reservation rows.
// ns/op is per transaction; cpu-µs/settle is the figure that matters.
// "v2" has migration 2's six usage indexes, "v3" migration 3's two.
func BenchmarkStoreIngest(b *testing.B) {
	for _, v2 := range []bool{true, false} {
		b.Run(map[bool]string{true: "indexes=v2", false: "indexes=v3"}[v2], func(b *testing.B) {
			s := openIndexed(b, v2)
			at := time.Now()
			const size = 2000
			batch := &ledger.Batch{Settlements: make([]ledger.Settlement, size)}
			b.ReportAllocs()
			b.ResetTimer()
			var cpu time.Duration
			for i := range b.N {
				b.StopTimer()
				for j := range size {
					_, st := benchSettlement(fmt.Sprintf("req-%d-%d", i, j), at.Add(time.Duration(i*size+j)*time.Millisecond))
					batch.Settlements[j] = *st
				}
				b.StartTimer()
				cpu0 := processCPU()
				if err := s.WriteBatch(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - cpu0
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*size), "cpu-µs/settle")
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "settles/s")
		})
	}
}

// BenchmarkUsage is what the dropped indexes cost the reports: 50,000
// requests over a week (5 orgs, 20 keys, 4 models, 3 deployments), queried
// by a key (an index in both schemas), by an org over a day, and grouped by
// model and deployment, with and without migration 2's indexes.
func BenchmarkUsage(b *testing.B) {
	for _, v2 := range []bool{true, false} {
		s := openIndexed(b, v2)
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		const rows, per = 50_000, 2000
		for i := 0; i < rows; i += per {
			batch := &ledger.Batch{}
			for j := i; j < i+per; j++ {
				_, st := benchSettlement(fmt.Sprintf("req-%06d", j), start.Add(time.Duration(j)*(7*24*time.Hour/rows)))
				r := &st.Request
				r.Org, r.KeyID = fmt.Sprint("org", j%5), fmt.Sprint("key_", j%20)
				r.PublicModel, r.Deployment = fmt.Sprint("model", j%4), fmt.Sprint("dep", j%3)
				batch.Settlements = append(batch.Settlements, *st)
			}
			if err := s.WriteBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		day := ledger.DayOf(start.Add(72 * time.Hour))
		for _, c := range []struct {
			name string
			q    ledger.UsageQuery
		}{
			{"key", ledger.UsageQuery{Filters: map[string]string{"key": "key_7"}}},
			{"org-day", ledger.UsageQuery{Filters: map[string]string{"org": "org3", "day": day}}},
			{"org", ledger.UsageQuery{Filters: map[string]string{"org": "org3"}}},
			{"by-model-deployment", ledger.UsageQuery{GroupBy: []string{"model", "deployment"}}},
		} {
			b.Run(fmt.Sprintf("indexes=%s/%s", map[bool]string{true: "v2", false: "v3"}[v2], c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Usage(context.Background(), c.q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
