package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/ledgertest"
)

// cutProxy forwards TCP connections to PostgreSQL until cut: then every
// open connection is closed mid-whatever (a query, a COMMIT whose answer
// is lost) and new ones are refused, as when the database stops, until
// restored.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		p.wg.Go(func() { pipe(up, c) })
		p.wg.Go(func() { pipe(c, up) })
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// proxied returns dsn pointed at a new proxy to its database, and the proxy.
func proxied(t *testing.T, dsn string) (string, *cutProxy) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	p := newCutProxy(t, target)
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	return withParam(withParam(dsn, "host", host), "port", port), p
}

// TestOutageSpoolsToJournal: PostgreSQL goes away in the middle of a load
// (every connection dropped, new ones refused, batches cut mid-flight) and
// comes back. No Settle fails or waits for it: the journal holds the
// settlements, the ingester retries, and once the database is back every
// request has exactly one row, its attempts once, and no reservation is
// left open.
func TestOutageSpoolsToJournal(t *testing.T) {
	dsn := freshSchema(t)
	viaProxy, p := proxied(t, dsn)
	ctx := context.Background()
	s, err := Open(ctx, viaProxy, Options{ConnectTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	j, err := ledger.OpenJournal(filepath.Join(t.TempDir(), "ledger.journal"))
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(s, ledger.WriterOptions{Journal: j, IngestEvery: 10 * time.Millisecond, IngestBatch: 200, MinFreeBytes: -1})

	const workers, each = 8, 150
	var done atomic.Int64
	var maxSettle atomic.Int64
	outage := make(chan struct{})
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", g, i)
				set := ledgertest.Settlement(id, int64(100+i), 1+i%3)
				w.Reserve(ledger.Reservation{RequestID: id, KeyID: "key_a", Org: "acme", Team: "search",
					PublicModel: "sonnet", AmountMicro: 5000, CreatedAt: set.Request.StartedAt})
				start := time.Now()
				if err := w.Settle(ctx, &set); err != nil {
					t.Errorf("Settle(%s) = %v, want nil: the journal holds it whatever the database does", id, err)
				}
				if d := int64(time.Since(start)); d > maxSettle.Load() {
					maxSettle.Store(d)
				}
				if done.Add(1) == workers*each/3 {
					close(outage)
				}
				if i%10 == 0 {
					time.Sleep(time.Millisecond) // spread the load over the outage
				}
			}
		})
	}
	<-outage
	p.cut()
	// Down while the rest of the load runs (two thirds of it), and until
	// the ingester has failed a few times; then back.
	retriesBefore := w.Stats().Retries
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for w.Stats().Retries < retriesBefore+3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	during := w.Stats()
	if during.Retries < retriesBefore+3 || during.Pending == 0 {
		t.Fatalf("the database was cut but the ingester did not notice: retries %d, pending %d", during.Retries, during.Pending)
	}
	p.restore()
	closeCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := w.Stats()
	t.Logf("settled %d; ingest retries %d; records spooled while down %d; slowest Settle %v; lost %d",
		done.Load(), st.Retries, during.Pending, time.Duration(maxSettle.Load()), st.Lost)
	// A Settle waits for the journal only, never for the database.
	// (Had it waited, the load could not have finished while the database
	// was cut; the bound is loose for a busy CI machine.)
	if slowest := time.Duration(maxSettle.Load()); slowest > 10*time.Second {
		t.Errorf("slowest Settle %v: it waited for the database", slowest)
	}
	if st.Lost != 0 {
		t.Errorf("lost %d records", st.Lost)
	}
	assertExactlyOnce(t, dsn, workers*each)
}

