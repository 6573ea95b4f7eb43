package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// handStream is a provider stream the test plays by hand: each Next
// announces itself on waiting, then returns the step the test sends, or
// fails once the attempt is cancelled.
type handStream struct {
	ctx     context.Context
	waiting chan struct{}
	steps   chan step
}

func (s *handStream) Next() (canonical.Event, error) {
	s.waiting <- struct{}{}
	select {
	case st := <-s.steps:
		return st.ev, st.err
	case <-s.ctx.Done():
		return canonical.Event{}, failure.Transport(s.ctx.Err(), false)
	}
}

func (s *handStream) Close() error { return nil }

// handAdapter hands each stream it opens to the test.
type handAdapter struct{ streams chan *handStream }

func (a handAdapter) Stream(ctx context.Context, _ *provider.Target, _ *canonical.Request) (canonical.Stream, error) {
	s := &handStream{ctx: ctx, waiting: make(chan struct{}), steps: make(chan step)}
	a.streams <- s
	return s, nil
}

// heldSink is a caller that, when block is set, takes each event only once
// the test says so: a caller reading slowly.
type heldSink struct {
	recSink
	block   bool
	writing chan struct{} // a value as each blocked Event starts
	written chan struct{} // the test lets one blocked Event return
}

func (s *heldSink) Event(ev *canonical.Event) error {
	if s.block {
		s.writing <- struct{}{}
		<-s.written
	}
	return s.recSink.Event(ev)
}

// watchdogRun is one streamed request on an engine whose clock the test
// moves: no test here sleeps, and every bound is checked to the nanosecond.
type watchdogRun struct {
	t    *testing.T
	clk  *clocktest.Clock
	st   *handStream
	sink *heldSink
	done chan *Result
}

func startRun(t *testing.T, firstByte, idle, total time.Duration, block bool) *watchdogRun {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ad := handAdapter{streams: make(chan *handStream)}
	d := &catalog.Deployment{ID: "primary", Timeouts: catalog.Timeouts{
		FirstByte: catalog.Duration(firstByte), Idle: catalog.Duration(idle), Total: catalog.Duration(total)}}
	p := &Plan{RequestID: "req-1", IdempotencyBase: "req-1", Model: "m",
		Rungs: []Rung{{Deployment: d, Adapter: ad, Target: provider.Target{Deployment: "primary"}}}}
	r := &watchdogRun{t: t, clk: clk, done: make(chan *Result, 1),
		sink: &heldSink{block: block, writing: make(chan struct{}), written: make(chan struct{})}}
	e := New(slog.New(slog.DiscardHandler), WithClock(clk))
	go func() { r.done <- e.Stream(context.Background(), p, &canonical.Request{}, r.sink) }()
	// The watchdog is armed before the adapter is called.
	r.st = <-ad.streams
	<-r.st.waiting
	return r
}

// send hands the stream one event and waits until the engine has passed
// it to the caller and asks for the next one.
func (r *watchdogRun) send(ev canonical.Event) {
	r.st.steps <- step{ev: ev}
	<-r.st.waiting
}

// alive fails the test if the attempt was cancelled: a timer that fires
// runs inside Advance, so by now any cancel has happened.
func (r *watchdogRun) alive(when string) {
	r.t.Helper()
	if err := context.Cause(r.st.ctx); err != nil {
		r.t.Fatalf("%s: cancelled by t0+%v (%v)", when, r.elapsed(), err)
	}
}

// cancelled waits for the request to end and checks that its one attempt
// ended on timeout kind.
func (r *watchdogRun) cancelled(kind failure.Timeout) *Result {
	r.t.Helper()
	if context.Cause(r.st.ctx) == nil {
		r.t.Fatalf("not cancelled by t0+%v", r.elapsed())
	}
	res := r.wait()
	if len(res.Attempts) != 1 || res.Attempts[0].Err == nil || res.Attempts[0].Err.Timeout != kind {
		r.t.Fatalf("attempts %+v, want one ended by a %s timeout", res.Attempts, kind)
	}
	return res
}

func (r *watchdogRun) wait() *Result {
	r.t.Helper()
	select {
	case res := <-r.done:
		if n := r.clk.Pending(); n != 0 {
			r.t.Errorf("%d timers left behind by a finished attempt", n)
		}
		return res
	case <-time.After(10 * time.Second): // a hang guard, never waited on when the test passes
		r.t.Fatal("the request did not end")
		return nil
	}
}

