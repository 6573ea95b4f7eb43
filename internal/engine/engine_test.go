package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// step is one scripted thing a fake provider stream does.
type step struct {
	ev    canonical.Event
	err   error         // returned from Next instead of an event
	stall bool          // block until the attempt is cancelled
	wait  time.Duration // pause before this step (the attempt's cancel cuts it short)
}

// script is one scripted attempt: an error at dispatch, or stream steps.
type script struct {
	dispatchErr error
	stallDial   bool
	steps       []step
}

// fakeAdapter plays one script per call, in order; calls past the end of
// the scripts fail the test.
type fakeAdapter struct {
	t       *testing.T
	mu      sync.Mutex
	scripts []script
	calls   int
	keys    []string
}

func (f *fakeAdapter) take(t *provider.Target) script {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, t.IdempotencyKey)
	if f.calls >= len(f.scripts) {
		f.t.Errorf("unexpected call %d to %s", f.calls+1, t.Deployment)
		f.calls++
		return script{dispatchErr: failure.Transport(errors.New("unexpected"), true)}
	}
	s := f.scripts[f.calls]
	f.calls++
	return s
}

func (f *fakeAdapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	s := f.take(t)
	if s.stallDial {
		<-ctx.Done()
		return nil, failure.Transport(ctx.Err(), true)
	}
	if s.dispatchErr != nil {
		return nil, s.dispatchErr
	}
	return &fakeStream{ctx: ctx, steps: s.steps}, nil
}

type fakeStream struct {
	ctx    context.Context
	steps  []step
	closed bool
}

func (s *fakeStream) Next() (canonical.Event, error) {
	if len(s.steps) == 0 {
		return canonical.Event{}, io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	if st.wait > 0 {
		select {
		case <-time.After(st.wait):
		case <-s.ctx.Done():
			return canonical.Event{}, failure.Transport(s.ctx.Err(), false)
		}
	}
	if st.stall {
		<-s.ctx.Done()
		return canonical.Event{}, failure.Transport(s.ctx.Err(), false)
	}
	if st.err != nil {
		return canonical.Event{}, st.err
	}
	return st.ev, nil
}

func (s *fakeStream) Close() error { s.closed = true; return nil }

// recSink records what the caller would see.
type recSink struct {
	commits   int
	trail     []string
	served    int
	events    []string
	finished  bool
	stop      canonical.StopReason
	interrupt *failure.Error
	delivered int
	failAfter int // fail writes after this many events; 0 = never
	finishErr string
	flushes   int
}

func (s *recSink) Commit(res *Result) error {
	s.commits++
	s.served = res.Served
	for _, a := range res.Attempts {
		s.trail = append(s.trail, a.Deployment+"="+a.Outcome())
	}
	return nil
}

func (s *recSink) Event(ev *canonical.Event) error {
	if s.failAfter > 0 && len(s.events) >= s.failAfter {
		return errors.New("broken pipe")
	}
	s.events = append(s.events, ev.Kind.String()+":"+ev.Text)
	return nil
}

func (s *recSink) Flush() error { s.flushes++; return nil }

func (s *recSink) Finish(res *Result) error {
	s.finished, s.stop = true, res.Stop
	if k := res.ServingAttempt(); k < 0 || res.Attempts[k].Err != nil {
		s.finishErr = "Finish before the serving attempt was recorded"
	}
	return nil
}

func (s *recSink) Interrupt(res *Result) error {
	s.interrupt, s.delivered = res.Err, res.DeliveredTokens
	if k := res.ServingAttempt(); k < 0 || res.Attempts[k].Err != res.Err {
		s.finishErr = "Interrupt before the failed attempt was recorded"
	}
	return nil
}

func text(s string) step {
	return step{ev: canonical.Event{Kind: canonical.EventTextDelta, Text: s}}
}

var (
	start   = step{ev: canonical.Event{Kind: canonical.EventStart, ID: "prov-1"}}
	stopEnd = step{ev: canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd}}
	usage   = step{ev: canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 10, OutputTokens: 2}}}
)

