// Package fulltext is the server's room for the search index: the
// search_resources tool (and, with deep research on, search and fetch),
// the index's metrics and its part of the sweep. What a search finds is
// the service's (service.SearchResources, DeepSearch, Fetch); this room
// renders it within a page's byte budget and counts what the index does.
//
// A page fits its budget: the JSON of the result's content (the value's
// text item and a resource_link per hit) is at most PageBytes, and so is
// structuredContent, the same value. Hits are added in rank order while
// they fit; the page is cut before the first that does not, and its
// nextCursor goes on at that hit. A first hit too large alone is shown
// shorter (its link without description, then titles and snippet cut,
// then without its link) rather than not at all, so paging always moves.
package fulltext

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// Page budget bounds (index.maxPageBytes).
const (
	DefaultPageBytes = 8 << 10
	// MinPageBytes is the smallest budget a page of one hit at its
	// shortest always fits (the longest URI twice, mimeType, times).
	MinPageBytes = 4 << 10
	// shortText is how much of a title or snippet a hit too large alone
	// keeps.
	shortText = 64
)

// Options configure a Room.
type Options struct {
	// Metrics registers the index's counters.
	Metrics prometheus.Registerer
	Log     *slog.Logger
	// DeepResearch adds search and fetch (OpenAI's contract).
	DeepResearch bool
	// Note is the line /readyz adds about the index; "": none.
	Note string
	// PageBytes is a page's byte budget (0: DefaultPageBytes).
	PageBytes int
}

// Room holds the index's tools and counters; a nil *Room is a server
// without an index.
type Room struct {
	o        Options
	failures prometheus.Counter
	swept    prometheus.Counter
}

// New registers the index's counters and returns its room.
func New(o Options) *Room {
	if o.PageBytes <= 0 {
		o.PageBytes = DefaultPageBytes
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	r := &Room{o: o,
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "resourced_index_update_failures_total",
			Help: "Search index updates that failed after a store commit (each is retried with the sweep; fsck and reindex repair the rest).",
		}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "resourced_index_swept_total",
			Help: "Search index entries of expired resources removed by the sweeper.",
		}),
	}
	o.Metrics.MustRegister(r.failures, r.swept)
	return r
}

// Failed counts one failed index update (service.Options.OnIndexFailure).
func (r *Room) Failed() { r.failures.Inc() }

// Note is the line /readyz adds about the index ("": none).
func (r *Room) Note() string {
	if r == nil {
		return ""
	}
	return r.o.Note
}

// Maintain is the index's part of the sweep (service.MaintainIndex):
// expired entries removed, failed updates retried.
func (r *Room) Maintain(ctx context.Context, svc *service.Service) {
	if r == nil {
		return
	}
	swept, left := svc.MaintainIndex(ctx)
	if swept > 0 {
		r.swept.Add(float64(swept))
	}
	if left > 0 {
		r.o.Log.Warn("search index updates still failing", "pending", left)
	}
}

// A Tool is one of the room's tools as the server registers it: Call
// returns the value (rendered as structuredContent and its JSON text) and
// the resources to link after it.
type Tool struct {
	Tool  *mcp.Tool
	Scope string
	Call  func(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, []*store.Meta, *service.Failure)
}

// Tools are the room's tools over svc; lim are the schema limits and
// maxReadChars fetch's result limit.
func (r *Room) Tools(svc *service.Service, lim map[string]int, maxReadChars int) []Tool {
	if r == nil || !svc.Searchable() {
		return nil
	}
	f := false
	tools := []Tool{{
		Scope: auth.ScopeRead,
		Call: decoded(func(ctx context.Context, p auth.Principal, a *toolapi.SearchResourcesArgs) (any, []*store.Meta, *service.Failure) {
			page, fl := svc.SearchResources(ctx, p.Tenant, a)
			if fl != nil {
				return nil, nil, fl
			}
			return r.fit(page)
		}),
		Tool: &mcp.Tool{
			Name:  "search_resources",
			Title: "Search stored resources",
			Description: "Full-text search over your stored reports and snapshots (listed or not) and the public listed ones: whole words, any case; " +
				"\"a phrase\", a or b, -excluded; filters by scheme, path prefix, media type, labels (title and description) and created/expiry range. " +
				"Each hit has its uri, a snippet with the matches between ** and the numbers of the matching lines: read on with read_resource " +
				fmt.Sprintf("(startLine) or grep_resource. Pages by nextCursor (a page is at most %d bytes, so it may hold fewer hits than limit); total says how many match.", r.o.PageBytes),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.SearchResourcesArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.SearchResourcesResult](lim, []string{"ok"})),
		},
	}}
	if !r.o.DeepResearch {
		return tools
	}
	// search and fetch follow OpenAI's contract for deep research and
	// company knowledge exactly (docs/decisions.md): one text item holding
	// the value, no resource_link items.
	return append(tools, Tool{
		Scope: auth.ScopeRead,
		Call: decoded(func(ctx context.Context, p auth.Principal, a *toolapi.DeepSearchArgs) (any, []*store.Meta, *service.Failure) {
			v, fl := svc.DeepSearch(ctx, p.Tenant, a)
			if fl != nil {
				return nil, nil, fl
			}
			return r.fitDeep(v), nil, nil
		}),
		Tool: &mcp.Tool{
			Name:  "search",
			Title: "Search stored resources (deep research)",
			Description: "Searches your stored reports and snapshots and the public listed ones by their text, title and description. " +
				"Returns {results: [{id, title, url}]}, best first; pass an id to fetch for the whole text.",
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.DeepSearchArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.DeepSearchResult](lim, nil)),
		},
	}, Tool{
		Scope: auth.ScopeRead,
		Call: decoded(func(ctx context.Context, p auth.Principal, a *toolapi.FetchArgs) (any, []*store.Meta, *service.Failure) {
			v, fl := svc.Fetch(ctx, p.Tenant, a)
			if fl != nil {
				return nil, nil, fl
			}
			return v, nil, nil
		}),
		Tool: &mcp.Tool{
			Name:  "fetch",
			Title: "Fetch a stored resource's text (deep research)",
			Description: fmt.Sprintf("Returns {id, title, text, url, metadata} of the resource a search result's id names: the whole text up to "+
				"%d characters of result; when it is cut, metadata.truncated is true and metadata.nextOffset says where read_resource "+
				"reads on.", maxReadChars),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  mcptool.InputSchema[toolapi.FetchArgs](lim),
			OutputSchema: mcptool.OutputSchemaOf(mcptool.SuccessSchema[toolapi.FetchResult](lim, nil)),
		},
	})
}

