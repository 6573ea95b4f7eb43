package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// raceStream is a provider stream the test plays by hand, as handStream
// is, except that it stops waiting for the test once its attempt is
// cancelled: a hedge's loser is cancelled while the test attends to the
// winner.
type raceStream struct {
	ctx     context.Context
	waiting chan struct{}
	steps   chan step
}

func (s *raceStream) Next() (canonical.Event, error) {
	select {
	case s.waiting <- struct{}{}:
	case <-s.ctx.Done():
		return canonical.Event{}, failure.Transport(s.ctx.Err(), false)
	}
	select {
	case st := <-s.steps:
		return st.ev, st.err
	case <-s.ctx.Done():
		return canonical.Event{}, failure.Transport(s.ctx.Err(), false)
	}
}

func (s *raceStream) Close() error { return nil }

// raceAdapter hands each stream it opens to the test.
type raceAdapter struct {
	streams chan *raceStream
	calls   atomic.Int32
}

func (a *raceAdapter) Stream(ctx context.Context, _ *provider.Target, _ *canonical.Request) (canonical.Stream, error) {
	a.calls.Add(1)
	s := &raceStream{ctx: ctx, waiting: make(chan struct{}), steps: make(chan step)}
	select {
	case a.streams <- s:
		return s, nil
	case <-ctx.Done():
		return nil, failure.Transport(ctx.Err(), true)
	}
}

// was reports whether the gate (health) was told want ("id=outcome").
func (g *recGate) was(want string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.done {
		if o == want {
			return true
		}
	}
	return false
}

// recObserver records attempts and hedges as metrics would see them.
type recObserver struct {
	mu     sync.Mutex
	hedges []HedgeOutcome
}

func (o *recObserver) ObserveAttempt(*catalog.Deployment, *Attempt) {}

