package server

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/toolapi"
)

// The tools' JSON Schemas are generated from their argument and result
// structs (mcptool.InputSchema, SuccessSchema; the tags are documented in
// server/internal/mcptool/schema.go).

// schemaLimits are the limit names a schema tag may use.
func (s *Server) schemaLimits() map[string]int {
	return map[string]int{
		"maxHits":             s.limits.MaxHits,
		"maxTitleBytes":       s.limits.MaxTitleBytes,
		"maxDescriptionBytes": s.limits.MaxDescriptionBytes,
		"maxPathBytes":        s.limits.MaxPathBytes,
		"maxListLimit":        service.MaxListLimit,
		"defaultListLimit":    service.DefaultListLimit,
		"maxSearchLimit":      index.MaxLimit,
		"defaultSearchLimit":  index.DefaultLimit,
	}
}

type toolDef struct {
	tool  *mcp.Tool
	scope string
	fn    toolFunc
}

func (s *Server) toolDefs() []toolDef {
	lim := s.schemaLimits()
	boolp := func(b bool) *bool { return &b }
	list := mcptool.SuccessSchema[toolapi.ListResult](lim, []string{"ok"})
	delete(list.Properties["items"].Items.Properties, "status") // items carry no status
	return append([]toolDef{
		{
			scope: auth.ScopeWrite,
			fn:    savedTool(s, (*service.Service).SaveSnapshot),
			tool: &mcp.Tool{
				Name:  "save_search_snapshot",
				Title: "Save a search result snapshot",
				Description: "Stores search hits as an immutable JSON snapshot {query,total,hits} and returns a resource_link to it. " +
					"Return that link instead of the hits when they are too large to inline; the client reads it with resources/read.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(false), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.SearchSnapshotArgs](lim),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.Metadata](lim, []string{"created"}, "total", "expiresAt")),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    savedTool(s, (*service.Service).SaveReport),
			tool: &mcp.Tool{
				Name:  "save_report",
				Title: "Save a report",
				Description: "Stores a report (text or binary) at a path you choose and returns a resource_link to it. " +
					"Create-only by default; to replace pass ifMatch with the current sha256, or overwrite: true.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.ReportArgs](lim),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.Metadata](lim, []string{"created", "replaced"}, "expiresAt")),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    savedTool(s, (*service.Service).StatResource),
			tool: &mcp.Tool{
				Name:         "stat_resource",
				Title:        "Describe a stored resource",
				Description:  "Returns the metadata of a resource (size, sha256, dates, visibility) without its body.",
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.StatArgs](lim),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.Metadata](lim, []string{"found"})),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    tool(s.listTool),
			tool: &mcp.Tool{
				Name:  "list_resources",
				Title: "List your stored resources",
				Description: "Lists all of your resources, listed or not, in URI order, with metadata and a resource_link each. " +
					"Page with nextCursor.",
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.ListArgs](lim),
				OutputSchema: mcptool.OutputSchemaOf(list),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    valueTool(s, (*service.Service).Delete),
			tool: &mcp.Tool{
				Name:         "delete_resource",
				Title:        "Delete a stored resource",
				Description:  "Deletes one of your resources; with ifMatch only if its body still has that sha256.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.DeleteArgs](lim),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.DeleteResult](lim, []string{"deleted"})),
			},
		},
		s.readResourceToolDef(lim),
	}, append(s.searchToolDefs(lim), roomTools(s.fulltext.Tools(s.svc, lim, s.limits.MaxReadChars))...)...)
}
