package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// This file is the fixture tools (docs/fixtures.md, which is their
// contract): one fixed search result returned in each of the four result
// forms, and the host probes of seed 002, each part marked with a unique
// RSD-FIXTURE- string so that a host's transcript shows what arrived. The
// bodies behind links and embedded resources are public resources of tenant
// fixtureTenant, written at start and restored by the tool that needs one.

const (
	// fixtureTenant owns the fixture resources.
	fixtureTenant = "fixtures"
	// fixtureQuery is the only query the fixtures answer.
	fixtureQuery = "MCP"
	// fixtureRetention is the life of a fixture resource after each write;
	// a tool call rewrites its resource when less than half of it is left.
	fixtureRetention = 30 * 24 * time.Hour
	// fixtureMarker starts every marker.
	fixtureMarker = "RSD-FIXTURE-"
	// fixtureProtocolAnyValue is the first protocol version whose structuredContent
	// may be any JSON value rather than an object.
	fixtureProtocolAnyValue = "2026-07-28"
)

// fixtureMark returns the marker with id, e.g. RSD-FIXTURE-T01 for "T01".
func fixtureMark(id string) string { return fixtureMarker + id }

type fixtureHit struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

// fixtureDoc is the search result of seed 000 with a marker field first.
type fixtureDoc struct {
	Marker string       `json:"marker"`
	Query  string       `json:"query"`
	Total  int          `json:"total"`
	Hits   []fixtureHit `json:"hits"`
}

func newFixtureDoc(id string) fixtureDoc {
	hits := []fixtureHit{
		{ID: "d1", Title: "MCP guide", Snippet: "Tool results contain data."},
		{ID: "d2", Title: "Report design", Snippet: "Use explicit resource URIs."},
	}
	return fixtureDoc{Marker: fixtureMark(id), Query: fixtureQuery, Total: len(hits), Hits: hits}
}

// fixtureJSON encodes v without whitespace, HTML escaping or a trailing
// newline: the encoding of every fixture document.
func fixtureJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // fixture values are fixed and always encode
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// fixtureResource is one stored fixture.
type fixtureResource struct {
	key         store.Key
	mimeType    string
	title       string
	description string
	listed      bool
	body        []byte
	sha256      string
}

// fixtures is the state of the fixture tools: their resources by name.
type fixtures struct {
	s   *Server
	res map[string]*fixtureResource
}

// Names of the fixture resources (fixtures.res keys) and their paths.
const (
	fixtureEmbeddedPath = "results/fixture-embedded"
	fixtureLinkPath     = "results/fixture-link"
	fixtureListedPath   = "probe/link-listed.txt"
	fixtureUnlistedPath = "probe/link-unlisted.txt"
	fixtureEmbTextPath  = "probe/embedded-text.txt"
	fixtureEmbBlobPath  = "probe/embedded-blob.txt"
)

// fixtureMissingPath is a path below fixtureTenant that is never stored.
const fixtureMissingPath = "results/fixture-missing"

// fixtureSize is one of the large-result probes.
type fixtureSize struct {
	label string // "10k"
	id    string // marker digits: "10"
	bytes int
}

var fixtureSizes = []fixtureSize{
	{"10k", "10", 10000},
	{"40k", "40", 40000},
	{"66k", "66", 66000},
	{"155k", "155", 155000},
}

func (p fixtureSize) path() string { return "probe/size-" + p.label + ".txt" }
func (p fixtureSize) tool() string { return "probe_size_" + p.label }

