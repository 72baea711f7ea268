package server

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// search_resources: full-text search over the caller's resources and the
// public listed ones (service.SearchResources), registered when the
// server has an index (Options.Index); with Options.DeepResearch also
// search and fetch (service.DeepSearch, service.Fetch).

// indexFailures counts failed index updates (service.Options.OnIndexFailure).
func (s *Server) indexFailures() func() {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "resourced_index_update_failures_total",
		Help: "Search index updates that failed after a store commit (each is retried with the sweep; fsck and reindex repair the rest).",
	})
	s.metrics.reg.MustRegister(c)
	return c.Inc
}

// indexSweptCounter counts the entries of expired resources the sweep
// removed from the index (service.MaintainIndex).
func (s *Server) indexSweptCounter() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "resourced_index_swept_total",
		Help: "Search index entries of expired resources removed by the sweeper.",
	})
	s.metrics.reg.MustRegister(c)
	return c
}

func (s *Server) indexToolDefs(lim map[string]int) []toolDef {
	if !s.svc.Searchable() {
		return nil
	}
	f := false
	defs := []toolDef{{
		scope: auth.ScopeRead,
		fn:    tool(s.searchTool),
		tool: &mcp.Tool{
			Name:  "search_resources",
			Title: "Search stored resources",
			Description: "Full-text search over your stored reports and snapshots (listed or not) and the public listed ones: whole words, any case; " +
				"\"a phrase\", a or b, -excluded; filters by scheme, path prefix, media type, labels (title and description) and created/expiry range. " +
				"Each hit has its uri, a snippet with the matches between ** and the numbers of the matching lines: read on with read_resource " +
				"(startLine) or grep_resource. Pages by nextCursor; total says how many match.",
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.SearchResourcesArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.SearchResourcesResult](lim, []string{"ok"})),
		},
	}}
	if !s.deep {
		return defs
	}
	// search and fetch follow OpenAI's contract for deep research and
	// company knowledge exactly (docs/decisions.md): one text item holding
	// the value, no resource_link items.
	return append(defs, toolDef{
		scope: auth.ScopeRead,
		fn:    valueTool(s, (*service.Service).DeepSearch),
		tool: &mcp.Tool{
			Name:  "search",
			Title: "Search stored resources (deep research)",
			Description: "Searches your stored reports and snapshots and the public listed ones by their text, title and description. " +
				"Returns {results: [{id, title, url}]}, best first; pass an id to fetch for the whole text.",
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.DeepSearchArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.DeepSearchResult](lim, nil)),
		},
	}, toolDef{
		scope: auth.ScopeRead,
		fn:    valueTool(s, (*service.Service).Fetch),
		tool: &mcp.Tool{
			Name:  "fetch",
			Title: "Fetch a stored resource's text (deep research)",
			Description: fmt.Sprintf("Returns {id, title, text, url, metadata} of the resource a search result's id names: the whole text up to "+
				"%d characters of result; when it is cut, metadata.truncated is true and metadata.nextOffset says where read_resource "+
				"reads on.", s.limits.MaxReadChars),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.FetchArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.FetchResult](lim, nil)),
		},
	})
}

// searchTool renders a page of hits with a resource_link per hit.
func (s *Server) searchTool(ctx context.Context, p auth.Principal, a *toolapi.SearchResourcesArgs) (*toolValue, *service.Failure) {
	v, f := s.svc.SearchResources(ctx, p.Tenant, a)
	if f != nil {
		return nil, f
	}
	links := make([]*store.Meta, 0, len(v.Hits))
	for _, h := range v.Hits {
		if m, f := s.svc.Stat(ctx, p.Tenant, h.URI); f == nil {
			links = append(links, &m)
		}
	}
	return &toolValue{value: v, links: links}, nil
}