func (o *recObserver) ObserveHedge(_ *Plan, h HedgeOutcome) {
	o.mu.Lock()
	o.hedges = append(o.hedges, h)
	o.mu.Unlock()
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// hedgeRun is one request with a hedge armed, on an engine whose clock the
// test moves: every step waits on a signal from the fake provider, none
// on the wall clock.
type hedgeRun struct {
	t    *testing.T
	clk  *clocktest.Clock
	ads  []*raceAdapter
	sink *recSink
	gate *recGate
	obs  *recObserver
	done chan *Result
	stop context.CancelFunc
}

// startHedge runs a request over rungs (primary, secondary, tertiary) with
// a hedge after `after`; whole asks for a non-streamed answer.
func startHedge(t *testing.T, rungs int, after time.Duration, whole bool, edit func(*Plan)) *hedgeRun {
	t.Helper()
	r := &hedgeRun{t: t, clk: clocktest.New(t0), sink: &recSink{}, gate: &recGate{told: make(chan string, 8)}, obs: &recObserver{}, done: make(chan *Result, 1)}
	p := &Plan{RequestID: "req-1", IdempotencyBase: "req-1", Model: "m", Hedge: after}
	for i := range rungs {
		ad := &raceAdapter{streams: make(chan *raceStream)}
		r.ads = append(r.ads, ad)
		id := []string{"primary", "secondary", "tertiary"}[i]
		p.Rungs = append(p.Rungs, Rung{Deployment: dep(id, time.Hour, time.Hour), Adapter: ad, Target: provider.Target{Deployment: id}})
	}
	if edit != nil {
		edit(p)
	}
	e := New(slog.New(slog.DiscardHandler), WithClock(r.clk), WithGate(r.gate), WithObserver(r.obs))
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	t.Cleanup(cancel)
	go func() {
		if whole {
			r.done <- e.Complete(ctx, p, &canonical.Request{})
			return
		}
		r.done <- e.Stream(ctx, p, &canonical.Request{Stream: true}, r.sink)
	}()
	return r
}

// open waits for rung i to open its stream and ask for its first event.
func (r *hedgeRun) open(i int) *raceStream {
	r.t.Helper()
	select {
	case s := <-r.ads[i].streams:
		<-s.waiting
		return s
	case <-time.After(10 * time.Second): // a hang guard, never waited on when the test passes
		r.t.Fatalf("rung %d was never dispatched (t0+%v)", i, r.clk.Now().Sub(t0))
		return nil
	}
}

// none checks that rung i has not been dispatched. Timers run only inside
// Advance, so before the hedge's time nothing can have started it.
func (r *hedgeRun) none(i int, when string) {
	r.t.Helper()
	select {
	case <-r.ads[i].streams:
		r.t.Fatalf("%s: rung %d dispatched at t0+%v", when, i, r.clk.Now().Sub(t0))
	default:
	}
}

// send hands s one event and waits until the engine dealt with it (the
// caller included) and asks for the next.
func (r *hedgeRun) send(s *raceStream, ev canonical.Event) {
	s.steps <- step{ev: ev}
	<-s.waiting
}

// ended waits until the gate is told that an attempt ended as want
// ("id=outcome"): its failure is classified before anything else happens.
func (r *hedgeRun) ended(want string) {
	r.t.Helper()
	for {
		select {
		case got := <-r.gate.told:
			if got == want {
				return
			}
		case <-time.After(10 * time.Second):
			r.t.Fatalf("no attempt ended as %s", want)
		}
	}
}

// lost waits for s's attempt to be cancelled as a hedge's loser.
func (r *hedgeRun) lost(s *raceStream) {
	r.t.Helper()
	select {
	case <-s.ctx.Done():
	case <-time.After(10 * time.Second):
		r.t.Fatal("the loser was never cancelled")
	}
	if c := context.Cause(s.ctx); c != errLostRace {
		r.t.Errorf("loser cancelled with %v, want the lost-race cause", c)
	}
}

func (r *hedgeRun) wait() *Result {
	r.t.Helper()
	select {
	case res := <-r.done:
		if n := r.clk.Pending(); n != 0 {
			r.t.Errorf("%d timers left behind", n)
		}
		return res
	case <-time.After(10 * time.Second):
		r.t.Fatal("the request did not end")
		return nil
	}
}

func (r *hedgeRun) calls() []int32 {
	var out []int32
	for _, a := range r.ads {
		out = append(out, a.calls.Load())
	}
	return out
}

func refusalEv(s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventRefusalDelta, Text: s}
}

// A slow first attempt loses to the hedge: it starts exactly at the
// threshold, the first to commit serves, the other is cancelled and the
// caller sees the winner alone.
func TestHedgeSlowPrimaryLoses(t *testing.T) {
	const after = 800 * time.Millisecond
	r := startHedge(t, 2, after, false, nil)
	a := r.open(0)
	// The primary's provider reports its prompt, then says nothing more.
	r.send(a, canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 40}})
	r.clk.Advance(after - 1)
	r.none(1, "a nanosecond before the threshold")
	r.clk.Advance(1)
	b := r.open(1)
	r.send(b, delta("b1")) // the commit boundary: the hedge wins
	r.lost(a)
	r.send(b, delta("b2"))
	b.steps <- step{err: io.EOF}
	res := r.wait()

	if got, want := trail(res), "primary=hedged_lost secondary=ok"; got != want {
		t.Errorf("trail = %q, want %q", got, want)
	}
	if got := strings.Join(r.sink.trail, " "); got != "primary=hedged_lost secondary=ok" {
		t.Errorf("trail at commit = %q", got)
	}
	if got := strings.Join(r.sink.events, " "); got != "text_delta:b1 text_delta:b2" || r.sink.commits != 1 || !r.sink.finished {
		t.Errorf("caller saw %q (%d commits, finished %v); want the hedge's events alone, one commit", got, r.sink.commits, r.sink.finished)
	}
	if r.sink.finishErr != "" {
		t.Error(r.sink.finishErr)
	}
	if res.Err != nil || res.Served != 1 || res.ServingAttempt() != 1 || res.Hedge != HedgeWon {
		t.Errorf("err %v served %d serving attempt %d hedge %q", res.Err, res.Served, res.ServingAttempt(), res.Hedge)
	}
	if got := res.Attempts[1].Start.Sub(res.Attempts[0].Start); got != after {
		t.Errorf("the hedge started %v after the primary, want exactly %v", got, after)
	}
	if l := res.Attempts[0]; !l.UsageReported || l.Usage.InputTokens != 40 || l.OutputSeen != 0 {
		t.Errorf("loser's usage = %+v reported %v seen %d; want the 40 input tokens it reported", l.Usage, l.UsageReported, l.OutputSeen)
	}
	if !r.gate.was("primary=hedged_lost") || !r.gate.was("secondary=ok") {
		t.Errorf("health was told %v", r.gate.done)
	}
	if len(r.obs.hedges) != 1 || r.obs.hedges[0] != HedgeWon {
		t.Errorf("hedges observed %v", r.obs.hedges)
	}
	if c := r.calls(); c[0] != 1 || c[1] != 1 {
		t.Errorf("calls = %v, want one each", c)
	}
}

