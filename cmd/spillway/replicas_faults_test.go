package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger/postgres"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/replica"
)

// The variables the fleet's replicas read (set for them only).
const (
	fleetDSNEnv   = "SPW_FLEET_LEDGER_DSN"
	fleetRedisEnv = "SPW_FLEET_REDIS_URL"
	fleetAdminKey = "sk-spw-admin-fleet-test-0123456789"
)

// fleet is three (or n) `spillway serve` processes on one PostgreSQL
// ledger (a fresh schema) and one Redis (a fresh key prefix), in front of
// two mock deployments of one model.
type fleet struct {
	t        *testing.T
	bin, cfg string
	dir      string
	env      []string
	dsn      string // the schema's DSN
	key      string // a virtual key
	primary  *mock.Mock
	ps       []*replica.Process
	logs     []*syncLog
}

// syncLog keeps a replica's log (its stderr) for the test to read.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 8<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newFleet(t *testing.T, bin, dsn, redisURL string, n int) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{t: t, bin: bin, dir: t.TempDir()}
	var ms [2]*mock.Mock
	var urls [2]string
	for i, name := range []string{"primary", "secondary"} {
		m, err := mock.New("openai", mock.Options{Name: name, Fault: "event_delay=2ms"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m)
		t.Cleanup(func() { m.Close(); srv.Close() })
		ms[i], urls[i] = m, srv.URL
	}
	f.primary = ms[0]
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	schemaDSN, drop, err := freshSchema(ctx, dsn, "spillway_fleet_"+nonce)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	f.dsn = schemaDSN
	st, err := postgres.Open(ctx, schemaDSN, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.key, _, err = keys.New(ctx, st, "acme", "fleet", nil, time.Now())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = filepath.Join(f.dir, "fleet.yaml")
	cfg := fmt.Sprintf(`ledger: {driver: postgres, dsn_env: %s, path: ledger}
shared_state: {driver: redis, url_env: %s, key_prefix: fleet-%s, timeout: 1s}
deployments:
  - {id: primary, provider: openai, base_url: %s, model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 100, health: {failure_threshold: 2, open_for: 60s}}
  - {id: secondary, provider: openai, base_url: %s, model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 100}
pools: [{id: pool, model: m, deployments: [primary, secondary], equivalence: {by: fleet test, date: "2026-01-01", evidence: same-mock}}]
routes: [{model: m, pool: pool}]
`, fleetDSNEnv, fleetRedisEnv, nonce, urls[0], urls[1])
	if err := os.WriteFile(f.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	replicaDSN, err := withParam(schemaDSN, "pool_max_conns", replicaPoolConns)
	if err != nil {
		t.Fatal(err)
	}
	f.env = []string{fleetDSNEnv + "=" + replicaDSN, fleetRedisEnv + "=" + redisURL, "SPILLWAY_ADMIN_KEY=" + fleetAdminKey}
	f.ps, f.logs = make([]*replica.Process, n), make([]*syncLog, n)
	for i := range n {
		f.start(i)
	}
	t.Cleanup(func() { replica.StopAll(f.ps, 30*time.Second) })
	return f
}

// start starts replica i (again, after a kill: same journal).
func (f *fleet) start(i int) {
	f.t.Helper()
	f.logs[i] = &syncLog{}
	data := filepath.Join(f.dir, fmt.Sprintf("replica-%d", i))
	if err := os.MkdirAll(data, 0o700); err != nil {
		f.t.Fatal(err)
	}
	p, err := replica.Start(context.Background(), replica.Options{Bin: f.bin, Config: f.cfg,
		DataDir: data, Env: f.env, Log: f.logs[i]})
	if err != nil {
		f.t.Fatalf("replica %d: %v\nits log:\n%s", i, err, lastLines(f.logs[i].String(), 10))
	}
	f.ps[i] = p
}

// urls are the running replicas' URLs.
func (f *fleet) urls(skip ...int) []string {
	var out []string
	for i, p := range f.ps {
		if p != nil && !p.Exited() && !containsInt(skip, i) {
			out = append(out, p.URL)
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// answer is one request's outcome as its caller saw it.
type answer struct {
	id       string
	replica  string
	complete bool // HTTP 200 and the whole answer (a stream's [DONE])
	status   int
	at       time.Time
}

// load sends chat requests from workers, round robin over targets(),
// until stopped; it keeps every answer.
type load struct {
	mu      sync.Mutex
	answers []answer
	stop    context.CancelFunc
	wg      sync.WaitGroup
	targets atomic.Pointer[[]string]
}

func (f *fleet) load(workers int, targets []string) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: cancel}
	l.targets.Store(&targets)
	client := &http.Client{Timeout: 20 * time.Second}
	for w := range workers {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				ts := *l.targets.Load()
				a := send(ctx, client, ts[(w+i)%len(ts)], f.key, (w+i)%2 == 0, "")
				if ctx.Err() != nil && !a.complete {
					return
				}
				l.mu.Lock()
				l.answers = append(l.answers, a)
				l.mu.Unlock()
				if !a.complete {
					time.Sleep(20 * time.Millisecond) // a dead replica refuses at once
				}
			}
		})
	}
	return l
}