func okStream(words ...string) script {
	s := script{steps: []step{start}}
	for _, w := range words {
		s.steps = append(s.steps, text(w))
	}
	s.steps = append(s.steps, stopEnd, usage)
	return s
}

func status(code int) error { return failure.Classify(failure.Answer{Status: code}) }

func dep(id string, firstByte, idle time.Duration) *catalog.Deployment {
	return &catalog.Deployment{ID: id, Timeouts: catalog.Timeouts{
		FirstByte: catalog.Duration(firstByte), Idle: catalog.Duration(idle), Total: catalog.Duration(time.Minute),
	}}
}

func plan(t *testing.T, rungs ...[]script) (*Plan, []*fakeAdapter) {
	p := &Plan{RequestID: "req-1", IdempotencyBase: "req-1", Model: "m"}
	var fakes []*fakeAdapter
	for i, scripts := range rungs {
		f := &fakeAdapter{t: t, scripts: scripts}
		fakes = append(fakes, f)
		id := []string{"primary", "secondary", "tertiary"}[i]
		p.Rungs = append(p.Rungs, Rung{Deployment: dep(id, time.Second, time.Second), Adapter: f, Target: provider.Target{Deployment: id}})
	}
	return p, fakes
}

func newEngine() *Engine { return New(slog.New(slog.DiscardHandler)) }

