package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/service"
)

// An Extension adds a mode to the server: the gateway (gateway.Front,
// docs/gateway.md) is one. The server asks it at the points below and
// knows nothing else of it (package server does not import gateway):
//   - Middleware runs between observe and intercept (receiving);
//   - ScopeFor is the scope of the methods it answers (authhttp.go);
//   - OwnsURI: reads of those URIs are its own, the fast path leaves them;
//   - OwnsTool: calls of those tools are its own, the fast call path runs
//     them through Middleware (callpath.go);
//   - KeepsTool: which of the server's own tools stay listed;
//   - Capabilities: what it declares beyond the server's;
//   - Ready and Upstreams: its lines of /readyz;
//   - Track and Cancel: calls it proxies, cancelled by the caller's
//     stateless notifications/cancelled or the end of their request
//     (extensionStage).
type Extension interface {
	Middleware(next mcp.MethodHandler) mcp.MethodHandler
	ScopeFor(method string) string
	OwnsURI(uri string) bool
	OwnsTool(name string) bool
	KeepsTool(name string) bool
	Capabilities(c *mcp.ServerCapabilities)
	Ready(ctx context.Context) (status map[string]error, required map[string]bool)
	Upstreams() []string
	Track(ctx context.Context, tenant string, id []byte) (context.Context, func())
	Cancel(tenant string, id []byte) bool
}

// ExtensionDeps are what the server hands an Extension it builds.
type ExtensionDeps struct {
	Service *service.Service
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	// RenderFailure is how every tool of the server renders a failure.
	RenderFailure func(*service.Failure) *mcp.CallToolResult
	// Schemes are the configured schemes: their URIs are the server's.
	Schemes []string
}

// extensionStage runs after authenticate with an extension. It tracks every
// tools/call it passes on, so a caller's stateless notifications/cancelled
// POST (and the end of the call's own HTTP request) cancels the upstream
// call; and it sends a tools/call that carries a progressToken, from a
// client that accepts an event stream, to sse: go-sdk's handler without
// JSONResponse, whose response stream carries the progress notifications
// before the result. Everything else goes to next (the read stage and
// go-sdk's JSON handler).
func (s *Server) extensionStage(next, sse http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := mcpRequestOf(r.Context())
		p, ok := auth.FromContext(r.Context())
		if req == nil || !ok {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		for _, m := range req.msgs {
			switch {
			case m.Method == "notifications/cancelled" && !m.HasID:
				if id := memberOf(m.Params, "requestId"); id != nil {
					s.ext.Cancel(p.Tenant, id)
				}
			case m.Method == "tools/call" && m.HasID:
				var done func()
				ctx, done = s.ext.Track(ctx, p.Tenant, m.ID)
				defer done()
			}
		}
		r = r.WithContext(ctx)
		if len(req.msgs) == 1 && req.msgs[0].Method == "tools/call" && hasProgressToken(req.msgs[0].Params) && acceptsEventStream(r) {
			// The stream carries progress for as long as the call runs:
			// each write gets the write grace, not the response as a whole.
			edge.StreamResponse(w)
			sse.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// memberOf is the raw value of member name of the JSON object obj, or nil.
func memberOf(obj []byte, name string) []byte {
	var v []byte
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	_ = jsonwire.Members(obj, func(n string, val []byte) error {
		if n == name {
			v = val
		}
		return nil
	})
	return v
}

// hasProgressToken reports whether tools/call params carry
// _meta.progressToken (a string or a number).
func hasProgressToken(params []byte) bool {
	tok := memberOf(memberOf(params, "_meta"), "progressToken")
	return len(tok) > 0 && string(tok) != "null"
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// extensionReady adds the upstreams to /readyz: a required upstream that
// cannot be reached fails it (the body names it), an optional one is only
// reported. The reasons go to the log, not the body.
func (s *Server) extensionReady(ctx context.Context) (lines []string, ok bool) {
	status, required := s.ext.Ready(ctx)
	ok = true
	for _, n := range s.ext.Upstreams() {
		err := status[n]
		switch {
		case err == nil:
			lines = append(lines, fmt.Sprintf("upstream %s: ready", n))
		case required[n]:
			ok = false
			s.log.Error("required upstream unavailable", "upstream", n, "err", err)
			lines = append(lines, fmt.Sprintf("upstream %s: unavailable (required)", n))
		default:
			s.log.Warn("optional upstream unavailable", "upstream", n, "err", err)
			lines = append(lines, fmt.Sprintf("upstream %s: unavailable (optional)", n))
		}
	}
	return lines, ok
}
