// Package telemetry is resourced's OpenTelemetry tracing: the tracer
// provider and its OTLP/HTTP exporter (Setup), and the spans every layer
// starts through it: the HTTP request (Handler), the MCP method (StartMCP),
// the store call (StartStore), each S3 request (Client) and each gateway
// upstream call (StartUpstream), with W3C trace context taken from HTTP
// headers and params._meta and passed on in both.
//
// Tracing is off unless Setup or Use turned it on. Off, every function
// here returns at one atomic load, allocating nothing, and Handler,
// Transport and Client return what they were given: the fast read pays
// nothing (BenchmarkStartOff). What the spans record, and what they never
// do (a body, a token, a resource path, a full URL): docs/decisions.md,
// "What a span records".
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of every span.
const scopeName = "github.com/resourced/resourced"

// tracer is the tracer while tracing is on; nil: off.
var tracer atomic.Pointer[trace.Tracer]

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// On reports whether tracing is on.
func On() bool { return tracer.Load() != nil }

// Use turns tracing on with tp, or off with nil. Setup calls it; tests
// call it with a provider of their own.
func Use(tp trace.TracerProvider) {
	if tp == nil {
		tracer.Store(nil)
		return
	}
	t := tp.Tracer(scopeName)
	tracer.Store(&t)
}

// Config is the tracing: section of the configuration.
type Config struct {
	// Enabled turns tracing on; the OTEL_* environment can too (Setup).
	Enabled bool
	// Endpoint is the OTLP/HTTP base URL ("/v1/traces" is appended), as
	// OTEL_EXPORTER_OTLP_ENDPOINT; "": the environment's, else
	// http://localhost:4318.
	Endpoint string
	// SampleRatio is the share of new traces recorded (parent-based: a
	// caller's sampled flag is followed), in [0, 1].
	SampleRatio float64
	// ServiceName is service.name unless OTEL_SERVICE_NAME says otherwise.
	ServiceName string
}

// Wanted reports whether tracing is to be on: the config enables it, or
// OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint variable is set; and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says off.
func Wanted(c Config, getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return c.Enabled || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup turns tracing on when Wanted says so: an OTLP/HTTP exporter (the
// OTEL_EXPORTER_OTLP_* environment, else c.Endpoint), a batch processor
// (OTEL_BSP_*), the sampler (OTEL_TRACES_SAMPLER, else parent-based
// c.SampleRatio) and the resource (OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES over c.ServiceName and version). It returns
// the shutdown that flushes what is buffered (a no-op when off) and
// whether tracing is on. The exporter connects lazily: a collector that
// is down costs dropped spans, never a failed start.
func Setup(ctx context.Context, c Config, version string) (shutdown func(context.Context) error, on bool, err error) {
	none := func(context.Context) error { return nil }
	if !Wanted(c, os.Getenv) {
		return none, false, nil
	}
	var opts []otlptracehttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && c.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(c.Endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return none, false, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", c.ServiceName), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return none, false, fmt.Errorf("tracing: the resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	Use(tp)
	return func(ctx context.Context) error {
		Use(nil)
		return tp.Shutdown(ctx)
	}, true, nil
}

// Span is a started span; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// Recording reports whether sp is a span (tracing was on).
func (sp Span) Recording() bool { return sp.s != nil }

// End ends the span.
func (sp Span) End() {
	if sp.s != nil {
		sp.s.End()
	}
}

// Fail marks the span failed with kind as error.type: a class (an HTTP
// status, a JSON-RPC code, a failure kind), never an error's text, which
// can hold a URI or a caller's value.
func (sp Span) Fail(kind string) {
	if sp.s != nil {
		sp.s.SetAttributes(attribute.String("error.type", kind))
		sp.s.SetStatus(codes.Error, kind)
	}
}

// Set adds attributes to the span.
func (sp Span) Set(kv ...attribute.KeyValue) {
	if sp.s != nil {
		sp.s.SetAttributes(kv...)
	}
}

// Fail fails the span in ctx with kind as error.type (Span.Fail), when
// tracing is on.
func Fail(ctx context.Context, kind string) {
	if On() {
		Span{trace.SpanFromContext(ctx)}.Fail(kind)
	}
}

// start starts a span under ctx's (or parent, when valid), linked to
// ctx's span when parent replaces it.
func start(ctx context.Context, name string, kind trace.SpanKind, parent trace.SpanContext, kv ...attribute.KeyValue) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, Span{}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(kv...)}
	if parent.IsValid() {
		if local := trace.SpanContextFromContext(ctx); local.IsValid() && local.TraceID() != parent.TraceID() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: local}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, s := (*t).Start(ctx, name, opts...)
	return ctx, Span{s}
}

// StartStore starts the span of one store call: op (view, put, delete,
// list, ...) on a tenant's scheme. The path is not recorded.
func StartStore(ctx context.Context, op, tenant, scheme string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	kv := []attribute.KeyValue{attribute.String("resourced.store.operation", op)}
	if tenant != "" {
		kv = append(kv, attribute.String("resourced.tenant", tenant), attribute.String("resourced.scheme", scheme))
	}
	return start(ctx, "store "+op, trace.SpanKindInternal, trace.SpanContext{}, kv...)
}

// remote is the span context of a W3C traceparent and tracestate; not
// valid when traceparent is not one.
func remote(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
}

// InjectMeta sets traceparent and tracestate in an MCP request's _meta
// (m, which the caller owns) to ctx's span, as the OpenTelemetry MCP
// conventions propagate it; a traceparent a caller sent is replaced. m is
// returned unchanged when tracing is off; a nil m gets a new map.
func InjectMeta(ctx context.Context, m map[string]any) map[string]any {
	if !On() {
		return m
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "traceparent")
	delete(m, "tracestate")
	for k, v := range c {
		m[k] = v
	}
	return m
}

// MetaString is the string a _meta value holds, "" when it is none: a
// decoded value (go-sdk's map) or a raw JSON string without escapes (the
// fast paths' walk).
func MetaString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.ContainsRune(string(s[1:len(s)-1]), '\\') {
			return string(s[1 : len(s)-1])
		}
	}
	return ""
}

