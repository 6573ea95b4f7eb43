package health

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/failure"
)

func newTest(p Policy) (*Tracker, *clocktest.Clock) {
	clk := clocktest.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	t := NewTracker(clk)
	t.Sync(map[string]Policy{"a": p, "b": p})
	return t, clk
}

// attempt runs one admitted attempt with outcome class ("" = success).
func attempt(t *testing.T, tr *Tracker, id string, class failure.Class) bool {
	t.Helper()
	tok, why := tr.Begin(id, false)
	if why == "" {
		tr.Done(tok, Outcome{Class: class, FirstToken: 100 * time.Millisecond})
	}
	return why == ""
}

func state(tr *Tracker, id string) State {
	s, _ := tr.Status(id, tr.clock.Now())
	return s.State
}

func TestCircuitTransitions(t *testing.T) {
	tr, clk := newTest(Policy{})
	unavailable := failure.ProviderUnavailable

	// One failure does not flip a healthy rung.
	attempt(t, tr, "a", unavailable)
	if ok, _ := tr.Check("a"); !ok || state(tr, "a") != Healthy {
		t.Fatalf("one failure opened the circuit: %s", state(tr, "a"))
	}
	// A success in between resets the count.
	attempt(t, tr, "a", "")
	attempt(t, tr, "a", unavailable)
	if state(tr, "a") != Healthy {
		t.Fatal("non-consecutive failures opened the circuit")
	}
	// The second consecutive failure opens it for 30s.
	attempt(t, tr, "a", unavailable)
	if ok, why := tr.Check("a"); ok || why != SkipCircuitOpen {
		t.Fatalf("Check = %v %q, want skipped circuit_open", ok, why)
	}
	if attempt(t, tr, "a", "") {
		t.Fatal("an open circuit admitted an attempt")
	}
	clk.Advance(29 * time.Second)
	if ok, _ := tr.Check("a"); ok {
		t.Fatal("reopened before 30s")
	}
	clk.Advance(time.Second)
	if ok, _ := tr.Check("a"); !ok || state(tr, "a") != HalfOpen {
		t.Fatalf("after 30s state = %s, want half_open", state(tr, "a"))
	}
	// Exactly one probe at a time.
	probe, why := tr.Begin("a", false)
	if why != "" || !probe.probe {
		t.Fatal("half-open circuit did not admit a probe")
	}
	if _, why := tr.Begin("a", false); why != SkipProbeInFlight {
		t.Fatal("a second concurrent probe was admitted")
	}
	if ok, why := tr.Check("a"); ok || why != SkipProbeInFlight {
		t.Fatalf("Check during probe = %v %q", ok, why)
	}
	// A failed probe reopens for another 30s.
	tr.Done(probe, Outcome{Class: unavailable})
	if ok, why := tr.Check("a"); ok || why != SkipCircuitOpen {
		t.Fatalf("after failed probe: %v %q", ok, why)
	}
	clk.Advance(30 * time.Second)
	// A successful probe closes.
	if !attempt(t, tr, "a", "") {
		t.Fatal("no probe admitted")
	}
	if state(tr, "a") != Healthy {
		t.Fatalf("after successful probe state = %s", state(tr, "a"))
	}
	// The other deployment was never touched.
	if state(tr, "b") != Healthy {
		t.Error("b changed")
	}
}

func TestRecoveryNeedsConsecutiveSuccesses(t *testing.T) {
	tr, clk := newTest(Policy{RecoverySuccesses: 3})
	attempt(t, tr, "a", failure.ProviderUnavailable)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	clk.Advance(30 * time.Second)
	for i := 0; i < 2; i++ {
		if !attempt(t, tr, "a", "") {
			t.Fatalf("probe %d not admitted", i)
		}
		if state(tr, "a") != HalfOpen {
			t.Fatalf("closed after %d successes, want 3", i+1)
		}
	}
	attempt(t, tr, "a", "")
	if state(tr, "a") != Healthy {
		t.Fatalf("state = %s after 3 successes", state(tr, "a"))
	}
}

