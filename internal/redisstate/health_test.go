package redisstate

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/health"
)

func trackers(n int, ids ...string) []*health.Tracker {
	ps := map[string]health.Policy{}
	for _, id := range ids {
		ps[id] = health.Policy{OpenFor: 300 * time.Millisecond}
	}
	out := make([]*health.Tracker, n)
	for i := range out {
		out[i] = health.NewTracker(nil)
		out[i].Sync(ps)
	}
	return out
}

func fail(tr *health.Tracker, id string, class failure.Class) {
	tok, why := tr.Begin(id, false)
	if why == "" {
		tr.Done(tok, health.Outcome{Class: class})
	}
}

// An open circuit, a throttle window and a suppression seen by replica A
// are adopted by B within 100 ms. The delay from A's transition to B's
// adoption is measured over many deployments and logged.
func TestHealthPropagation(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%d", i)
	}
	tr := trackers(2, ids...)
	a := open(t, url, prefix, nil)
	b := open(t, url, prefix, nil)
	a.MirrorHealth(tr[0])
	var mu sync.Mutex
	seen := map[string]time.Time{}
	b.mirrorHealth(tr[1], func(x health.Transition) {
		if x.Kind == health.TransitionProbe || x.Kind == health.TransitionProbeEnd {
			return
		}
		mu.Lock()
		if _, ok := seen[x.Deployment]; !ok {
			seen[x.Deployment] = time.Now()
		}
		mu.Unlock()
	})
	waitSubscribed(t, a, b)

	classes := []failure.Class{failure.ProviderUnavailable, failure.Throttled, failure.ProviderAuthentication}
	wantSkip := map[failure.Class]string{failure.ProviderUnavailable: health.SkipCircuitOpen, failure.Throttled: health.SkipThrottled, failure.ProviderAuthentication: health.SkipSuppressed}
	var delays []time.Duration
	for i, id := range ids {
		class := classes[i%len(classes)]
		if ok, _ := tr[1].Check(id); !ok {
			t.Fatalf("%s skipped on B before A saw anything", id)
		}
		fail(tr[0], id, class)
		if class == failure.ProviderUnavailable {
			fail(tr[0], id, class) // the second consecutive failure opens
		}
		start := time.Now()
		waitFor(t, time.Second, id+" adopted by B", func() bool { _, why := tr[1].Check(id); return why == wantSkip[class] })
		mu.Lock()
		at := seen[id]
		mu.Unlock()
		if at.IsZero() {
			at = time.Now()
		}
		delays = append(delays, at.Sub(start))
		time.Sleep(2 * time.Millisecond)
	}
	slices.Sort(delays)
	p50, p99, worst := delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1]
	t.Logf("health propagation A -> B over %d transitions: p50 %s, p99 %s, max %s", len(delays), p50, p99, worst)
	if p99 > 100*time.Millisecond {
		t.Errorf("p99 propagation %s, want under 100ms", p99)
	}
}

// waitSubscribed waits until every client listens (a message sent before
// that would be missed, as by any replica that was not yet running; the
// keys cover those).
func waitSubscribed(t testing.TB, cs ...*Client) {
	t.Helper()
	waitFor(t, 5*time.Second, "subscriptions", func() bool {
		for _, c := range cs {
			if !c.Listening() {
				return false
			}
		}
		return true
	})
}

