package postgres

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

var historyStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

const historyDays = 30

// generateHistory writes n request rows straight into a schema-6 ledger
// (before the aggregates) with one INSERT ... SELECT over generate_series,
// shaped as the SQLite benchmark's: 1,000 keys in 10 orgs and 50 teams, 4
// models, 3 deployments, one failed request in 50, over 30 days. No
// attempt rows: neither start-up nor usage reads them.
func generateHistory(b *testing.B, dsn string, n int) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	all := migrations()
	for i, m := range all[:6] {
		if _, err := c.Exec(ctx, m, pgx.QueryExecModeSimpleProtocol); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, 0)`, i+1); err != nil {
			b.Fatal(err)
		}
	}
	step := int64(historyDays) * ledger.MicrosPerDay / int64(n)
	t0 := time.Now()
	if _, err := c.Exec(ctx, `INSERT INTO requests (request_id, org, team, key_id, public_model, exact_model, deployment,
	 route_depth, attempts, status, failure_class, input_tokens, output_tokens, cached_tokens,
	 cost_micro_usd, cost_status, reserved_micro_usd, streamed, first_token_ms, latency_ms,
	 started_at, finished_at, exercise)
	SELECT 'req-' || lpad(i::text, 9, '0'), 'org' || (i % 1000 % 10), 'team' || (i % 1000 % 50), 'key_' || (i % 1000),
	 'model' || (i / 1000 % 4), 'exact', CASE WHEN i % 50 = 0 THEN '' ELSE 'dep' || (i / 4000 % 3) END,
	 CASE WHEN i % 50 = 0 THEN -1 ELSE i % 7 / 6 END, 1 + i % 7 / 6,
	 CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'ok' END, CASE WHEN i % 50 = 0 THEN 'provider_unavailable' ELSE '' END,
	 500 + i % 100, 200 + i % 50, 0, CASE WHEN i % 50 = 0 THEN 0 ELSE 1000 + i % 300 END, 'priced', 5000, false,
	 300, 900, $2 + i * $3, $2 + i * $3 + 1000000, false
	FROM generate_series(0::bigint, $1::bigint - 1) AS i`, n, historyStart.UnixMicro(), step); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ANALYZE requests`); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d request rows (schema 6) in %v", n, time.Since(t0).Round(time.Millisecond))
}

// startup is what the gateway asks of its ledger before it listens:
// open (migrations checked), release open reservations, repair, budgets
// and every scope's spend.
func startup(ctx context.Context, dsn string) (*Store, error) {
	s, err := Open(ctx, dsn, Options{})
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
	SUM(cost_micro_usd)::bigint,
	COALESCE(SUM(cost_micro_usd) FILTER (WHERE finished_at >= $1), 0)::bigint
	FROM requests WHERE cost_micro_usd <> 0
	GROUP BY org, team, key_id, public_model`

// BenchmarkHistory: on a ledger holding SPILLWAY_BENCH_HISTORY_ROWS
// (default 10 million) request rows, the aggregates' backfill (logged),
// the gateway's whole ledger start-up ("startup"; the spend query start-up
// ran before the aggregates: "startup-scan"), the usage queries, and
// pruning the oldest days last. Run (one run each is enough):
//
//	SPILLWAY_TEST_POSTGRES=... go test ./internal/ledger/postgres -run '^$' -bench BenchmarkHistory -benchtime=1x -timeout 60m -v
func BenchmarkHistory(b *testing.B) {
	dsn := freshSchema(b)
	n := historyRows(b)
	generateHistory(b, dsn, n)
	ctx := context.Background()
	t0 := time.Now()
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("migrations 7 to 9 (the aggregates, backfilled; reservations.owner; their key index) on %d rows: %v", n, time.Since(t0).Round(time.Millisecond))
	defer s.Close()
	if _, err := s.pool.Exec(ctx, `ANALYZE usage_daily`); err != nil {
		b.Fatal(err)
	}
	b.Run("startup", func(b *testing.B) {
		for b.Loop() {
			s, err := startup(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	b.Run("startup-scan", func(b *testing.B) {
		for b.Loop() {
			rows, err := s.pool.Query(ctx, sqlScanSpends, historyStart.Add(10*24*time.Hour).UnixMicro())
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	day := ledger.DayOf(historyStart.Add(72 * time.Hour))
	for _, c := range []struct {
		name string
		q    ledger.UsageQuery
	}{
		{"total", ledger.UsageQuery{}},
		{"key", ledger.UsageQuery{Filters: map[string]string{"key": "key_7"}}},
		{"key-day", ledger.UsageQuery{Filters: map[string]string{"key": "key_7", "day": day}}},
		{"org-day", ledger.UsageQuery{Filters: map[string]string{"org": "org3", "day": day}}},
		{"week-by-day", ledger.UsageQuery{From: historyStart.Add(7 * 24 * time.Hour), To: historyStart.Add(14 * 24 * time.Hour), GroupBy: []string{"day"}}},
		{"by-model-deployment", ledger.UsageQuery{GroupBy: []string{"model", "deployment"}}},
		{"partial-week-by-key", ledger.UsageQuery{From: historyStart.Add(7*24*time.Hour + 14*time.Hour),
			To: historyStart.Add(14*24*time.Hour + 10*time.Hour), GroupBy: []string{"key"}}},
	} {
		b.Run("usage/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Usage(ctx, c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Last: it deletes. One batch of the pruner's size per op.
	b.Run("prune", func(b *testing.B) {
		const batch = 2000
		before := historyStart.Add(24 * time.Hour)
		total, longest := 0, time.Duration(0)
		t0 := time.Now()
		for b.Loop() {
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
	})
}
