package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/spillway-gw/spillway/internal/server"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// The ledger, the logs and every operator output are content-free: secret
// canaries planted in prompts, tool schemas and tool arguments, sent through
// successes, failovers, provider rejections, broken streams and replays,
// appear in none of them.
func TestCanariesPersistNowhere(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	h := newHarnessOpts(t, nil, func(o *server.Options) { o.Tracer = tracing.NewWithProcessor(spans, 1) },
		rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	canaries := []string{"CANARY-sys-5f2a91", "CANARY-user-77c0de", "CANARY-tool-03b1e8", "CANARY-args-9d44aa", "CANARY-idem-1c5e7f", "CANARY-tracestate-6e0b2d"}
	body := func(stream bool) string {
		s := "false"
		if stream {
			s = "true"
		}
		return `{"model":"` + publicModel + `","stream":` + s + `,"max_tokens":32,"messages":[` +
			`{"role":"system","content":"` + canaries[0] + `"},` +
			`{"role":"user","content":"` + canaries[1] + `"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"` + canaries[3] + `\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"` + canaries[1] + `"}],` +
			`"tools":[{"type":"function","function":{"name":"lookup","description":"` + canaries[2] + `","parameters":{"type":"object"}}}]}`
	}
	for _, fault := range []string{"", "status=529", "status=400", "die_after=2", "stall_after=1"} {
		h.fault("primary", fault)
		for _, stream := range []bool{false, true} {
			r := h.do(t, body(stream))
			_ = r
		}
	}
	h.fault("primary", "")
	for i := 0; i < 2; i++ { // an original and its replay
		h.do(t, body(true), "Idempotency-Key", canaries[4])
	}
	// A caller's trace context: its ids are kept, its tracestate is not.
	h.do(t, body(false), "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate", "vendor="+canaries[5])
	// Structured answers, streamed and not: the mock copies the schema's
	// enum value into its answer, so a canary travels in the answer
	// itself; quality signals keep the schema's field paths, never a value
	// or a description.
	answerCanary, schemaCanary := "CANARY-answer-4b7d19", "CANARY-schema-e81c02"
	for _, stream := range []bool{false, true} {
		r := h.do(t, `{"model":"`+publicModel+`","stream":`+fmt.Sprint(stream)+`,"max_tokens":64,"messages":[{"role":"user","content":"x"}],`+
			`"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","description":"`+schemaCanary+`",`+
			`"properties":{"kind":{"type":"string","enum":["`+answerCanary+`"]}},"required":["kind"]}}}}`)
		if !stream && !bytes.Contains(r.body, []byte(answerCanary)) || r.status != http.StatusOK {
			t.Fatalf("the structured answer did not carry its canary: %d %s", r.status, r.body)
		}
	}
	canaries = append(canaries, answerCanary, schemaCanary)
	// Settle everything and checkpoint, then read every byte the gateway keeps.
	_ = h.writer.Close(t.Context())
	var kept bytes.Buffer
	dir := filepath.Dir(h.dbPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		kept.Write(b)
	}
	if kept.Len() == 0 {
		t.Fatal("no ledger bytes read")
	}
	kept.WriteString(h.logs.String())
	waitSpans(t, spans, 13)
	// Every span the requests produced: names, attributes, events, status.
	if n := writeSpans(&kept, spans.Ended()); n < 20 {
		t.Fatalf("only %d spans recorded; the test would prove little", n)
	}
	for _, path := range []string{"/v1/admin/health", "/v1/admin/quality", "/v1/admin/budgets", "/v1/admin/keys", "/v1/usage?group_by=org,team,key,model,deployment,day", "/metrics",
		"/v1/admin/traffic", "/v1/admin/failures", "/ui", "/ui/app.js"} {
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/v1/admin/failures" && !bytes.Contains(b, []byte(`"verdict"`)) {
			t.Fatalf("the dashboard's failure trail is empty; the test would prove nothing: %s", b)
		}
		kept.Write(b)
	}
	if !strings.Contains(h.logs.String(), `"msg":"request"`) {
		t.Fatal("the log captured nothing; the test would prove nothing")
	}
	for _, c := range canaries {
		if bytes.Contains(kept.Bytes(), []byte(c)) {
			t.Errorf("canary %s was persisted", c)
		}
	}
	// The provider did see them: the canaries really travelled.
	seen := false
	for _, rq := range h.mocks["secondary"].Requests() {
		seen = seen || bytes.Contains(rq.Body, []byte(canaries[1]))
	}
	if !seen {
		t.Error("the canaries never reached a provider")
	}
}

// writeSpans writes everything a span exporter would send of spans.
func writeSpans(b *bytes.Buffer, spans []sdktrace.ReadOnlySpan) int {
	for _, s := range spans {
		fmt.Fprintf(b, "%s %v %s %v\n", s.Name(), s.Status(), s.Resource(), s.InstrumentationScope())
		for _, kv := range s.Attributes() {
			fmt.Fprintf(b, "%s=%s\n", kv.Key, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			fmt.Fprintf(b, "event %s\n", ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(b, "%s=%s\n", kv.Key, kv.Value.Emit())
			}
		}
	}
	return len(spans)
}

// waitSpans waits until n request spans have ended: a request's span
// ends after its response's last byte.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		got := 0
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d request spans ended, want %d", got, n)
		}
	}
}
