package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/resourced/resourced/mcpschema"
)

// maxPages bounds the pages of one list method the checker follows.
const maxPages = 20

// toolInfo is one tool of tools/list.
type toolInfo struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  *struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	} `json:"annotations"`
	output *jsonschema.Schema // compiled outputSchema; nil if none or invalid
}

// contentItem is one item of a tool result's content.
type contentItem struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MIMEType    string `json:"mimeType"`
	Size        *int64 `json:"size"`
	Annotations *struct {
		Audience     []string `json:"audience"`
		LastModified string   `json:"lastModified"`
	} `json:"annotations"`
	Resource *struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"resource"`
}

// callResult is a decoded CallToolResult.
type callResult struct {
	Content []contentItem `json:"content"`
	IsError bool          `json:"isError"`
	// Structured is structuredContent as sent ("null" when it is null);
	// HasStructured says whether the member is present at all.
	Structured    json.RawMessage `json:"-"`
	HasStructured bool            `json:"-"`
}

// toolCall is one tools/call of the run.
type toolCall struct {
	tool string
	x    *exchange
	res  *callResult // nil when the answer was a JSON-RPC error
	// deliberate: the tool differs between text and structuredContent on
	// purpose (a fixture); kept out of U11.
	deliberate bool
}

// callTool calls tool with args and records the call for the aggregate
// rows. The error is a transport error; a JSON-RPC error is in x.Err.
func (r *run) callTool(ctx context.Context, tool string, args map[string]any) (*toolCall, error) {
	x, err := r.c.call(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, err
	}
	tc := &toolCall{tool: tool, x: x}
	if x.Err == nil {
		var res callResult
		if err := json.Unmarshal(x.Result, &res); err == nil {
			var members map[string]json.RawMessage
			_ = json.Unmarshal(x.Result, &members)
			res.Structured, res.HasStructured = members["structuredContent"]
			tc.res = &res
		}
	}
	r.calls = append(r.calls, tc)
	return tc, nil
}

// structured decodes a call's structuredContent into a map (nil if it is
// not an object).
func (tc *toolCall) structured() map[string]any {
	if tc.res == nil || !tc.res.HasStructured {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(tc.res.Structured, &m)
	return m
}

// texts returns the text items of a call's content.
func (tc *toolCall) texts() []string {
	if tc.res == nil {
		return nil
	}
	var out []string
	for _, c := range tc.res.Content {
		if c.Type == "text" {
			out = append(out, c.Text)
		}
	}
	return out
}

// describe summarizes a failed or unexpected tool answer for evidence.
func (tc *toolCall) describe() string {
	switch {
	case tc.x.Err != nil:
		return fmt.Sprintf("%s: JSON-RPC error %d %q", tc.tool, tc.x.Err.Code, tc.x.Err.Message)
	case tc.res == nil:
		return fmt.Sprintf("%s: result is not a CallToolResult", tc.tool)
	case tc.res.IsError:
		sc := tc.structured()
		return fmt.Sprintf("%s: isError, errorKind %v: %s", tc.tool, sc["errorKind"], clip(strings.Join(tc.texts(), " "), 120))
	}
	return fmt.Sprintf("%s: ok", tc.tool)
}

func (r *run) universal(ctx context.Context) {
	r.listTools(ctx)
	r.listResources(ctx)
	r.unknownTool(ctx)
	r.probeReadOnlyTools(ctx)
}

// listTools runs U02 and U09.
func (r *run) listTools(ctx context.Context) {
	r.tools = map[string]*toolInfo{}
	if !r.declares("tools") {
		r.skip("U02", "the server declares no tools capability")
		r.skip("U09", "no tools")
		return
	}
	var cursor string
	pages := 0
	var problems []string
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		x, err := r.c.call(ctx, "tools/list", params)
		if err != nil {
			r.fail("U02", "%v", err)
			return
		}
		pages++
		if x.Err != nil {
			r.fail("U02", "tools/list: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
			return
		}
		if x.SchemaErr != nil {
			problems = append(problems, "page "+fmt.Sprint(pages)+": "+x.SchemaErr.Error())
		}
		var res struct {
			Tools      []*toolInfo `json:"tools"`
			NextCursor string      `json:"nextCursor"`
		}
		if err := json.Unmarshal(x.Result, &res); err != nil {
			r.fail("U02", "tools/list result: %v", err)
			return
		}
		for _, t := range res.Tools {
			if _, dup := r.tools[t.Name]; dup {
				problems = append(problems, "tool name "+t.Name+" listed twice")
				continue
			}
			r.tools[t.Name] = t
			r.toolOrder = append(r.toolOrder, t.Name)
		}
		if res.NextCursor == "" || pages >= maxPages {
			break
		}
		cursor = res.NextCursor
	}
	r.report.Server.Tools = r.toolOrder
	if len(problems) > 0 {
		r.fail("U02", "%s", strings.Join(problems, "; "))
	} else {
		r.pass("U02", "%d tools in %d page(s)", len(r.tools), pages)
	}
	// U09: the tools' schemas compile.
	var bad []string
	outputs := 0
	for _, name := range r.toolOrder {
		t := r.tools[name]
		if _, err := mcpschema.CompileSchema(t.InputSchema); err != nil {
			bad = append(bad, fmt.Sprintf("%s inputSchema: %v", name, err))
		}
		if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
			outputs++
			sch, err := mcpschema.CompileSchema(t.OutputSchema)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s outputSchema: %v", name, err))
				continue
			}
			t.output = sch
		}
	}
	switch {
	case len(r.tools) == 0:
		r.skip("U09", "the server lists no tools")
	case len(bad) > 0:
		r.fail("U09", "%s", strings.Join(bad, "; "))
	default:
		r.pass("U09", "%d inputSchemas and %d outputSchemas compile", len(r.tools), outputs)
	}
}

// listedResource is one entry of resources/list.
type listedResource struct {
	URI string `json:"uri"`
}

// listResources runs U03–U07 and U12.
func (r *run) listResources(ctx context.Context) {
	if !r.declares("resources") {
		for _, id := range []string{"U03", "U04", "U06", "U07", "U12"} {
			r.skip(id, "the server declares no resources capability")
		}
	} else {
		listed, err := r.resourcesList(ctx)
		if err != nil {
			r.fail("U03", "%v", err)
		} else {
			r.pass("U03", "%d listed resources", len(listed))
		}
		templates := r.templatesList(ctx)
		r.unknownURI(ctx, templates, listed)
		r.readListed(ctx, listed)
	}
	if !r.declares("prompts") {
		r.skip("U05", "the server declares no prompts capability")
		return
	}
	x, err := r.c.call(ctx, "prompts/list", nil)
	switch {
	case err != nil:
		r.fail("U05", "%v", err)
	case x.Err != nil:
		r.fail("U05", "prompts/list: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
	case x.SchemaErr != nil:
		r.fail("U05", "prompts/list: %v", x.SchemaErr)
	default:
		r.pass("U05", "prompts/list valid")
	}
}

// resourcesList returns the listed resources (at most maxPages pages),
// failing U03 on an invalid page.
func (r *run) resourcesList(ctx context.Context) ([]listedResource, error) {
	var all []listedResource
	var cursor string
	for page := 1; page <= maxPages; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		x, err := r.c.call(ctx, "resources/list", params)
		if err != nil {
			return all, err
		}
		if x.Err != nil {
			return all, fmt.Errorf("resources/list: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
		}
		if x.SchemaErr != nil {
			return all, fmt.Errorf("resources/list page %d: %v", page, x.SchemaErr)
		}
		var res struct {
			Resources  []listedResource `json:"resources"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(x.Result, &res); err != nil {
			return all, fmt.Errorf("resources/list: %v", err)
		}
		all = append(all, res.Resources...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return all, nil
}