// Exactly one half-open probe across three replicas: many concurrent
// attempts on each once the circuit's time is up, one admitted.
func TestHealthOneProbeAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	tr := trackers(3, "p")
	cs := []*Client{open(t, url, prefix, nil), open(t, url, prefix, nil), open(t, url, prefix, nil)}
	for i, c := range cs {
		c.MirrorHealth(tr[i])
	}
	waitSubscribed(t, cs...)
	fail(tr[0], "p", failure.ProviderUnavailable)
	fail(tr[0], "p", failure.ProviderUnavailable)
	for _, x := range tr[1:] {
		waitFor(t, time.Second, "open adopted", func() bool { ok, _ := x.Check("p"); return !ok })
	}
	time.Sleep(350 * time.Millisecond) // OpenFor 300ms: every replica is half-open now
	var admitted atomic.Int32
	var toks sync.Map
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, why := tr[i%3].Begin("p", false)
			if why == "" {
				admitted.Add(1)
				toks.Store(i, tok)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 1 {
		t.Fatalf("%d probes admitted across three replicas, want exactly 1", n)
	}
	// The others hear of the probe and skip; its success closes all three.
	for _, x := range tr {
		waitFor(t, time.Second, "probe in flight seen", func() bool { _, why := x.Check("p"); return why == health.SkipProbeInFlight })
	}
	toks.Range(func(k, v any) bool {
		tr[k.(int)%3].Done(v.(health.Token), health.Outcome{})
		return false
	})
	for _, x := range tr {
		waitFor(t, time.Second, "closed everywhere", func() bool { ok, _ := x.Check("p"); return ok })
	}
}

// A replica that starts late adopts what is in force from the keys.
func TestHealthLateJoiner(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	tr := trackers(2, "x")
	a := open(t, url, prefix, nil)
	a.MirrorHealth(tr[0])
	waitSubscribed(t, a)
	fail(tr[0], "x", failure.ProviderUnavailable)
	fail(tr[0], "x", failure.ProviderUnavailable)
	time.Sleep(50 * time.Millisecond) // the key is written
	tr[0].Sync(map[string]health.Policy{"x": {OpenFor: time.Minute}})
	b := open(t, url, prefix, nil)
	b.MirrorHealth(tr[1])
	waitFor(t, 2*time.Second, "late joiner adopts the open circuit", func() bool { _, why := tr[1].Check("x"); return why == health.SkipCircuitOpen })
}

// A Redis that accepts connections and never answers costs one bounded
// call, then nothing: the half-open probe's lease, asked of a hanging
// Redis, is given up after the timeout and the probe runs locally
// (fail-open); every later call answers at once; when Redis answers again
// the replica shares again, without a restart.
func TestHealthHostileRedis(t *testing.T) {
	url := redisURL(t)
	p, purl := newProxy(t, url)
	tr := trackers(1, "h")
	c := open(t, purl, testPrefix(), func(o *Options) { o.Timeout = 30 * time.Millisecond })
	c.MirrorHealth(tr[0])
	waitFor(t, 2*time.Second, "up", c.Up)
	fail(tr[0], "h", failure.ProviderUnavailable)
	fail(tr[0], "h", failure.ProviderUnavailable)
	time.Sleep(350 * time.Millisecond) // half-open now
	p.Hang(true)
	start := time.Now()
	tok, why := tr[0].Begin("h", false)
	first := time.Since(start)
	if why != "" {
		t.Fatalf("hanging Redis: the probe was refused (%q), want it run locally", why)
	}
	if first > 250*time.Millisecond {
		t.Errorf("the probe's lease waited %s on a hanging Redis (timeout 30ms)", first)
	}
	tr[0].Done(tok, health.Outcome{Class: failure.ProviderUnavailable})
	if c.Up() {
		t.Error("a Redis that never answers is still marked up")
	}
	time.Sleep(350 * time.Millisecond)
	var slowest time.Duration
	for range 20 {
		start := time.Now()
		tok, why := tr[0].Begin("h", false)
		if why == "" {
			tr[0].Done(tok, health.Outcome{Class: failure.ProviderUnavailable})
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("hanging Redis: first admission %s (timeout 30ms), then at most %s; stats %+v", first, slowest, c.Stats())
	if slowest > 5*time.Millisecond {
		t.Errorf("with Redis marked down an admission took %s", slowest)
	}
	p.Hang(false)
	waitFor(t, 3*time.Second, "reconnected without a restart", c.Up)
}