// body is the body of a size probe at uri: a first line with the head
// marker, 80-byte filler lines, and a last line with the tail marker,
// exactly p.bytes bytes of ASCII.
func (p fixtureSize) body(uri string) []byte {
	head := fmt.Sprintf("%s %s: this text is %d bytes; the same body is stored at %s; the closing marker is on the last line.\n",
		fixtureMark("H"+p.id), p.tool(), p.bytes, uri)
	tail := fmt.Sprintf("%s end of the %d-byte text of %s.\n", fixtureMark("Z"+p.id), p.bytes, p.tool())
	var b strings.Builder
	b.Grow(p.bytes)
	b.WriteString(head)
	fill := p.bytes - len(head) - len(tail)
	for i := 1; fill > 0; i++ {
		line := fmt.Sprintf("filler %06d of %s ", i, p.tool())
		n := min(80, fill)
		if len(line) > n-1 {
			line = line[:max(n-1, 0)]
		}
		b.WriteString(line)
		b.WriteString(strings.Repeat(".", n-1-len(line)))
		b.WriteByte('\n')
		fill -= n
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// fixtureScheme picks the scheme that holds fixtures of kind: the scheme
// named like the kind, else the first of that kind, else the first scheme.
func (s *Server) fixtureScheme(kind string) string {
	if sc := s.schemes[kind]; sc != nil && sc.Kind == kind {
		return kind
	}
	names := s.schemeNames()
	for _, n := range names {
		if s.schemes[n].Kind == kind {
			return n
		}
	}
	return names[0]
}

// newFixtures builds every fixture resource (nothing is stored yet).
func (s *Server) newFixtures() (*fixtures, error) {
	fx := &fixtures{s: s, res: map[string]*fixtureResource{}}
	search, report := s.fixtureScheme(KindSearch), s.fixtureScheme(KindReport)
	add := func(scheme, path, mimeType, title, desc string, listed bool, body []byte) error {
		k, err := store.NewKey(fixtureTenant, scheme, path)
		if err != nil {
			return fmt.Errorf("server: fixture %s: %w", path, err)
		}
		fx.res[path] = &fixtureResource{key: k, mimeType: mimeType, title: title, description: desc,
			listed: listed, body: body, sha256: store.Sum(body)}
		return nil
	}
	q := fmt.Sprintf("%q", fixtureQuery)
	errs := []error{
		add(search, fixtureEmbeddedPath, "application/json", "Fixture search result for "+q+" (search_embedded)",
			"The search result for "+q+" that search_embedded embeds.", false, fixtureJSON(newFixtureDoc("E01"))),
		add(search, fixtureLinkPath, "application/json", "Fixture search result for "+q+" (search_link)",
			fixtureMark("L01")+" The search result for "+q+" is behind this link: read it with resources/read.", false, fixtureJSON(newFixtureDoc("L02"))),
		add(report, fixtureListedPath, "text/plain", "Fixture: listed link target (probe_link_listed)",
			fixtureMark("L11")+" A listed resource: its body is behind this link; read it with resources/read.", true,
			[]byte(fixtureMark("L12")+" Body of the listed fixture resource that probe_link_listed links to.")),
		add(report, fixtureUnlistedPath, "text/plain", "Fixture: unlisted link target (probe_link_unlisted)",
			fixtureMark("L21")+" An unlisted resource (not in resources/list): its body is behind this link; read it with resources/read.", false,
			[]byte(fixtureMark("L22")+" Body of the unlisted fixture resource that probe_link_unlisted links to.")),
		add(report, fixtureEmbTextPath, "text/plain", "Fixture: embedded text (probe_embedded_text)",
			"The text body that probe_embedded_text embeds.", false,
			[]byte(fixtureMark("E11")+" Body of the embedded text resource of probe_embedded_text.")),
		add(report, fixtureEmbBlobPath, "text/plain", "Fixture: embedded blob (probe_embedded_blob)",
			"The body that probe_embedded_blob embeds as a base64 blob.", false,
			[]byte(fixtureMark("E21")+" Body of the embedded blob resource of probe_embedded_blob.")),
	}
	for _, p := range fixtureSizes {
		uri := report + "://" + fixtureTenant + "/" + p.path()
		errs = append(errs, add(report, p.path(), "text/plain", fmt.Sprintf("Fixture: %d-byte text (%s)", p.bytes, p.tool()),
			fmt.Sprintf("The %d-byte text that %s returns.", p.bytes, p.tool()), false, p.body(uri)))
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return fx, nil
}

// addFixtures stores the fixture resources and registers the fixture tools.
func (s *Server) addFixtures(ctx context.Context) error {
	fx, err := s.newFixtures()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, r := range fx.res {
		if _, terr := fx.put(ctx, r); terr != nil {
			return fmt.Errorf("server: storing fixture %s: %w", r.key, terr) // the cause is logged

		}
	}
	tools := fx.tools()
	for _, t := range tools {
		s.toolScopes[t.tool.Name] = auth.ScopeRead
		s.mcp.AddTool(t.tool, fx.handler(t.fn))
	}
	s.log.Info("fixture tools enabled", "tenant", fixtureTenant, "tools", len(tools), "resources", len(fx.res))
	return nil
}

// put writes r unconditionally, public, expiring fixtureRetention from now,
// as a write of the server's own (no tenant quota).
func (fx *fixtures) put(ctx context.Context, r *fixtureResource) (store.Meta, *toolError) {
	now := fx.s.now().UTC().Truncate(time.Millisecond)
	m, _, terr := fx.s.svc.Put(ctx, service.Write{Meta: store.Meta{
		Key: r.key, MIMEType: r.mimeType, Created: now, Modified: now, Expires: now.Add(fixtureRetention),
		Title: r.title, Description: r.description, Listed: r.listed, Visibility: store.Public,
	}, Body: r.body, Cond: store.Cond{Kind: store.Always}, Own: true})
	return m, terr
}

// ensure returns the stored metadata of r, rewriting it first when it is
// missing, altered or past half its life.
func (fx *fixtures) ensure(ctx context.Context, r *fixtureResource) (store.Meta, *toolError) {
	m, err := fx.s.store.Stat(ctx, r.key)
	if err != nil && !isNotFound(err) {
		return m, fx.s.storeFailure(ctx, "fixture stat", err)
	}
	if err == nil && m.SHA256 == r.sha256 && m.MIMEType == r.mimeType && m.Listed == r.listed &&
		m.Visibility == store.Public && m.Title == r.title && m.Description == r.description &&
		!m.Expires.IsZero() && m.Expires.Sub(fx.s.now()) > fixtureRetention/2 {
		return m, nil
	}
	return fx.put(ctx, r)
}

// fixtureFunc is the body of a fixture tool, called with valid arguments.
type fixtureFunc func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError)

// handler adapts a fixtureFunc: scope, the q argument, errors.
func (fx *fixtures) handler(fn fixtureFunc) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := requireScope(ctx, auth.ScopeRead); err != nil {
			return nil, err
		}
		var a struct {
			Q *string `json:"q"`
		}
		if terr := decodeArgs(req.Params.Arguments, &a); terr != nil {
			return errorResult(terr), nil
		}
		if a.Q != nil && *a.Q != fixtureQuery {
			return errorResult(invalidField("q", fmt.Sprintf("the fixture tools answer only %q; omit q or pass %q", fixtureQuery, fixtureQuery))), nil
		}
		res, terr := fn(ctx, req)
		if terr != nil {
			return errorResult(terr), nil
		}
		return res, nil
	}
}