func TestExactlyOneHalfOpenProbeUnderConcurrency(t *testing.T) {
	tr, clk := newTest(Policy{})
	attempt(t, tr, "a", failure.ProviderUnavailable)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	clk.Advance(31 * time.Second)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	toks := make(chan Token, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if tok, why := tr.Begin("a", false); why == "" {
				admitted.Add(1)
				toks <- tok
			}
			_, _ = tr.Check("a")
			_ = tr.Statuses()
		}()
	}
	close(start)
	wg.Wait()
	if n := admitted.Load(); n != 1 {
		t.Fatalf("%d probes admitted under 100 concurrent requests, want 1", n)
	}
	tr.Done(<-toks, Outcome{})
	if state(tr, "a") != Healthy {
		t.Fatal("probe success did not close")
	}
}

func TestThrottleWindow(t *testing.T) {
	tr, clk := newTest(Policy{})
	// A 429 storm: throttled for Retry-After, and the failure circuit stays closed.
	for i := 0; i < 50; i++ {
		tok, _ := tr.Begin("a", true)
		tr.Done(tok, Outcome{Class: failure.Throttled, RetryAfter: 7 * time.Second})
	}
	if ok, why := tr.Check("a"); ok || why != SkipThrottled {
		t.Fatalf("Check = %v %q, want throttled", ok, why)
	}
	if wait, only := tr.Wait("a"); wait != 7*time.Second || !only {
		t.Fatalf("Wait = %v %v, want 7s throttled-only", wait, only)
	}
	st, _ := tr.Status("a", clk.Now())
	if st.State != Throttled || st.ThrottledUntil == nil || !st.ThrottledUntil.Equal(clk.Now().Add(7*time.Second)) {
		t.Fatalf("status = %+v", st)
	}
	if tr.get("a").circuit != closed {
		t.Fatal("a 429 storm opened the failure circuit")
	}
	clk.Advance(7 * time.Second)
	if ok, _ := tr.Check("a"); !ok {
		t.Fatal("still throttled after Retry-After passed")
	}
	// Without Retry-After: the default window; with a huge one: capped.
	tok, _ := tr.Begin("a", false)
	tr.Done(tok, Outcome{Class: failure.Throttled})
	clk.Advance(29 * time.Second)
	if ok, _ := tr.Check("a"); ok {
		t.Fatal("default throttle window shorter than 30s")
	}
	clk.Advance(time.Second)
	tok, _ = tr.Begin("a", false)
	tr.Done(tok, Outcome{Class: failure.Throttled, RetryAfter: time.Hour})
	clk.Advance(5 * time.Minute)
	if ok, _ := tr.Check("a"); !ok {
		t.Fatal("Retry-After not capped at MaxThrottle")
	}
}

func TestSuppression(t *testing.T) {
	for _, class := range []failure.Class{failure.ProviderAuthentication, failure.ProviderCreditExhausted, failure.ProviderBindingInvalid} {
		t.Run(string(class), func(t *testing.T) {
			tr, clk := newTest(Policy{})
			attempt(t, tr, "a", class)
			if ok, why := tr.Check("a"); ok || why != SkipSuppressed {
				t.Fatalf("one %s: Check = %v %q, want suppressed at once", class, ok, why)
			}
			st, _ := tr.Status("a", clk.Now())
			if st.State != Suppressed || st.Reason != string(class) {
				t.Fatalf("status = %s %q", st.State, st.Reason)
			}
			clk.Advance(60 * time.Second)
			if !attempt(t, tr, "a", "") || state(tr, "a") != Healthy {
				t.Fatalf("a successful probe did not lift suppression: %s", state(tr, "a"))
			}
		})
	}
}

func TestNeutralOutcomesNeverCount(t *testing.T) {
	for _, class := range []failure.Class{failure.ClientCancelled, failure.InvalidRequest, failure.Refused, failure.HedgedLost} {
		tr, _ := newTest(Policy{})
		for i := 0; i < 20; i++ {
			attempt(t, tr, "a", class)
		}
		st, _ := tr.Status("a", tr.clock.Now())
		if st.State != Healthy || st.Samples != 0 {
			t.Errorf("%s counted against the deployment: %+v", class, st)
		}
	}
	// A probe that ends neutral frees the probe slot.
	tr, clk := newTest(Policy{})
	attempt(t, tr, "a", failure.ProviderUnavailable)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	clk.Advance(30 * time.Second)
	attempt(t, tr, "a", failure.ClientCancelled)
	if ok, why := tr.Check("a"); !ok {
		t.Fatalf("probe slot stuck after a cancelled probe: %q", why)
	}
}