// decoded decodes the arguments strictly (mcptool.DecodeArgs), then calls fn.
func decoded[A any](fn func(ctx context.Context, p auth.Principal, a *A) (any, []*store.Meta, *service.Failure)) func(context.Context, auth.Principal, json.RawMessage) (any, []*store.Meta, *service.Failure) {
	return func(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, []*store.Meta, *service.Failure) {
		var a A
		if f := mcptool.DecodeArgs(raw, &a); f != nil {
			return nil, nil, f
		}
		return fn(ctx, p, &a)
	}
}

// Size is the bytes of the JSON of a result's content as the server
// renders it: value's JSON as a text item, then a resource_link per
// meta. structuredContent, value's JSON alone, is never larger.
func Size(value any, links []*store.Meta) int {
	b, err := json.Marshal(value)
	if err != nil {
		return 0
	}
	content := make([]mcp.Content, 0, 1+len(links))
	content = append(content, &mcp.TextContent{Text: string(b)})
	for _, m := range links {
		content = append(content, mcptool.ResourceLink(m))
	}
	c, err := json.Marshal(content)
	if err != nil {
		return 0
	}
	return len(c)
}

// fit cuts page to the budget (see the package doc) and returns its value
// and links.
func (r *Room) fit(page *service.SearchPage) (any, []*store.Meta, *service.Failure) {
	v := page.Value
	n := len(v.Hits)
	if n == 0 || Size(v, page.Items) <= r.o.PageBytes {
		return v, page.Items, nil
	}
	cut := *v
	for n > 1 {
		n--
		cut.Hits, cut.NextCursor = v.Hits[:n], page.NextAt(n)
		if Size(&cut, page.Items[:n]) <= r.o.PageBytes {
			break
		}
	}
	page.Cut(n)
	if n > 1 || Size(v, page.Items) <= r.o.PageBytes {
		return v, page.Items, nil
	}
	// One hit too large alone: shorter, step by step.
	hit, m := v.Hits[0], *page.Items[0]
	m.Description = ""
	links := []*store.Meta{&m}
	v.Hits = []toolapi.SearchHit{hit}
	if Size(v, links) <= r.o.PageBytes {
		return v, links, nil
	}
	hit.Title, m.Title = short(hit.Title), short(m.Title)
	hit.Snippet = shortSnippet(hit.Snippet)
	v.Hits[0] = hit
	if Size(v, links) <= r.o.PageBytes {
		return v, links, nil
	}
	return v, nil, nil
}

// fitDeep drops search's last results until the value fits the budget,
// and shortens the title of a first result too large alone (OpenAI's
// contract has no cursor: a narrower query finds the rest).
func (r *Room) fitDeep(v *toolapi.DeepSearchResult) *toolapi.DeepSearchResult {
	for len(v.Results) > 1 && Size(v, nil) > r.o.PageBytes {
		v.Results = v.Results[:len(v.Results)-1]
	}
	if len(v.Results) == 1 && Size(v, nil) > r.o.PageBytes {
		v.Results[0].Title = short(v.Results[0].Title)
	}
	return v
}

// shortSnippet is short for a snippet (index.Snippet's syntax: `**` opens
// and closes a match, `\*` and `\\` are the body's own): it never cuts
// inside an escape and closes a match it cut, so what is left is still a
// snippet.
func shortSnippet(s string) string {
	if len(s) <= shortText {
		return s
	}
	cut, open := 0, false
	for i := 0; i < len(s); {
		n := 1
		switch {
		case s[i] == '\\' && i+1 < len(s):
			_, w := utf8.DecodeRuneInString(s[i+1:])
			n = 1 + w
		case strings.HasPrefix(s[i:], "**"):
			n = 2
		default:
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		after := open != (n == 2 && strings.HasPrefix(s[i:], "**"))
		if reserve := i + n; after && reserve+2 > shortText || reserve > shortText {
			break
		}
		open = after
		i += n
		cut = i
	}
	out := s[:cut]
	if open {
		out += "**"
	}
	return out + "…"
}

// short is the first shortText bytes of s, cut at a character boundary,
// with "…" when cut.
func short(s string) string {
	if len(s) <= shortText {
		return s
	}
	i := shortText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