// StartMCP starts the server span of one MCP request: "method" or
// "tools/call tool", with mcp.method.name, mcp.protocol.version (the
// request's header) and, for tools/call, gen_ai.tool.name and
// gen_ai.operation.name. A valid params._meta traceparent (and
// tracestate) is its parent, the HTTP request's span a link; without one
// the HTTP request's span is. Resource URIs are not recorded.
func StartMCP(ctx context.Context, method, tool, traceparent, tracestate string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	method, tool = ClipName(method), ClipName(tool)
	name := method
	kv := make([]attribute.KeyValue, 0, 5)
	kv = append(kv, attribute.String("mcp.method.name", method))
	if st := stateOf(ctx); st != nil {
		if st.version != "" {
			kv = append(kv, attribute.String("mcp.protocol.version", st.version))
		}
		if st.tenant != "" {
			kv = append(kv, attribute.String("resourced.tenant", st.tenant))
		}
	}
	if tool != "" {
		name += " " + tool
		kv = append(kv, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	return start(ctx, name, trace.SpanKindServer, remote(traceparent, tracestate), kv...)
}

// StartUpstream starts the client span of one gateway call to an upstream
// (the upstream's configured name and its own tool or prompt name).
// InjectMeta (and, for HTTP upstreams, Transport) pass it on.
func StartUpstream(ctx context.Context, upstream, method, target string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	name := method
	kv := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("resourced.upstream", upstream)}
	if target != "" && method == "tools/call" {
		name += " " + target
		kv = append(kv, attribute.String("gen_ai.tool.name", target), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	return start(ctx, name, trace.SpanKindClient, trace.SpanContext{}, kv...)
}

// httpState is what an HTTP request's span learns after it starts.
type httpState struct {
	span    trace.Span
	version string // the MCP-Protocol-Version header
	tenant  string
}

type stateKey struct{}

func stateOf(ctx context.Context) *httpState {
	st, _ := ctx.Value(stateKey{}).(*httpState)
	return st
}

// SetTenant records the authenticated caller's tenant on the HTTP request's
// span (and the MCP spans under it): a tenant id is an operator's
// account name, not tenant data (docs/decisions.md).
func SetTenant(ctx context.Context, tenant string) {
	if !On() || tenant == "" {
		return
	}
	if st := stateOf(ctx); st != nil {
		st.tenant = tenant
		st.span.SetAttributes(attribute.String("resourced.tenant", tenant))
	}
}

// statusClass is error.type for an HTTP status: its number, as the HTTP
// conventions say.
func statusClass(code int) string { return strconv.Itoa(code) }

// MaxName is how many bytes of a caller-chosen name (a method, a tool)
// ClipName keeps.
const MaxName = 128

// ClipName is a name a caller chose, as logs and spans record it: whole
// up to MaxName bytes, else cut at a rune boundary with "…" appended. A
// request of 33 MiB could name a tool of 33 MiB; the request line is one
// line per request, never a body.
func ClipName(s string) string {
	if len(s) <= MaxName {
		return s
	}
	n := MaxName
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
