package catalog

import (
	"strings"
	"testing"
	"time"
)

// Unhappy paths first: every way a tracing block is refused, each naming
// its field and line (the routeopts base config is 14 lines).
func TestTelemetryRefusals(t *testing.T) {
	tests := []struct {
		name, block string
		wants       []want
	}{
		{"unknown exporter", "telemetry: {traces: {exporter: jaeger}}\n", []want{{14, "telemetry.traces.exporter", `"jaeger" is not none, otlp_http or otlp_grpc`}}},
		{"sample above one", "telemetry: {traces: {exporter: otlp_http, sample: 1.5}}\n", []want{{14, "telemetry.traces.sample", "outside 0..1"}}},
		{"sample negative", "telemetry: {traces: {exporter: otlp_http, sample: -0.1}}\n", []want{{14, "telemetry.traces.sample", "outside 0..1"}}},
		{"sample not a number", "telemetry: {traces: {exporter: otlp_http, sample: .nan}}\n", []want{{14, "telemetry.traces.sample", "outside 0..1"}}},
		{"headers written in the file", "telemetry: {traces: {exporter: otlp_http, headers_env: \"api-key=s3cret\"}}\n",
			[]want{{14, "telemetry.traces.headers_env", "not an environment variable name"}}},
		{"credentials in the endpoint", "telemetry: {traces: {exporter: otlp_http, endpoint: \"https://user:pw@collector:4318\"}}\n",
			[]want{{14, "telemetry.traces.endpoint", "carries credentials; name the variable holding them in headers_env"}}},
		{"endpoint without a scheme", "telemetry: {traces: {exporter: otlp_grpc, endpoint: \"collector:4317\"}}\n",
			[]want{{14, "telemetry.traces.endpoint", "absolute http:// or https:// URL"}}},
		{"endpoint with a query", "telemetry: {traces: {exporter: otlp_http, endpoint: \"http://c:4318/v1/traces?x=1\"}}\n",
			[]want{{14, "telemetry.traces.endpoint", "no query"}}},
		{"timeout too long", "telemetry: {traces: {exporter: otlp_http, timeout: 5m}}\n", []want{{14, "telemetry.traces.timeout", "outside 0..1m"}}},
		{"queue too large", "telemetry: {traces: {exporter: otlp_http, queue_size: 2000000}}\n", []want{{14, "telemetry.traces.queue_size", "outside 1..1048576"}}},
		{"unknown key", "telemetry: {traces: {exporter: otlp_http, sampler: 0.5}}\n", []want{{14, "telemetry.traces.sampler", `did you mean "sample"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, optsBase+tc.block), tc.wants...)
		})
	}
}

// Off by default, and off shows nothing in the served config; an exporter
// that is on gets its endpoint, name, timeout and queue defaults.
func TestTelemetryDefaults(t *testing.T) {
	c, err := Parse([]byte(optsBase), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tr := c.Telemetry.Traces; tr.On() || tr != (Traces{}) {
		t.Errorf("tracing unset: %+v, want off and zero", tr)
	}
	for _, tc := range []struct {
		block, endpoint string
		sample          float64
	}{
		{"telemetry: {traces: {exporter: otlp_http}}\n", DefaultTraceEndpointHTTP, 1},
		{"telemetry: {traces: {exporter: otlp_grpc, sample: 0}}\n", DefaultTraceEndpointGRPC, 0},
		{"telemetry: {traces: {exporter: otlp_http, endpoint: \"https://otel.example:443/custom\", sample: 0.1, headers_env: OTLP_HEADERS}}\n", "https://otel.example:443/custom", 0.1},
	} {
		c, err := Parse([]byte(optsBase+tc.block), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.block, err)
		}
		tr := c.Telemetry.Traces
		if !tr.On() || tr.Endpoint != tc.endpoint || tr.SampleRatio() != tc.sample || tr.ServiceName != "spillway" ||
			tr.Timeout.D() != 10*time.Second || tr.QueueSize != DefaultTraceQueueSize {
			t.Errorf("%s: %+v (sample %v)", strings.TrimSpace(tc.block), tr, tr.SampleRatio())
		}
	}
}

// Settings that do nothing without an exporter are allowed, with a warning.
func TestTelemetryWarnings(t *testing.T) {
	c, errs, warns := Check([]byte(optsBase+"telemetry: {traces: {endpoint: \"http://c:4318\", sample: 0.5}}\n"), "w.yaml")
	if len(errs) != 0 || c == nil {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns, want{14, "telemetry.traces", "the exporter is none"})
}