func (l *load) retarget(ts []string) { l.targets.Store(&ts) }

func (l *load) end() []answer {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answers
}

func (l *load) completed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.answers {
		if a.complete {
			n++
		}
	}
	return n
}

// send posts one chat request and reads the whole answer.
func send(ctx context.Context, c *http.Client, base, key string, stream bool, idemKey string) answer {
	a := answer{replica: base}
	body := fmt.Sprintf(`{"model":"m","max_tokens":16,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.Do(req)
	if err != nil {
		return a
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a.id, a.status, a.at = resp.Header.Get("X-Request-Id"), resp.StatusCode, time.Now()
	a.complete = err == nil && resp.StatusCode == http.StatusOK &&
		(!stream || strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]"))
	return a
}

// rows counts the ledger's request rows of each id.
func (f *fleet) rows(ids []string) map[string]int {
	f.t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close(ctx)
	rs, err := c.Query(ctx, `SELECT request_id, COUNT(*) FROM requests WHERE request_id = ANY($1) GROUP BY request_id`, ids)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int{}
	for rs.Next() {
		var id string
		var n int
		if err := rs.Scan(&id, &n); err != nil {
			f.t.Fatal(err)
		}
		out[id] = n
	}
	if err := rs.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// checkRows fails the test for every completed answer without exactly one
// ledger row, and returns how many completed.
func (f *fleet) checkRows(answers []answer) (completed, lost int) {
	f.t.Helper()
	var ids []string
	for _, a := range answers {
		if a.complete {
			ids = append(ids, a.id)
		}
	}
	rows := f.rows(ids)
	for _, id := range ids {
		if rows[id] != 1 {
			lost++
			if lost <= 5 {
				f.t.Errorf("request %s reached its caller whole but has %d ledger rows", id, rows[id])
			}
		}
	}
	return len(ids), lost
}

// openReservations counts reservations neither settled nor released.
func (f *fleet) openReservations() int {
	f.t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// TestReplicaProcessFaults: three `spillway serve` processes on real
// PostgreSQL and Redis, under load, meet the faults of a real fleet.
func TestReplicaProcessFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dsn, redisURL := os.Getenv(testPostgresEnv), os.Getenv(testRedisEnv)
	bin := ""
	build := func(*testing.T) string {
		if bin == "" {
			bin = buildSpillway(t) // the parent's: it outlives each subtest
		}
		return bin
	}
	t.Run("KillOneReplica", func(t *testing.T) {
		needBackends(t)
		testKillOneReplica(t, build(t), dsn, redisURL)
	})
	t.Run("PostgresStopped10s", func(t *testing.T) {
		if redisURL == "" {
			t.Skipf("%s is unset: this test needs Redis (.ci/run starts one)", testRedisEnv)
		}
		pgDSN := ownPostgres(t)
		testPostgresStopped(t, build(t), pgDSN, redisURL)
	})
	t.Run("RedisStopped", func(t *testing.T) {
		if dsn == "" {
			t.Skipf("%s is unset: this test needs PostgreSQL (.ci/run starts one)", testPostgresEnv)
		}
		r := ownRedis(t)
		testRedisStopped(t, build(t), dsn, r)
	})
}

// (a) kill -9 of one replica under load loses no completed request's row:
// what it acknowledged is in its journal, replayed when it starts again,
// and its start releases only its own reservations, not those the others
// have in flight (the load goes on through them meanwhile).
func testKillOneReplica(t *testing.T, bin, dsn, redisURL string) {
	f := newFleet(t, bin, dsn, redisURL, 3)
	l := f.load(12, f.urls())
	waitFor(t, 30*time.Second, "300 requests completed", func() bool { return l.completed() >= 300 })
	victim := f.ps[1]
	victim.Kill()
	killedAt := time.Now()
	l.retarget(f.urls(1))
	// What the victim acknowledged is in PostgreSQL already (ingested
	// every 500 ms) or in its journal alone until it starts again.
	var victimIDs []string
	l.mu.Lock()
	for _, a := range l.answers {
		if a.complete && a.replica == victim.URL && a.at.Before(killedAt) {
			victimIDs = append(victimIDs, a.id)
		}
	}
	l.mu.Unlock()
	inPG := len(f.rows(victimIDs))
	time.Sleep(500 * time.Millisecond)
	f.start(1) // the same journal: replayed, its own reservations released
	l.retarget(f.urls())
	time.Sleep(time.Second)
	answers := l.end()
	released := regexp.MustCompile(`released (\d+) reservations`).FindStringSubmatch(f.ps[1].Output())
	// The released reservations are the victim's: none of them is a
	// request another replica answered.
	others := map[string]bool{}
	for _, a := range answers {
		if a.complete && a.replica != victim.URL {
			others[a.id] = true
		}
	}
	for _, m := range regexp.MustCompile(`"released a reservation left open by a crash","request_id":"([^"]+)"`).FindAllStringSubmatch(f.logs[1].String(), -1) {
		if others[m[1]] {
			t.Errorf("the restarted replica released %s, a request another replica was serving", m[1])
		}
	}
	if err := replica.StopAll(f.ps, 30*time.Second); err != nil {
		t.Errorf("stopping the replicas: %v", err)
	}
	completed, lost := f.checkRows(answers)
	if open := f.openReservations(); open != 0 {
		t.Errorf("%d reservations open after every replica stopped", open)
	}
	n := "0"
	if released != nil {
		n = released[1]
	}
	t.Logf("kill -9: %d requests completed (%d by the killed replica before the kill: %d of them in PostgreSQL at the kill, the other %d in its journal alone until it restarted), %d without their row; its restart released %s reservations, all its own",
		completed, len(victimIDs), inPG, len(victimIDs)-inPG, lost, n)
}

