package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// historyRows is how many request rows BenchmarkHistory generates:
// SPILLWAY_BENCH_HISTORY_ROWS, default 10,000,000.
func historyRows(b *testing.B) int {
	if v := os.Getenv("SPILLWAY_BENCH_HISTORY_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 || n > 50_000_000 {
			b.Fatalf("SPILLWAY_BENCH_HISTORY_ROWS=%q: want 1000..50000000", v)
		}
		return n
	}
	return 10_000_000
}

// historyStart is the first generated request's start; the rows spread
// over historyDays days.
var historyStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

const historyDays = 30

// generateHistory writes n request rows straight into a schema-6 database
// (before the aggregates) with one INSERT ... SELECT over a recursive
// counter: 1,000 keys in 10 orgs and 50 teams, 4 models, 3 deployments,
// one failed request in 50, spread evenly over 30 days. No attempt rows:
// neither start-up nor usage reads them.
func generateHistory(b *testing.B, path string, n int) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	all := migrations()
	for i, m := range all[:6] {
		if _, err := db.Exec(m); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, 0)`, i+1); err != nil {
			b.Fatal(err)
		}
	}
	step := int64(historyDays) * ledger.MicrosPerDay / int64(n)
	t0 := time.Now()
	_, err = db.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?1)
	INSERT INTO requests (request_id, org, team, key_id, public_model, exact_model, deployment,
	 route_depth, attempts, status, failure_class, input_tokens, output_tokens, cached_tokens,
	 cost_micro_usd, cost_status, reserved_micro_usd, streamed, first_token_ms, latency_ms,
	 started_at, finished_at, exercise)
	SELECT printf('req-%09d', i), 'org' || (i % 1000 % 10), 'team' || (i % 1000 % 50), 'key_' || (i % 1000),
	 'model' || (i / 1000 % 4), 'exact', CASE WHEN i % 50 = 0 THEN '' ELSE 'dep' || (i / 4000 % 3) END,
	 CASE WHEN i % 50 = 0 THEN -1 ELSE i % 7 / 6 END, 1 + i % 7 / 6,
	 CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'ok' END, CASE WHEN i % 50 = 0 THEN 'provider_unavailable' ELSE '' END,
	 500 + i % 100, 200 + i % 50, 0, CASE WHEN i % 50 = 0 THEN 0 ELSE 1000 + i % 300 END, 'priced', 5000, 0,
	 300, 900, ?2 + i * ?3, ?2 + i * ?3 + 1000000, 0
	FROM c`, n, historyStart.UnixMicro(), step)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d request rows (schema 6) in %v", n, time.Since(t0).Round(time.Millisecond))
}

var history struct {
	once sync.Once
	dir  string
	path string
}

// historyLedger generates the history once per test binary, in a
// temporary directory that TestMain removes when the binary ends (every
// benchmark shares it), and migrates it to schema 7, timing the backfill.
func historyLedger(b *testing.B) string {
	history.once.Do(func() {
		dir, err := os.MkdirTemp("", "spillway-history-*")
		if err != nil {
			b.Fatal(err)
		}
		history.dir, history.path = dir, filepath.Join(dir, "ledger.db")
		generateHistory(b, history.path, historyRows(b))
		t0 := time.Now()
		s, err := Open(context.Background(), history.path)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("migrations 7 to 9 (the aggregates, backfilled; reservations.owner; their key index) on %d rows: %v", historyRows(b), time.Since(t0).Round(time.Millisecond))
		s.Close()
	})
	return history.path
}

// TestMain removes the generated history.
func TestMain(m *testing.M) {
	code := m.Run()
	if history.dir != "" {
		os.RemoveAll(history.dir)
	}
	os.Exit(code)
}