const fixtureInputSchema = `{"type": "object", "additionalProperties": false, "properties": {
    "q": {"type": "string", "default": "MCP", "description": "The search query. The fixtures answer only \"MCP\"."}}}`

const fixtureDocSchema = `{"type": "object", "additionalProperties": false, "required": ["marker", "query", "total", "hits"],
  "properties": {
    "marker": {"type": "string"},
    "query": {"type": "string"},
    "total": {"type": "integer", "minimum": 0},
    "hits": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["id", "title", "snippet"],
      "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "snippet": {"type": "string"}}}}}}`

const fixtureNoteSchema = `{"type": "object", "additionalProperties": false, "required": ["marker", "note"],
  "properties": {"marker": {"type": "string"}, "side": {"const": "structuredContent"}, "note": {"type": "string"}}}`

type fixtureTool struct {
	tool *mcp.Tool
	fn   fixtureFunc
}

// fixtureText is a result of text items.
func fixtureText(items ...string) *mcp.CallToolResult {
	c := make([]mcp.Content, len(items))
	for i, t := range items {
		c[i] = &mcp.TextContent{Text: t}
	}
	return &mcp.CallToolResult{Content: c}
}

// fixtureSC is a non-object structuredContent of a probe_sc_* tool.
type fixtureSC struct {
	tool, id, value, what string
}