func TestHedgeRaces(t *testing.T) {
	const after = time.Second
	tests := []struct {
		name string
		// play drives the race once the hedge (rung 1) has started.
		play        func(r *hedgeRun, a, b *raceStream)
		wantTrail   string
		wantCommit  string
		wantEvents  string
		wantHedge   HedgeOutcome
		wantServing int
	}{
		{
			name: "the primary commits first after the hedge started: the hedge is cancelled",
			play: func(r *hedgeRun, a, b *raceStream) {
				r.send(a, delta("a1"))
				r.lost(b)
				a.steps <- step{err: io.EOF}
			},
			wantTrail: "primary=ok secondary=hedged_lost", wantCommit: "primary=ok secondary=hedged_lost",
			wantEvents: "text_delta:a1", wantHedge: HedgeLost, wantServing: 0,
		},
		{
			name: "the primary fails during the race: the hedge serves, no loser",
			play: func(r *hedgeRun, a, b *raceStream) {
				a.steps <- step{err: status(500)}
				r.ended("primary=provider_unavailable")
				r.send(b, delta("b1"))
				b.steps <- step{err: io.EOF}
			},
			wantTrail: "primary=provider_unavailable secondary=ok", wantCommit: "primary=provider_unavailable secondary=ok",
			wantEvents: "text_delta:b1", wantHedge: HedgeWon, wantServing: 1,
		},
		{
			name: "the hedge fails: the primary serves",
			play: func(r *hedgeRun, a, b *raceStream) {
				b.steps <- step{err: status(503)}
				r.ended("secondary=provider_unavailable")
				r.send(a, delta("a1"))
				a.steps <- step{err: io.EOF}
			},
			wantTrail: "primary=ok secondary=provider_unavailable", wantEvents: "text_delta:a1", wantHedge: HedgeLost,
			wantServing: 0,
		},
		{
			name: "a refusal held back by the primary leaves the hedge to serve",
			play: func(r *hedgeRun, a, b *raceStream) {
				r.send(a, refusalEv("no"))
				r.send(a, canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopRefusal})
				a.steps <- step{err: io.EOF}
				r.ended("primary=refused")
				r.send(b, delta("b1"))
				b.steps <- step{err: io.EOF}
			},
			wantTrail: "primary=refused secondary=ok", wantCommit: "primary=refused secondary=ok",
			wantEvents: "text_delta:b1", wantHedge: HedgeWon, wantServing: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startHedge(t, 2, after, false, func(p *Plan) { p.RefusalBuffer = 4096 })
			a := r.open(0)
			r.clk.Advance(after)
			b := r.open(1)
			tt.play(r, a, b)
			res := r.wait()
			if got := trail(res); got != tt.wantTrail {
				t.Errorf("trail = %q, want %q", got, tt.wantTrail)
			}
			if tt.wantCommit != "" {
				if got := strings.Join(r.sink.trail, " "); got != tt.wantCommit {
					t.Errorf("trail at commit = %q, want %q", got, tt.wantCommit)
				}
			}
			if got := strings.Join(r.sink.events, " "); got != tt.wantEvents || r.sink.commits != 1 || !r.sink.finished {
				t.Errorf("caller saw %q (%d commits, finished %v), want %q", got, r.sink.commits, r.sink.finished, tt.wantEvents)
			}
			if r.sink.finishErr != "" {
				t.Error(r.sink.finishErr)
			}
			if res.Err != nil || res.Hedge != tt.wantHedge || res.ServingAttempt() != tt.wantServing {
				t.Errorf("err %v hedge %q serving attempt %d", res.Err, res.Hedge, res.ServingAttempt())
			}
		})
	}
}

