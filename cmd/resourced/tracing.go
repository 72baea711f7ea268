package main

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/internal/telemetry"
)

// tracingConfig is the tracing: section as internal/telemetry takes it.
func tracingConfig(cfg *config.Config) telemetry.Config {
	t := cfg.Tracing
	return telemetry.Config{Enabled: t.Enabled, Endpoint: t.Endpoint, SampleRatio: *t.SampleRatio, ServiceName: t.ServiceName}
}

// startTracing turns OpenTelemetry tracing on when the tracing: section
// or the OTEL_* environment asks for it (docs/operations.md, "Tracing"),
// and returns what flushes the spans still buffered at exit (within 5 s:
// a collector that is down does not hold up a shutdown).
func startTracing(ctx context.Context, cfg *config.Config, log *slog.Logger) (func(), error) {
	// The SDK's own complaints (a collector that is down, a bad
	// OTEL_TRACES_SAMPLER) as log lines of ours, not bare lines on stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	shutdown, on, err := telemetry.Setup(ctx, tracingConfig(cfg), version)
	if err != nil {
		return nil, err
	}
	if on {
		log.Info("tracing on", "exporter", "otlp/http")
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "err", err)
		}
	}, nil
}