func TestStream(t *testing.T) {
	tests := []struct {
		name       string
		rungs      [][]script
		wantTrail  string // attempts in the result
		wantCommit string // trail the caller saw at commit; "" = no commit
		wantEvents string
		wantErr    failure.Class
		wantCalls  []int
		interrupt  bool
		delivered  int
	}{
		{
			name:      "caller request error goes back at once, one upstream request",
			rungs:     [][]script{{{dispatchErr: status(400)}}, {okStream("x")}},
			wantTrail: "primary=invalid_request", wantErr: failure.InvalidRequest, wantCalls: []int{1, 0},
		},
		{
			name:       "529 on the primary fails over before commit, invisibly",
			rungs:      [][]script{{{dispatchErr: status(529)}}, {okStream("hel", "lo")}},
			wantTrail:  "primary=provider_unavailable secondary=ok",
			wantCommit: "primary=provider_unavailable secondary=ok", wantEvents: "text_delta:hel text_delta:lo", wantCalls: []int{1, 1},
		},
		{
			name:       "provider 401 fails over",
			rungs:      [][]script{{{dispatchErr: status(401)}}, {okStream("a")}},
			wantTrail:  "primary=provider_authentication secondary=ok",
			wantCommit: "primary=provider_authentication secondary=ok", wantEvents: "text_delta:a", wantCalls: []int{1, 1},
		},
		{
			name:       "transport blip before any byte is retried once on the same rung",
			rungs:      [][]script{{{dispatchErr: failure.Transport(errors.New("reset"), true)}, okStream("a")}, {}},
			wantTrail:  "primary=provider_unavailable primary=ok",
			wantCommit: "primary=provider_unavailable primary=ok", wantEvents: "text_delta:a", wantCalls: []int{2, 0},
		},
		{
			name: "second blip moves to the next rung",
			rungs: [][]script{
				{{dispatchErr: failure.Transport(errors.New("reset"), true)}, {dispatchErr: failure.Transport(errors.New("reset"), true)}},
				{okStream("b")}},
			wantTrail:  "primary=provider_unavailable primary=provider_unavailable secondary=ok",
			wantCommit: "primary=provider_unavailable primary=provider_unavailable secondary=ok", wantEvents: "text_delta:b", wantCalls: []int{2, 1},
		},
		{
			name: "stream breaks before the first semantic event: failover, nothing of the primary shows",
			rungs: [][]script{
				{{steps: []step{start, usage, {err: failure.Truncated("eof")}}}},
				{okStream("z")}},
			wantTrail:  "primary=provider_unavailable secondary=ok",
			wantCommit: "primary=provider_unavailable secondary=ok", wantEvents: "text_delta:z", wantCalls: []int{1, 1},
		},
		{
			name: "stream breaks after commit: typed interrupt, no failover",
			rungs: [][]script{
				{{steps: []step{start, text("abcd"), text("efgh"), {err: failure.Truncated("eof")}}}},
				{okStream("z")}},
			wantTrail:  "primary=provider_unavailable",
			wantCommit: "primary=ok", wantEvents: "text_delta:abcd text_delta:efgh", wantCalls: []int{1, 0},
			wantErr: failure.ProviderUnavailable, interrupt: true, delivered: 2,
		},
		{
			name:      "every rung throttled: the last failure",
			rungs:     [][]script{{{dispatchErr: status(429)}}, {{dispatchErr: status(429)}}},
			wantTrail: "primary=throttled secondary=throttled",
			wantErr:   failure.Throttled, wantCalls: []int{1, 1},
		},
		{
			name: "empty completion commits at the end",
			rungs: [][]script{
				{{steps: []step{start, stopEnd, usage}}}},
			wantTrail: "primary=ok", wantCommit: "primary=ok", wantCalls: []int{1},
		},
		{
			name: "tool call survives failover",
			rungs: [][]script{{{dispatchErr: status(503)}}, {{steps: []step{start,
				{ev: canonical.Event{Kind: canonical.EventToolCallStart, ID: "call_1", Name: "get_weather"}},
				{ev: canonical.Event{Kind: canonical.EventToolCallDelta, Text: `{"city":`}},
				{ev: canonical.Event{Kind: canonical.EventToolCallDelta, Text: `"Paris"}`}},
				{ev: canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopToolUse}}}}}},
			wantTrail:  "primary=provider_unavailable secondary=ok",
			wantCommit: "primary=provider_unavailable secondary=ok",
			wantEvents: `tool_call_start: tool_call_delta:{"city": tool_call_delta:"Paris"}`, wantCalls: []int{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, fakes := plan(t, tt.rungs...)
			sink := &recSink{}
			res := newEngine().Stream(context.Background(), p, &canonical.Request{Stream: true}, sink)
			if got := trail(res); got != tt.wantTrail {
				t.Errorf("trail = %q, want %q", got, tt.wantTrail)
			}
			if got := strings.Join(sink.trail, " "); got != tt.wantCommit {
				t.Errorf("trail at commit = %q, want %q", got, tt.wantCommit)
			}
			if tt.wantCommit != "" && sink.commits != 1 {
				t.Errorf("commits = %d, want 1", sink.commits)
			}
			if got := strings.Join(sink.events, " "); got != tt.wantEvents {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			if tt.wantErr == "" {
				if res.Err != nil || !sink.finished {
					t.Errorf("err = %v, finished = %v; want success", res.Err, sink.finished)
				}
			} else if res.Err == nil || res.Err.Class != tt.wantErr {
				t.Errorf("err = %v, want %s", res.Err, tt.wantErr)
			}
			if tt.interrupt != (sink.interrupt != nil) || sink.delivered != tt.delivered {
				t.Errorf("interrupt = %v delivered %d, want %v %d", sink.interrupt, sink.delivered, tt.interrupt, tt.delivered)
			}
			if tt.interrupt && sink.finished {
				t.Error("an interrupted stream was also finished")
			}
			if sink.finishErr != "" {
				t.Error(sink.finishErr)
			}
			for i, want := range tt.wantCalls {
				if fakes[i].calls != want {
					t.Errorf("rung %d got %d calls, want %d", i, fakes[i].calls, want)
				}
			}
		})
	}
}

func trail(res *Result) string {
	var s []string
	for _, a := range res.Attempts {
		s = append(s, a.Deployment+"="+a.Outcome())
	}
	return strings.Join(s, " ")
}