// A hedge never fires on a request already committed: a first token
// before the threshold fixes the route, even when the stream then stalls.
func TestHedgeNeverAfterCommit(t *testing.T) {
	r := startHedge(t, 2, time.Second, false, func(p *Plan) {
		p.Rungs[0].Deployment = dep("primary", time.Hour, 5*time.Second)
	})
	a := r.open(0)
	r.clk.Advance(time.Second - 1)
	r.send(a, delta("a1"))
	// The primary stalls: past the threshold, then past its idle bound.
	r.clk.Advance(time.Second)
	r.none(1, "after the commit")
	r.clk.Advance(4 * time.Second)
	res := r.wait()
	if res.Err == nil || res.Err.Timeout != failure.TimeoutIdle || r.sink.interrupt == nil {
		t.Fatalf("err %v interrupt %v, want the primary's idle timeout after commit", res.Err, r.sink.interrupt)
	}
	if c := r.calls(); c[1] != 0 || res.Hedge != "" || len(r.obs.hedges) != 0 {
		t.Errorf("calls %v hedge %q observed %v: a hedge fired after the commit", c, res.Hedge, r.obs.hedges)
	}
	if got := trail(res); got != "primary=provider_unavailable" {
		t.Errorf("trail = %q", got)
	}
}

// Plans where no hedge may fire: one rung, a last-resort probe, a later
// rung of another model only, and a first attempt that failed before the
// threshold (the chain goes on as without a hedge).
func TestHedgeNotArmed(t *testing.T) {
	tests := []struct {
		name  string
		rungs int
		edit  func(p *Plan)
	}{
		{"one rung", 1, nil},
		{"a last-resort probe", 1, func(p *Plan) { p.Rungs[0].Forced = true }},
		{"the only later rung serves another model", 2, func(p *Plan) { p.Rungs[1].Model = "other" }},
		{"no hedge configured", 2, func(p *Plan) { p.Hedge = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startHedge(t, tt.rungs, time.Second, false, tt.edit)
			a := r.open(0)
			r.clk.Advance(10 * time.Second)
			r.send(a, delta("a1"))
			a.steps <- step{err: io.EOF}
			res := r.wait()
			if res.Err != nil || res.Hedge != "" || trail(res) != "primary=ok" {
				t.Errorf("err %v hedge %q trail %q", res.Err, res.Hedge, trail(res))
			}
			if c := r.calls(); len(c) > 1 && c[1] != 0 {
				t.Errorf("calls = %v", c)
			}
		})
	}
	t.Run("the first attempt fails before the threshold: plain failover, no hedge", func(t *testing.T) {
		r := startHedge(t, 2, time.Second, false, nil)
		a := r.open(0)
		r.clk.Advance(500 * time.Millisecond)
		a.steps <- step{err: status(503)}
		b := r.open(1)
		r.clk.Advance(10 * time.Second) // the hedge's time is long past: nothing more starts
		r.send(b, delta("b1"))
		b.steps <- step{err: io.EOF}
		res := r.wait()
		if res.Err != nil || res.Hedge != "" || trail(res) != "primary=provider_unavailable secondary=ok" {
			t.Errorf("err %v hedge %q trail %q", res.Err, res.Hedge, trail(res))
		}
		if c := r.calls(); c[1] != 1 {
			t.Errorf("calls = %v", c)
		}
	})
}