func (r *run) templatesList(ctx context.Context) []string {
	x, err := r.c.call(ctx, "resources/templates/list", nil)
	if err != nil {
		r.fail("U04", "%v", err)
		return nil
	}
	if x.Err != nil {
		r.fail("U04", "resources/templates/list: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
		return nil
	}
	var res struct {
		ResourceTemplates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resourceTemplates"`
	}
	_ = json.Unmarshal(x.Result, &res)
	var out []string
	for _, t := range res.ResourceTemplates {
		out = append(out, t.URITemplate)
	}
	if x.SchemaErr != nil {
		r.fail("U04", "resources/templates/list: %v", x.SchemaErr)
	} else {
		r.pass("U04", "%d templates %s", len(out), clip(strings.Join(out, " "), 150))
	}
	return out
}

var templateExpr = regexp.MustCompile(`\{[^}]*\}`)

// unknownURI reads a URI the server cannot have (U06, U07): one matching
// its first template with every variable a fresh random value, so a
// server that dispatches on templates reaches its own lookup.
func (r *run) unknownURI(ctx context.Context, templates []string, listed []listedResource) {
	missing := "check-" + r.token + "-missing"
	uri := "mcp-check://" + missing + "/" + missing
	switch {
	case len(templates) > 0:
		uri = templateExpr.ReplaceAllString(templates[0], missing)
	case len(listed) > 0:
		uri = strings.TrimRight(listed[0].URI, "/") + "-" + missing
	}
	ne, err := r.readNotFound(ctx, uri)
	if err != nil {
		r.fail("U06", "%v", err)
		r.skip("U07", "no error to look at")
		return
	}
	if ne.problem != "" {
		r.fail("U06", "%s", ne.problem)
		r.skip("U07", "no not-found error")
		return
	}
	okCodes := []int64{-32602}
	if r.c.version == V2025 {
		okCodes = append(okCodes, -32002)
	}
	r.check("U06", slices.Contains(okCodes, ne.err.Code),
		fmt.Sprintf("%s → error %d %q", uri, ne.err.Code, ne.err.Message),
		fmt.Sprintf("%s → error %d %q, want -32602", uri, ne.err.Code, ne.err.Message))
	if ne.dataURI == nil {
		r.fail("U07", "%s → error data %s has no uri", uri, orNone(ne.err.Data))
	} else {
		r.check("U07", *ne.dataURI == uri, fmt.Sprintf("data.uri = %q", *ne.dataURI), fmt.Sprintf("data.uri = %q, sent %q", *ne.dataURI, uri))
	}
}

func orNone(b json.RawMessage) string {
	if len(b) == 0 {
		return "(none)"
	}
	return string(b)
}

// notFoundAnswer is the answer to a read of a URI that must not exist.
type notFoundAnswer struct {
	err     *rpcError
	dataURI *string
	problem string // set when the answer was not an error
	x       *exchange
}

// readNotFound reads uri expecting a not-found error.
func (r *run) readNotFound(ctx context.Context, uri string) (*notFoundAnswer, error) {
	x, err := r.c.call(ctx, "resources/read", map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	a := &notFoundAnswer{x: x, err: x.Err}
	if x.Err == nil {
		var res struct {
			Contents []json.RawMessage `json:"contents"`
		}
		_ = json.Unmarshal(x.Result, &res)
		if len(res.Contents) == 0 {
			a.problem = fmt.Sprintf("%s → a result with empty contents, not JSON-RPC error -32602", uri)
		} else {
			a.problem = fmt.Sprintf("%s → a result with %d content item(s), not a not-found error", uri, len(res.Contents))
		}
		return a, nil
	}
	var data struct {
		URI *string `json:"uri"`
	}
	if json.Unmarshal(x.Err.Data, &data) == nil {
		a.dataURI = data.URI
	}
	return a, nil
}

// readResult is a decoded ReadResourceResult.
type readResult struct {
	TTLMs      *json.Number `json:"ttlMs"`
	CacheScope *string      `json:"cacheScope"`
	Contents   []struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		Text     *string        `json:"text"`
		Blob     *string        `json:"blob"`
		Meta     map[string]any `json:"_meta"`
	} `json:"contents"`
}

// read reads uri and decodes the result; a JSON-RPC error is an error.
func (r *run) read(ctx context.Context, uri string) (*readResult, *exchange, error) {
	x, err := r.c.call(ctx, "resources/read", map[string]any{"uri": uri})
	if err != nil {
		return nil, nil, err
	}
	if x.Err != nil {
		return nil, x, fmt.Errorf("resources/read %s: JSON-RPC error %d %q", uri, x.Err.Code, x.Err.Message)
	}
	d := json.NewDecoder(strings.NewReader(string(x.Result)))
	d.UseNumber()
	var res readResult
	if err := d.Decode(&res); err != nil {
		return nil, x, fmt.Errorf("resources/read %s: %v", uri, err)
	}
	return &res, x, nil
}

// cacheFields checks ttlMs and cacheScope of a read result; "" if fine.
func cacheFields(res *readResult) string {
	var p []string
	if res.TTLMs == nil {
		p = append(p, "no ttlMs")
	} else if n, err := res.TTLMs.Int64(); err != nil || n < 0 {
		p = append(p, "ttlMs "+res.TTLMs.String()+" is not an integer ≥ 0")
	}
	if res.CacheScope == nil {
		p = append(p, "no cacheScope")
	} else if *res.CacheScope != "private" && *res.CacheScope != "public" {
		p = append(p, fmt.Sprintf("cacheScope %q", *res.CacheScope))
	}
	return strings.Join(p, ", ")
}

func (res *readResult) cacheString() string {
	ttl, scope := "(none)", "(none)"
	if res.TTLMs != nil {
		ttl = res.TTLMs.String()
	}
	if res.CacheScope != nil {
		scope = *res.CacheScope
	}
	return "ttlMs " + ttl + ", cacheScope " + scope
}

// readListed reads up to three listed resources (U12).
func (r *run) readListed(ctx context.Context, listed []listedResource) {
	if len(listed) == 0 {
		r.skip("U12", "resources/list is empty")
		return
	}
	var ev []string
	for _, l := range listed[:min(3, len(listed))] {
		res, x, err := r.read(ctx, l.URI)
		if err != nil {
			r.fail("U12", "%v", err)
			continue
		}
		if x.SchemaErr != nil {
			r.fail("U12", "%s: %v", l.URI, x.SchemaErr)
			continue
		}
		if p := cacheFields(res); p != "" {
			r.fail("U12", "%s: %s", l.URI, p)
			continue
		}
		ev = append(ev, l.URI+": "+res.cacheString())
	}
	r.pass("U12", "%s", strings.Join(ev, "; "))
}

// unknownTool runs U08.
func (r *run) unknownTool(ctx context.Context) {
	name := "check_unknown_tool_" + r.token
	x, err := r.c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
	switch {
	case err != nil:
		r.fail("U08", "%v", err)
	case x.Err == nil:
		r.fail("U08", "tools/call %s → a result, not a JSON-RPC error", name)
	default:
		r.pass("U08", "tools/call %s → error %d %q", name, x.Err.Code, x.Err.Message)
	}
}

// fixtureTools are called by the acceptance layer, never by the probe.
var fixtureTools = []string{
	"search_text", "search_structured", "search_embedded", "search_link",
	"probe_structured_only", "probe_link_listed", "probe_link_unlisted", "probe_audience",
	"probe_embedded_text", "probe_embedded_blob", "probe_error", "probe_text_differs",
	"probe_size_10k", "probe_size_40k", "probe_size_66k", "probe_size_155k",
	"probe_sc_empty_array", "probe_sc_empty_string", "probe_sc_zero", "probe_sc_false", "probe_sc_null",
}

// maxProbes bounds the read-only tools the universal layer calls.
const maxProbes = 5

// probeReadOnlyTools calls tools that say they are read-only
// (readOnlyHint) and need no argument, with {}, so that U10 and U11 have
// results to look at on any server. Fixture tools are left to the
// acceptance layer.
func (r *run) probeReadOnlyTools(ctx context.Context) {
	n := 0
	for _, name := range r.toolOrder {
		t := r.tools[name]
		if n >= maxProbes || slices.Contains(fixtureTools, name) {
			continue
		}
		if t.Annotations == nil || t.Annotations.ReadOnlyHint == nil || !*t.Annotations.ReadOnlyHint {
			continue
		}
		var in struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(t.InputSchema, &in) != nil || len(in.Required) > 0 {
			continue
		}
		n++
		if _, err := r.callTool(ctx, name, map[string]any{}); err != nil {
			r.fail("U10", "%v", err)
		}
	}
}

// aggregate settles the rows about every exchange of the run: U10, U11,
// U13, U14, U15.
func (r *run) aggregate() {
	r.aggregateToolResults()
	xs := r.c.exchanges()
	var bad []string
	for _, x := range xs {
		if x.SchemaErr != nil {
			bad = append(bad, fmt.Sprintf("%s %s: %v", x.Method, x.Name, x.SchemaErr))
		}
	}
	if len(bad) > 0 {
		r.fail("U13", "%d of %d responses invalid; first: %s", len(bad), len(xs), bad[0])
	} else {
		r.pass("U13", "%d responses valid against %s", len(xs), r.c.version)
	}
	if r.c.version != V2026 {
		r.skip("U14", "resultType is new in 2026-07-28; this run speaks %s", r.c.version)
	} else {
		var missing []string
		results := 0
		for _, x := range xs {
			if x.Err != nil {
				continue
			}
			results++
			if x.ResultType != "complete" {
				missing = append(missing, fmt.Sprintf("%s %s: resultType %q", x.Method, x.Name, x.ResultType))
			}
		}
		if len(missing) > 0 {
			r.fail("U14", "%d of %d results; first: %s", len(missing), results, missing[0])
		} else {
			r.pass("U14", "%d results carry resultType \"complete\"", results)
		}
	}
	types := map[string]int{}
	errStatus := map[string]int{}
	for _, x := range xs {
		types[x.ContentType]++
		if x.Err != nil {
			errStatus[fmt.Sprintf("HTTP %d", x.HTTPStatus)]++
		}
	}
	session := "no Mcp-Session-Id (stateless)"
	if r.c.sessionID != "" {
		session = "stateful session (Mcp-Session-Id)"
	}
	r.pass("U15", "responses: %s; JSON-RPC errors: %s; %s", counts(types), counts(errStatus), session)
}

// aggregateToolResults runs U10 and U11 over every tool call of the run.
func (r *run) aggregateToolResults() {
	checked, withText, deliberate := 0, 0, 0
	for _, tc := range r.calls {
		if tc.res == nil {
			continue
		}
		t := r.tools[tc.tool]
		if t != nil && t.output != nil {
			switch {
			case tc.res.HasStructured:
				checked++
				v, err := mcpschema.Decode(tc.res.Structured)
				if err == nil {
					err = t.output.Validate(v)
				}
				if err != nil {
					r.fail("U10", "%s: structuredContent does not conform to its outputSchema: %v", tc.tool, err)
				}
			case !tc.res.IsError:
				r.fail("U10", "%s declares an outputSchema but its result has no structuredContent", tc.tool)
			}
		}
		if tc.deliberate {
			deliberate++
		}
		if tc.res.HasStructured && !tc.res.IsError && !tc.deliberate {
			withText++
			if p := textMismatch(tc); p != "" {
				r.fail("U11", "%s: %s", tc.tool, p)
			}
		}
	}
	if checked > 0 {
		r.pass("U10", "%d structuredContent values conform to their outputSchema", checked)
	} else {
		r.skip("U10", "no tool with an outputSchema was called")
	}
	excluded := ""
	if deliberate > 0 {
		excluded = fmt.Sprintf("; %d calls of probe_* fixtures (some deviate on purpose) left to A04 and P01–P05", deliberate)
	}
	if withText > 0 {
		r.pass("U11", "%d results: text = JSON(structuredContent)%s", withText, excluded)
	} else {
		r.skip("U11", "no successful result with structuredContent")
	}
}

// textMismatch says how a result's text items fail to carry
// JSON(structuredContent); "" when one of them does.
func textMismatch(tc *toolCall) string {
	texts := tc.texts()
	if len(texts) == 0 {
		return "structuredContent without a text item"
	}
	want, err := decodeAny(tc.res.Structured)
	if err != nil {
		return "structuredContent is not JSON"
	}
	for _, t := range texts {
		if got, err := decodeAny([]byte(t)); err == nil && reflect.DeepEqual(got, want) {
			return ""
		}
	}
	return fmt.Sprintf("text %q ≠ JSON(structuredContent) %s", clip(texts[0], 60), clip(string(tc.res.Structured), 60))
}

// decodeAny decodes JSON with exact numbers, rejecting trailing data.
func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data")
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns json.Numbers into canonical strings, so 2 and
// 2.0 compare equal and large integers keep their value.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	case json.Number:
		if f, ok := new(big.Float).SetPrec(256).SetString(string(v)); ok {
			return number(f.Text('g', -1))
		}
		return number(v)
	}
	return v
}

// number is a JSON number in canonical form, distinct from a string.
type number string

// counts formats a tally as "a ×3, b ×1", largest first.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