func TestStreamSilenceBounds(t *testing.T) {
	// The total bound shares the watchdog's one timer with the silence
	// bounds: whichever comes first must fire, with its own cause.
	total := func(id string, firstByte, idle, total time.Duration) *catalog.Deployment {
		d := dep(id, firstByte, idle)
		d.Timeouts.Total = catalog.Duration(total)
		return d
	}
	t.Run("total before the first byte: fails over as a total timeout", func(t *testing.T) {
		p, _ := plan(t, []script{{stallDial: true}}, []script{okStream("ok")})
		p.Rungs[0].Deployment = total("primary", time.Minute, time.Minute, 50*time.Millisecond)
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err != nil || res.Served != 1 || res.Attempts[0].Err.Timeout != failure.TimeoutTotal {
			t.Fatalf("res = %v, attempts %+v", res.Err, res.Attempts)
		}
	})
	for _, idle := range []time.Duration{time.Minute, 0} {
		t.Run(fmt.Sprintf("total after commit with idle %v: typed interrupt as a total timeout", idle), func(t *testing.T) {
			p, _ := plan(t, []script{{steps: []step{start, text("a"), text("b"), {stall: true}}}}, []script{okStream("never")})
			p.Rungs[0].Deployment = total("primary", time.Minute, idle, 50*time.Millisecond)
			sink := &recSink{}
			begin := time.Now()
			res := newEngine().Stream(context.Background(), p, &canonical.Request{}, sink)
			if res.Err == nil || res.Err.Timeout != failure.TimeoutTotal || sink.interrupt == nil || sink.delivered != 2 {
				t.Fatalf("res = %v, interrupt %v delivered %d", res.Err, sink.interrupt, sink.delivered)
			}
			if took := time.Since(begin); took < 50*time.Millisecond {
				t.Errorf("ended after %v, before the total bound", took)
			}
		})
	}
	// Events within the idle bound keeping a stream alive: see
	// TestWatchdogOnFakeClock, which needs no real waits between events.
	t.Run("a first event late within the first-byte bound, then silence: the idle bound counts from it", func(t *testing.T) {
		p, _ := plan(t, []script{{steps: []step{{ev: start.ev, wait: 30 * time.Millisecond}, text("a"), {stall: true}}}}, []script{okStream("never")})
		p.Rungs[0].Deployment = total("primary", time.Minute, 30*time.Millisecond, time.Minute)
		begin := time.Now()
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err == nil || res.Err.Timeout != failure.TimeoutIdle {
			t.Fatalf("res = %v", res.Err)
		}
		if took := time.Since(begin); took < 60*time.Millisecond || took > 10*time.Second {
			t.Errorf("ended after %v; want the first event's 30ms plus the idle bound's 30ms", took)
		}
	})
	t.Run("silence bounds shorter than total still fire as themselves", func(t *testing.T) {
		p, _ := plan(t, []script{{steps: []step{start, text("a"), {stall: true}}}}, []script{okStream("never")})
		p.Rungs[0].Deployment = total("primary", time.Minute, 50*time.Millisecond, time.Minute)
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err == nil || res.Err.Timeout != failure.TimeoutIdle {
			t.Fatalf("res = %v", res.Err)
		}
	})
	t.Run("first byte: a provider that accepts and stays silent fails over within the bound", func(t *testing.T) {
		p, _ := plan(t, []script{{stallDial: true}}, []script{okStream("ok")})
		p.Rungs[0].Deployment = dep("primary", 50*time.Millisecond, time.Second)
		sink := &recSink{}
		begin := time.Now()
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, sink)
		if took := time.Since(begin); took > 2*time.Second {
			t.Errorf("failover took %v", took)
		}
		if res.Err != nil || res.Served != 1 || res.Attempts[0].Err.Timeout != failure.TimeoutFirstByte {
			t.Fatalf("res = %+v, attempts %+v", res.Err, res.Attempts)
		}
	})
	t.Run("first byte: headers then silence also fails over", func(t *testing.T) {
		p, _ := plan(t, []script{{steps: []step{{stall: true}}}}, []script{okStream("ok")})
		p.Rungs[0].Deployment = dep("primary", 50*time.Millisecond, time.Second)
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err != nil || res.Served != 1 || res.Attempts[0].Err.Timeout != failure.TimeoutFirstByte {
			t.Fatalf("res = %v, attempts %+v", res.Err, res.Attempts)
		}
	})
	t.Run("idle after commit: typed interrupt", func(t *testing.T) {
		p, fakes := plan(t, []script{{steps: []step{start, text("a"), {stall: true}}}}, []script{okStream("never")})
		p.Rungs[0].Deployment = dep("primary", time.Second, 50*time.Millisecond)
		sink := &recSink{}
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, sink)
		if res.Err == nil || res.Err.Timeout != failure.TimeoutIdle || sink.interrupt == nil || sink.delivered != 1 {
			t.Fatalf("res = %v, interrupt %v delivered %d", res.Err, sink.interrupt, sink.delivered)
		}
		if fakes[1].calls != 0 {
			t.Error("failed over after commit")
		}
	})
}