// Both racers fail: the chain goes on after the hedge's rung; the hedge
// was spent.
func TestHedgeBothFail(t *testing.T) {
	r := startHedge(t, 3, time.Second, false, nil)
	a := r.open(0)
	r.clk.Advance(time.Second)
	b := r.open(1)
	a.steps <- step{err: status(500)}
	b.steps <- step{err: status(502)}
	c := r.open(2)
	r.send(c, delta("c1"))
	c.steps <- step{err: io.EOF}
	res := r.wait()
	if got := trail(res); got != "primary=provider_unavailable secondary=provider_unavailable tertiary=ok" {
		t.Errorf("trail = %q", got)
	}
	if res.Err != nil || res.Served != 2 || res.Hedge != HedgeFailed || strings.Join(r.sink.events, " ") != "text_delta:c1" {
		t.Errorf("err %v served %d hedge %q events %v", res.Err, res.Served, res.Hedge, r.sink.events)
	}
}

// The caller leaves during the race: both attempts end as the caller's
// cancel, never the providers' fault.
func TestHedgeCallerLeaves(t *testing.T) {
	r := startHedge(t, 2, time.Second, false, nil)
	r.open(0)
	r.clk.Advance(time.Second)
	r.open(1)
	r.stop()
	res := r.wait()
	if res.Err == nil || res.Err.Class != failure.ClientCancelled || r.sink.commits != 0 {
		t.Fatalf("err %v commits %d", res.Err, r.sink.commits)
	}
	if got := trail(res); got != "primary=client_cancelled secondary=client_cancelled" {
		t.Errorf("trail = %q", got)
	}
}

// A whole answer is decided at the same boundary: the first token. The
// loser is cancelled then, and the winner's answer is assembled alone.
func TestHedgeWholeAnswer(t *testing.T) {
	t.Run("the hedge's first token wins", func(t *testing.T) {
		r := startHedge(t, 2, time.Second, true, nil)
		a := r.open(0)
		r.clk.Advance(time.Second)
		b := r.open(1)
		r.send(b, delta("b1"))
		r.lost(a)
		r.send(b, delta("b2"))
		b.steps <- step{err: io.EOF}
		res := r.wait()
		defer res.Release()
		if res.Err != nil || res.Response == nil || res.Response.Text != "b1b2" || res.Hedge != HedgeWon {
			t.Fatalf("err %v response %+v hedge %q", res.Err, res.Response, res.Hedge)
		}
		if got := trail(res); got != "primary=hedged_lost secondary=ok" {
			t.Errorf("trail = %q", got)
		}
	})
	t.Run("the winner dies before its end: the chain goes on after the race", func(t *testing.T) {
		r := startHedge(t, 3, time.Second, true, nil)
		a := r.open(0)
		r.clk.Advance(time.Second)
		b := r.open(1)
		r.send(a, delta("a1"))
		r.lost(b)
		a.steps <- step{err: failure.Truncated("eof")}
		c := r.open(2)
		r.send(c, delta("c1"))
		c.steps <- step{err: io.EOF}
		res := r.wait()
		defer res.Release()
		if res.Err != nil || res.Response == nil || res.Response.Text != "c1" || res.Served != 2 {
			t.Fatalf("err %v response %+v served %d", res.Err, res.Response, res.Served)
		}
		if got := trail(res); got != "primary=provider_unavailable secondary=hedged_lost tertiary=ok" {
			t.Errorf("trail = %q", got)
		}
	})
}
