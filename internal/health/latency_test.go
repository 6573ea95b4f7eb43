package health

import (
	"testing"
	"time"
)

// TestFirstTokenP50: the median of the window's successes, within the
// histogram's 25%; nothing for an unknown or unmeasured deployment, and
// nothing once the samples have left the window.
func TestFirstTokenP50(t *testing.T) {
	tr, clk := newTest(Policy{Window: time.Minute})
	if _, ok := tr.FirstTokenP50("nope"); ok {
		t.Error("an unknown deployment has a latency")
	}
	if _, ok := tr.FirstTokenP50("a"); ok {
		t.Error("an unmeasured deployment has a latency")
	}
	for i, ms := range []int{10, 20, 100, 110, 120, 130, 5000} {
		tok, _ := tr.Begin("a", false)
		tr.Done(tok, Outcome{FirstToken: time.Duration(ms) * time.Millisecond})
		if i == 0 {
			// A failure has no first token and does not count.
			tok, _ := tr.Begin("a", false)
			tr.Done(tok, Outcome{Class: "provider_unavailable"})
		}
	}
	p50, ok := tr.FirstTokenP50("a")
	if !ok || p50 < 110*time.Millisecond || p50 > 110*time.Millisecond*5/4 {
		t.Errorf("p50 %v %v, want 110ms within 25%%", p50, ok)
	}
	clk.Advance(2 * time.Minute)
	if p50, ok := tr.FirstTokenP50("a"); ok {
		t.Errorf("p50 %v after the window passed", p50)
	}
}
