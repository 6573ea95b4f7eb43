package catalog

import (
	"math"
	"net/url"
	"time"
)

// Telemetry configures what the gateway exports besides /metrics. It is
// read at start-up only; a reload does not change it.
type Telemetry struct {
	// Traces exports OpenTelemetry traces. Zero (the default): off.
	Traces Traces `yaml:"traces,omitempty"`
}

// Traces exports one span per customer request and one child span per
// attempt over OTLP. Spans carry no content: model names, deployment ids,
// verdicts, token counts and costs, never prompt or answer text.
type Traces struct {
	// Exporter is "none" (the default, also when empty: no tracing, and
	// nothing allocated for it per request), "otlp_http" or "otlp_grpc".
	Exporter string `yaml:"exporter,omitempty"`
	// Endpoint is the collector's URL. Default http://localhost:4318 for
	// otlp_http (the path /v1/traces is added when the URL has none) and
	// http://localhost:4317 for otlp_grpc; an http:// URL is sent in
	// plain text, https:// over TLS. It must not carry credentials: name
	// them in HeadersEnv.
	Endpoint string `yaml:"endpoint,omitempty"`
	// Sample is the share of traces started here that are recorded, 0 to
	// 1. A caller's traceparent decides for its own trace: sampled there,
	// recorded here. Default (unset) 1; 0 records only the traces callers
	// sampled.
	Sample *float64 `yaml:"sample,omitempty"`
	// HeadersEnv names the environment variable holding the headers sent
	// with every export (e.g. the collector's API key), written as
	// OTEL_EXPORTER_OTLP_HEADERS is: "key1=value1,key2=value2", values
	// URL-encoded. The secret itself never sits in the file. Empty: none.
	HeadersEnv string `yaml:"headers_env,omitempty"`
	// ServiceName is the resource's service.name. Default "spillway".
	ServiceName string `yaml:"service_name,omitempty"`
	// Timeout bounds one export. Default 10s; at most 1m.
	Timeout Duration `yaml:"timeout,omitempty"`
	// QueueSize bounds the finished spans waiting for export; past it
	// spans are dropped, never waited for. Default 2048; at most 1048576.
	QueueSize int `yaml:"queue_size,omitempty"`
}

// Traces.Exporter values.
const (
	TraceExporterNone     = "none"
	TraceExporterOTLPHTTP = "otlp_http"
	TraceExporterOTLPGRPC = "otlp_grpc"
)

// Defaults and bounds of tracing.
const (
	DefaultTraceEndpointHTTP = "http://localhost:4318"
	DefaultTraceEndpointGRPC = "http://localhost:4317"
	DefaultTraceServiceName  = "spillway"
	DefaultTraceTimeout      = 10 * time.Second
	MaxTraceTimeout          = time.Minute
	DefaultTraceQueueSize    = 2048
	MaxTraceQueueSize        = 1 << 20
)

// On reports whether traces are exported.
func (t *Traces) On() bool { return t.Exporter != "" && t.Exporter != TraceExporterNone }

// SampleRatio is the configured share of traces recorded (1 when unset).
func (t *Traces) SampleRatio() float64 {
	if t.Sample == nil {
		return 1
	}
	return *t.Sample
}

// applyTelemetryDefaults fills the defaults of an exporter that is on;
// tracing that is off keeps its zero value, so the served config shows
// nothing for it.
func (c *Config) applyTelemetryDefaults() {
	t := &c.Telemetry.Traces
	if !t.On() {
		return
	}
	switch t.Exporter {
	case TraceExporterOTLPHTTP:
		setDefault(&t.Endpoint, DefaultTraceEndpointHTTP)
	case TraceExporterOTLPGRPC:
		setDefault(&t.Endpoint, DefaultTraceEndpointGRPC)
	}
	setDefault(&t.ServiceName, DefaultTraceServiceName)
	setDefault(&t.Timeout, Duration(DefaultTraceTimeout))
	setDefault(&t.QueueSize, DefaultTraceQueueSize)
}

// validateTelemetry checks the exporter, its endpoint and its bounds.
func (c *Config) validateTelemetry(p *problems) {
	t := &c.Telemetry.Traces
	const at = "telemetry.traces"
	switch t.Exporter {
	case "", TraceExporterNone, TraceExporterOTLPHTTP, TraceExporterOTLPGRPC:
	default:
		p.add(at+".exporter", 0, "%q is not none, otlp_http or otlp_grpc", t.Exporter)
	}
	if s := t.Sample; s != nil && (!(*s >= 0 && *s <= 1) || math.IsNaN(*s)) {
		p.add(at+".sample", 0, "%v is outside 0..1 (the share of traces recorded)", *s)
	}
	if t.HeadersEnv != "" && !envVarRE.MatchString(t.HeadersEnv) {
		p.add(at+".headers_env", 0, "%s is not an environment variable name: put the NAME of the variable holding the headers here, never the headers", notShown(t.HeadersEnv))
	}
	if t.Endpoint != "" {
		if msg := checkTraceEndpoint(t.Endpoint); msg != "" {
			p.add(at+".endpoint", 0, "%s", msg)
		}
	}
	if d := t.Timeout.D(); d < 0 || d > MaxTraceTimeout {
		p.add(at+".timeout", 0, "%s is outside 0..1m", d)
	}
	if n := t.QueueSize; n < 0 || n > MaxTraceQueueSize {
		p.add(at+".queue_size", 0, "%d is outside 1..%d", n, MaxTraceQueueSize)
	}
}

// telemetryWarnings warns about tracing settings that do nothing.
func (c *Config) telemetryWarnings(p *problems) {
	if t := &c.Telemetry.Traces; !t.On() && (t.Endpoint != "" || t.HeadersEnv != "" || t.Sample != nil) {
		p.add("telemetry.traces", 0, "set, but the exporter is none: no traces are exported (exporter: otlp_http or otlp_grpc turns them on)")
	}
}

// checkTraceEndpoint says what is wrong with a collector URL ("" when
// nothing is).
func checkTraceEndpoint(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL (want e.g. http://collector:4318)"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an absolute http:// or https:// URL (e.g. http://collector:4318)"
	case u.Host == "":
		return "has no host"
	case u.User != nil:
		return u.Redacted() + " carries credentials; name the variable holding them in headers_env"
	case u.RawQuery != "" || u.Fragment != "":
		return "must have no query or fragment"
	}
	return ""
}
