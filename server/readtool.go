package server

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// read_resource: the body of a resource as a tool result, one window at a
// time (the window is the service's: service/read.go).
//
// The result is one value built once, as every tool's: its structuredContent
// and, as JSON, its first text item. The value holds the window itself
// (text, or blob in base64), because a host may pass the model only one of
// content and structuredContent. The window follows once more as an item
// of its own (a text item for a textual body, an embedded resource with a
// base64 blob for anything else, including text windows that are not valid
// UTF-8), readable without unescaping JSON. The content never exceeds
// Limits.MaxReadChars characters: the JSON item, window included (each
// character counted as JSON escapes it), plus the window item.

func (s *Server) readResourceToolDef(limits map[string]int) toolDef {
	boolp := func(b bool) *bool { return &b }
	return toolDef{
		scope: auth.ScopeRead,
		fn:    tool(s.readResourceTool),
		tool: &mcp.Tool{
			Name:  "read_resource",
			Title: "Read a stored resource in windows",
			Description: fmt.Sprintf("Returns part of a resource's body as a tool result, for hosts that cannot read resources: "+
				"the window as text (or as an embedded base64 blob for binary bodies), after a JSON item with totalSize, sha256, range, "+
				"nextOffset/nextLine and truncated. Choose the window in bytes (offset, length) or, for text, in lines (startLine, lineCount; "+
				"lines end with \\n); without them it starts at the beginning. A result holds at most %d characters: a longer window is cut "+
				"(truncated: true) and you continue with offset: nextOffset or startLine: nextLine; both are absent at the end. "+
				"A single line longer than the limit comes in parts with nextOffset only. Text windows never split a UTF-8 character.", s.limits.MaxReadChars),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
			InputSchema:  mcptool.InputSchema[toolapi.ReadArgs](limits),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.ReadResult](limits, []string{"ok"})),
		},
	}
}

func (s *Server) readResourceTool(ctx context.Context, p auth.Principal, a *toolapi.ReadArgs) (*toolValue, *service.Failure) {
	link := func(m *store.Meta, ttl time.Duration) toolapi.DownloadLink { return s.links.Link(m, p.Tenant, ttl) }
	if s.links == nil {
		link = nil
	}
	w, terr := s.svc.ReadWindow(ctx, p.Tenant, a, link)
	if terr != nil {
		return nil, terr
	}
	var item mcp.Content
	if w.Text {
		item = &mcp.TextContent{Text: string(w.Data)}
	} else {
		item = &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a.URI, MIMEType: w.Meta.MIMEType, Blob: w.Data}}
	}
	s.metrics.BytesRead.WithLabelValues(w.Meta.Key.Scheme()).Add(float64(len(w.Data)))
	return &toolValue{value: w.Value, extra: []mcp.Content{item}}, nil
}
