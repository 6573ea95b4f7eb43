package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

func crashSettlement(id string, at time.Time) (ledger.Reservation, *ledger.Settlement) {
	r := ledger.Reservation{RequestID: id, KeyID: "key_k", Org: "acme", Team: "t", PublicModel: "m",
		AmountMicro: 1000, CreatedAt: at}
	s := &ledger.Settlement{
		Request: ledger.Request{RequestID: id, Org: "acme", Team: "t", KeyID: "key_k", PublicModel: "m",
			ExactModel: "m", Deployment: "d1", RouteDepth: 1, Attempts: 2, Status: ledger.StatusOK,
			InputTokens: 3, OutputTokens: 4, CostMicroUSD: 7, CostStatus: ledger.CostPriced,
			StartedAt: at, FinishedAt: at},
		Attempts: []ledger.Attempt{
			{Seq: 0, Deployment: "d0", FailureClass: "throttled", HTTPStatus: 429, StartedAt: at},
			{Seq: 1, Deployment: "d1", HTTPStatus: 200, InputTokens: 3, OutputTokens: 4, CostMicroUSD: 7, StartedAt: at},
		},
	}
	return r, s
}

// TestSettleIsDurableOnReturn: when Settle returns, a brand-new connection
// (another process would see the same) reads the row.
func TestSettleIsDurableOnReturn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := ledger.NewWriter(s, ledger.WriterOptions{})
	defer w.Close(context.Background())
	fresh := rawDB(t, path)
	fresh.SetMaxIdleConns(0) // every query opens a new connection
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				id := fmt.Sprintf("g%d-%d", g, i)
				r, st := crashSettlement(id, time.Now())
				w.Reserve(r)
				if err := w.Settle(context.Background(), st); err != nil {
					t.Error(err)
					return
				}
				var reqs, atts int
				var settled sql.NullInt64
				err := fresh.QueryRow(`SELECT (SELECT COUNT(*) FROM requests WHERE request_id = ?1),
					(SELECT COUNT(*) FROM attempts WHERE request_id = ?1),
					(SELECT settled_at FROM reservations WHERE request_id = ?1)`, id).Scan(&reqs, &atts, &settled)
				if err != nil || reqs != 1 || atts != 2 || !settled.Valid {
					t.Errorf("%s right after Settle: %d request rows, %d attempts, settled %v, err %v", id, reqs, atts, settled, err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestReadsDuringWrites runs usage reports and key lookups while the
// writer commits, under -race.
func TestReadsDuringWrites(t *testing.T) {
	s := openTemp(t)
	w := ledger.NewWriter(s, ledger.WriterOptions{})
	ctx := context.Background()
	if err := s.CreateKey(ctx, &ledger.Key{ID: "key_k", Hash: []byte("h"), Org: "acme"}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Usage(ctx, ledger.UsageQuery{GroupBy: []string{"day", "deployment"}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.KeyByHash(ctx, []byte("h")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 100 {
		r, st := crashSettlement(fmt.Sprint("r", i), time.Now())
		w.Reserve(r)
		w.SettleAsync(st)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	rows, err := s.Usage(ctx, ledger.UsageQuery{})
	if err != nil || rows[0].Requests != 100 || rows[0].Attempts != 200 {
		t.Errorf("after 100 settlements: %+v, %v", rows, err)
	}
}

const (
	helperEnv = "SPILLWAY_LEDGER_CRASH_DB"
	// journalEnv, set, makes the helper settle through a journal.
	journalEnv = "SPILLWAY_LEDGER_CRASH_JOURNAL"
)

// TestHelperProcess is the gateway stand-in TestKillNineKeepsSettled
// kills: it settles through the Writer (with a journal when journalEnv is
// set, recovered first as the gateway does) from several goroutines and
// prints each request id right after its Settle returned (the moment the
// gateway would write the final byte). It is not a test on its own.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestKillNineKeepsSettled")
	}
	// The parent holds stdin open; if it dies, exit rather than linger.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(2)
	}()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	opts := ledger.WriterOptions{}
	if os.Getenv(journalEnv) != "" {
		j, err := ledger.OpenJournal(path + ".journal")
		if err != nil {
			fmt.Fprintln(os.Stderr, "journal:", err)
			os.Exit(3)
		}
		if _, err := j.Recover(ctx, s); err != nil {
			fmt.Fprintln(os.Stderr, "recover:", err)
			os.Exit(3)
		}
		// Ingest often, so the kill lands on every stage: appending,
		// ingesting, deleting segments.
		opts.Journal, opts.IngestEvery, opts.IngestBatch = j, 5*time.Millisecond, 64
	}
	w := ledger.NewWriter(s, opts)
	const workers = 16
	var out sync.Mutex
	for g := range workers {
		// A long stream in flight: reserved, never settled.
		r, _ := crashSettlement(fmt.Sprintf("open-%d", g), time.Now())
		w.Reserve(r)
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", g, i)
				r, st := crashSettlement(id, time.Now())
				w.Reserve(r)
				if err := w.Settle(ctx, st); err != nil {
					fmt.Fprintln(os.Stderr, "settle:", err)
					os.Exit(4)
				}
				out.Lock()
				fmt.Fprintln(os.Stdout, "settled", id) // os.Stdout is unbuffered
				out.Unlock()
			}
		}()
	}
	select {} // until SIGKILL
}

// TestKillNineKeepsSettled kills a settling process with SIGKILL and checks
// that every request it reported settled has exactly one complete row, and
// that start-up recovery releases exactly the reservations left open: with
// every batch committed to SQLite, and with the journal in front of it
// (recovered as the gateway does: replay, then release).
func TestKillNineKeepsSettled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	t.Run("direct", func(t *testing.T) { killNine(t, false) })
	t.Run("journal", func(t *testing.T) { killNine(t, true) })
}

func killNine(t *testing.T, journal bool) {
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	if journal {
		cmd.Env = append(cmd.Env, journalEnv+"=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const want = 300
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	printed := map[string]bool{}
	guard := time.NewTimer(60 * time.Second) // a hung child fails the test, it does not pace it
	defer guard.Stop()
	for len(printed) < want {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("helper ended after %d ids: %s", len(printed), stderr.String())
			}
			if id, ok := strings.CutPrefix(l, "settled "); ok {
				printed[id] = true
			}
		case <-guard.C:
			cmd.Process.Kill()
			t.Fatalf("helper printed only %d ids: %s", len(printed), stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code, no flush
		t.Fatal(err)
	}
	// Ids printed between our last read and the kill count too; read them
	// all (EOF comes with the child's death) before Wait closes the pipe.
	for l := range lines {
		if id, ok := strings.CutPrefix(l, "settled "); ok {
			printed[id] = true
		}
	}
	cmd.Wait()

	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	var released []ledger.Released
	if journal {
		// The gateway's start-up: replay the journal, then release.
		j, err := ledger.OpenJournal(path + ".journal")
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		rec, err := j.Recover(ctx, s)
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		released = rec.Released
		t.Logf("journal: %d segments replayed (%d reservations, %d settlements), %d torn bytes",
			rec.Segments, rec.Reservations, rec.Settlements, rec.TornBytes)
		if left, _ := filepath.Glob(path + ".journal.0*"); len(left) != 0 {
			t.Errorf("segments left after Recover: %v", left)
		}
	} else if released, err = s.RecoverOpen(ctx, ""); err != nil {
		t.Fatal(err)
	}
	var integrity string
	if err := s.r.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	for id := range printed {
		var reqs, atts int
		if err := s.r.QueryRow(`SELECT (SELECT COUNT(*) FROM requests WHERE request_id = ?1),
			(SELECT COUNT(*) FROM attempts WHERE request_id = ?1)`, id).Scan(&reqs, &atts); err != nil {
			t.Fatal(err)
		}
		if reqs != 1 || atts != 2 {
			t.Errorf("%s was reported settled but has %d request rows and %d attempts", id, reqs, atts)
		}
	}
	// Every settled row is whole: two attempts each, never half a batch.
	var torn int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM requests AS r
		WHERE (SELECT COUNT(*) FROM attempts AS a WHERE a.request_id = r.request_id) <> 2`).Scan(&torn); err != nil || torn != 0 {
		t.Errorf("%d request rows without their two attempts (%v)", torn, err)
	}
	var rows int
	s.r.QueryRow(`SELECT COUNT(*) FROM requests`).Scan(&rows)

	rel := map[string]bool{}
	for _, r := range released {
		rel[r.RequestID] = true
		var n int
		s.r.QueryRow(`SELECT COUNT(*) FROM requests WHERE request_id = ?`, r.RequestID).Scan(&n)
		if n != 0 {
			t.Errorf("released %s, which is settled", r.RequestID)
		}
	}
	for g := range 16 {
		if id := fmt.Sprintf("open-%d", g); !rel[id] {
			t.Errorf("the never-settled reservation %s was not released", id)
		}
	}
	var open, unsettledNotReleased int
	s.r.QueryRow(`SELECT COUNT(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&open)
	s.r.QueryRow(`SELECT COUNT(*) FROM reservations AS v WHERE settled_at IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM requests AS r WHERE r.request_id = v.request_id)`).Scan(&unsettledNotReleased)
	if open != 0 || unsettledNotReleased != 0 {
		t.Errorf("after recovery: %d reservations open, %d marked settled without a row", open, unsettledNotReleased)
	}
	if again, err := s.RecoverOpen(ctx, ""); err != nil || len(again) != 0 {
		t.Errorf("second RecoverOpen = %d, %v; want none", len(again), err)
	}
	t.Logf("printed %d settled ids; %d request rows survived; %d reservations released at start-up", len(printed), rows, len(released))
}

// TestNoGoroutineLeft: closing the Writer and the Store stops every
// goroutine they started (the writer, the checkpointer, the pools').
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(s, ledger.WriterOptions{})
	for i := range 20 {
		r, st := crashSettlement(fmt.Sprint("r", i), time.Now())
		w.Reserve(r)
		w.SettleAsync(st)
	}
	if _, err := s.Usage(context.Background(), ledger.UsageQuery{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// TestWALStaysBounded: under constant writes the WAL is rewound once it
// passes the threshold, instead of growing for as long as traffic lasts.
// The checkpointer's kicks are driven by hand here, each while a write
// transaction is open as under load, so the bound is exact.
func TestWALStaysBounded(t *testing.T) {
	for _, c := range []struct {
		name      string
		frames    int
		min, most int64 // bounds of the largest WAL seen
	}{
		// Without rewinds the WAL holds every commit: ~300 × 12 pages.
		{"never rewound", 1 << 30, 8 << 20, 1 << 40},
		// Rewound after every 10 commits (~120 pages), the WAL stays small.
		{"rewound", 64, 0, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(context.Background(), filepath.Join(dir, "l.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.ckptRows, s.rewindFrames = 1<<30, c.frames // no automatic kicks
			var largest int64
			n := 0
			s.beforeCommit = func() {
				if n++; n%10 == 0 {
					s.checkpoint()
				}
			}
			for i := range 300 {
				r, st := crashSettlement(fmt.Sprint("r", i), time.Now())
				err := s.WriteBatch(context.Background(), &ledger.Batch{
					Reservations: []ledger.Reservation{r}, Settlements: []ledger.Settlement{*st}})
				if err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(filepath.Join(dir, "l.db-wal")); err == nil {
					largest = max(largest, fi.Size())
				}
			}
			t.Logf("largest WAL: %d KiB", largest>>10)
			if largest < c.min || largest > c.most {
				t.Errorf("largest WAL %d KiB, want within [%d, %d] KiB", largest>>10, c.min>>10, c.most>>10)
			}
		})
	}
}
