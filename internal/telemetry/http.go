package telemetry

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// routes are the http.route of resourced's paths: a path's own text is
// never recorded (a blob path carries a signed link, an upload path a
// tenant's resource name).
var routes = []struct{ prefix, route string }{
	{"/mcp", "/mcp"},
	{"/v1/resources/", "/v1/resources/{uri}"},
	{"/v1/blobs/", "/v1/blobs/{link}"},
	{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource"},
	{"/register", "/register"},
	{"/healthz", "/healthz"},
	{"/readyz", "/readyz"},
	{"/metrics", "/metrics"},
	{"/fixtures/runs", "/fixtures/runs"},
}

// route is path's http.route; "" when resourced serves no such route.
func route(path string) string {
	for _, r := range routes {
		if path == r.prefix || strings.HasSuffix(r.prefix, "/") && strings.HasPrefix(path, r.prefix) {
			return r.route
		}
	}
	if strings.HasPrefix(path, "/fixtures/runs/") || strings.HasPrefix(path, "/mcp/runs/") {
		return "/fixtures/runs/{id}"
	}
	return ""
}

// Handler wraps next in the server span of each HTTP request, parented by
// the request's traceparent header: "METHOD route", with the method, the
// route and the MCP protocol version; the status comes from SetStatus. next itself when
// tracing is off.
func Handler(next http.Handler) http.Handler {
	if !On() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		rt := route(r.URL.Path)
		name := r.Method
		kv := []attribute.KeyValue{attribute.String("http.request.method", r.Method)}
		if rt != "" {
			name += " " + rt
			kv = append(kv, attribute.String("http.route", rt))
		}
		ctx, sp := start(ctx, name, trace.SpanKindServer, trace.SpanContext{}, kv...)
		defer sp.End()
		st := &httpState{span: sp.s, version: r.Header.Get("MCP-Protocol-Version")}
		if st.version != "" {
			sp.Set(attribute.String("mcp.protocol.version", st.version))
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, stateKey{}, st)))
	})
}

// SetStatus records an HTTP request's response status on its span (the
// request log's writer knows it), failed from 500 on.
func SetStatus(ctx context.Context, code int) {
	if !On() {
		return
	}
	if st := stateOf(ctx); st != nil {
		sp := Span{st.span}
		sp.Set(attribute.Int("http.response.status_code", code))
		if code >= 500 {
			sp.Fail(statusClass(code))
		}
	}
}

// Transport sets traceparent and tracestate on each request base sends
// (an HTTP upstream's): the span in the request's context, the upstream
// call's. base itself when tracing is off.
func Transport(base http.RoundTripper) http.RoundTripper {
	if !On() {
		return base
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		return base.RoundTrip(inject(req))
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// inject is req with ctx's trace context in its headers (a clone: a
// RoundTripper must not change its request).
func inject(req *http.Request) *http.Request {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return req
	}
	r := req.Clone(req.Context())
	propagator.Inject(req.Context(), propagation.HeaderCarrier(r.Header))
	return r
}

// Doer is an HTTP client as the AWS SDK takes one (aws.HTTPClient).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

type doer func(*http.Request) (*http.Response, error)

func (f doer) Do(r *http.Request) (*http.Response, error) { return f(r) }

// Client wraps an S3 client's HTTP client: each request is a client span
// "S3 operation" (operation names it, e.g. from the SDK's context; "" falls
// back to the HTTP method) with the method, the service's address and the
// status, and carries traceparent and tracestate. The URL's path (bucket
// and key: a tenant's resource name) and query are not recorded. Unsigned
// headers: SigV4 signs the headers it lists, so adding these after
// signing leaves the signature valid. c itself when tracing is off.
func Client(c Doer, operation func(*http.Request) string) Doer {
	if !On() {
		return c
	}
	return doer(func(req *http.Request) (*http.Response, error) {
		op := req.Method
		if operation != nil {
			if o := operation(req); o != "" {
				op = o
			}
		}
		kv := []attribute.KeyValue{attribute.String("http.request.method", req.Method), attribute.String("rpc.system", "aws-api"),
			attribute.String("rpc.service", "S3"), attribute.String("rpc.method", op)}
		if host, port, err := net.SplitHostPort(req.URL.Host); err == nil {
			n, _ := strconv.Atoi(port)
			kv = append(kv, attribute.String("server.address", host), attribute.Int("server.port", n))
		} else {
			kv = append(kv, attribute.String("server.address", req.URL.Host))
		}
		ctx, sp := start(req.Context(), "S3 "+op, trace.SpanKindClient, trace.SpanContext{}, kv...)
		defer sp.End()
		resp, err := c.Do(inject(req.WithContext(ctx)))
		switch {
		case err != nil:
			sp.Fail("transport")
		default:
			sp.Set(attribute.Int("http.response.status_code", resp.StatusCode))
			if resp.StatusCode >= 500 {
				sp.Fail(statusClass(resp.StatusCode))
			}
		}
		return resp, err
	})
}
