package clock

import (
	"testing"
	"time"
)

// The real clock's timers are the standard library's; this only checks
// the wiring.
func TestReal(t *testing.T) {
	var c Clock = Real{}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Fatalf("Now is %v away from time.Now", d)
	}
	ran := make(chan struct{})
	tm := c.AfterFunc(time.Hour, func() { close(ran) })
	if !tm.Reset(0) {
		t.Fatal("Reset of a pending timer reported it stopped")
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer reset to 0 never ran")
	}
	if tm.Stop() {
		t.Fatal("Stop after the timer ran reported it pending")
	}
}

// Since is Now minus t on any clock: the real one (monotonic only) and a
// fake one (its own time).
func TestSince(t *testing.T) {
	start := time.Now()
	if d := Since(Real{}, start); d < 0 || d > time.Minute {
		t.Errorf("Since(Real) = %v", d)
	}
	f := fixed{start.Add(3 * time.Second)}
	if d := Since(f, start); d != 3*time.Second {
		t.Errorf("Since(fake) = %v, want 3s", d)
	}
}

type fixed struct{ t time.Time }

func (f fixed) Now() time.Time { return f.t }
