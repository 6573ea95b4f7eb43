package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Unhappy paths first: export headers that cannot be read are refused,
// naming the variable and never its value.
func TestExportHeaders(t *testing.T) {
	env := map[string]string{
		"OK":      "api-key=s3cret, x-team = a%20b",
		"EMPTY":   "  ",
		"NOEQ":    "api-key:s3cret",
		"BADCODE": "k=%zz-s3cret",
	}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct{ name, env, err string }{
		{"unset", "MISSING", "MISSING is not set"},
		{"blank", "EMPTY", "EMPTY is not set"},
		{"no equals", "NOEQ", "entry 1 of NOEQ is not key=value"},
		{"bad escape", "BADCODE", "entry 1 of BADCODE is not key=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exportHeaders(tc.env, getenv)
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("err %v, want %q without the value", err, tc.err)
			}
		})
	}
	h, err := exportHeaders("OK", getenv)
	if err != nil || len(h) != 2 || h["api-key"] != "s3cret" || h["x-team"] != "a b" {
		t.Errorf("headers %v, err %v", h, err)
	}
	if h, err := exportHeaders("", getenv); h != nil || err != nil {
		t.Errorf("no variable named: %v %v", h, err)
	}
}

func TestHTTPTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":          "http://c:4318/v1/traces",
		"http://c:4318/":         "http://c:4318/v1/traces",
		"https://c/otlp/traces":  "https://c/otlp/traces",
		"https://c:443/v1/trace": "https://c:443/v1/trace",
	} {
		if got := httpTracesURL(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestNewOff(t *testing.T) {
	for _, exp := range []string{"", catalog.TraceExporterNone} {
		tr, err := New(t.Context(), &catalog.Traces{Exporter: exp}, Options{})
		if tr != nil || err != nil {
			t.Errorf("exporter %q: %v, %v; want nil, nil", exp, tr, err)
		}
	}
	var off *Tracer
	if err := off.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}

// request is a finished request of two attempts, the first failed over.
func request(start time.Time) *Request {
	d1 := &catalog.Deployment{ID: "primary", Provider: catalog.KindAnthropic, Model: "claude-x", BaseURL: "https://api.anthropic.com"}
	d2 := &catalog.Deployment{ID: "secondary", Provider: catalog.KindBedrock, Model: "anthropic.claude-x", BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}
	p := &engine.Plan{Model: "claude-x", Rungs: []engine.Rung{{Deployment: d1}, {Deployment: d2}}}
	res := &engine.Result{Served: 1, Attempts: []engine.Attempt{
		{Rung: 0, Deployment: "primary", Start: start, Duration: 20 * time.Millisecond, Err: &failure.Error{Class: failure.ProviderUnavailable, Status: 529}},
		{Rung: 1, Deployment: "secondary", Start: start.Add(21 * time.Millisecond), Duration: 50 * time.Millisecond},
	}}
	return &Request{ID: "req_1", Dialect: "openai-chat", Route: "claude", Pool: "pool", Model: "claude-x", ServedModel: "claude-x",
		Status: 200, Outcome: "ok", CostStatus: "priced", Cost: 12, Plan: p, Result: res}
}

// A collector that accepts connections and never answers (over HTTP and
// over gRPC) costs the requests nothing: ending 2,000 request spans (and
// their 4,000 attempt spans) costs what it costs with a discarding exporter while the exporter hangs, the
// bounded queue drops what it cannot hold, and Shutdown returns within its
// bound.
func TestHangingCollectorNeverBlocks(t *testing.T) {
	hang := make(chan struct{})
	var hits atomic.Int64
	httpColl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer httpColl.Close()
	// gRPC: a listener that accepts and says nothing, not even the HTTP/2
	// preface.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-hang; c.Close() }()
		}
	}()
	defer close(hang)
	// The same work with an exporter that discards at once is the
	// baseline: a collector that hangs may not make it much slower.
	const n = 2000
	run := func(tr *Tracer) (took, worst time.Duration) {
		begin := time.Now()
		for range n {
			t0 := time.Now()
			sp := tr.Start(context.Background(), http.Header{}, t0, "chat", "POST", "/v1/chat/completions")
			tr.End(sp, request(t0), time.Now())
			worst = max(worst, time.Since(t0))
		}
		return time.Since(begin), worst
	}
	base := NewWithProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter(), sdktrace.WithMaxQueueSize(256)), 1)
	baseTook, _ := run(base)
	_ = base.Shutdown(t.Context())
	for _, tc := range []struct{ exporter, endpoint string }{
		{catalog.TraceExporterOTLPHTTP, httpColl.URL},
		{catalog.TraceExporterOTLPGRPC, "http://" + ln.Addr().String()},
	} {
		t.Run(tc.exporter, func(t *testing.T) {
			cfg := &catalog.Traces{Exporter: tc.exporter, Endpoint: tc.endpoint, QueueSize: 256, Timeout: catalog.Duration(time.Second)}
			tr, err := New(t.Context(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Make sure the exporter is stuck before the bulk.
			sp := tr.Start(context.Background(), http.Header{}, time.Now(), "chat", "POST", "/v1/chat/completions")
			tr.End(sp, request(time.Now()), time.Now())
			_ = tr.tp.ForceFlush(ctxTimeout(t, 50*time.Millisecond))
			took, worst := run(tr)
			t.Logf("%s: %d requests traced in %v (%.1f µs each, slowest %v) with the collector hanging; %v with a discarding exporter",
				tc.exporter, n, took, float64(took.Microseconds())/n, worst, baseTook)
			if took > 3*baseTook+time.Second || worst > time.Second {
				t.Errorf("tracing slowed requests down: %v in all (baseline %v), slowest %v", took, baseTook, worst)
			}
			begin := time.Now()
			_ = tr.Shutdown(ctxTimeout(t, 300*time.Millisecond))
			if d := time.Since(begin); d > 2*time.Second {
				t.Errorf("Shutdown took %v with a 300ms bound", d)
			} else {
				t.Logf("%s: Shutdown returned in %v (bound 300ms)", tc.exporter, d)
			}
		})
	}
	if hits.Load() == 0 {
		t.Error("the HTTP collector was never called: the test proved nothing")
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Shutdown exports what is buffered: spans ended just before it reach a
// collector that answers.
func TestShutdownFlushes(t *testing.T) {
	var got atomic.Int64
	coll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && len(b) > 0 {
			got.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer coll.Close()
	tr, err := New(t.Context(), &catalog.Traces{Exporter: catalog.TraceExporterOTLPHTTP, Endpoint: coll.URL}, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tr.End(tr.Start(t.Context(), http.Header{}, now, "chat", "POST", "/v1/chat/completions"), request(now), now.Add(time.Second))
	if err := tr.Shutdown(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got.Load() == 0 {
		t.Error("nothing was exported at shutdown")
	}
}

// A caller's tracestate is dropped (it is free text); its ids are kept.
// Attempts are recorded in dispatch order whatever order they finished in.
func TestStartKeepsOnlyIDs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := NewWithProcessor(rec, 1)
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("tracestate", "vendor=CANARY-free-text")
	now := time.Now()
	r := request(now)
	as := r.Result.Attempts
	as[0], as[1] = as[1], as[0] // recorded as they finished: the hedge first
	r.Result.Served = 1
	sp := tr.Start(t.Context(), h, now, "chat", "POST", "/v1/chat/completions")
	tr.End(sp, r, now.Add(time.Second))
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		if s.SpanContext().TraceState().Len() != 0 || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("%s: trace %s, state %q", s.Name(), s.SpanContext().TraceID(), s.SpanContext().TraceState())
		}
	}
	if spans[0].StartTime().After(spans[1].StartTime()) {
		t.Errorf("attempt spans out of dispatch order: %v then %v", spans[0].StartTime(), spans[1].StartTime())
	}
}
