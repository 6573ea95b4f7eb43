package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

func refusal(s string) step { return step{ev: refusalEv(s)} }

var stopRefusal = step{ev: canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopRefusal}}

// refused is an answer that declines: refusal text, the refusal stop
// reason, and its usage.
func refused(parts ...string) script {
	s := script{steps: []step{start}}
	for _, p := range parts {
		s.steps = append(s.steps, refusal(p))
	}
	s.steps = append(s.steps, stopRefusal, usage)
	return s
}

// Refusal failover, stream and whole answer: a refusal within the buffer
// moves on to the next rung, invisibly; anything else is the answer, as
// it would be without refusal failover.
func TestRefusalFailover(t *testing.T) {
	tests := []struct {
		name   string
		buffer int // the plan's RefusalBuffer
		rungs  [][]script
		// wantTrail is the result's trail; wantAnswer what the caller got
		// (the stream's events, or the whole answer as "text|refusal").
		wantTrail, wantStream, wantWhole string
		wantServed                       int
		wantErr                          failure.Class
	}{
		{
			name: "off by default: the refusal is the answer", buffer: 0,
			rungs:     [][]script{{refused("I can", "'t")}, {okStream("never")}},
			wantTrail: "primary=ok", wantStream: "refusal_delta:I can refusal_delta:'t", wantWhole: "|I can't",
		},
		{
			name: "a refusal moves on to the next rung, nothing of it shown", buffer: 4096,
			rungs:     [][]script{{refused("I can", "'t")}, {okStream("hel", "lo")}},
			wantTrail: "primary=refused secondary=ok", wantStream: "text_delta:hel text_delta:lo", wantWhole: "hello|",
			wantServed: 1,
		},
		{
			name: "an empty answer with the refusal stop reason moves on", buffer: 4096,
			rungs:     [][]script{{{steps: []step{start, stopRefusal, usage}}}, {okStream("ok")}},
			wantTrail: "primary=refused secondary=ok", wantStream: "text_delta:ok", wantWhole: "ok|", wantServed: 1,
		},
		{
			name: "text first: committed at once, a later refusal stop stays", buffer: 4096,
			rungs:     [][]script{{{steps: []step{start, text("well"), stopRefusal, usage}}}, {okStream("never")}},
			wantTrail: "primary=ok", wantStream: "text_delta:well", wantWhole: "well|",
		},
		{
			name: "a refusal, then text: committed at the text, the refusal flushed first", buffer: 4096,
			rungs:     [][]script{{{steps: []step{start, refusal("no, "), text("but"), stopEnd, usage}}}, {okStream("never")}},
			wantTrail: "primary=ok", wantStream: "refusal_delta:no,  text_delta:but", wantWhole: "but|no, ",
		},
		{
			name: "a refusal past the buffer is committed: no failover", buffer: 8,
			rungs:     [][]script{{refused("12345", "67890")}, {okStream("never")}},
			wantTrail: "primary=ok", wantStream: "refusal_delta:12345 refusal_delta:67890", wantWhole: "|1234567890",
		},
		{
			name: "a refusal on the last rung is the answer", buffer: 4096,
			rungs:     [][]script{{refused("no")}, {refused("nope")}},
			wantTrail: "primary=refused secondary=ok", wantStream: "refusal_delta:nope", wantWhole: "|nope", wantServed: 1,
		},
		{
			name: "every later rung fails: the held refusal is the answer after all", buffer: 4096,
			rungs:     [][]script{{refused("no")}, {{dispatchErr: status(503)}}},
			wantTrail: "primary=ok secondary=provider_unavailable", wantStream: "refusal_delta:no", wantWhole: "|no",
		},
		{
			name: "a held refusal, then a broken stream: ordinary invisible failover", buffer: 4096,
			rungs:     [][]script{{{steps: []step{start, refusal("no"), {err: failure.Truncated("eof")}}}}, {okStream("ok")}},
			wantTrail: "primary=provider_unavailable secondary=ok", wantStream: "text_delta:ok", wantWhole: "ok|", wantServed: 1,
		},
	}
	for _, tt := range tests {
		for _, whole := range []bool{false, true} {
			name := tt.name + "/stream"
			if whole {
				name = tt.name + "/whole"
			}
			t.Run(name, func(t *testing.T) {
				p, _ := plan(t, tt.rungs...)
				p.RefusalBuffer = tt.buffer
				sink := &recSink{}
				var res *Result
				if whole {
					res = newEngine().Complete(context.Background(), p, &canonical.Request{})
					defer res.Release()
				} else {
					res = newEngine().Stream(context.Background(), p, &canonical.Request{Stream: true}, sink)
				}
				if got := trail(res); got != tt.wantTrail {
					t.Errorf("trail = %q, want %q", got, tt.wantTrail)
				}
				if res.Err != nil || res.Served != tt.wantServed || res.ServingAttempt() < 0 || res.Attempts[res.ServingAttempt()].Err != nil {
					t.Fatalf("err %v served %d serving attempt %d", res.Err, res.Served, res.ServingAttempt())
				}
				if whole {
					if got := res.Response.Text + "|" + res.Response.Refusal; got != tt.wantWhole {
						t.Errorf("answer = %q, want %q", got, tt.wantWhole)
					}
				} else {
					if got := strings.Join(sink.events, " "); got != tt.wantStream || sink.commits != 1 || !sink.finished {
						t.Errorf("caller saw %q (%d commits, finished %v), want %q", got, sink.commits, sink.finished, tt.wantStream)
					}
					if sink.finishErr != "" {
						t.Error(sink.finishErr)
					}
				}
				for _, a := range res.Attempts {
					if a.Err != nil && a.Err.Class == failure.Refused && (!a.UsageReported || a.Usage.InputTokens != 10) {
						t.Errorf("refused attempt's usage = %+v (reported %v), want the provider's", a.Usage, a.UsageReported)
					}
				}
			})
		}
	}
}