// (b) PostgreSQL stopped for 10 s under load (pg_ctl stop -m fast) and
// started again: the replicas answer from their journals meanwhile, and
// every completed request has exactly one row once it is back.
func testPostgresStopped(t *testing.T, bin, dsn, redisURL string) {
	f := newFleet(t, bin, dsn, redisURL, 3)
	l := f.load(8, f.urls())
	waitFor(t, 30*time.Second, "100 requests completed", func() bool { return l.completed() >= 100 })
	pgCtl(t, "stop")
	down := time.Now()
	time.Sleep(10 * time.Second)
	pgCtl(t, "resume")
	up := time.Now()
	time.Sleep(3 * time.Second)
	answers := l.end()
	if err := replica.StopAll(f.ps, 30*time.Second); err != nil {
		t.Errorf("stopping the replicas: %v", err)
	}
	completed, lost := f.checkRows(answers)
	var during, failedDuring int
	for _, a := range answers {
		if a.at.After(down) && a.at.Before(up) {
			if a.complete {
				during++
			} else {
				failedDuring++
			}
		}
	}
	if during == 0 {
		t.Errorf("no request completed while PostgreSQL was down (%d failed)", failedDuring)
	}
	if open := f.openReservations(); open != 0 {
		t.Errorf("%d reservations open after every replica stopped", open)
	}
	t.Logf("PostgreSQL down %s: %d requests completed in all, %d of them during the outage (%d not), %d without exactly one row afterwards",
		up.Sub(down).Round(100*time.Millisecond), completed, during, failedDuring, lost)
}

// (c) Redis stopped under load: traffic continues on the documented
// fallbacks (health local; the load sends no Idempotency-Key, which would
// be refused with 503 idempotency_unavailable), each replica says so in
// its metrics; when Redis returns they share again without a restart
// (measured: until every replica is up again), and an outage replica A
// sees is then skipped by B and C, and a key used on A replays on B.
func testRedisStopped(t *testing.T, bin, dsn string, r *redisServer) {
	f := newFleet(t, bin, dsn, r.url, 3)
	l := f.load(6, f.urls())
	waitFor(t, 30*time.Second, "100 requests completed", func() bool { return l.completed() >= 100 })
	r.stop()
	down := time.Now()
	for _, p := range f.ps {
		waitFor(t, 10*time.Second, p.URL+" reports Redis down", func() bool { return metric(p.URL, "spillway_shared_state_up") == "0" })
	}
	time.Sleep(2 * time.Second)
	r.start(t)
	up := time.Now()
	var converged time.Duration
	waitFor(t, 15*time.Second, "every replica shares state again", func() bool {
		for _, p := range f.ps {
			if metric(p.URL, "spillway_shared_state_up") != "1" {
				return false
			}
		}
		converged = time.Since(up)
		return true
	})
	answers := l.end()
	var during, failedDuring int
	for _, a := range answers {
		if a.at.After(down) && a.at.Before(up) {
			if a.complete {
				during++
			} else {
				failedDuring++
			}
		}
	}
	if failedDuring > 0 || during == 0 {
		t.Errorf("with Redis down: %d requests completed, %d did not; want every one to complete", during, failedDuring)
	}
	var fallbacks []string
	for _, p := range f.ps {
		fallbacks = append(fallbacks, metric(p.URL, "spillway_shared_state_fallbacks_total"))
	}

	// Shared again: A sees the primary fail and opens its circuit; B and
	// C skip it too, without a request of their own.
	if err := f.primary.SetFault("status=529"); err != nil {
		t.Fatal(err)
	}
	a, b, c := f.ps[0].URL, f.ps[1].URL, f.ps[2].URL
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; healthy(a, "primary"); i++ {
		if i == 20 {
			t.Fatal("A never opened the primary's circuit")
		}
		send(context.Background(), client, a, f.key, false, "")
	}
	opened := time.Now()
	var adopted, sinceUp time.Duration
	waitFor(t, 5*time.Second, "B and C skip the primary A saw fail", func() bool {
		if healthy(b, "primary") || healthy(c, "primary") {
			return false
		}
		adopted, sinceUp = time.Since(opened), time.Since(up)
		return true
	})
	_ = f.primary.SetFault("")
	first := send(context.Background(), client, a, f.key, true, "fleet-key-1")
	again := sendRaw(t, b, f.key, "fleet-key-1")
	if !first.complete || again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("X-Request-Id") != first.id {
		t.Errorf("a key used on A, retried on B: replayed %q, request id %q (A's %q)", again.Header.Get("Idempotent-Replayed"), again.Header.Get("X-Request-Id"), first.id)
	}
	t.Logf("Redis down %s: %d requests completed meanwhile, %d failed; fallbacks per replica %v; every replica up again %s after Redis returned; then an outage A saw was skipped by B and C %s after A's circuit opened, %s after Redis returned (measured from outside, through /v1/admin/health)",
		up.Sub(down).Round(100*time.Millisecond), during, failedDuring, fallbacks, converged.Round(time.Millisecond), adopted.Round(time.Millisecond), sinceUp.Round(time.Millisecond))
}