func (r *watchdogRun) elapsed() time.Duration {
	return r.clk.Now().Sub(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
}

func delta(s string) canonical.Event { return canonical.Event{Kind: canonical.EventTextDelta, Text: s} }

// The watchdog's bounds run on the engine's clock: each fires exactly when
// its time is reached, not a nanosecond before, and a caller being written
// to holds the silence bounds.
func TestWatchdogOnFakeClock(t *testing.T) {
	t.Run("first byte fires at its bound", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, time.Hour, false)
		r.clk.Advance(10*time.Second - 1)
		r.alive("just before the first-byte bound")
		r.clk.Advance(1)
		res := r.cancelled(failure.TimeoutFirstByte)
		if res.Committed {
			t.Error("committed without an event")
		}
	})
	t.Run("idle fires idle after the last event, not before", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, time.Hour, false)
		r.clk.Advance(3 * time.Second)
		r.send(delta("a")) // t=3s: the timer moves from the first-byte bound to 8s
		r.clk.Advance(4 * time.Second)
		r.send(delta("b")) // t=7s: the idle bound moves to 12s; the timer, at 8s, finds that out then
		r.clk.Advance(5*time.Second - 1)
		r.alive("just before the idle bound")
		r.clk.Advance(1)
		res := r.cancelled(failure.TimeoutIdle)
		if r.sink.interrupt == nil || r.sink.delivered != 2 {
			t.Errorf("interrupt %v delivered %d, want a typed interrupt after 2 tokens", r.sink.interrupt, r.sink.delivered)
		}
		if a := res.Attempts[0]; a.FirstByte != 3*time.Second || a.Duration != 12*time.Second {
			t.Errorf("attempt timed %v to the first byte, %v in all; want 3s and 12s on the fake clock", a.FirstByte, a.Duration)
		}
	})
	t.Run("events within the idle bound keep a stream alive past many idle periods", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, time.Hour, false)
		for range 12 { // one every 4s: a minute, twelve idle periods
			r.clk.Advance(4 * time.Second)
			r.send(delta("x"))
		}
		r.st.steps <- step{err: io.EOF}
		if res := r.wait(); res.Err != nil || !r.sink.finished || len(r.sink.events) != 12 {
			t.Fatalf("err %v finished %v, %d events", res.Err, r.sink.finished, len(r.sink.events))
		}
	})
	t.Run("total fires at its bound while events keep the stream alive", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, 20*time.Second, false)
		for range 4 { // t=4s, 8s, 12s, 16s
			r.clk.Advance(4 * time.Second)
			r.send(delta("x"))
		}
		r.clk.Advance(4*time.Second - 1)
		r.alive("just before the total bound")
		r.clk.Advance(1)
		r.cancelled(failure.TimeoutTotal)
	})
	t.Run("a hold suspends the silence bounds while the caller is written to", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, time.Hour, true)
		r.clk.Advance(time.Second)
		r.st.steps <- step{ev: delta("a")} // t=1s: the timer is set for the idle bound, 6s
		<-r.sink.writing
		// The caller takes 32s to read it. While held, the watchdog looks
		// again every max(idle, first byte, 1s) = 10s: at 6, 16, 26 and 36s.
		r.clk.Advance(32 * time.Second)
		r.alive("while the caller was written to, far past the idle bound")
		r.sink.written <- struct{}{}
		<-r.st.waiting // released at 33s: the idle bound restarts, now at 38s
		r.clk.Advance(5*time.Second - 1)
		r.alive("just before the idle bound counted from the release")
		r.clk.Advance(1)
		r.cancelled(failure.TimeoutIdle)
		if r.sink.delivered != 1 {
			t.Errorf("delivered %d, want the held event", r.sink.delivered)
		}
	})
	t.Run("a finished stream stops its timer", func(t *testing.T) {
		r := startRun(t, 10*time.Second, 5*time.Second, time.Hour, false)
		r.clk.Advance(time.Second)
		r.send(delta("a"))
		r.st.steps <- step{err: io.EOF}
		res := r.wait() // checks that no timer is left
		if res.Err != nil || !r.sink.finished {
			t.Fatalf("err %v finished %v", res.Err, r.sink.finished)
		}
		r.clk.Advance(time.Hour)
		if context.Cause(r.st.ctx) != context.Canceled {
			t.Errorf("attempt context ended with %v, want the plain cancel of a finished attempt", context.Cause(r.st.ctx))
		}
	})
}
