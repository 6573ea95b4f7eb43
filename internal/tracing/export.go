package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Options are what New needs besides the config.
type Options struct {
	// Getenv resolves HeadersEnv (default: nothing is set).
	Getenv func(string) string
	// Version is the resource's service.version ("" leaves it out).
	Version string
	// Log receives the exporter's errors (a collector that is down),
	// at most one a minute; default: discarded.
	Log *slog.Logger
}

// New returns the Tracer the config asks for: nil, with no error, when
// tracing is off. Spans are exported in batches from a bounded queue on
// a goroutine of their own; a request never waits for the collector, and
// a full queue drops spans rather than blocking.
func New(ctx context.Context, cfg *catalog.Traces, o Options) (*Tracer, error) {
	if !cfg.On() {
		return nil, nil
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	headers, err := exportHeaders(cfg.HeadersEnv, o.Getenv)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout.D()
	if timeout <= 0 {
		timeout = catalog.DefaultTraceTimeout
	}
	var exp sdktrace.SpanExporter
	switch cfg.Exporter {
	case catalog.TraceExporterOTLPHTTP:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(httpTracesURL(cfg.Endpoint)),
			otlptracehttp.WithHeaders(headers), otlptracehttp.WithTimeout(timeout))
	case catalog.TraceExporterOTLPGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint),
			otlptracegrpc.WithHeaders(headers), otlptracegrpc.WithTimeout(timeout))
	default:
		return nil, fmt.Errorf("telemetry.traces.exporter: %q is not none, otlp_http or otlp_grpc", cfg.Exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: starting the %s exporter: %w", cfg.Exporter, err)
	}
	queue := cfg.QueueSize
	if queue <= 0 {
		queue = catalog.DefaultTraceQueueSize
	}
	name := cfg.ServiceName
	if name == "" {
		name = catalog.DefaultTraceServiceName
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	otel.SetErrorHandler(&errorLog{log: o.Log})
	bsp := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithMaxQueueSize(queue),
		sdktrace.WithMaxExportBatchSize(min(512, queue)), sdktrace.WithBatchTimeout(5*time.Second),
		sdktrace.WithExportTimeout(timeout))
	return NewWithProcessor(bsp, cfg.SampleRatio(),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...))), nil
}

// httpTracesURL is the OTLP/HTTP traces URL of an endpoint: the path
// /v1/traces when the endpoint names none.
func httpTracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || strings.Trim(u.Path, "/") != "" {
		return endpoint
	}
	u.Path = "/v1/traces"
	return u.String()
}

// exportHeaders reads the export headers from the variable named env, in
// OTEL_EXPORTER_OTLP_HEADERS' format ("k1=v1,k2=v2", values URL-encoded).
// An error names the variable, never its value.
func exportHeaders(env string, getenv func(string) string) (map[string]string, error) {
	if env == "" {
		return nil, nil
	}
	v := ""
	if getenv != nil {
		v = getenv(env)
	}
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("telemetry.traces.headers_env: the environment variable %s is not set (it holds the export headers, as key=value,key=value)", env)
	}
	h := map[string]string{}
	for i, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		dec, err := url.QueryUnescape(strings.TrimSpace(val))
		if !ok || k == "" || err != nil {
			return nil, fmt.Errorf("telemetry.traces.headers_env: entry %d of %s is not key=value (its value is not shown)", i+1, env)
		}
		h[k] = dec
	}
	return h, nil
}

// errorLog logs the SDK's errors (an unreachable collector, a full queue)
// at most once a minute, so a collector that is down costs a line a
// minute, not one per batch.
type errorLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	last time.Time
}

func (e *errorLog) Handle(err error) {
	now := time.Now()
	e.mu.Lock()
	quiet := !e.last.IsZero() && now.Sub(e.last) < time.Minute
	if !quiet {
		e.last = now
	}
	e.mu.Unlock()
	if quiet {
		return
	}
	e.log.Warn("tracing: exporting spans failed; spans are dropped until the collector answers", "err", err)
}