// startup is what the gateway asks of its ledger before it listens:
// open (migrations checked), release open reservations, repair, budgets
// and every scope's spend.
func startup(ctx context.Context, path string) (*Store, error) {
	s, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if _, err := s.RecoverOpen(ctx, ""); err != nil {
		return s, err
	}
	if _, err := s.Repair(ctx); err != nil {
		return s, err
	}
	if _, err := s.Budgets(ctx); err != nil {
		return s, err
	}
	_, err = s.Spends(ctx, day)
	return s, err
}

// sqlScanSpends is the start-up spend query before migration 7: a scan of
// every request row.
const sqlScanSpends = `SELECT org, team, key_id, public_model,
	SUM(cost_micro_usd), COALESCE(SUM(CASE WHEN finished_at >= ? THEN cost_micro_usd END), 0)
	FROM requests WHERE cost_micro_usd <> 0
	GROUP BY org, team, key_id, public_model`

// BenchmarkHistory: start-up and usage queries on a ledger holding
// SPILLWAY_BENCH_HISTORY_ROWS (default 10 million) request rows. "startup"
// is the gateway's whole ledger start-up (close excluded); "startup-scan"
// is the spend query start-up ran before the aggregates (one run is
// enough: -benchtime=1x). Run:
//
//	go test ./internal/ledger/sqlite -run '^$' -bench BenchmarkHistory -benchtime=1x -timeout 60m
func BenchmarkHistory(b *testing.B) {
	path := historyLedger(b)
	ctx := context.Background()
	b.Run("startup", func(b *testing.B) {
		for b.Loop() {
			s, err := startup(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("startup-scan", func(b *testing.B) {
		for b.Loop() {
			rows, err := s.r.QueryContext(ctx, sqlScanSpends, historyStart.Add(10*24*time.Hour).UnixMicro())
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range historyQueries() {
		b.Run("usage/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Usage(ctx, c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// historyQueries are the usage queries timed on the generated history.
func historyQueries() []struct {
	name string
	q    ledger.UsageQuery
} {
	day := ledger.DayOf(historyStart.Add(72 * time.Hour))
	return []struct {
		name string
		q    ledger.UsageQuery
	}{
		{"total", ledger.UsageQuery{}},
		{"key", ledger.UsageQuery{Filters: map[string]string{"key": "key_7"}}},
		{"key-day", ledger.UsageQuery{Filters: map[string]string{"key": "key_7", "day": day}}},
		{"org-day", ledger.UsageQuery{Filters: map[string]string{"org": "org3", "day": day}}},
		{"week-by-day", ledger.UsageQuery{From: historyStart.Add(7 * 24 * time.Hour), To: historyStart.Add(14 * 24 * time.Hour), GroupBy: []string{"day"}}},
		{"by-model-deployment", ledger.UsageQuery{GroupBy: []string{"model", "deployment"}}},
		// Partial days at both ends: two stretches of raw rows (10 h and
		// 14 h) beside six whole days.
		{"partial-week-by-key", ledger.UsageQuery{From: historyStart.Add(7*24*time.Hour + 14*time.Hour),
			To: historyStart.Add(14*24*time.Hour + 10*time.Hour), GroupBy: []string{"key"}}},
	}
}

// BenchmarkPrune: pruning the oldest days of the generated history, in
// the pruner's batches; reports requests deleted per second and the
// longest batch (how long a settlement can wait for one).
func BenchmarkPrune(b *testing.B) {
	path := historyLedger(b)
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 2000
	before := historyStart.Add(24 * time.Hour)
	total, longest := 0, time.Duration(0)
	t0 := time.Now()
	for b.Loop() {
		// One batch per op; the first day has ~n/30 rows.
		t := time.Now()
		n, err := s.Prune(ctx, before, batch)
		if err != nil {
			b.Fatal(err)
		}
		longest = max(longest, time.Since(t))
		total += n
		if n == 0 {
			before = before.Add(24 * time.Hour)
		}
	}
	b.ReportMetric(float64(total)/time.Since(t0).Seconds(), "requests/s")
	b.ReportMetric(float64(longest.Milliseconds()), "longest-batch-ms")
}
