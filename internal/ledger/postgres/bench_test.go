package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// benchRows is how many requests BenchmarkUsage1M loads into each store:
// SPILLWAY_BENCH_ROWS, default 1,000,000 (loading takes a few tens of
// seconds per store on 2 cores).
func benchRows(b *testing.B) int {
	if v := os.Getenv("SPILLWAY_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 || n > 20_000_000 {
			b.Fatalf("SPILLWAY_BENCH_ROWS=%q: want 1000..20000000", v)
		}
		return n
	}
	return 1_000_000
}

// loadUsage fills s with n settled requests over 30 days (5 orgs, 20 keys,
// 4 models, 3 deployments, a failed or failed-over one now and then)
// through the store's batch API, 2,000 settlements a batch (what the
// journal's ingester sends). Attempt rows are left out: usage queries
// never read them.
func loadUsage(b *testing.B, s ledger.Store, n int) time.Duration {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	step := 30 * 24 * time.Hour / time.Duration(n)
	const per = 2000
	batch := &ledger.Batch{Settlements: make([]ledger.Settlement, 0, per)}
	t0 := time.Now()
	for i := 0; i < n; i += per {
		batch.Settlements = batch.Settlements[:0]
		for j := i; j < min(i+per, n); j++ {
			at := start.Add(time.Duration(j) * step)
			r := ledger.Request{RequestID: fmt.Sprintf("req-%08d", j), Org: fmt.Sprint("org", j%5),
				Team: fmt.Sprint("team", j%10), KeyID: fmt.Sprint("key_", j%20), PublicModel: fmt.Sprint("model", j%4),
				ExactModel: "exact", Deployment: fmt.Sprint("dep", j%3), Attempts: 1 + j%7/6, RouteDepth: j % 7 / 6,
				Status: ledger.StatusOK, InputTokens: 500 + j%100, OutputTokens: 200 + j%50, CostMicroUSD: int64(1000 + j%300),
				CostStatus: ledger.CostPriced, ReservedMicroUSD: 5000, FirstTokenMS: 300, LatencyMS: 900,
				StartedAt: at, FinishedAt: at.Add(time.Second)}
			if j%50 == 0 {
				r.Status, r.FailureClass, r.Deployment, r.RouteDepth, r.CostMicroUSD = ledger.StatusFailed, "provider_unavailable", "", -1, 0
			}
			batch.Settlements = append(batch.Settlements, ledger.Settlement{Request: r})
		}
		if err := s.WriteBatch(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(t0)
}

// BenchmarkUsage1M: the usage queries GET /v1/usage and start-up run, on
// the same million requests in SQLite and in PostgreSQL. Compare a
// query's ns/op across the two stores (the figures in the README come
// from here).
func BenchmarkUsage1M(b *testing.B) {
	dsn := freshSchema(b)
	n := benchRows(b)
	ctx := context.Background()
	pg, err := Open(ctx, dsn, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	lite, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	// The same database without parallel workers: one process per query,
	// as SQLite runs in one thread (on a machine whose cores are busy,
	// PostgreSQL's workers also take more of them than one thread gets).
	serial, err := Open(ctx, withParam(dsn, "max_parallel_workers_per_gather", "0"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer serial.Close()
	stores := []struct {
		name string
		s    ledger.Store
	}{{"sqlite", lite}, {"postgres", pg}, {"postgres-serial", serial}}
	for _, st := range stores[:2] {
		d := loadUsage(b, st.s, n)
		b.Logf("%s: loaded %d requests in %v (%.0f rows/s)", st.name, n, d.Round(time.Millisecond), float64(n)/d.Seconds())
	}
	if _, err := pg.pool.Exec(ctx, `ANALYZE requests`); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day := ledger.DayOf(start.Add(72 * time.Hour))
	week := ledger.UsageQuery{From: start.Add(7 * 24 * time.Hour), To: start.Add(14 * 24 * time.Hour), GroupBy: []string{"day"}}
	cases := []struct {
		name string
		q    *ledger.UsageQuery // nil: Spends (start-up)
	}{
		{"key", &ledger.UsageQuery{Filters: map[string]string{"key": "key_7"}}},
		{"key-day", &ledger.UsageQuery{Filters: map[string]string{"key": "key_7", "day": day}}},
		{"org-day", &ledger.UsageQuery{Filters: map[string]string{"org": "org3", "day": day}}},
		{"week-by-day", &week},
		{"total", &ledger.UsageQuery{}},
		{"by-model-deployment", &ledger.UsageQuery{GroupBy: []string{"model", "deployment"}}},
		{"spends", nil},
	}
	for _, c := range cases {
		for _, st := range stores {
			b.Run(c.name+"/"+st.name, func(b *testing.B) {
				for b.Loop() {
					var err error
					if c.q == nil {
						_, err = st.s.Spends(ctx, start.Add(10*24*time.Hour))
					} else {
						_, err = st.s.Usage(ctx, *c.q)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStoreIngest is what the journal's ingester asks of the store,
// as the SQLite store's benchmark of the same name: one transaction of
// 2,000 settlements with two attempts each. ns/op is per transaction.
func BenchmarkStoreIngest(b *testing.B) {
	s := openFresh(b)
	at := time.Now()
	const size = 2000
	batch := &ledger.Batch{Settlements: make([]ledger.Settlement, size)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for j := range size {
			id := fmt.Sprintf("req-%d-%d", i, j)
			st := ledger.Settlement{Request: ledger.Request{RequestID: id, Org: "o", Team: "t", KeyID: "k",
				PublicModel: "m", ExactModel: "m", Deployment: "d1", RouteDepth: 1, Attempts: 2, Status: ledger.StatusOK,
				InputTokens: 100, OutputTokens: 50, CostMicroUSD: 700, CostStatus: ledger.CostPriced, StartedAt: at, FinishedAt: at}}
			st.Attempts = []ledger.Attempt{{Seq: 0, Deployment: "d0", FailureClass: "provider_unavailable", HTTPStatus: 503, StartedAt: at},
				{Seq: 1, Deployment: "d1", HTTPStatus: 200, InputTokens: 100, OutputTokens: 50, CostMicroUSD: 700, StartedAt: at}}
			batch.Settlements[j] = st
		}
		b.StartTimer()
		if err := s.WriteBatch(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "settles/s")
}
