package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// tracedHarness is a harness whose gateway records every span it ends.
func tracedHarness(t *testing.T, edit func(*catalog.Config), rungs ...rungSpec) (*harness, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	h := newHarnessOpts(t, edit, func(o *server.Options) { o.Tracer = tracing.NewWithProcessor(rec, 1) }, rungs...)
	return h, rec
}

// requestTrace is one request's spans: the server span and its attempts
// in the order they started.
type requestTrace struct {
	req      sdktrace.ReadOnlySpan
	attempts []sdktrace.ReadOnlySpan
}

// traceOf waits for the span of the request with id (it ends after the
// response's last byte) and returns it with its children.
func traceOf(t *testing.T, rec *tracetest.SpanRecorder, id string) requestTrace {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var rt requestTrace
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer && attr(s, "spillway.request_id") == id {
				rt.req = s
			}
		}
		if rt.req != nil {
			for _, s := range rec.Ended() {
				if s.Parent().SpanID() == rt.req.SpanContext().SpanID() {
					rt.attempts = append(rt.attempts, s)
				}
			}
			return rt
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request span for %s among %d spans", id, len(rec.Ended()))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func attr(s sdktrace.ReadOnlySpan, k string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// verdicts is "deployment=verdict, ..." of the attempts, as the trail
// header writes it.
func (rt requestTrace) verdicts() string {
	var parts []string
	for _, a := range rt.attempts {
		parts = append(parts, attr(a, "spillway.deployment")+"="+attr(a, "spillway.verdict"))
	}
	return strings.Join(parts, ", ")
}

// checkShape checks what every traced request shares: the attempts are
// client spans in dispatch order inside the request's server span.
func (rt requestTrace) checkShape(t *testing.T) {
	t.Helper()
	if rt.req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span kind %v", rt.req.SpanKind())
	}
	for i, a := range rt.attempts {
		if a.SpanKind() != trace.SpanKindClient || a.SpanContext().TraceID() != rt.req.SpanContext().TraceID() {
			t.Errorf("attempt %d: kind %v, trace %v", i, a.SpanKind(), a.SpanContext().TraceID())
		}
		if a.StartTime().Before(rt.req.StartTime()) || a.EndTime().After(rt.req.EndTime()) {
			t.Errorf("attempt %d [%v, %v] outside its request [%v, %v]", i, a.StartTime(), a.EndTime(), rt.req.StartTime(), rt.req.EndTime())
		}
		if i > 0 && a.StartTime().Before(rt.attempts[i-1].StartTime()) {
			t.Errorf("attempt %d started before attempt %d", i, i-1)
		}
		if got := attr(a, "spillway.attempt"); got != fmt.Sprint(i) && attr(rt.req, "spillway.hedge") == "" {
			t.Errorf("attempt %d is numbered %s", i, got)
		}
	}
}

// A failover, plain and streamed: one request span, two attempt spans in
// dispatch order, the first failed with its class (an error status, no
// message), the second served; the GenAI attributes of each.
func TestTraceFailover(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h, rec := tracedHarness(t, nil, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "status=529")
		r := chat(t, h, stream, hello())
		if r.err != nil {
			t.Fatal(r.err)
		}
		rt := traceOf(t, rec, hdr(r.resp, "X-Request-Id"))
		rt.checkShape(t)
		if len(rt.attempts) != 2 {
			t.Fatalf("%d attempt spans, want 2", len(rt.attempts))
		}
		if got, want := rt.verdicts(), "primary=provider_unavailable, secondary=ok"; got != want || got != hdr(r.resp, "X-Spillway-Trail") {
			t.Errorf("attempt verdicts %q, want %q (trail header %q)", got, want, hdr(r.resp, "X-Spillway-Trail"))
		}
		first, second := rt.attempts[0], rt.attempts[1]
		if first.Status().Code != codes.Error || first.Status().Description != "provider_unavailable" || second.Status().Code == codes.Error {
			t.Errorf("statuses %+v, %+v", first.Status(), second.Status())
		}
		for k, want := range map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "mock-primary",
			"spillway.failure_class": "provider_unavailable", "http.response.status_code": "529", "spillway.served": "false",
			"error.type": "provider_unavailable",
		} {
			if got := attr(first, k); got != want {
				t.Errorf("first attempt %s = %q, want %q", k, got, want)
			}
		}
		for k, want := range map[string]string{
			"gen_ai.provider.name": "openai", "gen_ai.request.model": "mock-secondary", "gen_ai.response.model": "mock-secondary",
			"spillway.served": "true", "gen_ai.response.finish_reasons": "[\"end\"]", "server.address": "127.0.0.1",
		} {
			if got := attr(second, k); got != want {
				t.Errorf("second attempt %s = %q, want %q", k, got, want)
			}
		}
		if attr(second, "gen_ai.usage.output_tokens") == "" || attr(second, "gen_ai.usage.input_tokens") == "" {
			t.Errorf("served attempt without usage: %v", second.Attributes())
		}
		for k, want := range map[string]string{
			"spillway.route": publicModel, "gen_ai.request.model": publicModel, "gen_ai.response.model": exactModel,
			"spillway.deployment": "secondary", "spillway.verdict": "ok", "spillway.attempts": "2", "spillway.stream": fmt.Sprint(stream),
			"spillway.committed": "true", "spillway.cost_status": "priced", "http.response.status_code": "200",
			"http.request.method": "POST", "http.route": "/v1/chat/completions",
		} {
			if got := attr(rt.req, k); got != want {
				t.Errorf("request %s = %q, want %q", k, got, want)
			}
		}
		if rt.req.Name() != "chat "+publicModel || first.Name() != "chat mock-primary" {
			t.Errorf("span names %q, %q", rt.req.Name(), first.Name())
		}
		if id := hdr(r.resp, tracing.HeaderTraceID); id != rt.req.SpanContext().TraceID().String() {
			t.Errorf("%s = %q, want the trace id %s", tracing.HeaderTraceID, id, rt.req.SpanContext().TraceID())
		}
	})
}