// assertExactlyOnce checks, straight against the database, that n
// requests made by the load are each settled once with their attempts,
// and that no reservation is open.
func assertExactlyOnce(t *testing.T, dsn string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var reqs, attempts, open int
	var cost int64
	if err := c.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(cost_micro_usd), 0)::bigint FROM requests`).Scan(&reqs, &cost); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM attempts`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM reservations WHERE settled_at IS NULL`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	var wantCost int64
	wantAttempts := 0
	perWorker := n / 8
	for range 8 {
		for i := range perWorker {
			wantCost += int64(100 + i)
			wantAttempts += 1 + i%3
		}
	}
	if reqs != n || cost != wantCost || attempts != wantAttempts || open != 0 {
		t.Errorf("after the outage: %d requests costing %d with %d attempts, %d reservations open; want %d costing %d with %d attempts, none open",
			reqs, cost, attempts, open, n, wantCost, wantAttempts)
	}
}

// lostAck is a store whose first few batches commit but report a failure,
// as when the connection drops after COMMIT was sent: the Writer retries
// a batch that is already in.
type lostAck struct {
	*Store
	left atomic.Int64
}

func (s *lostAck) WriteBatch(ctx context.Context, b *ledger.Batch) error {
	err := s.Store.WriteBatch(ctx, b)
	if err == nil && s.left.Add(-1) >= 0 {
		return errors.New("connection reset after COMMIT was sent")
	}
	return err
}

// TestLostCommitAckRetriedOnce: a batch retried after its commit's
// answer was lost is written once (every insert is keyed by request id),
// with and without the journal.
func TestLostCommitAckRetriedOnce(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprint("journal=", journal), func(t *testing.T) {
			dsn := freshSchema(t)
			ctx := context.Background()
			base, err := Open(ctx, dsn, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer base.Close()
			s := &lostAck{Store: base}
			s.left.Store(3)
			opts := ledger.WriterOptions{MinFreeBytes: -1}
			if journal {
				j, err := ledger.OpenJournal(filepath.Join(t.TempDir(), "ledger.journal"))
				if err != nil {
					t.Fatal(err)
				}
				opts.Journal, opts.IngestEvery = j, 5*time.Millisecond
			}
			w := ledger.NewWriter(s, opts)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 50 {
						id := fmt.Sprintf("w%d-%d", g, i)
						set := ledgertest.Settlement(id, int64(100+i), 1+i%3)
						w.Reserve(ledger.Reservation{RequestID: id, KeyID: "key_a", Org: "acme", AmountMicro: 1})
						if err := w.Settle(ctx, &set); err != nil {
							t.Errorf("Settle: %v", err)
						}
					}
				})
			}
			wg.Wait()
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if st := w.Stats(); st.Retries < 3 || st.Lost != 0 {
				t.Errorf("retries %d, lost %d; want at least 3 retries, nothing lost", st.Retries, st.Lost)
			}
			assertExactlyOnce(t, dsn, 400)
		})
	}
}

// downStore is a database that never answers a batch.
type downStore struct{ *Store }

func (downStore) WriteBatch(context.Context, *ledger.Batch) error {
	return errors.New("connection refused")
}

// TestJournalReplayedAtStart: a gateway that ran (and stopped, or died)
// while PostgreSQL was down leaves its acknowledged settlements in its
// journal; the next start replays them into the database, once, however
// often the replay runs.
func TestJournalReplayedAtStart(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := filepath.Join(t.TempDir(), "ledger.journal")
	j, err := ledger.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(downStore{s}, ledger.WriterOptions{Journal: j, IngestEvery: 5 * time.Millisecond, MinFreeBytes: -1})
	const n = 300
	for i := range n {
		id := fmt.Sprintf("r%03d", i)
		w.Reserve(ledger.Reservation{RequestID: id, KeyID: "key_a", Org: "acme", AmountMicro: 9})
		set := ledgertest.Settlement(id, int64(100+i), 1+i%3)
		if err := w.Settle(ctx, &set); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	w.Reserve(ledger.Reservation{RequestID: "in-flight", KeyID: "key_a", Org: "acme", AmountMicro: 9})
	// The process stops while the database is still down: the journal
	// keeps everything.
	stopCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := w.Close(stopCtx); err == nil {
		t.Fatal("Close with the database down returned nil: nothing was left for the next start")
	}
	w.Close(ctx) // the goroutines have given up: wait for them to let go of the journal
	// Keep the segments, to replay them a second time: as if the first
	// replay's COMMIT answer was lost before it deleted them.
	segs, _ := filepath.Glob(path + ".0*")
	saved := map[string][]byte{}
	for _, f := range segs {
		saved[f], _ = os.ReadFile(f)
	}
	if len(saved) == 0 {
		t.Fatal("no journal segment left")
	}
	for i := range 2 {
		if i == 1 {
			for f, b := range saved {
				if err := os.WriteFile(f, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		j, err := ledger.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := j.Recover(ctx, s)
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		t.Logf("replayed %d segments: %d settlements, %d reservations; released %d", rec.Segments, rec.Settlements, rec.Reservations, len(rec.Released))
		j.Close()
	}
	assertRows(t, dsn, n)
}

// assertRows checks the database holds requests r000..r(n-1), once each,
// with their attempts (ledgertest.Settlement(id, 100+i, 1+i%3)).
func assertRows(t *testing.T, dsn string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var reqs, attempts int
	var cost int64
	if err := c.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(cost_micro_usd), 0)::bigint, (SELECT COUNT(*) FROM attempts) FROM requests`).Scan(&reqs, &cost, &attempts); err != nil {
		t.Fatal(err)
	}
	var wantCost int64
	wantAttempts := 0
	for i := range n {
		wantCost += int64(100 + i)
		wantAttempts += 1 + i%3
	}
	if reqs != n || cost != wantCost || attempts != wantAttempts {
		t.Errorf("%d requests costing %d with %d attempts; want %d costing %d with %d", reqs, cost, attempts, n, wantCost, wantAttempts)
	}
}
