package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/gateway"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/mcptool"
)

// Gateway mode (docs/gateway.md): with Options.Gateway the server mounts
// a gateway.Front on its MCP server. The hooks elsewhere in package server
// are small and all name this file:
//   - server.go: New builds the Front, puts its middleware between
//     observe and intercept, declares completions, and mounts gatewayStage;
//   - tools.go: addTools registers only gatewayTools;
//   - authhttp.go: scopeFor asks resources:read for every tools/call,
//     prompts/get and completion/complete;
//   - readpath.go: fastRead leaves reads of upstream URIs to the Front;
//   - readyz: upstreams' readiness (gatewayReady).

// gatewayTools are resourced's tools listed in gateway mode: the read
// tools, for hosts that cannot read resources; the save, list and delete
// tools are not the gateway's business.
var gatewayTools = []string{"read_resource", "grep_resource", "query_resource"}

// newFront builds the Front of opts.Gateway.
func (s *Server) newFront(opts *gateway.FrontOptions) (*gateway.Front, error) {
	return gateway.NewFront(*opts, gateway.Deps{
		Service: s.svc, Logger: s.log, Metrics: s.metrics.reg,
		RenderFailure: mcptool.ErrorResult, Schemes: s.schemeNames(), OwnTools: gatewayTools,
	})
}

// gatewayStage runs after authenticate in gateway mode. It tracks every
// tools/call it passes on, so a caller's stateless notifications/cancelled
// POST (and the end of the call's own HTTP request) cancels the upstream
// call; and it sends a tools/call that carries a progressToken, from a
// client that accepts an event stream, to sse: go-sdk's handler without
// JSONResponse, whose response stream carries the progress notifications
// before the result. Everything else goes to next (the read stage and
// go-sdk's JSON handler).
func (s *Server) gatewayStage(next, sse http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := r.Context().Value(mcpRequestKey{}).(*mcpRequest)
		p, ok := auth.FromContext(r.Context())
		if req == nil || !ok {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		for _, m := range req.msgs {
			switch {
			case m.method == "notifications/cancelled" && !m.hasID:
				if id := memberOf(m.params, "requestId"); id != nil {
					s.gw.Cancel(p.Tenant, id)
				}
			case m.method == "tools/call" && m.hasID:
				var done func()
				ctx, done = s.gw.Track(ctx, p.Tenant, m.id)
				defer done()
			}
		}
		r = r.WithContext(ctx)
		if len(req.msgs) == 1 && req.msgs[0].method == "tools/call" && hasProgressToken(req.msgs[0].params) && acceptsEventStream(r) {
			// The stream carries progress for as long as the call runs:
			// each write gets the write grace, not the response as a whole.
			streamResponse(w)
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

// gatewayReady adds the upstreams to /readyz: a required upstream that
// cannot be reached fails it (the body names it), an optional one is only
// reported. The reasons go to the log, not the body.
func (s *Server) gatewayReady(ctx context.Context) (lines []string, ok bool) {
	status, required := s.gw.Ready(ctx)
	ok = true
	for _, n := range s.gw.Upstreams() {
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

// gatewayCapabilities declares what the front proxies beyond resourced's
// own capabilities: completions.
func gatewayCapabilities(c *mcp.ServerCapabilities) {
	c.Completions = &mcp.CompletionCapabilities{}
}