// A stream cut after it began: the request span is an error though its
// status was 200, and the attempt's verdict is the class that cut it.
func TestTraceStreamCut(t *testing.T) {
	h, rec := tracedHarness(t, nil, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "die_after=2")
	r := chat(t, h, true, hello())
	if r.err == nil {
		t.Fatal("the cut stream ended without an error")
	}
	rt := traceOf(t, rec, hdr(r.resp, "X-Request-Id"))
	rt.checkShape(t)
	if len(rt.attempts) != 1 || !strings.HasPrefix(attr(rt.req, "spillway.verdict"), "interrupted_") || rt.req.Status().Code != codes.Error ||
		attr(rt.req, "spillway.committed") != "true" || attr(rt.attempts[0], "spillway.served") != "true" {
		t.Errorf("request %v %v, attempts %s", rt.req.Attributes(), rt.req.Status(), rt.verdicts())
	}
}

// A hedge: the two attempts overlap, in the order they were dispatched
// (the primary first, though the hedge finished first); the loser is not
// an error.
func TestTraceHedge(t *testing.T) {
	h, rec := tracedHarness(t, hedged(50*time.Millisecond), rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "delay=1m")
	r := chat(t, h, true, hello())
	if r.err != nil {
		t.Fatal(r.err)
	}
	rt := traceOf(t, rec, hdr(r.resp, "X-Request-Id"))
	rt.checkShape(t)
	if got := rt.verdicts(); got != "primary=hedged_lost, secondary=ok" {
		t.Fatalf("verdicts %q", got)
	}
	lost, won := rt.attempts[0], rt.attempts[1]
	if !won.StartTime().Before(lost.EndTime()) {
		t.Errorf("the hedge [%v, %v] does not overlap the primary [%v, %v]", won.StartTime(), won.EndTime(), lost.StartTime(), lost.EndTime())
	}
	if lost.Status().Code == codes.Error || attr(rt.req, "spillway.hedge") != "won" {
		t.Errorf("loser status %v, request hedge %q", lost.Status(), attr(rt.req, "spillway.hedge"))
	}
}

// A caller's W3C traceparent is the request span's parent: sampled there,
// recorded here (even at sample 0); unsampled there, nothing recorded and
// no trace id in the answer.
func TestTraceCallerParent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	h := newHarnessOpts(t, nil, func(o *server.Options) { o.Tracer = tracing.NewWithProcessor(rec, 0) }, rungSpec{"primary", "openai"})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	resp := h.do(t, body, "traceparent", "00-"+traceID+"-"+parent+"-01")
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	rt := traceOf(t, rec, resp.header.Get("X-Request-Id"))
	if sc := rt.req.Parent(); sc.TraceID().String() != traceID || sc.SpanID().String() != parent || !sc.IsRemote() {
		t.Errorf("parent %v, want %s/%s remote", sc, traceID, parent)
	}
	if rt.req.SpanContext().TraceID().String() != traceID || resp.header.Get(tracing.HeaderTraceID) != traceID || len(rt.attempts) != 1 {
		t.Errorf("trace %s, header %q, %d attempts", rt.req.SpanContext().TraceID(), resp.header.Get(tracing.HeaderTraceID), len(rt.attempts))
	}
	// Unsampled by the caller, and sample 0 here: nothing is recorded.
	n := len(rec.Ended())
	resp = h.do(t, body, "traceparent", "00-"+traceID+"-"+parent+"-00")
	if resp.status != 200 || resp.header.Get(tracing.HeaderTraceID) != "" {
		t.Errorf("unsampled: status %d, trace header %q", resp.status, resp.header.Get(tracing.HeaderTraceID))
	}
	// Nor without a traceparent at sample 0.
	resp = h.do(t, body)
	if resp.status != 200 || resp.header.Get(tracing.HeaderTraceID) != "" {
		t.Errorf("no traceparent: status %d, trace header %q", resp.status, resp.header.Get(tracing.HeaderTraceID))
	}
	if got := len(rec.Ended()); got != n {
		t.Errorf("%d spans recorded for unsampled requests", got-n)
	}
	// A malformed traceparent starts a trace of its own (here: unsampled).
	resp = h.do(t, body, "traceparent", "00-zzzz-"+parent+"-01")
	if resp.status != 200 {
		t.Errorf("malformed traceparent: status %d", resp.status)
	}
}

// Requests refused before routing still have a span, with the refusal's
// code and no route.
func TestTraceRefusedRequest(t *testing.T) {
	h, rec := tracedHarness(t, nil, rungSpec{"primary", "openai"})
	resp := h.do(t, `{"model":"no-such-model-CANARY","messages":[{"role":"user","content":"hi"}]}`)
	if resp.status != 404 {
		t.Fatalf("status %d", resp.status)
	}
	rt := traceOf(t, rec, resp.header.Get("X-Request-Id"))
	if attr(rt.req, "spillway.verdict") != "model_not_found" || attr(rt.req, "spillway.route") != "" || len(rt.attempts) != 0 ||
		rt.req.Status().Code == codes.Error || strings.Contains(fmt.Sprint(rt.req.Attributes()), "CANARY") {
		t.Errorf("refused request span: %v %v", rt.req.Attributes(), rt.req.Status())
	}
}

var _ = attribute.Key("")
