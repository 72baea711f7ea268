package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/fulltext"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// toolFunc is a tool body: it returns the success value, or a tool error.
type toolFunc func(ctx context.Context, p auth.Principal, args json.RawMessage) (*toolValue, *service.Failure)

// toolValue is a success: one value rendered twice (structuredContent and
// its JSON as text), plus a resource_link per resource it stored or found.
type toolValue struct {
	value any
	links []*store.Meta
	extra []mcp.Content // items after the value's text (read_resource's window)
}

func (s *Server) addTools() {
	// The fast call path answers plain calls of these (callpath.go); with
	// an extension, which decides which tools exist, it answers the calls
	// the extension proxies (Extension.OwnsTool) and none of ours.
	s.calls = &callPath{tools: map[string]mcp.ToolHandler{}}
	for _, t := range s.toolDefs() {
		if s.ext != nil && !s.ext.KeepsTool(t.tool.Name) {
			continue
		}
		s.toolScopes[t.tool.Name] = t.scope
		h := s.toolHandler(t.scope, t.fn)
		s.mcp.AddTool(t.tool, h)
		if s.ext == nil {
			s.calls.tools[t.tool.Name] = h
		}
	}
}

// toolHandler adapts a toolFunc to go-sdk: scope check, result rendering.
func (s *Server) toolHandler(scope string, fn toolFunc) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, err := mcptool.RequireScope(ctx, scope)
		if err != nil {
			return nil, err
		}
		v, terr := fn(ctx, p, req.Params.Arguments)
		if terr != nil {
			return mcptool.ErrorResult(terr), nil
		}
		b, err := json.Marshal(v.value)
		if err != nil {
			return nil, s.internal(ctx, "encoding a tool result", err)
		}
		content := make([]mcp.Content, 0, 1+len(v.extra)+len(v.links))
		content = append(content, &mcp.TextContent{Text: string(b)})
		content = append(content, v.extra...)
		for _, m := range v.links {
			content = append(content, mcptool.ResourceLink(m))
		}
		return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(b)}, nil
	}
}

// saved renders the result of a save or stat: its value with the download
// link it asked for and how to read the resource (mcptool.HowToRead), and
// a resource_link.
func (s *Server) saved(r *service.Result, p auth.Principal) *toolValue {
	s.withDownloadURL(&r.Value, &r.Meta, p, r.LinkTTL)
	r.Value.HowToRead = mcptool.HowToRead(r.Value.URI, r.Value.DownloadURLExpiresAt)
	return &toolValue{value: r.Value, links: []*store.Meta{&r.Meta}}
}

// tool is the one adapter of a tool body: the arguments decoded strictly
// into A (mcptool.DecodeArgs: unknown fields and wrong types name the
// field), then fn.
func tool[A any](fn func(ctx context.Context, p auth.Principal, a *A) (*toolValue, *service.Failure)) toolFunc {
	return func(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *service.Failure) {
		var a A
		if f := mcptool.DecodeArgs(raw, &a); f != nil {
			return nil, f
		}
		return fn(ctx, p, &a)
	}
}

// A serviceCall is a method of the service that serves one tool, taken as
// a method expression so that the adapter calls the server's service of
// the moment.
type serviceCall[A, R any] func(svc *service.Service, ctx context.Context, tenant string, a *A) (R, *service.Failure)

// valueTool is a tool whose service call's value is its result.
func valueTool[A, R any](s *Server, fn serviceCall[A, R]) toolFunc {
	return tool(func(ctx context.Context, p auth.Principal, a *A) (*toolValue, *service.Failure) {
		v, f := fn(s.svc, ctx, p.Tenant, a)
		if f != nil {
			return nil, f
		}
		return &toolValue{value: v}, nil
	})
}

// savedTool is a tool whose service call saves or finds one resource
// (save_*, stat_resource): the result with its link (saved).
func savedTool[A any](s *Server, fn serviceCall[A, *service.Result]) toolFunc {
	return tool(func(ctx context.Context, p auth.Principal, a *A) (*toolValue, *service.Failure) {
		r, f := fn(s.svc, ctx, p.Tenant, a)
		if f != nil {
			return nil, f
		}
		return s.saved(r, p), nil
	})
}

// listTool is list_resources: the page, a resource_link per item.
func (s *Server) listTool(ctx context.Context, p auth.Principal, a *toolapi.ListArgs) (*toolValue, *service.Failure) {
	l, f := s.svc.List(ctx, p.Tenant, a)
	if f != nil {
		return nil, f
	}
	if len(l.Items) > 0 {
		l.Value.HowToRead = mcptool.HowToReadEach()
	}
	return &toolValue{value: l.Value, links: l.Items}, nil
}

// withDownloadURL adds a signed link to v when ttl > 0.
func (s *Server) withDownloadURL(v *toolapi.Metadata, m *store.Meta, p auth.Principal, ttl time.Duration) {
	if ttl <= 0 || s.links == nil {
		return
	}
	v.DownloadLink = s.links.Link(m, p.Tenant, ttl)
}

// roomTools are a room's tools (server/internal/fulltext) as toolDefs.
func roomTools(ts []fulltext.Tool) []toolDef {
	defs := make([]toolDef, 0, len(ts))
	for _, t := range ts {
		call := t.Call
		defs = append(defs, toolDef{tool: t.Tool, scope: t.Scope,
			fn: func(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *service.Failure) {
				v, links, f := call(ctx, p, raw)
				if f != nil {
					return nil, f
				}
				return &toolValue{value: v, links: links}, nil
			}})
	}
	return defs
}
