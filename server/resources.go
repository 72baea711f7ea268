package server

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// listPageSize is the page size of resources/list.
const listPageSize = 100

// addResources registers one catch-all template per scheme, so that go-sdk
// dispatches resources/read for every URI of the scheme, listed or not.
func (s *Server) addResources() {
	for _, name := range s.svc.SchemeNames() {
		sc := s.schemes[name]
		desc := "Reports saved with save_report at caller-chosen paths; replaceable."
		if sc.Kind == KindSearch {
			desc = "Search result snapshots saved with save_search_snapshot; immutable."
		}
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:        name,
			Title:       name + " resources",
			Description: desc + " {tenant} is your tenant.",
			URITemplate: name + "://{tenant}/{+path}",
		}, s.readResource)
	}
}

// intercept runs before go-sdk dispatches a request. It validates every
// resources/read URI (go-sdk would answer a malformed one itself, with
// invalid JSON for control characters) and serves resources/list, which
// go-sdk can only answer from statically registered resources.
func (s *Server) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			p, ok := req.GetParams().(*mcp.ReadResourceParams)
			if !ok || p == nil {
				return nil, invalidParams("resources/read needs params with a uri")
			}
			if err := s.checkReadURI(p.URI); err != nil {
				return nil, err
			}
		case "subscriptions/listen":
			if p, ok := req.GetParams().(*mcp.SubscriptionsListenParams); ok {
				if err := s.notify.Dedupe(p); err != nil {
					return nil, err
				}
			}
		case "resources/list":
			r, ok := req.(*mcp.ListResourcesRequest)
			if !ok {
				return nil, invalidParams("malformed resources/list request")
			}
			return s.listResources(ctx, r)
		case "initialize":
			// Subscriptions work only through 2026-07-28's
			// subscriptions/listen; a 2025-11-25 session must not be told
			// it can subscribe (docs/decisions.md).
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && ir.Capabilities != nil && ir.Capabilities.Resources != nil {
				caps := *ir.Capabilities
				rc := *caps.Resources
				rc.Subscribe = false
				caps.Resources = &rc
				ir.Capabilities = &caps
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// listResources serves resources/list: the caller's listed resources, then
// the listed public resources of other tenants, paginated with a cursor
// bound to the tenant.
func (s *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	p, err := mcptool.RequireScope(ctx, auth.ScopeRead)
	if err != nil {
		return nil, err
	}
	var cursor string
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	page, f := s.svc.ListResources(ctx, p.Tenant, cursor, listPageSize)
	switch {
	case f != nil && f.ErrorKind == service.KindValidation:
		return nil, invalidParams("invalid cursor: pass the nextCursor of a previous resources/list result, or none")
	case f != nil:
		return nil, readError("", f)
	}
	res := &mcp.ListResourcesResult{Resources: make([]*mcp.Resource, 0, len(page.Items)), NextCursor: page.NextCursor}
	res.CacheScope = "private"
	for _, m := range page.Items {
		res.Resources = append(res.Resources, resourceOf(m))
	}
	return res, nil
}

func resourceOf(m *store.Meta) *mcp.Resource {
	return &mcp.Resource{
		URI:         m.Key.String(),
		Name:        m.Key.Path(),
		Title:       m.Title,
		Description: m.Description,
		MIMEType:    m.MIMEType,
		Size:        m.Size,
		Annotations: &mcp.Annotations{LastModified: jsonwire.FormatTime(m.Modified)},
	}
}

// observe records the JSON-RPC method, tool and outcome of what go-sdk
// dispatched, for the request log and metrics.
func (s *Server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		tool := ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			tool = p.Name
		}
		recordOutcome(ctx, method, tool, res, err)
		return res, err
	}
}

// recordOutcome notes what one MCP request did, for the request log line
// and the metrics it feeds: the observation hook of go-sdk's dispatch and
// of the read stage alike.
func recordOutcome(ctx context.Context, method, tool string, res mcp.Result, err error) {
	if e := logEntry(ctx); e != nil {
		e.method, e.tool, e.outcome = method, tool, outcome(res, err)
	}
}

// outcome is what one MCP request came to: "ok", its JSON-RPC error
// code, "error", or a failed tool call's errorKind ("isError" without).
func outcome(res mcp.Result, err error) string {
	if err != nil {
		var rpcErr *jsonrpc.Error // allocated for errors.As: only on a failure
		if errors.As(err, &rpcErr) {
			return strconv.FormatInt(rpcErr.Code, 10)
		}
		return "error"
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
		if te, ok := r.StructuredContent.(*service.Failure); ok {
			return te.ErrorKind
		}
		return "isError"
	}
	return "ok"
}