func TestRollingCooldowns(t *testing.T) {
	t.Run("error rate", func(t *testing.T) {
		tr, clk := newTest(Policy{MaxErrorRate: 0.3})
		// Alternate so there are never two consecutive failures.
		for i := 0; i < 10; i++ {
			class := failure.Class("")
			if i%2 == 1 {
				class = failure.ProviderUnavailable
			}
			attempt(t, tr, "a", class)
			clk.Advance(time.Second)
		}
		st, _ := tr.Status("a", clk.Now())
		if st.State != Cooldown {
			t.Fatalf("state = %s (rate %.2f over %d), want cooldown", st.State, st.ErrorRate, st.Samples)
		}
		clk.Advance(30 * time.Second)
		if !attempt(t, tr, "a", "") || state(tr, "a") != Healthy {
			t.Fatal("no recovery after cooldown")
		}
	})
	t.Run("not before min samples", func(t *testing.T) {
		tr, _ := newTest(Policy{MaxErrorRate: 0.3})
		attempt(t, tr, "a", "")
		attempt(t, tr, "a", failure.ProviderUnavailable)
		if state(tr, "a") != Healthy {
			t.Fatal("cooled down on 2 samples")
		}
	})
	t.Run("old samples leave the window", func(t *testing.T) {
		tr, clk := newTest(Policy{MaxErrorRate: 0.3})
		for i := 0; i < 4; i++ {
			attempt(t, tr, "a", "")
			attempt(t, tr, "a", failure.ProviderUnavailable)
		}
		clk.Advance(2 * time.Minute)
		st, _ := tr.Status("a", clk.Now())
		if st.Samples != 0 {
			t.Fatalf("samples = %d after the window passed", st.Samples)
		}
	})
	t.Run("first-token p95", func(t *testing.T) {
		tr, clk := newTest(Policy{MaxFirstTokenP95: 2 * time.Second})
		for i := 0; i < 10; i++ {
			tok, _ := tr.Begin("a", false)
			tr.Done(tok, Outcome{FirstToken: 3 * time.Second})
		}
		st, _ := tr.Status("a", clk.Now())
		if st.State != Cooldown || st.P95Millis < 2000 {
			t.Fatalf("status = %s p95 %.0fms, want cooldown", st.State, st.P95Millis)
		}
	})
}

func TestLastResort(t *testing.T) {
	tr, clk := newTest(Policy{})
	attempt(t, tr, "a", failure.ProviderUnavailable)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	clk.Advance(10 * time.Second)
	attempt(t, tr, "b", failure.ProviderAuthentication) // suppressed for 60s
	// a's wait ends first: it is the most likely to have recovered.
	id, ok := tr.LastResort([]string{"a", "b"})
	if !ok || id != "a" {
		t.Fatalf("LastResort = %q %v, want a", id, ok)
	}
	// Rate-limited: the next pick within 1s goes to b, then none.
	if id, ok := tr.LastResort([]string{"a", "b"}); !ok || id != "b" {
		t.Fatalf("second LastResort = %q %v, want b", id, ok)
	}
	if _, ok := tr.LastResort([]string{"a", "b"}); ok {
		t.Fatal("a third last-resort probe within the interval")
	}
	clk.Advance(time.Second)
	id, ok = tr.LastResort([]string{"a", "b"})
	if !ok {
		t.Fatal("no last resort after the interval")
	}
	tok, why := tr.Begin(id, true)
	if why != "" {
		t.Fatal("forced probe refused")
	}
	tr.Done(tok, Outcome{})
	if state(tr, id) != Healthy {
		t.Fatalf("a successful last-resort probe left %s %s", id, state(tr, id))
	}
}

func TestSyncKeepsState(t *testing.T) {
	tr, _ := newTest(Policy{})
	attempt(t, tr, "a", failure.ProviderAuthentication)
	tr.Sync(map[string]Policy{"a": {}, "c": {}})
	if state(tr, "a") != Suppressed {
		t.Error("reload lost a's state")
	}
	if _, ok := tr.Status("b", tr.clock.Now()); ok {
		t.Error("b survived its removal")
	}
	if state(tr, "c") != Healthy {
		t.Error("new deployment not healthy")
	}
}

func BenchmarkCheckBeginDone(b *testing.B) {
	tr := NewTracker(nil)
	tr.Sync(map[string]Policy{"a": {}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tr.Check("a")
			tok, _ := tr.Begin("a", false)
			tr.Done(tok, Outcome{FirstToken: time.Millisecond})
		}
	})
}
