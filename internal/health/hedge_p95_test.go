package health

import (
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
)

// The p95 a hedge reads: successes' first-token latencies only, within
// the window, agreeing with the status operators see.
func TestFirstTokenP95(t *testing.T) {
	tr, clk := newTest(Policy{Window: time.Minute})
	if p95, n := tr.FirstTokenP95("a"); p95 != 0 || n != 0 {
		t.Fatalf("no samples: p95 %v n %d", p95, n)
	}
	if p95, n := tr.FirstTokenP95("unknown"); p95 != 0 || n != 0 {
		t.Fatalf("unknown deployment: p95 %v n %d", p95, n)
	}
	done := func(first time.Duration, class failure.Class) {
		tok, _ := tr.Begin("a", false)
		tr.Done(tok, Outcome{Class: class, FirstToken: first})
	}
	for i := range 19 {
		done(time.Duration(100+i)*time.Millisecond, "")
	}
	done(2*time.Second, "")                 // the slowest 5%
	done(0, failure.ProviderUnavailable)    // a failure adds no latency
	done(9*time.Second, failure.HedgedLost) // neutral: nothing recorded
	p95, n := tr.FirstTokenP95("a")
	if n != 20 || p95 < 118*time.Millisecond || p95 > 118*time.Millisecond*5/4+time.Millisecond {
		t.Errorf("p95 %v over %d samples; want about 118ms (within the histogram's 25%%) over 20", p95, n)
	}
	if st, _ := tr.Status("a", clk.Now()); st.FirstTokenP95 != p95 {
		t.Errorf("status p95 %v, FirstTokenP95 %v: they must agree", st.FirstTokenP95, p95)
	}
	clk.Advance(2 * time.Minute) // the window passes
	if p95, n := tr.FirstTokenP95("a"); p95 != 0 || n != 0 {
		t.Errorf("after the window: p95 %v n %d", p95, n)
	}
}
