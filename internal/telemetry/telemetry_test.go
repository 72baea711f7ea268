package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestOffCostsNothing: with tracing off, every hook the fast read and the
// store run allocates nothing and the HTTP wrappers are what they wrap.
func TestOffCostsNothing(t *testing.T) {
	Use(nil)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		// (server's traceFast reads the _meta only when On.)
		c, sp := StartMCP(ctx, "resources/read", "", "", "")
		c, st := StartStore(c, "view", "acme", "report")
		SetTenant(c, "acme")
		Fail(c, "x")
		st.Fail("not_found")
		st.End()
		sp.End()
		_ = InjectMeta(c, nil)
	})
	if allocs != 0 {
		t.Errorf("tracing off: %v allocations per request's hooks, want 0", allocs)
	}
	var h http.Handler = plain{}
	if Handler(h) != h {
		t.Error("Handler wraps its handler with tracing off")
	}
	var rt http.RoundTripper = http.DefaultTransport
	if Transport(rt) != rt {
		t.Error("Transport wraps its transport with tracing off")
	}
}

type plain struct{}

func (plain) ServeHTTP(http.ResponseWriter, *http.Request) {}

// BenchmarkStartOff is the cost of a span with tracing off.
func BenchmarkStartOff(b *testing.B) {
	Use(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, sp := StartStore(ctx, "view", "acme", "report")
		_ = c
		sp.End()
	}
}

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		enabled bool
		env     map[string]string
		want    bool
	}{
		{false, nil, false},
		{true, nil, true},
		{false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{false, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{false, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{true, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{true, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
	} {
		if got := Wanted(Config{Enabled: c.enabled}, func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("enabled %v, env %v: on %v, want %v", c.enabled, c.env, got, c.want)
		}
	}
}

// TestSpansRecordNoPath: the HTTP span names a route, never the path or
// query (a signed link, a resource name); the MCP span takes its parent
// from _meta and links the HTTP request's; InjectMeta replaces a caller's
// traceparent with the current span's.
func TestSpansRecordNoPath(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	Use(tp)
	defer Use(nil)
	var meta map[string]any
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetTenant(r.Context(), "acme")
		ctx, sp := StartMCP(r.Context(), "tools/call", "fetch", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v")
		meta = InjectMeta(ctx, map[string]any{"traceparent": "caller's", "other": 1})
		sp.End()
		w.WriteHeader(http.StatusTeapot)
		SetStatus(r.Context(), http.StatusTeapot)
	}))
	req := httptest.NewRequest("GET", "/v1/blobs/SECRET-LINK?sig=SECRET-SIG", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	mcpSpan, httpSpan := spans[0], spans[1]
	if httpSpan.Name != "GET /v1/blobs/{link}" || httpSpan.Parent.SpanID().String() != "00f067aa0ba902b7" ||
		!slices.ContainsFunc(httpSpan.Attributes, func(kv attribute.KeyValue) bool {
			return kv.Key == "http.response.status_code" && kv.Value.AsInt64() == 418
		}) {
		t.Errorf("HTTP span %q with parent %s", httpSpan.Name, httpSpan.Parent.SpanID())
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "SECRET") {
				t.Errorf("%s records %s=%s", s.Name, kv.Key, kv.Value.String())
			}
		}
	}
	if mcpSpan.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || len(mcpSpan.Links) != 1 ||
		mcpSpan.Links[0].SpanContext.SpanID() != httpSpan.SpanContext.SpanID() {
		t.Errorf("MCP span: parent %v, links %v; want the _meta parent and a link to the HTTP span", mcpSpan.Parent, mcpSpan.Links)
	}
	want := "00-" + mcpSpan.SpanContext.TraceID().String() + "-" + mcpSpan.SpanContext.SpanID().String() + "-01"
	if meta["traceparent"] != want || meta["tracestate"] != "k=v" || meta["other"] != 1 {
		t.Errorf("InjectMeta gave %v, want traceparent %s, the tracestate and the other key kept", meta, want)
	}
	// An S3 request: a client span under the caller's, the traceparent
	// in the request's headers, no path or query recorded.
	exp.Reset()
	ctx, parent := StartStore(context.Background(), "put", "acme", "report")
	var sent http.Header
	c := Client(doer(func(r *http.Request) (*http.Response, error) {
		sent = r.Header
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}), func(*http.Request) string { return "PutObject" })
	req, _ = http.NewRequestWithContext(ctx, "PUT", "http://s3.local:9000/bucket/SECRET-KEY?X-Amz-Signature=SECRET", nil)
	if _, err := c.Do(req); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans = exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "S3 PutObject" || spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() {
		t.Fatalf("spans %v", spans)
	}
	if want := "00-" + spans[0].SpanContext.TraceID().String() + "-" + spans[0].SpanContext.SpanID().String() + "-01"; sent.Get("traceparent") != want {
		t.Errorf("S3 got traceparent %q, want %q", sent.Get("traceparent"), want)
	}
	for _, kv := range spans[0].Attributes {
		if strings.Contains(kv.Value.String(), "SECRET") {
			t.Errorf("S3 span records %s=%s", kv.Key, kv.Value.String())
		}
	}
	if req.Header.Get("traceparent") != "" {
		t.Error("Client changed its caller's request")
	}
	if s := MetaString([]byte(`"a\"b"`)); s != "" {
		t.Errorf("MetaString of an escaped raw string = %q, want \"\"", s)
	}
}
