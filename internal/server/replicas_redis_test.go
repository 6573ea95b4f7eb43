package server_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/redisstate"
	"github.com/spillway-gw/spillway/internal/redisstate/redistest"
	"github.com/spillway-gw/spillway/internal/server"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// replica is one gateway of several sharing one Redis: the same config,
// mocks, keys and ledger as the harness's, its own health, idempotency
// keys, pins and process state.
type replica struct {
	name   string
	gw     *httptest.Server
	health *health.Tracker
	shared *redisstate.Client
	budget *budget.Accountant
	idem   *idempotency.Store
	key    string
}

// newReplicas starts n gateways over the harness's mocks, all sharing one
// Redis through a relay the test can cut (Redis "stopped" for them all).
// replicas[0] is the harness's own gateway.
func newReplicas(t *testing.T, n int, edit func(*catalog.Config), rungs ...rungSpec) (*harness, []*replica, *redistest.Proxy) {
	t.Helper()
	return newReplicasTimeout(t, n, time.Second, edit, rungs...)
}

// newReplicasTimeout is newReplicas with shared_state.timeout set to timeout.
func newReplicasTimeout(t *testing.T, n int, timeout time.Duration, edit func(*catalog.Config), rungs ...rungSpec) (*harness, []*replica, *redistest.Proxy) {
	t.Helper()
	url := redistest.URL(t)
	proxy, purl := redistest.NewProxy(t, url)
	prefix := redistest.Prefix()
	var base server.Options
	var first *replica
	attach := func(o *server.Options, name string) *replica {
		c, err := redisstate.Open(redisstate.Options{URL: purl, Prefix: prefix, Timeout: timeout,
			RetryEvery: 50 * time.Millisecond, ProbeLease: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		o.Health = health.NewTracker(nil) // wall-clock: transitions carry instants
		o.Idempotency = idempotency.New(idempotency.Options{})
		o.Sticky = sticky.NewShared(1000, nil, c.PinSeed())
		o.Metrics = nil
		if name != "A" {
			o.Budget = budget.New(nil) // A keeps the harness's
		}
		c.Attach(o.Health, o.Idempotency, o.Sticky)
		c.ShareBudgets(o.Budget, budget.DownPolicy{})
		o.SharedStats = c.MetricsStats
		return &replica{name: name, health: o.Health, shared: c, budget: o.Budget, idem: o.Idempotency}
	}
	h := newHarnessOpts(t, edit, func(o *server.Options) {
		first = attach(o, "A")
		base = *o
	}, rungs...)
	first.gw, first.key = h.gw, h.key
	reps := []*replica{first}
	for i := 1; i < n; i++ {
		o := base
		r := attach(&o, string(rune('A'+i)))
		r.gw = httptest.NewServer(server.New(o))
		r.key = h.key
		t.Cleanup(r.gw.Close)
		reps = append(reps, r)
	}
	for _, r := range reps {
		waitUntil(t, 5*time.Second, "replica "+r.name+" connected to Redis", func() bool { return r.shared.Up() && r.shared.Listening() })
		// A replica builds its snapshot's runtime (and health) at its
		// first request; the admin health report builds it, calling no
		// provider.
		req, _ := http.NewRequest(http.MethodGet, r.gw.URL+"/v1/admin/health", nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	return h, reps, proxy
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// post sends a chat request to this replica and reads the whole answer.
func (r *replica) post(t *testing.T, body string, headers ...string) raw {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.gw.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return raw{}
	}
	defer resp.Body.Close()
	out := raw{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Bytes(); len(l) > 0 {
				out.chunks = append(out.chunks, append([]byte(nil), l...))
			}
		}
		out.body = bytes.Join(out.chunks, []byte("\n"))
		return out
	}
	out.body, _ = io.ReadAll(resp.Body)
	return out
}

func replicaBody(stream bool, text string) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"` + publicModel + `","stream":` + s + `,"max_tokens":16,"messages":[{"role":"user","content":"` + text + `"}]}`
}

func (r *replica) metric(t *testing.T, name string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.gw.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return ""
}

// An outage replica A sees is skipped by B and C within 100 ms: the delay
// from A's answer (the second failure opened the circuit) to B's and C's
// trackers skipping the primary is measured, and B then sends the primary
// nothing.
func TestReplicasOutageSkippedWithin100ms(t *testing.T) {
	h, reps, _ := newReplicas(t, 3, nil, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	var delays []time.Duration
	for round := range 5 {
		h.fault("primary", "status=529")
		for range 2 {
			if r := reps[0].post(t, replicaBody(false, "hi")); r.status != 200 || r.header.Get("X-Spillway-Deployment") != "secondary" {
				t.Fatalf("round %d on A: %d served by %q", round, r.status, r.header.Get("X-Spillway-Deployment"))
			}
		}
		opened := time.Now()
		if ok, _ := reps[0].health.Check("primary"); ok {
			t.Fatalf("round %d: A did not open the primary's circuit", round)
		}
		for _, r := range reps[1:] {
			waitUntil(t, time.Second, r.name+" skips the primary", func() bool { ok, _ := r.health.Check("primary"); return !ok })
			delays = append(delays, time.Since(opened))
		}
		before := h.mocks["primary"].Count()
		for _, r := range reps[1:] {
			if got := r.post(t, replicaBody(true, "hi")); got.status != 200 || got.header.Get("X-Spillway-Trail") != "secondary=ok" {
				t.Fatalf("round %d on %s: %d trail %q, want straight to the secondary", round, r.name, got.status, got.header.Get("X-Spillway-Trail"))
			}
		}
		if n := h.mocks["primary"].Count() - before; n != 0 {
			t.Fatalf("round %d: the primary got %d requests from replicas that should skip it", round, n)
		}
		// Recover for the next round: a close published by A closes all.
		h.fault("primary", "")
		for _, r := range reps {
			r.health.Adopt(health.Transition{Deployment: "primary", Kind: health.TransitionClose})
		}
	}
	slices.Sort(delays)
	t.Logf("outage seen by A skipped by B and C: %d samples, median %s, max %s", len(delays), delays[len(delays)/2], delays[len(delays)-1])
	if worst := delays[len(delays)-1]; worst > 100*time.Millisecond {
		t.Errorf("slowest replica skipped the primary %s after A opened it, want within 100ms", worst)
	}
}

// Exactly one half-open probe across replicas: once the open period ends,
// twelve concurrent requests spread over three replicas send the primary
// one request (the probe); the rest go to the secondary.
func TestReplicasOneHalfOpenProbe(t *testing.T) {
	// The probe takes a second, well inside its bounds, and the circuit
	// stays open for two: every request of the burst is dispatched while
	// the one probe is in flight, even on a loaded machine, and no second
	// half-open window opens during the test.
	short := func(c *catalog.Config) {
		for i := range c.Deployments {
			d := &c.Deployments[i]
			d.Health.OpenFor = catalog.Duration(2 * time.Second)
			d.Timeouts.FirstByte, d.Timeouts.Total = catalog.Duration(4*time.Second), catalog.Duration(5*time.Second)
		}
	}
	h, reps, _ := newReplicas(t, 3, short, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	h.fault("primary", "status=529")
	reps[0].post(t, replicaBody(false, "hi"))
	reps[0].post(t, replicaBody(false, "hi"))
	for _, r := range reps {
		waitUntil(t, time.Second, r.name+" skips the primary", func() bool { ok, _ := r.health.Check("primary"); return !ok })
	}
	h.fault("primary", "delay=1s") // recovered, slowly: the probe is in flight a while
	time.Sleep(2100 * time.Millisecond)
	before := h.mocks["primary"].Count()
	var wg sync.WaitGroup
	var byPrimary atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reps[i%3].post(t, replicaBody(false, "hi"))
			if r.status != 200 {
				t.Errorf("request %d: %d %s", i, r.status, r.body)
			}
			if r.header.Get("X-Spillway-Deployment") == "primary" {
				byPrimary.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := h.mocks["primary"].Count() - before; n != 1 || byPrimary.Load() != 1 {
		t.Fatalf("the primary got %d requests (%d answers) in the half-open window across three replicas, want exactly one probe", n, byPrimary.Load())
	}
	// The probe succeeded: every replica closes.
	for _, r := range reps {
		waitUntil(t, time.Second, r.name+" closed", func() bool { ok, _ := r.health.Check("primary"); return ok })
	}
}

// An idempotency key replays from another replica, a stream event for
// event; and a waiter on B for a key in flight on A gets A's answer.
func TestReplicasIdempotencyReplay(t *testing.T) {
	const key = "Idempotency-Key"
	h, reps, _ := newReplicas(t, 3, nil, rungSpec{"primary", "openai"})
	for _, stream := range []bool{true, false} {
		first := reps[0].post(t, replicaBody(stream, "hi"), key, "k-replay-"+map[bool]string{true: "s", false: "n"}[stream])
		second := reps[1].post(t, replicaBody(stream, "hi"), key, "k-replay-"+map[bool]string{true: "s", false: "n"}[stream])
		if first.status != 200 || second.status != 200 || !bytes.Equal(first.body, second.body) {
			t.Fatalf("stream=%v: replay on B differs:\n%s\n---\n%s", stream, first.body, second.body)
		}
		if stream && (len(first.chunks) < 3 || !slices.EqualFunc(first.chunks, second.chunks, bytes.Equal)) {
			t.Fatalf("stream replayed with %d events, want A's %d, event for event", len(second.chunks), len(first.chunks))
		}
		if second.header.Get("Idempotent-Replayed") != "true" || second.header.Get("X-Request-Id") != first.header.Get("X-Request-Id") {
			t.Errorf("replay headers on B: %v", second.header)
		}
	}
	if n := h.mocks["primary"].Count(); n != 2 {
		t.Errorf("the provider ran %d times for two keys", n)
	}
	// A waiter on B and C while A's stream is in flight.
	h.fault("primary", "event_delay=30ms")
	var wg sync.WaitGroup
	out := make([]raw, 3)
	wg.Add(1)
	go func() { defer wg.Done(); out[0] = reps[0].post(t, replicaBody(true, "wait"), key, "k-wait") }()
	time.Sleep(60 * time.Millisecond) // A owns the key
	for i := 1; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = reps[i].post(t, replicaBody(true, "wait"), key, "k-wait") }()
	}
	wg.Wait()
	for i := 1; i < 3; i++ {
		if out[i].status != 200 || !slices.EqualFunc(out[0].chunks, out[i].chunks, bytes.Equal) || out[i].header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("waiter on %s: %d, %d events (A sent %d)", reps[i].name, out[i].status, len(out[i].chunks), len(out[0].chunks))
		}
	}
	if n := h.mocks["primary"].Count(); n != 3 {
		t.Errorf("the provider ran %d times, want 3 (one per key)", n)
	}
}

// Redis stopped mid-test: traffic continues on every replica (health
// local) except under a money limit (503 budget_unavailable,
// the default policy), the metric says so; when Redis returns the replicas
// share again without a restart, and converge: an outage A saw during the
// gap is skipped by B once Redis is back.
func TestReplicasRedisStopped(t *testing.T) {
	h, reps, proxy := newReplicas(t, 2, nil, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	if v := reps[0].metric(t, "spillway_shared_state_up"); v != "1" {
		t.Fatalf("spillway_shared_state_up = %q with Redis up", v)
	}
	// A budgeted key: money limits fail closed while Redis is down.
	budgetedKey, budgetedID := h.newKey(t)
	for _, r := range reps {
		r.budget.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: budgetedID, CreditMicroUSD: &[]int64{1_000_000}[0]}})
	}
	budgeted := *reps[1]
	budgeted.key = budgetedKey
	if r := budgeted.post(t, replicaBody(false, "hi")); r.status != 200 {
		t.Fatalf("budgeted key, Redis up: %d %s", r.status, r.body)
	}
	proxy.Cut(true)
	// Requests without an Idempotency-Key are served (keyed ones are
	// refused: TestReplicasIdempotencyRedisDown).
	for i := range 6 {
		r := reps[i%2].post(t, replicaBody(i%2 == 0, "hi"))
		if r.status != 200 {
			t.Fatalf("request %d with Redis stopped: %d %s", i, r.status, r.body)
		}
	}
	for _, r := range reps {
		waitUntil(t, time.Second, r.name+" marks Redis down", func() bool { return !r.shared.Up() })
		if v := r.metric(t, "spillway_shared_state_up"); v != "0" {
			t.Errorf("%s: spillway_shared_state_up = %q with Redis stopped", r.name, v)
		}
	}
	if r := budgeted.post(t, replicaBody(false, "hi")); r.status != 503 || !strings.Contains(string(r.body), "budget_unavailable") || r.header.Get("Retry-After") == "" {
		t.Errorf("budgeted key, Redis down (budgets_when_down refuse): %d %s", r.status, r.body)
	}
	// During the outage A sees the primary fail; B cannot hear of it.
	h.fault("primary", "status=529")
	reps[0].post(t, replicaBody(false, "hi"))
	reps[0].post(t, replicaBody(false, "hi"))
	if ok, _ := reps[0].health.Check("primary"); ok {
		t.Fatal("A did not open the circuit locally with Redis down")
	}
	if ok, _ := reps[1].health.Check("primary"); !ok {
		t.Fatal("B skipped the primary with no way to hear of it")
	}
	proxy.Cut(false)
	start := time.Now()
	waitUntil(t, 3*time.Second, "B adopts A's outage once Redis returns", func() bool { ok, _ := reps[1].health.Check("primary"); return !ok })
	t.Logf("converged %s after Redis returned", time.Since(start))
	for _, r := range reps {
		if !r.shared.Up() {
			t.Errorf("%s not reconnected", r.name)
		}
	}
	h.fault("primary", "")
	if r := budgeted.post(t, replicaBody(false, "hi")); r.status != 200 {
		t.Errorf("budgeted key once Redis returned: %d %s", r.status, r.body)
	}
}

// A budget for exactly 10 serves exactly 10 across three replicas: 300
// concurrent requests spread over them, against a key's RPM of 10 and,
// with a fresh key, against a credit of exactly ten worst cases (every
// request held in flight by a slow provider, so none frees credit early).
func TestReplicasBudgetForTen(t *testing.T) {
	slowOK := func(c *catalog.Config) {
		d := &c.Deployments[0]
		d.Timeouts.FirstByte, d.Timeouts.Total = catalog.Duration(4*time.Second), catalog.Duration(5*time.Second)
	}
	h, reps, _ := newReplicas(t, 3, slowOK, rungSpec{"primary", "openai"})
	// As the issue asks: 300 concurrent requests spread over the replicas.
	const concurrent = 300
	run := func(key string) (served, refused int, codes map[string]int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes = map[string]int{}
		for i := range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := *reps[i%3]
				r.key = key
				out := r.post(t, replicaBody(false, "hi"))
				mu.Lock()
				defer mu.Unlock()
				if out.status == 200 {
					served++
					return
				}
				refused++
				codes[string(out.body[:min(len(out.body), 400)])]++
			}()
		}
		wg.Wait()
		return
	}
	setAll := func(b ledger.Budget) {
		for _, r := range reps {
			r.budget.SetBudgets([]ledger.Budget{b})
		}
	}
	// RPM: nothing frees within the minute.
	rpmKey, rpmID := h.newKey(t)
	setAll(ledger.Budget{Scope: ledger.ScopeKey, ID: rpmID, RPM: 10})
	if served, refused, codes := run(rpmKey); served != 10 || refused != concurrent-10 {
		t.Fatalf("RPM 10 across three replicas: %d served, %d refused (%v); shared state %+v %+v %+v", served, refused, codes,
			reps[0].shared.Stats(), reps[1].shared.Stats(), reps[2].shared.Stats())
	}
	// Credit: the worst case of one request, from a probe's reservation.
	probe := reps[0].post(t, replicaBody(false, "hi"))
	worst := h.waitRow(t, probe.header.Get("X-Request-Id")).reserved
	if worst <= 0 {
		t.Fatalf("probe reserved %d", worst)
	}
	creditKey, creditID := h.newKey(t)
	setAll(ledger.Budget{Scope: ledger.ScopeKey, ID: creditID, CreditMicroUSD: &[]int64{10 * worst}[0]})
	h.fault("primary", "delay=1s")
	served, refused, codes := run(creditKey)
	if served != 10 || refused != concurrent-10 {
		t.Fatalf("credit for 10 worst cases across three replicas: %d served, %d refused (%v)", served, refused, codes)
	}
	t.Logf("budget for exactly 10 (RPM and credit), %d concurrent requests over three replicas: 10 served each time; worst case %d micro-USD", concurrent, worst)
}
