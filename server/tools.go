package server

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// toolFunc is a tool body: it returns the success value, or a tool error.
type toolFunc func(ctx context.Context, p auth.Principal, args json.RawMessage) (*toolValue, *toolError)

// toolValue is a success: one value rendered twice (structuredContent and
// its JSON as text), plus a resource_link per resource it stored or found.
type toolValue struct {
	value any
	links []*store.Meta
	extra []mcp.Content // items after the value's text (read_resource's window)
}

func (s *Server) addTools() {
	if s.ext == nil {
		// The fast call path answers plain calls of these (callpath.go);
		// with an extension it decides which tools exist.
		s.calls = &callPath{tools: map[string]mcp.ToolHandler{}}
	}
	for _, t := range s.toolDefs() {
		if s.ext != nil && !s.ext.KeepsTool(t.tool.Name) {
			continue
		}
		s.toolScopes[t.tool.Name] = t.scope
		h := s.toolHandler(t.scope, t.fn)
		s.mcp.AddTool(t.tool, h)
		if s.calls != nil {
			s.calls.tools[t.tool.Name] = h
		}
	}
}

// toolHandler adapts a toolFunc to go-sdk: scope check, result rendering.
func (s *Server) toolHandler(scope string, fn toolFunc) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, err := requireScope(ctx, scope)
		if err != nil {
			return nil, err
		}
		v, terr := fn(ctx, p, req.Params.Arguments)
		if terr != nil {
			return errorResult(terr), nil
		}
		b, err := json.Marshal(v.value)
		if err != nil {
			return nil, s.internal(ctx, "encoding a tool result", err)
		}
		content := make([]mcp.Content, 0, 1+len(v.extra)+len(v.links))
		content = append(content, &mcp.TextContent{Text: string(b)})
		content = append(content, v.extra...)
		for _, m := range v.links {
			content = append(content, resourceLink(m))
		}
		return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(b)}, nil
	}
}

// What every tool shares, with the fixtures, is mcptool's; the server
// calls it by these names.
var rawMessageType = mcptool.RawMessageType

func decodeArgs(raw json.RawMessage, v any) *toolError { return mcptool.DecodeArgs(raw, v) }

func fieldNames(t reflect.Type) map[string]reflect.Type { return mcptool.FieldNames(t) }

func errorResult(e *toolError) *mcp.CallToolResult { return mcptool.ErrorResult(e) }

func resourceLink(m *store.Meta) *mcp.ResourceLink { return mcptool.ResourceLink(m) }

func requireScope(ctx context.Context, scope string) (auth.Principal, error) {
	return mcptool.RequireScope(ctx, scope)
}

// The tools' wire types live in toolapi, shared with the Go client; the
// server calls them by these names.
type (
	metaValue    = toolapi.Metadata
	hit          = toolapi.Hit
	snapshotArgs = toolapi.SearchSnapshotArgs
	reportArgs   = toolapi.ReportArgs
	uriArgs      = toolapi.DeleteArgs
	statArgs     = toolapi.StatArgs
	deletedValue = toolapi.DeleteResult
	listArgs     = toolapi.ListArgs
	listValue    = toolapi.ListResult
)

// List bounds of list_resources (the service's).
const (
	defaultListLimit = service.DefaultListLimit
	maxListLimit     = service.MaxListLimit
)

func metaValueOf(status string, m *store.Meta) metaValue { return service.MetaValue(status, m) }

// saved renders the result of a save or stat: its value with the download
// link it asked for and how to read the resource (mcptool.HowToRead), and
// a resource_link.
func (s *Server) saved(r *service.Result, p auth.Principal) *toolValue {
	s.withDownloadURL(&r.Value, &r.Meta, p, r.LinkTTL)
	r.Value.HowToRead = mcptool.HowToRead(r.Value.URI, r.Value.DownloadURLExpiresAt)
	return &toolValue{value: r.Value, links: []*store.Meta{&r.Meta}}
}

// The tools below are adapters: decode the arguments (decodeArgs), call
// the service, render.

func (s *Server) saveSearchSnapshot(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a snapshotArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	r, terr := s.svc.SaveSnapshot(ctx, p.Tenant, &a)
	if terr != nil {
		return nil, terr
	}
	return s.saved(r, p), nil
}

func (s *Server) saveReport(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a reportArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	r, terr := s.svc.SaveReport(ctx, p.Tenant, &a)
	if terr != nil {
		return nil, terr
	}
	return s.saved(r, p), nil
}

func (s *Server) statResource(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a statArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	r, terr := s.svc.StatResource(ctx, p.Tenant, &a)
	if terr != nil {
		return nil, terr
	}
	return s.saved(r, p), nil
}

func (s *Server) deleteResource(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a uriArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	v, terr := s.svc.Delete(ctx, p.Tenant, &a)
	if terr != nil {
		return nil, terr
	}
	return &toolValue{value: *v}, nil
}

func (s *Server) listResourcesTool(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a listArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	l, terr := s.svc.List(ctx, p.Tenant, &a)
	if terr != nil {
		return nil, terr
	}
	if len(l.Items) > 0 {
		l.Value.HowToRead = mcptool.HowToReadEach()
	}
	return &toolValue{value: l.Value, links: l.Items}, nil
}

// truncate cuts s to at most n bytes at a character boundary.
