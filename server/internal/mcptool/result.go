// Package mcptool holds what every MCP tool of the server shares, whoever
// registers it (server's tools, the fixtures): the strict decoding of
// arguments (DecodeArgs), the scope check (RequireScope) and the rendering
// of failures (ErrorResult) and links (ResourceLink), and the answers of
// the server's own tools as go-sdk writes them (AppendResponse). It knows go-sdk and
// the service's Failure, and must not import server or a store backend.
package mcptool

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// RequireScope fails unless the caller holds scope.
func RequireScope(ctx context.Context, scope string) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok || p.Tenant == "" {
		return p, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthenticated request"}
	}
	if !p.Has(scope) {
		return p, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "insufficient scope: " + scope + " is required"}
	}
	return p, nil
}

// ErrorResult renders a tool failure: isError, a text that explains the
// error on its own (hosts may drop structuredContent of errors), and the
// structured value.
func ErrorResult(e *service.Failure) *mcp.CallToolResult {
	text := e.ErrorKind + ": " + e.Message
	for _, f := range e.FieldErrors {
		if f.Field+": "+f.Message != e.Message {
			text += "\n- " + f.Field + ": " + f.Message
		}
	}
	if e.RetrySafe {
		text += " (safe to retry)"
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: e,
	}
}

// ResourceLink is the resource_link of a stored resource.
func ResourceLink(m *store.Meta) *mcp.ResourceLink {
	size := m.Size
	return &mcp.ResourceLink{
		URI:         m.Key.String(),
		Name:        m.Key.Path(),
		Title:       m.Title,
		Description: m.Description,
		MIMEType:    m.MIMEType,
		Size:        &size,
		Annotations: &mcp.Annotations{LastModified: jsonwire.FormatTime(m.Modified)},
	}
}

// FailureSchema is the failure value of every tool (service.Failure).
const FailureSchema = `{
  "type": "object",
  "description": "A failed call (isError: true).",
  "properties": {
    "status": {"const": "failed"},
    "errorKind": {"enum": ["validation_error", "not_found", "conflict", "too_large", "quota_exceeded", "unavailable"]},
    "message": {"type": "string"},
    "retrySafe": {"type": "boolean"},
    "fieldErrors": {"type": "array", "items": {"type": "object", "properties": {"field": {"type": "string"}, "message": {"type": "string"}}, "required": ["field", "message"]}}
  },
  "required": ["status", "errorKind", "message", "retrySafe"]
}`

// OutputSchema is the anyOf of a success schema and FailureSchema.
func OutputSchema(success string) json.RawMessage {
	return json.RawMessage(`{"type": "object", "anyOf": [` + success + `, ` + FailureSchema + `]}`)
}