// The hold is bounded: refusal is held while it fits the buffer, and the
// delta that would pass it commits the answer, held deltas first; a first
// event that is not refusal commits at once, holding nothing.
func TestRefusalHoldBound(t *testing.T) {
	run := func(t *testing.T, buffer int) (*handStream, *recSink, chan *Result) {
		clk := clocktest.New(t0)
		ad := handAdapter{streams: make(chan *handStream)}
		p := &Plan{RequestID: "req-1", IdempotencyBase: "req-1", Model: "m", RefusalBuffer: buffer}
		for _, id := range []string{"primary", "secondary"} {
			p.Rungs = append(p.Rungs, Rung{Deployment: dep(id, time.Hour, time.Hour), Adapter: ad, Target: provider.Target{Deployment: id}})
		}
		sink := &recSink{}
		done := make(chan *Result, 1)
		e := New(slog.New(slog.DiscardHandler), WithClock(clk))
		go func() { done <- e.Stream(context.Background(), p, &canonical.Request{Stream: true}, sink) }()
		st := <-ad.streams
		<-st.waiting
		return st, sink, done
	}
	send := func(st *handStream, ev canonical.Event) {
		st.steps <- step{ev: ev}
		<-st.waiting
	}
	t.Run("held to the byte, then committed in order", func(t *testing.T) {
		st, sink, done := run(t, 10)
		send(st, refusalEv("1234"))
		send(st, refusalEv("567890")) // 10 bytes: exactly the buffer
		if sink.commits != 0 || len(sink.events) != 0 {
			t.Fatalf("with 10 bytes held: %d commits, events %v; want nothing sent", sink.commits, sink.events)
		}
		send(st, refusalEv("x")) // 11: past the buffer
		if got := strings.Join(sink.events, " "); sink.commits != 1 || got != "refusal_delta:1234 refusal_delta:567890 refusal_delta:x" {
			t.Fatalf("past the buffer: %d commits, events %q", sink.commits, got)
		}
		st.steps <- step{err: io.EOF}
		if res := <-done; res.Err != nil || trail(res) != "primary=ok" || res.DeliveredEvents != 3 {
			t.Fatalf("err %v trail %q delivered %d", res.Err, trail(res), res.DeliveredEvents)
		}
	})
	t.Run("a first text event commits at once", func(t *testing.T) {
		st, sink, done := run(t, 4096)
		send(st, delta("hi"))
		if sink.commits != 1 || len(sink.events) != 1 {
			t.Fatalf("after the first text: %d commits, events %v; want it sent at once", sink.commits, sink.events)
		}
		st.steps <- step{err: io.EOF}
		if res := <-done; res.Err != nil {
			t.Fatal(res.Err)
		}
	})
	t.Run("a bounded count of events, whatever their size", func(t *testing.T) {
		st, sink, done := run(t, catalog.MaxRefusalBuffer)
		for range maxHeldEvents {
			send(st, refusalEv("a"))
		}
		if sink.commits != 0 {
			t.Fatalf("committed after %d one-byte refusal events", maxHeldEvents)
		}
		send(st, refusalEv("a"))
		if sink.commits != 1 || len(sink.events) != maxHeldEvents+1 {
			t.Fatalf("%d commits, %d events", sink.commits, len(sink.events))
		}
		st.steps <- step{err: io.EOF}
		<-done
	})
}
