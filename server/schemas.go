package server

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
)

// The tools' JSON Schemas are written out by hand: they are part of the
// contract, read by models, and each outputSchema is an anyOf of the
// success value and the failure value, which no struct reflection gives.

const failureSchema = `{
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

// metaProps are the properties of a resource's metadata.
const metaProps = `
    "uri": {"type": "string", "description": "Resource URI; read it with resources/read."},
    "name": {"type": "string"},
    "title": {"type": "string"},
    "description": {"type": "string"},
    "mimeType": {"type": "string"},
    "size": {"type": "integer", "minimum": 0, "description": "Body length in bytes, before any encoding."},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the body; pass it as ifMatch to replace or delete."},
    "total": {"type": "integer", "minimum": 0},
    "createdAt": {"type": "string", "format": "date-time"},
    "lastModified": {"type": "string", "format": "date-time"},
    "expiresAt": {"type": "string", "format": "date-time", "description": "When the resource is deleted (retention); not a cache hint."},
    "listed": {"type": "boolean"},
    "visibility": {"enum": ["private", "public"]},` + linkOutputProps

const metaRequired = `"uri", "name", "title", "description", "mimeType", "size", "sha256", "createdAt", "lastModified", "listed", "visibility"`

const saveOptionProps = `
    "retention": {"type": ["string", "number"], "description": "How long to keep it, at least 1 second: an ISO-8601 duration (\"PT1H\", \"P7D\", \"P1W\") or seconds. Default and maximum are per scheme; longer values are capped."},
    "listed": {"type": "boolean", "default": false, "description": "Show it in resources/list. Unlisted resources are still readable by URI."},
    "visibility": {"enum": ["private", "public"], "default": "private", "description": "public: readable by any authenticated caller and cacheable across users."},
    "scheme": {"type": "string", "description": "URI scheme to save under; defaults to the server's scheme of this kind."},` + linkInputProps

func objectSchema(props, required string) string {
	return `{"type": "object", "properties": {` + props + `}, "required": [` + required + `]}`
}

// inputSchema is an object schema that, like the argument decoder, admits
// no unknown properties.
func inputSchema(props, required string) json.RawMessage {
	return json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {` + props + `}, "required": [` + required + `]}`)
}

func outputSchema(success string) json.RawMessage {
	return json.RawMessage(`{"type": "object", "anyOf": [` + success + `, ` + failureSchema + `]}`)
}

type toolDef struct {
	tool  *mcp.Tool
	scope string
	fn    toolFunc
}

func (s *Server) toolDefs() []toolDef {
	metaOut := func(status string) string {
		return objectSchema(`"status": {"const": "`+status+`"},`+metaProps, `"status", `+metaRequired)
	}
	boolp := func(b bool) *bool { return &b }
	return []toolDef{
		{
			scope: auth.ScopeWrite,
			fn:    s.saveSearchSnapshot,
			tool: &mcp.Tool{
				Name:  "save_search_snapshot",
				Title: "Save a search result snapshot",
				Description: "Stores search hits as an immutable JSON snapshot {query,total,hits} and returns a resource_link to it. " +
					"Return that link instead of the hits when they are too large to inline; the client reads it with resources/read.",
				Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema: inputSchema(`
    "query": {"type": "string", "minLength": 1, "description": "The search query the hits answer."},
    "hits": {"type": "array", "maxItems": 10000, "items": {"type": "object", "properties": {
        "id": {"type": "string", "minLength": 1}, "title": {"type": "string"}, "snippet": {"type": "string"},
        "url": {"type": "string"}, "score": {"type": "number"}}, "required": ["id", "title", "snippet"], "additionalProperties": false}},
    "total": {"type": "integer", "minimum": 0, "description": "Optional check: must equal the number of hits."},
    "title": {"type": "string", "description": "Display title; default: derived from the query."},
    "description": {"type": "string"},`+saveOptionProps, `"query", "hits"`),
				OutputSchema: outputSchema(objectSchema(`"status": {"const": "created"},`+metaProps, `"status", "total", "expiresAt", `+metaRequired)),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    s.saveReport,
			tool: &mcp.Tool{
				Name:  "save_report",
				Title: "Save a report",
				Description: "Stores a report (text or binary) at a path you choose and returns a resource_link to it. " +
					"Create-only by default; to replace pass ifMatch with the current sha256, or overwrite: true.",
				Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema: inputSchema(`
    "path": {"type": "string", "description": "Path below your tenant, e.g. billing/2026-11/import-dry-run: /-separated segments of A-Z a-z 0-9 . _ ~ -"},
    "mimeType": {"type": "string", "description": "Media type of the body, e.g. text/markdown, text/csv, application/pdf."},
    "text": {"type": "string", "description": "The body as text. Exactly one of text and blobBase64."},
    "blobBase64": {"type": "string", "contentEncoding": "base64", "description": "The body as standard base64. Exactly one of text and blobBase64."},
    "title": {"type": "string"},
    "description": {"type": "string"},
    "ifMatch": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Replace only if the current body has this sha256."},
    "overwrite": {"type": "boolean", "default": false, "description": "Create or replace unconditionally."},`+saveOptionProps, `"path", "mimeType"`),
				OutputSchema: outputSchema(objectSchema(`"status": {"enum": ["created", "replaced"]},`+metaProps, `"status", "expiresAt", `+metaRequired)),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    s.statResource,
			tool: &mcp.Tool{
				Name:         "stat_resource",
				Title:        "Describe a stored resource",
				Description:  "Returns the metadata of a resource (size, sha256, dates, visibility) without its body.",
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchema(`"uri": {"type": "string", "description": "A resource URI, e.g. report://<tenant>/<path>."},`+linkInputProps, `"uri"`),
				OutputSchema: outputSchema(metaOut("found")),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    s.listResourcesTool,
			tool: &mcp.Tool{
				Name:  "list_resources",
				Title: "List your stored resources",
				Description: "Lists all of your resources, listed or not, in URI order, with metadata and a resource_link each. " +
					"Page with nextCursor.",
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema: inputSchema(`
    "scheme": {"type": "string", "description": "Only this scheme, e.g. report."},
    "prefix": {"type": "string", "description": "Only paths starting with this (needs scheme)."},
    "cursor": {"type": "string", "description": "nextCursor of the previous page."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}`, ``),
				OutputSchema: outputSchema(objectSchema(`
    "status": {"const": "ok"},
    "items": {"type": "array", "items": `+objectSchema(metaProps, metaRequired)+`},
    "nextCursor": {"type": "string"}`, `"status", "items"`)),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    s.deleteResource,
			tool: &mcp.Tool{
				Name:        "delete_resource",
				Title:       "Delete a stored resource",
				Description: "Deletes one of your resources; with ifMatch only if its body still has that sha256.",
				Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
				InputSchema: inputSchema(`
    "uri": {"type": "string"},
    "ifMatch": {"type": "string", "pattern": "^[0-9a-f]{64}$"}`, `"uri"`),
				OutputSchema: outputSchema(objectSchema(`"status": {"const": "deleted"}, "uri": {"type": "string"}`, `"status", "uri"`)),
			},
		},
		s.readResourceToolDef(),
	}
}