var fixtureSCs = []fixtureSC{
	{"probe_sc_empty_array", "V01", `[]`, "an empty array"},
	{"probe_sc_empty_string", "V02", `""`, "an empty string"},
	{"probe_sc_zero", "V03", `0`, "the number zero"},
	{"probe_sc_false", "V04", `false`, "the boolean false"},
	{"probe_sc_null", "V05", `null`, "null"},
}

// tools returns the fixture tools in the order of docs/fixtures.md.
func (fx *fixtures) tools() []fixtureTool {
	boolp := func(b bool) *bool { return &b }
	ann := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolp(false)}
	def := func(name, title, desc, output string, fn fixtureFunc) fixtureTool {
		t := &mcp.Tool{
			Name: name, Title: title,
			Description: "Fixture for host acceptance tests (docs/fixtures.md). " + desc,
			Annotations: ann,
			InputSchema: json.RawMessage(fixtureInputSchema),
		}
		switch output {
		case "":
		case failureSchema: // a tool that always fails
			t.OutputSchema = json.RawMessage(output)
		default:
			t.OutputSchema = outputSchema(output)
		}
		return fixtureTool{tool: t, fn: fn}
	}
	link := func(path string) fixtureFunc {
		return func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
			m, terr := fx.ensure(ctx, fx.res[path])
			if terr != nil {
				return nil, terr
			}
			return &mcp.CallToolResult{Content: []mcp.Content{resourceLink(&m)}}, nil
		}
	}
	embed := func(path string, blob bool) fixtureFunc {
		return func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
			r := fx.res[path]
			if _, terr := fx.ensure(ctx, r); terr != nil {
				return nil, terr
			}
			rc := &mcp.ResourceContents{URI: r.key.String(), MIMEType: r.mimeType}
			if blob {
				rc.Blob = r.body
			} else {
				rc.Text = string(r.body)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: rc}}}, nil
		}
	}
	q := fmt.Sprintf("%q", fixtureQuery)

	tools := []fixtureTool{
		def("search_text", "Fixture T01: search result as text",
			"Returns the search result for "+q+" as one text item holding its JSON (no structuredContent).", "",
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				return fixtureText(string(fixtureJSON(newFixtureDoc("T01")))), nil
			}),
		def("search_structured", "Fixture S01: search result as structuredContent",
			"Returns the search result for "+q+" as structuredContent with an outputSchema, and its JSON as a text item.", fixtureDocSchema,
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				b := fixtureJSON(newFixtureDoc("S01"))
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
			}),
		def("search_embedded", "Fixture E01: search result as an embedded resource",
			"Returns the search result for "+q+" as an embedded resource with its body.", "", embed(fixtureEmbeddedPath, false)),
		def("search_link", "Fixture L01: search result as a resource_link",
			"Returns only a resource_link to the stored search result for "+q+"; read its body with resources/read.", "", link(fixtureLinkPath)),
		def("probe_structured_only", "Fixture probe: structuredContent only",
			"Returns structuredContent and an empty content array.", fixtureNoteSchema,
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				v := struct {
					Marker string `json:"marker"`
					Note   string `json:"note"`
				}{fixtureMark("S02"), "This result has structuredContent only; content is empty."}
				return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(fixtureJSON(v))}, nil
			}),
		def("probe_link_listed", "Fixture probe: link to a listed resource",
			"Returns only a resource_link to a resource that resources/list shows.", "", link(fixtureListedPath)),
		def("probe_link_unlisted", "Fixture probe: link to an unlisted resource",
			"Returns only a resource_link to a resource that resources/list does not show.", "", link(fixtureUnlistedPath)),
		def("probe_audience", "Fixture probe: audience annotations",
			"Returns two text items, one annotated for the user only and one for the assistant only.", "",
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.TextContent{Text: fixtureMark("A01") + " audience user: this text is annotated for the user only.",
						Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}},
					&mcp.TextContent{Text: fixtureMark("A02") + " audience assistant: this text is annotated for the assistant (the model) only.",
						Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}}},
				}}, nil
			}),
		def("probe_embedded_text", "Fixture probe: embedded text resource",
			"Returns an embedded resource whose body is text.", "", embed(fixtureEmbTextPath, false)),
		def("probe_embedded_blob", "Fixture probe: embedded blob resource",
			"Returns an embedded resource whose body (text/plain) is a base64 blob.", "", embed(fixtureEmbBlobPath, true)),
		def("probe_error", "Fixture probe: an error with text and structuredContent",
			"Always fails on purpose (isError) with a text and a structuredContent that differ; nothing is wrong, do not retry.",
			failureSchema,
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				return &mcp.CallToolResult{
					IsError: true,
					Content: []mcp.Content{&mcp.TextContent{Text: kindValidation + ": " + fixtureMark("X01") +
						" probe_error fails on purpose (text side of an isError result). Nothing is wrong; do not retry."}},
					StructuredContent: failure(kindValidation, fixtureMark("X02")+
						" probe_error fails on purpose (structuredContent side of an isError result). Nothing is wrong; do not retry."),
				}, nil
			}),
		def("probe_text_differs", "Fixture probe: text differs from structuredContent",
			"Returns a text item and a structuredContent that differ on purpose.", fixtureNoteSchema,
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				v := struct {
					Marker string `json:"marker"`
					Side   string `json:"side"`
					Note   string `json:"note"`
				}{fixtureMark("D02"), "structuredContent", "This value differs from the text item on purpose."}
				return &mcp.CallToolResult{
					Content:           []mcp.Content{&mcp.TextContent{Text: fixtureMark("D01") + " text side of probe_text_differs: this text differs from structuredContent on purpose."}},
					StructuredContent: json.RawMessage(fixtureJSON(v)),
				}, nil
			}),
	}
	for _, p := range fixtureSizes {
		path := p.path()
		tools = append(tools, def(p.tool(), fmt.Sprintf("Fixture probe: a %d-byte text result", p.bytes),
			fmt.Sprintf("Returns one text item of exactly %d bytes, markers on its first and last lines.", p.bytes), "",
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				r := fx.res[path]
				if _, terr := fx.ensure(ctx, r); terr != nil {
					return nil, terr
				}
				return fixtureText(string(r.body)), nil
			}))
	}
	for _, v := range fixtureSCs {
		tools = append(tools, def(v.tool, "Fixture probe: structuredContent "+v.value,
			"Returns structuredContent "+v.value+" ("+v.what+") on protocol 2026-07-28; older versions allow only objects, so there it is omitted.", "",
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *toolError) {
				if version := req.ProtocolVersion(); version < fixtureProtocolAnyValue {
					if version == "" {
						version = "this version"
					}
					return fixtureText(fmt.Sprintf("%s text side of %s: structuredContent is omitted because protocol %s allows only an object there; on %s it is %s (%s).",
						fixtureMark(v.id), v.tool, version, fixtureProtocolAnyValue, v.value, v.what)), nil
				}
				res := fixtureText(fmt.Sprintf("%s text side of %s: structuredContent of this result is %s (%s).", fixtureMark(v.id), v.tool, v.value, v.what))
				res.StructuredContent = json.RawMessage(v.value)
				return res, nil
			}))
	}
	return tools
}
