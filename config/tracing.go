package config

import (
	"net/url"
	"strings"
)

// Tracing exports OpenTelemetry traces over OTLP/HTTP (docs/operations.md,
// "Tracing"). The standard OTEL_* environment variables configure the
// exporter too and win over these keys.
type Tracing struct {
	// Enabled turns tracing on (default off; OTEL_TRACES_EXPORTER=otlp or
	// an OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT turns it on as well, and
	// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none off).
	Enabled bool `yaml:"enabled"`
	// Endpoint is the collector's OTLP/HTTP base URL; /v1/traces is
	// appended. Default: OTEL_EXPORTER_OTLP_ENDPOINT, else
	// http://localhost:4318.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of traces started here that are recorded
	// (a caller's sampled flag is followed); default 1, and
	// OTEL_TRACES_SAMPLER overrides it.
	SampleRatio *float64 `yaml:"sampleRatio"`
	// ServiceName is service.name (default resourced; OTEL_SERVICE_NAME
	// overrides it).
	ServiceName string `yaml:"serviceName"`
}

func (c *Config) applyTracingDefaults() {
	if c.Tracing.SampleRatio == nil {
		one := 1.0
		c.Tracing.SampleRatio = &one
	}
	if c.Tracing.ServiceName == "" {
		c.Tracing.ServiceName = "resourced"
	}
}

// validateTracing checks the tracing section.
func (c *Config) validateTracing(p *problems) {
	t := &c.Tracing
	if r := *t.SampleRatio; !(r >= 0 && r <= 1) {
		p.bad("tracing.sampleRatio", "want a number from 0 to 1, got %v", r)
	}
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			p.bad("tracing.endpoint", "want the collector's OTLP/HTTP base URL, http:// or https:// with a host, e.g. http://localhost:4318")
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			p.bad("tracing.endpoint", "must not carry a user, query or fragment: put credentials in OTEL_EXPORTER_OTLP_HEADERS")
		}
	}
	if strings.TrimSpace(t.ServiceName) != t.ServiceName || strings.ContainsFunc(t.ServiceName, func(r rune) bool { return r < ' ' }) {
		p.bad("tracing.serviceName", "want a name without surrounding spaces or control characters, got %q", t.ServiceName)
	}
}