func sendRaw(t *testing.T, base, key, idemKey string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// healthy reports whether a replica's admin health says the deployment
// is healthy (true when it cannot tell).
func healthy(base, dep string) bool {
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/admin/health", nil)
	req.Header.Set("Authorization", "Bearer "+fleetAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return true
	}
	defer resp.Body.Close()
	var rep struct {
		Deployments []struct {
			Deployment string `json:"deployment"`
			Healthy    bool   `json:"healthy"`
		} `json:"deployments"`
	}
	if json.NewDecoder(resp.Body).Decode(&rep) != nil {
		return true
	}
	for _, d := range rep.Deployments {
		if d.Deployment == dep {
			return d.Healthy
		}
	}
	return true
}

func metric(base, name string) string {
	m, err := scrape(context.Background(), base+"/metrics", name)
	if err != nil {
		return ""
	}
	return m[0]
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pgDir is the throwaway cluster ownPostgres started, for pgCtl.
var pgDir string

// ownPostgres starts a throwaway PostgreSQL cluster this test may stop
// (.ci/postgres start in a directory of its own: CI's cluster is not the
// test's to stop), or skips, saying why.
func ownPostgres(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spillway-pgfault-") // under /tmp: the postgres user must reach it
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../../.ci/postgres")
	var stderr bytes.Buffer
	cmd := exec.Command(script, "start", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		os.RemoveAll(dir)
		t.Skipf("no PostgreSQL cluster of its own to stop (.ci/postgres start: %v): this test stops the database, which it may not do to CI's shared one\n%s", err, lastLines(stderr.String(), 5))
	}
	pgDir = dir
	t.Cleanup(func() {
		_ = exec.Command(script, "stop", dir).Run()
		os.RemoveAll(dir)
	})
	return strings.TrimSpace(string(out)) + "&connect_timeout=20"
}

// pgCtl stops (pg_ctl stop -m fast) or resumes the cluster ownPostgres
// started.
func pgCtl(t *testing.T, what string) {
	t.Helper()
	script, _ := filepath.Abs("../../.ci/postgres")
	if out, err := exec.Command(script, what, pgDir).CombinedOutput(); err != nil {
		t.Fatalf(".ci/postgres %s: %v\n%s", what, err, out)
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// redisServer is a redis-server of the test's own, on a fixed port, that
// it can stop and start again (empty: nothing persisted).
type redisServer struct {
	port, dir, url string
	cmd            *exec.Cmd
}

// ownRedis starts a redis-server the test may stop, or skips.
func ownRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (.ci/redis installs it): this test stops Redis, which it may not do to CI's shared one")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	r := &redisServer{port: port, dir: t.TempDir(), url: "redis://127.0.0.1:" + port + "/0"}
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", r.port, "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "redis-server answers", func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+r.port, 100*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write([]byte("PING\r\n"))
		b := make([]byte, 7)
		n, _ := io.ReadAtLeast(c, b, 7)
		return string(b[:n]) == "+PONG\r\n"
	})
}

func (r *redisServer) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}