func TestStreamCallerCancel(t *testing.T) {
	t.Run("caller leaves while the provider is silent: cancelled, never the provider's fault, no failover", func(t *testing.T) {
		p, fakes := plan(t, []script{{stallDial: true}}, []script{okStream("x")})
		p.Rungs[0].Deployment = dep("primary", time.Minute, time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		res := newEngine().Stream(ctx, p, &canonical.Request{}, &recSink{})
		if res.Err == nil || res.Err.Class != failure.ClientCancelled {
			t.Fatalf("err = %v, want client_cancelled", res.Err)
		}
		if fakes[1].calls != 0 {
			t.Error("a caller cancel walked the chain")
		}
	})
	t.Run("caller stops reading mid-stream: cancelled with delivered count", func(t *testing.T) {
		p, _ := plan(t, []script{okStream("aaaa", "bbbb", "cccc")})
		sink := &recSink{failAfter: 2}
		res := newEngine().Stream(context.Background(), p, &canonical.Request{}, sink)
		if res.Err == nil || res.Err.Class != failure.ClientCancelled || res.DeliveredTokens != 2 || sink.interrupt != nil {
			t.Fatalf("err = %v delivered %d interrupt %v", res.Err, res.DeliveredTokens, sink.interrupt)
		}
	})
}

func TestComplete(t *testing.T) {
	died := step{err: failure.Transport(errors.New("connection reset"), false)}
	tests := []struct {
		name      string
		rungs     [][]script
		wantTrail string
		wantErr   failure.Class
		served    int
		wantText  string
	}{
		{"success", [][]script{{okStream("h", "i")}}, "primary=ok", "", 0, "hi"},
		{"529 fails over", [][]script{{{dispatchErr: status(529)}}, {okStream("hi")}}, "primary=provider_unavailable secondary=ok", "", 1, "hi"},
		{"402 fails over", [][]script{{{dispatchErr: status(402)}}, {okStream("hi")}}, "primary=provider_credit_exhausted secondary=ok", "", 1, "hi"},
		{"404 fails over", [][]script{{{dispatchErr: status(404)}}, {okStream("hi")}}, "primary=provider_binding_invalid secondary=ok", "", 1, "hi"},
		{"422 stops", [][]script{{{dispatchErr: status(422)}}, {}}, "primary=invalid_request", failure.InvalidRequest, -1, ""},
		{"all rungs down", [][]script{{{dispatchErr: status(500)}}, {{dispatchErr: status(503)}}}, "primary=provider_unavailable secondary=provider_unavailable", failure.ProviderUnavailable, -1, ""},
		// Nothing reached the caller, so a provider dying halfway through
		// the answer fails over, and the answer is the secondary's alone.
		{"dies halfway: fails over, one whole answer", [][]script{{{steps: []step{start, text("par"), text("tial"), died}}}, {okStream("who", "le")}},
			"primary=provider_unavailable secondary=ok", "", 1, "whole"},
		{"silent after headers: first-byte bound fails over", [][]script{{{steps: []step{{stall: true}}}}, {okStream("hi")}},
			"primary=provider_unavailable secondary=ok", "", 1, "hi"},
		{"silent halfway: idle bound fails over", [][]script{{{steps: []step{start, text("a"), {stall: true}}}}, {okStream("hi")}},
			"primary=provider_unavailable secondary=ok", "", 1, "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := plan(t, tt.rungs...)
			for i := range p.Rungs {
				p.Rungs[i].Deployment = dep(p.Rungs[i].Deployment.ID, 50*time.Millisecond, 50*time.Millisecond)
			}
			res := newEngine().Complete(context.Background(), p, &canonical.Request{})
			if got := trail(res); got != tt.wantTrail {
				t.Errorf("trail = %q, want %q", got, tt.wantTrail)
			}
			if res.Served != tt.served {
				t.Errorf("served = %d, want %d", res.Served, tt.served)
			}
			if tt.wantErr == "" {
				if res.Err != nil || res.Response == nil {
					t.Fatalf("err = %v, response %v", res.Err, res.Response)
				}
				if res.Response.Text != tt.wantText || res.Response.Stop != canonical.StopEnd || res.Response.Usage.OutputTokens != 2 || !res.UsageReported {
					t.Errorf("response = %+v, want text %q, stop end, usage from the stream", res.Response, tt.wantText)
				}
			}
			if tt.wantErr != "" && (res.Err == nil || res.Err.Class != tt.wantErr || res.Response != nil) {
				t.Errorf("err = %v response %v, want %s and no response", res.Err, res.Response, tt.wantErr)
			}
		})
	}
	t.Run("silence bounds name the timeout", func(t *testing.T) {
		p, _ := plan(t, []script{{steps: []step{{stall: true}}}})
		p.Rungs[0].Deployment = dep("primary", 30*time.Millisecond, time.Second)
		res := newEngine().Complete(context.Background(), p, &canonical.Request{})
		if res.Err == nil || res.Err.Timeout != failure.TimeoutFirstByte {
			t.Fatalf("err = %v, want a first_byte timeout", res.Err)
		}
	})
	t.Run("tool calls and refusals assembled by index", func(t *testing.T) {
		steps := []step{start,
			{ev: canonical.Event{Kind: canonical.EventToolCallStart, Index: 0, ID: "c0", Name: "a", Text: `{"x"`}},
			{ev: canonical.Event{Kind: canonical.EventToolCallStart, Index: 1, ID: "c1", Name: "b"}},
			{ev: canonical.Event{Kind: canonical.EventToolCallDelta, Index: 0, Text: `:1}`}},
			{ev: canonical.Event{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{}`}},
			{ev: canonical.Event{Kind: canonical.EventRefusalDelta, Text: "no"}},
			stopEnd, usage}
		p, _ := plan(t, []script{{steps: steps}})
		res := newEngine().Complete(context.Background(), p, &canonical.Request{})
		r := res.Response
		if res.Err != nil || len(r.ToolCalls) != 2 || r.ToolCalls[0] != (canonical.ToolCall{ID: "c0", Name: "a", Arguments: `{"x":1}`}) ||
			r.ToolCalls[1] != (canonical.ToolCall{ID: "c1", Name: "b", Arguments: `{}`}) || r.Refusal != "no" {
			t.Fatalf("err %v response %+v", res.Err, r)
		}
	})
	t.Run("an answer past the size bound is the provider's failure and fails over", func(t *testing.T) {
		big := strings.Repeat("x", 600)
		p, _ := plan(t, []script{okStream(big, big)}, []script{okStream("ok")})
		res := New(slog.New(slog.DiscardHandler), WithMaxAnswerBytes(1000)).Complete(context.Background(), p, &canonical.Request{})
		if got := trail(res); got != "primary=provider_unavailable secondary=ok" || res.Response.Text != "ok" {
			t.Fatalf("trail %q response %+v", got, res.Response)
		}
	})
}

func TestUpstreamKeys(t *testing.T) {
	p, fakes := plan(t, []script{{dispatchErr: failure.Transport(errors.New("reset"), true)}, {dispatchErr: status(503)}}, []script{okStream("a")})
	newEngine().Stream(context.Background(), p, &canonical.Request{}, &recSink{})
	k := append(append([]string{}, fakes[0].keys...), fakes[1].keys...)
	if len(k) != 3 || k[0] != k[1] || k[1] == k[2] || k[0] == "" {
		t.Fatalf("keys = %q: want the same key on the same-rung retry and a new one per rung", k)
	}
	if UpstreamKey("a", 0, "d") == UpstreamKey("b", 0, "d") {
		t.Error("keys of different requests collide")
	}
}

// recGate admits by deployment id and records every finished attempt.
type recGate struct {
	skip map[string]string
	mu   sync.Mutex
	done []string
	// told, when set, receives each finished attempt as it is recorded.
	told chan string
}

func (g *recGate) Admit(r *Rung) (func(*Attempt), string) {
	if why := g.skip[r.Deployment.ID]; why != "" && !r.Forced {
		return nil, why
	}
	return func(a *Attempt) {
		g.mu.Lock()
		g.done = append(g.done, a.Deployment+"="+a.Outcome())
		g.mu.Unlock()
		if g.told != nil {
			g.told <- a.Deployment + "=" + a.Outcome()
		}
	}, ""
}

func TestGate(t *testing.T) {
	t.Run("a skipped rung costs no attempt; done sees every attempt once", func(t *testing.T) {
		p, fakes := plan(t, []script{okStream("never")}, []script{{dispatchErr: status(503)}}, []script{okStream("ok")})
		g := &recGate{skip: map[string]string{"primary": "circuit_open"}}
		res := New(slog.New(slog.DiscardHandler), WithGate(g)).Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err != nil || res.Served != 2 || fakes[0].calls != 0 {
			t.Fatalf("err %v served %d primary calls %d", res.Err, res.Served, fakes[0].calls)
		}
		if len(res.Skipped) != 1 || res.Skipped[0].Reason != "circuit_open" {
			t.Errorf("skipped = %+v", res.Skipped)
		}
		if got := strings.Join(g.done, " "); got != "secondary=provider_unavailable tertiary=ok" {
			t.Errorf("gate saw %q", got)
		}
	})
	t.Run("every rung skipped", func(t *testing.T) {
		p, _ := plan(t, []script{okStream("never")})
		g := &recGate{skip: map[string]string{"primary": "throttled"}}
		res := New(slog.New(slog.DiscardHandler), WithGate(g)).Complete(context.Background(), p, &canonical.Request{})
		if res.Err != ErrAllSkipped || len(res.Attempts) != 0 {
			t.Fatalf("err %v attempts %d", res.Err, len(res.Attempts))
		}
	})
	t.Run("a forced rung is admitted", func(t *testing.T) {
		p, _ := plan(t, []script{okStream("x")})
		p.Rungs[0].Forced = true
		g := &recGate{skip: map[string]string{"primary": "circuit_open"}}
		res := New(slog.New(slog.DiscardHandler), WithGate(g)).Stream(context.Background(), p, &canonical.Request{}, &recSink{})
		if res.Err != nil || res.Served != 0 {
			t.Fatalf("err %v", res.Err)
		}
	})
}

// pendingStream says events are ready while more remain in its script.
type pendingStream struct{ fakeStream }

func (s *pendingStream) Pending() bool { return len(s.steps) > 0 && !s.steps[0].stall }

type pendingAdapter struct{ fakeAdapter }

func (f *pendingAdapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	s := f.take(t)
	return &pendingStream{fakeStream{ctx: ctx, steps: s.steps}}, nil
}

// A burst of ready events goes out in one flush; a lone event at once.
func TestStreamCoalescesReadyEvents(t *testing.T) {
	p, _ := plan(t, []script{okStream("a", "b", "c", "d")})
	pa := &pendingAdapter{fakeAdapter{t: t, scripts: []script{okStream("a", "b", "c", "d")}}}
	p.Rungs[0].Adapter = pa
	sink := &recSink{}
	res := newEngine().Stream(context.Background(), p, &canonical.Request{}, sink)
	if res.Err != nil || len(sink.events) != 4 {
		t.Fatalf("err %v events %v", res.Err, sink.events)
	}
	// The four deltas were all ready, followed by stop and usage: the last
	// delta is followed by ready events too, so at most one flush is needed
	// before Finish (which flushes itself).
	if sink.flushes > 1 {
		t.Errorf("%d flushes for a burst of ready events", sink.flushes)
	}
	// Without Pending, every event is flushed.
	p2, _ := plan(t, []script{okStream("a", "b", "c", "d")})
	sink2 := &recSink{}
	newEngine().Stream(context.Background(), p2, &canonical.Request{}, sink2)
	if sink2.flushes != 4 {
		t.Errorf("%d flushes without Pending, want one per event", sink2.flushes)
	}
}
