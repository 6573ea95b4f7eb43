package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// settlementN is a settlement with n attempts (the last one serving).
func settlementN(id string, n int, at time.Time) ledger.Settlement {
	_, st := crashSettlement(id, at)
	s := *st
	s.Request.Attempts = n
	s.Attempts = nil
	for i := range n {
		s.Attempts = append(s.Attempts, ledger.Attempt{Seq: i, Deployment: fmt.Sprint("d", i), HTTPStatus: 200 + i,
			InputTokens: i, CostMicroUSD: int64(i), StartedAt: at})
	}
	return s
}

// attemptsOf returns each request's attempt count, and the request count.
func attemptsOf(t *testing.T, db *sql.DB) (map[string]int, int) {
	t.Helper()
	out := map[string]int{}
	rows, err := db.Query(`SELECT r.request_id, (SELECT COUNT(*) FROM attempts AS a WHERE a.request_id = r.request_id) FROM requests AS r`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var c int
		if err := rows.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		out[id] = c
		n++
	}
	return out, n
}

// Settlements go in many rows per statement: every batch size decomposes
// into the prepared sizes, every row and attempt lands once, and a batch
// with a settled request (a replay, a repeat within the batch) falls back
// to one by one and skips it whole.
func TestMultiRowSettle(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, size := range []int{1, 2, 3, 31, 32, 33, 70} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := openTemp(t)
			b := &ledger.Batch{}
			want := map[string]int{}
			for i := range size {
				id := fmt.Sprintf("r%03d", i)
				b.Settlements = append(b.Settlements, settlementN(id, i%3, at))
				want[id] = i % 3
			}
			if err := s.WriteBatch(ctx, b); err != nil {
				t.Fatal(err)
			}
			got, n := attemptsOf(t, s.r)
			if n != size || !mapsEqual(got, want) {
				t.Fatalf("%d requests, attempts %v; want %d, %v", n, got, size, want)
			}
			// A replayed batch plus new ones: the settled are skipped
			// whole (their attempts too, though these differ), the new land,
			// and a request twice in one batch lands once.
			again := &ledger.Batch{}
			for i := range size {
				again.Settlements = append(again.Settlements, settlementN(fmt.Sprintf("r%03d", i), 4, at))
			}
			again.Settlements = append(again.Settlements, settlementN("new", 1, at), settlementN("new", 2, at))
			if err := s.WriteBatch(ctx, again); err != nil {
				t.Fatal(err)
			}
			want["new"] = 1
			got, n = attemptsOf(t, s.r)
			if n != size+1 || !mapsEqual(got, want) {
				t.Fatalf("after the replay: %d requests, attempts %v; want %d, %v", n, got, size+1, want)
			}
		})
	}
	t.Run("values", func(t *testing.T) {
		s := openTemp(t)
		st := settlementN("v", 2, at)
		st.Request.Streamed, st.Request.FailureClass, st.Request.CachedTokens = true, "x", 9
		if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{settlementN("u", 1, at), st}}); err != nil {
			t.Fatal(err)
		}
		var r ledger.Request
		var started, finished int64
		if err := s.r.QueryRow(`SELECT org, team, key_id, public_model, exact_model, deployment, route_depth, attempts,
			status, failure_class, input_tokens, output_tokens, cached_tokens, cost_micro_usd, cost_status,
			reserved_micro_usd, streamed, first_token_ms, latency_ms, started_at, finished_at FROM requests WHERE request_id = 'v'`).
			Scan(&r.Org, &r.Team, &r.KeyID, &r.PublicModel, &r.ExactModel, &r.Deployment, &r.RouteDepth, &r.Attempts,
				&r.Status, &r.FailureClass, &r.InputTokens, &r.OutputTokens, &r.CachedTokens, &r.CostMicroUSD, &r.CostStatus,
				&r.ReservedMicroUSD, &r.Streamed, &r.FirstTokenMS, &r.LatencyMS, &started, &finished); err != nil {
			t.Fatal(err)
		}
		r.RequestID, r.StartedAt, r.FinishedAt = "v", sqlstore.Time(started), sqlstore.Time(finished)
		if r != st.Request {
			t.Errorf("request row\n got %+v\nwant %+v", r, st.Request)
		}
		var a ledger.Attempt
		var aStarted int64
		if err := s.r.QueryRow(`SELECT deployment, failure_class, http_status, input_tokens, output_tokens, cost_micro_usd,
			first_byte_ms, duration_ms, started_at FROM attempts WHERE request_id = 'v' AND seq = 1`).
			Scan(&a.Deployment, &a.FailureClass, &a.HTTPStatus, &a.InputTokens, &a.OutputTokens, &a.CostMicroUSD,
				&a.FirstByteMS, &a.DurationMS, &aStarted); err != nil {
			t.Fatal(err)
		}
		a.Seq, a.StartedAt = 1, sqlstore.Time(aStarted)
		if a != st.Attempts[1] {
			t.Errorf("attempt row\n got %+v\nwant %+v", a, st.Attempts[1])
		}
	})
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The store closes a reservation whichever batch brings it: one that
// arrives after its settlement is recorded closed, never left open for
// RecoverOpen to report as a crash's.
func TestReservationAfterItsSettlementIsClosed(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r, st := crashSettlement("late", at)
	for _, b := range []*ledger.Batch{
		{Settlements: []ledger.Settlement{*st}},
		{Reservations: []ledger.Reservation{r}},
	} {
		if err := s.WriteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var settled sql.NullInt64
	if err := s.r.QueryRow(`SELECT settled_at FROM reservations WHERE request_id = 'late'`).Scan(&settled); err != nil {
		t.Fatal(err)
	}
	if !settled.Valid || settled.Int64 != micros(st.Request.FinishedAt) {
		t.Errorf("settled_at = %v, want the request's finish %d", settled, micros(st.Request.FinishedAt))
	}
	if rel, err := s.RecoverOpen(ctx, ""); err != nil || len(rel) != 0 {
		t.Errorf("RecoverOpen = %v, %v; want nothing open", rel, err)
	}
}

func indexes(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// Migration 3 drops the usage indexes not worth their cost on every
// insert, on a fresh database and on one at version 2 holding rows.
func TestMigration3(t *testing.T) {
	ctx := context.Background()
	// (usage_daily_finished and usage_daily_key are migration 7's and 9's, on the aggregates.)
	want := []string{"requests_key", "requests_started_at", "reservations_open", "usage_daily_finished", "usage_daily_key"}
	if got := indexes(t, openTemp(t).r); !slices.Equal(got, want) {
		t.Errorf("fresh: indexes %v, want %v", got, want)
	}
	path := filepath.Join(t.TempDir(), "v2.db")
	db := rawDB(t, path)
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
		migration1, migration2,
		`INSERT INTO schema_migrations VALUES (1, 0), (2, 0)`,
		`INSERT INTO requests VALUES ('old', 'acme', 't', 'k', 'm', 'm', 'd', 0, 1, 'ok', '', 1, 2, 0, 3, 'priced', 0, 0, 0, 0, 0, 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := indexes(t, s.r); !slices.Equal(got, want) {
		t.Errorf("upgraded: indexes %v, want %v", got, want)
	}
	rows, err := s.Usage(ctx, ledger.UsageQuery{Filters: map[string]string{"org": "acme"}})
	if err != nil || len(rows) != 1 || rows[0].Requests != 1 || rows[0].CostMicroUSD != 3 {
		t.Errorf("usage after the upgrade = %+v, %v", rows, err)
	}
	if v := versions(t, db); len(v) != SchemaVersion {
		t.Errorf("versions %v, want 1..%d", v, SchemaVersion)
	}
}

// Replaying a journal the store has already ingested (a crash between the
// ingest's commit and the segments' deletion) writes each settlement once.
func TestJournalReplayIsIdempotent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "l.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, err := ledger.OpenJournal(path + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(s, ledger.WriterOptions{Journal: j, IngestEvery: time.Hour, IngestBatch: 1 << 20})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 50 {
		r, st := crashSettlement(fmt.Sprint("r", i), at)
		w.Reserve(r)
		if err := w.Settle(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := crashSettlement("open", at)
	w.Reserve(r)
	if err := w.Settle(ctx, &ledger.Settlement{Request: ledger.Request{RequestID: "flush"}}); err != nil {
		t.Fatal(err)
	}
	// The journal as a crash right after the ingest's commit would leave it.
	segs, _ := filepath.Glob(path + ".journal.0*")
	if len(segs) == 0 {
		t.Fatal("no segment to copy")
	}
	saved := map[string][]byte{}
	for _, f := range segs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = b
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for f, b := range saved {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	j2, err := ledger.OpenJournal(path + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	rec, err := j2.Recover(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Settlements != 51 || len(rec.Released) != 1 || rec.Released[0].RequestID != "open" {
		t.Errorf("recovery replayed %d settlements and released %+v; want 51 and the open one", rec.Settlements, rec.Released)
	}
	got, n := attemptsOf(t, s.r)
	if n != 51 {
		t.Errorf("%d request rows, want 51", n)
	}
	for i := range 50 {
		if c := got[fmt.Sprint("r", i)]; c != 2 {
			t.Errorf("r%d has %d attempts, want 2", i, c)
		}
	}
	var open int
	s.r.QueryRow(`SELECT COUNT(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&open)
	if open != 0 {
		t.Errorf("%d reservations open after recovery", open)
	}
}

// A reader beside a running gateway (spillway usage) catches up with the
// journal before reading: it sees every acknowledged settlement, and the
// gateway's own ingest afterwards counts none twice.
func TestJournalCatchUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, err := ledger.OpenJournal(path + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(s, ledger.WriterOptions{Journal: j, IngestEvery: time.Hour, IngestBatch: 1 << 20})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 30 {
		r, st := crashSettlement(fmt.Sprint("r", i), at)
		w.Reserve(r)
		if err := w.Settle(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := Open(ctx, path) // as another process would
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	requests := func(st *Store) int64 {
		t.Helper()
		rows, err := st.Usage(ctx, ledger.UsageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return rows[0].Requests
	}
	if n := requests(reader); n != 0 {
		t.Fatalf("before catching up the store holds %d requests; the test needs the journal to hold them", n)
	}
	n, err := ledger.CatchUp(ctx, path+".journal", reader)
	if err != nil || n != 30 {
		t.Fatalf("CatchUp = %d, %v; want 30", n, err)
	}
	if n := requests(reader); n != 30 {
		t.Errorf("after catching up: %d requests, want 30", n)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, rows := attemptsOf(t, s.r)
	if rows != 30 {
		t.Errorf("after the gateway's ingest: %d request rows, want 30", rows)
	}
	for id, c := range got {
		if c != 2 {
			t.Errorf("%s has %d attempts, want 2", id, c)
		}
	}
	if n, err := ledger.CatchUp(ctx, filepath.Join(t.TempDir(), "none.journal"), reader); err != nil || n != 0 {
		t.Errorf("CatchUp without a journal = %d, %v; want 0, nil", n, err)
	}
}
