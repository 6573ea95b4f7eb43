package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// tracerFlush bounds how long stopping waits for the last spans to be
// exported: a collector that is down never holds up a shutdown longer.
const tracerFlush = 5 * time.Second

// openTracer starts the trace exporter telemetry.traces configures; nil
// when tracing is off (the default).
func openTracer(ctx context.Context, cfg *catalog.Config, log *slog.Logger) (*tracing.Tracer, error) {
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	t, err := tracing.New(ctx, &cfg.Telemetry.Traces, tracing.Options{Getenv: os.Getenv, Version: version, Log: log})
	if t != nil {
		tc := &cfg.Telemetry.Traces
		log.Info("exporting traces", "exporter", tc.Exporter, "endpoint", tc.Endpoint, "sample", tc.SampleRatio())
	}
	return t, err
}

// closeTracer exports the spans still buffered, for at most tracerFlush.
func closeTracer(t *tracing.Tracer, log *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracerFlush)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans still buffered at shutdown were dropped", "err", err)
	}
}
