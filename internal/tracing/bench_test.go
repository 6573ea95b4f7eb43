package tracing

import (
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkRequestSpans is the cost tracing adds to one request of two
// attempts: the request span and its two attempt spans, into a batcher
// whose exporter discards them.
func BenchmarkRequestSpans(b *testing.B) {
	tr := NewWithProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter()), 1)
	defer tr.Shutdown(b.Context())
	h := http.Header{}
	now := time.Now()
	r := request(now)
	b.ReportAllocs()
	for b.Loop() {
		sp := tr.Start(b.Context(), h, now, "chat", "POST", "/v1/chat/completions")
		tr.End(sp, r, now.Add(time.Second))
	}
}
