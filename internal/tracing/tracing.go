// Package tracing exports OpenTelemetry traces of the gateway's work: one
// span per customer request and one child span per attempt, with the GenAI
// semantic conventions' attributes and spillway's own, and never content.
package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/spillway-gw/spillway/internal/engine"
)

// HeaderTraceID is the response header that names the request's trace
// (32 hex digits) when the trace is recorded, so a caller or an operator
// can find it in the tracing backend.
const HeaderTraceID = "X-Spillway-Trace-Id"

// scope is the instrumentation scope of every span.
const scope = "github.com/spillway-gw/spillway"

// Tracer starts and ends the spans of requests. A nil *Tracer is tracing
// off: the server checks for nil before it does anything else, so a
// gateway without tracing allocates nothing for it.
type Tracer struct {
	tp   *sdktrace.TracerProvider
	tr   trace.Tracer
	prop propagation.TextMapPropagator
}

// NewWithProcessor returns a Tracer whose finished spans go to sp (tests:
// tracetest.NewSpanRecorder(); or a batcher around any exporter), sampling
// ratio of the traces it starts and following a caller's sampled flag.
func NewWithProcessor(sp sdktrace.SpanProcessor, ratio float64, opts ...sdktrace.TracerProviderOption) *Tracer {
	opts = append([]sdktrace.TracerProviderOption{
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithRawSpanLimits(spanLimits()),
	}, opts...)
	return newTracer(sdktrace.NewTracerProvider(opts...))
}

func newTracer(tp *sdktrace.TracerProvider) *Tracer {
	return &Tracer{tp: tp, tr: tp.Tracer(scope), prop: propagation.TraceContext{}}
}

// spanLimits bounds what one span holds. Every value spillway sets is a
// configured name or a fixed code, so the bounds only guard against a
// mistake: 64 attributes, an event per rung (pools are small), values cut
// at 256 bytes.
func spanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.AttributeCountLimit = 64
	l.AttributeValueLengthLimit = 256
	l.EventCountLimit = 64
	l.AttributePerEventCountLimit = 8
	l.LinkCountLimit = 0
	return l
}

// Shutdown exports what is buffered and stops the exporter; ctx bounds the
// wait. Safe on a nil Tracer.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Span is one request's span while the request is served.
type Span struct {
	// ctx carries the request span: the attempts' spans are its children.
	ctx  context.Context
	span trace.Span
	// operation is the GenAI operation name ("chat", "embeddings").
	operation string
	// Config is the routing table's version when the request began ("":
	// a config built in code); the server sets it.
	Config string
}

// Start begins the span of a request that arrived at start, as a child of
// the caller's W3C traceparent when h carries one (its sampled flag
// decides whether the trace is recorded). operation is the GenAI
// operation ("chat" or "embeddings"); route the endpoint's path.
func (t *Tracer) Start(ctx context.Context, h http.Header, start time.Time, operation, method, route string) *Span {
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	if sc := trace.SpanContextFromContext(ctx); sc.TraceState().Len() > 0 {
		// A caller's tracestate is free text it chose: only the ids of
		// its traceparent are kept, so nothing a caller wrote is exported.
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
	}
	ctx, sp := t.tr.Start(ctx, operation, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	if sp.IsRecording() {
		sp.SetAttributes(requestStartAttrs(operation, method, route)...)
	}
	return &Span{ctx: ctx, span: sp, operation: operation}
}

// TraceID is the trace's id as 32 hex digits when the trace is recorded
// and exported, "" when it is not (unsampled: there is nothing to find).
func (s *Span) TraceID() string {
	sc := s.span.SpanContext()
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// End ends the request's span at end, after its attempts' spans, each
// timed by its own start and duration (a hedge's two overlap; a retry is
// a span of its own).
func (t *Tracer) End(s *Span, r *Request, end time.Time) {
	if !s.span.IsRecording() {
		s.span.End(trace.WithTimestamp(end))
		return
	}
	if res := r.Result; res != nil && r.Plan != nil {
		// Attempts are recorded as they finish, which a hedge's race
		// reorders: their spans are started in dispatch order.
		var buf [16]int
		for _, i := range dispatchOrder(res.Attempts, buf[:0]) {
			t.attempt(s, r, i)
		}
	}
	r.describe(s)
	s.span.End(trace.WithTimestamp(end))
}

// attempt records attempt i of r's result as a child span of s.
func (t *Tracer) attempt(s *Span, r *Request, i int) {
	a := &r.Result.Attempts[i]
	if a.Rung < 0 || a.Rung >= len(r.Plan.Rungs) {
		return
	}
	d := r.Plan.Rungs[a.Rung].Deployment
	_, sp := t.tr.Start(s.ctx, s.operation+" "+d.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(a.Start), trace.WithAttributes(attemptAttrs(s.operation, r, i, d)...))
	if code, desc := attemptStatus(a); code != 0 {
		sp.SetStatus(code, desc)
	}
	sp.End(trace.WithTimestamp(a.Start.Add(a.Duration)))
}

// dispatchOrder appends the indexes of as sorted by start time (record
// order among equals) to out: an insertion sort over a handful.
func dispatchOrder(as []engine.Attempt, out []int) []int {
	for i := range as {
		j := len(out)
		out = append(out, i)
		for j > 0 && as[i].Start.Before(as[out[j-1]].Start) {
			out[j] = out[j-1]
			j--
		}
		out[j] = i
	}
	return out
}
