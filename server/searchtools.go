package server

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/toolapi"
)

// grep_resource and query_resource: bounded search inside a stored body
// (service.Grep, service.Query). The adapters decode the arguments, call
// the service and render its value once, as structuredContent and as
// its JSON text.

func (s *Server) searchToolDefs(limits map[string]int) []toolDef {
	boolp := func(b bool) *bool { return &b }
	return []toolDef{
		{
			scope: auth.ScopeRead,
			fn:    valueTool(s, (*service.Service).Grep),
			tool: &mcp.Tool{
				Name:  "grep_resource",
				Title: "Search a stored text body",
				Description: fmt.Sprintf("Finds the lines of a resource's text body that match an RE2 regular expression (or, with literal: true, a plain text), "+
					"with line numbers, byte offsets and context lines. At most maxMatches matches and %d characters per result: "+
					"when more follow, truncated is true and you continue with afterOffset: nextAfterOffset. Binary bodies: use read_resource.", s.limits.MaxReadChars),
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.GrepArgs](limits),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.GrepResult](limits, []string{"ok"})),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    valueTool(s, (*service.Service).Query),
			tool: &mcp.Tool{
				Name:  "query_resource",
				Title: "Query a stored JSON body",
				Description: fmt.Sprintf("Selects values of a resource's JSON body with an RFC 9535 JSONPath query (e.g. $.hits[?@.score > 0.5].id) "+
					"and returns each with its normalized path, in path order. At most maxMatches values and %d characters per result: "+
					"when more follow, truncated is true and you continue with startIndex: nextIndex; a value too large alone is omitted (query below it).", s.limits.MaxReadChars),
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  mcptool.InputSchema[toolapi.QueryArgs](limits),
				OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.QueryResult](limits, []string{"ok"})),
			},
		},
	}
}
