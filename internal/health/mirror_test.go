package health

import (
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
)

// fakeMirror records what a tracker shares and grants the probe lease as
// told.
type fakeMirror struct {
	mu        sync.Mutex
	published []Transition
	grant     bool
	acquired  int
	released  []string
}

func (m *fakeMirror) Publish(tr Transition) {
	m.mu.Lock()
	m.published = append(m.published, tr)
	m.mu.Unlock()
}
func (m *fakeMirror) AcquireProbe(string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquired++
	return m.grant
}
func (m *fakeMirror) ReleaseProbe(id string) {
	m.mu.Lock()
	m.released = append(m.released, id)
	m.mu.Unlock()
}

func (m *fakeMirror) kinds() []TransitionKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ks []TransitionKind
	for _, tr := range m.published {
		ks = append(ks, tr.Kind)
	}
	return ks
}

// Unhappy paths first: another replica holds the probe, so this one skips
// the half-open deployment, and Check says so before Begin is asked.
func TestMirrorProbeHeldElsewhere(t *testing.T) {
	tr, clk := newTest(Policy{})
	m := &fakeMirror{grant: false}
	tr.SetMirror(m)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	attempt(t, tr, "a", failure.ProviderUnavailable)
	clk.Advance(31 * time.Second)
	if _, why := tr.Begin("a", false); why != SkipProbeInFlight {
		t.Fatalf("lease denied: Begin = %q, want %s", why, SkipProbeInFlight)
	}
	if s, _ := tr.Status("a", clk.Now()); s.Attempts != 2 || s.Skipped != 1 {
		t.Errorf("a denied lease counts as a skip, not an attempt: %+v", s)
	}
	// The lease denial left the local probe free: granted now, it probes.
	m.grant = true
	tok, why := tr.Begin("a", false)
	if why != "" || !tok.probe || !tok.leased {
		t.Fatalf("lease granted: %+v %q", tok, why)
	}
	tr.Done(tok, Outcome{})
	if got := m.kinds(); len(got) != 2 || got[0] != TransitionOpen || got[1] != TransitionClose {
		t.Errorf("published %v, want open then close", got)
	}
	if len(m.released) != 1 {
		t.Errorf("released %v, want the lease given back once", m.released)
	}
	// A remote probe announced: skipped until its lease ends or it ends.
	attempt(t, tr, "b", failure.ProviderUnavailable)
	attempt(t, tr, "b", failure.ProviderUnavailable)
	clk.Advance(31 * time.Second)
	tr.Adopt(Transition{Deployment: "b", Kind: TransitionProbe, Until: clk.Now().Add(5 * time.Second)})
	if ok, why := tr.Check("b"); ok || why != SkipProbeInFlight {
		t.Fatalf("remote probe: Check = %v %q", ok, why)
	}
	tr.Adopt(Transition{Deployment: "b", Kind: TransitionProbeEnd})
	if ok, _ := tr.Check("b"); !ok {
		t.Fatal("remote probe ended: still skipped")
	}
}

// Adopted transitions hold as if seen here, and are never published back.
func TestMirrorAdopt(t *testing.T) {
	tr, clk := newTest(Policy{})
	m := &fakeMirror{grant: true}
	tr.SetMirror(m)
	now := clk.Now()
	tests := []struct {
		name string
		tr   Transition
		want string
	}{
		{"expired open ignored", Transition{Deployment: "a", Kind: TransitionOpen, Cause: Open, Until: now.Add(-time.Second)}, ""},
		{"unknown deployment ignored", Transition{Deployment: "zz", Kind: TransitionOpen, Cause: Open, Until: now.Add(time.Minute)}, ""},
		{"open", Transition{Deployment: "a", Kind: TransitionOpen, Cause: Open, Detail: "consecutive failures", Until: now.Add(10 * time.Second)}, SkipCircuitOpen},
		{"suppressed", Transition{Deployment: "a", Kind: TransitionOpen, Cause: Suppressed, Until: now.Add(10 * time.Second)}, SkipSuppressed},
		{"close", Transition{Deployment: "a", Kind: TransitionClose}, ""},
		{"throttle", Transition{Deployment: "a", Kind: TransitionThrottle, Until: now.Add(3 * time.Second)}, SkipThrottled},
		{"close ends the throttle", Transition{Deployment: "a", Kind: TransitionClose}, ""},
	}
	for _, tc := range tests {
		tr.Adopt(tc.tr)
		if _, why := tr.Check("a"); why != tc.want {
			t.Errorf("%s: Check = %q, want %q", tc.name, why, tc.want)
		}
	}
	if got := m.kinds(); len(got) != 0 {
		t.Errorf("adopting published %v", got)
	}
	tr.Adopt(Transition{Deployment: "a", Kind: TransitionOpen, Cause: Open, Until: now.Add(10 * time.Second)})
	tr.Adopt(Transition{Deployment: "b", Kind: TransitionThrottle, Until: now.Add(3 * time.Second)})
	if got := tr.Transitions(); len(got) != 2 {
		t.Errorf("Transitions = %+v, want a's open circuit and b's throttle", got)
	}
	clk.Advance(10 * time.Second)
	if ok, _ := tr.Check("a"); !ok {
		t.Error("an adopted open circuit did not move to half-open when its time was up")
	}
}

// A 429 storm publishes its window a few times, not once per 429.
func TestMirrorThrottleStorm(t *testing.T) {
	tr, clk := newTest(Policy{})
	m := &fakeMirror{grant: true}
	tr.SetMirror(m)
	for range 100 {
		tok, _ := tr.Begin("a", true)
		tr.Done(tok, Outcome{Class: failure.Throttled, RetryAfter: 2 * time.Second})
		clk.Advance(10 * time.Millisecond)
	}
	if n := len(m.kinds()); n < 2 || n > 5 {
		t.Errorf("100 429s over 1s published %d times, want a few (every 250ms of window)", n)
	}
}

// Without a mirror the hooks cost nothing: Begin and Done allocate nothing.
func TestNoMirrorAllocatesNothing(t *testing.T) {
	tr, _ := newTest(Policy{})
	if n := testing.AllocsPerRun(1000, func() {
		tok, _ := tr.Begin("a", false)
		tr.Done(tok, Outcome{FirstToken: time.Millisecond})
	}); n != 0 {
		t.Errorf("Begin+Done allocate %v times, want 0", n)
	}
}

// A replica that has not synced its deployments yet (no snapshot built)
// keeps what it hears until Sync adds them; after that, transitions of
// deployments it does not serve are dropped.
func TestMirrorAdoptBeforeSync(t *testing.T) {
	tr := NewTracker(nil)
	until := time.Now().Add(time.Minute)
	tr.Adopt(Transition{Deployment: "a", Kind: TransitionOpen, Cause: Open, Until: until})
	tr.Adopt(Transition{Deployment: "b", Kind: TransitionThrottle, Until: until})
	tr.Sync(map[string]Policy{"a": {}})
	if _, why := tr.Check("a"); why != SkipCircuitOpen {
		t.Errorf("a adopted before Sync: Check = %q, want %s", why, SkipCircuitOpen)
	}
	tr.Adopt(Transition{Deployment: "zz", Kind: TransitionOpen, Cause: Open, Until: until})
	if len(tr.pending) != 0 {
		t.Errorf("after Sync an unknown deployment was kept: %v", tr.pending)
	}
}
