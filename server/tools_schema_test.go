package server

import (
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/toolapi"

	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/resourced/resourced/mcpschema"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/store/memstore"
)

// TestSchemaCarriesConfiguredLimits: the advertised inputSchema of
// save_search_snapshot allows exactly limits.maxHits hits (it was a
// hard-coded 10000), and the byte limits of title, description and path
// bound their length.
func TestSchemaCarriesConfiguredLimits(t *testing.T) {
	e := &linkEnv{}
	s, err := New(Options{
		Store: memstore.New(memstore.Options{}), BaseURL: "http://limits.test", Auth: tenantAuth{},
		Limits: Limits{MaxHits: 123, MaxTitleBytes: 77, MaxDescriptionBytes: 88, MaxPathBytes: 99},
		Schemes: []Scheme{
			{Name: "search", Kind: KindSearch, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20},
			{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	res, rerr := e.rpcRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	props := map[string]map[string]any{}
	for _, tl := range res["tools"].([]any) {
		tool := tl.(map[string]any)
		props[tool["name"].(string)] = tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
	}
	num := func(tool, prop, kw string) any { return props[tool][prop].(map[string]any)[kw] }
	for _, c := range []struct {
		tool, prop, kw string
		want           float64
	}{
		{"save_search_snapshot", "hits", "maxItems", 123},
		{"save_search_snapshot", "title", "maxLength", 77},
		{"save_search_snapshot", "description", "maxLength", 88},
		{"save_report", "title", "maxLength", 77},
		{"save_report", "description", "maxLength", 88},
		{"save_report", "path", "maxLength", 99},
		{"list_resources", "limit", "maximum", service.MaxListLimit},
		{"list_resources", "limit", "default", service.DefaultListLimit},
	} {
		if got := num(c.tool, c.prop, c.kw); got != c.want {
			t.Errorf("%s inputSchema %s.%s = %v, want %v", c.tool, c.prop, c.kw, got, c.want)
		}
	}
	// And the server holds to it: 123 hits pass, 124 do not.
	hits := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"query": "q", "hits": make([]toolapi.Hit, n)})
		return b
	}
	for i := range 2 {
		n := 123 + i
		raw := hits(n)
		var a map[string]any
		json.Unmarshal(raw, &a)
		for _, h := range a["hits"].([]any) {
			h.(map[string]any)["id"] = "x"
		}
		raw, _ = json.Marshal(a)
		res, _ := e.callRaw(t, "save_search_snapshot", raw)
		if tooMany := res["isError"] == true; tooMany != (n > 123) {
			t.Errorf("%d hits: isError %v, %v", n, tooMany, res["structuredContent"])
		}
	}
}

// schemaExamples are valid arguments of each tool: every schema must take
// them and the server must not refuse them as invalid.
var schemaExamples = map[string][]string{
	"save_search_snapshot": {
		`{"query":"q","hits":[]}`,
		`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s","url":"https://example.com","score":0.5}],"total":1,"title":"T","description":"D","retention":"P7D","listed":true,"visibility":"public","scheme":"search","includeDownloadUrl":true,"downloadUrlTtl":"PT1M"}`,
	},
	"save_report": {
		`{"path":"ex/a","mimeType":"text/plain","text":"hello"}`,
		`{"path":"ex/b","mimeType":"application/octet-stream","blobBase64":"AAEC","title":"T","description":"D","overwrite":true,"retention":"PT1H","listed":false,"visibility":"private","includeDownloadUrl":true,"downloadUrlTtl":"PT10M"}`,
	},
	"stat_resource":   {`{"uri":"report://t1/ex/a"}`, `{"uri":"report://t1/ex/a","includeDownloadUrl":true,"downloadUrlTtl":"PT1M"}`},
	"read_resource":   {`{"uri":"report://t1/ex/a"}`, `{"uri":"report://t1/ex/a","offset":0,"length":3}`, `{"uri":"report://t1/ex/a","startLine":1,"lineCount":1,"includeDownloadUrl":true}`},
	"list_resources":  {`{}`, `{"scheme":"report","prefix":"ex/","limit":10}`},
	"delete_resource": {`{"uri":"report://t1/ex/b"}`},
	"grep_resource":   {`{"uri":"report://t1/ex/a","pattern":"h.l"}`, `{"uri":"report://t1/ex/a","pattern":"(","literal":true,"context":2,"maxMatches":5,"afterLine":0,"afterOffset":0}`},
	"query_resource":  {`{"uri":"report://t1/ex/q.json","path":"$.a"}`, `{"uri":"report://t1/ex/q.json","path":"$..id","maxMatches":5,"startIndex":1}`},
}

// TestSchemasTakeExamplesAndRefuseUnknownProperties: each tool's
// generated inputSchema validates its example arguments, which the tool
// accepts, and refuses an unknown property at the top and inside a hit,
// as decodeArgs does.
func TestSchemasTakeExamplesAndRefuseUnknownProperties(t *testing.T) {
	e := newLinkEnv(t)
	defs := e.s.toolDefs()
	if len(defs) != len(schemaExamples) {
		t.Fatalf("%d tools, %d with examples", len(defs), len(schemaExamples))
	}
	for _, d := range defs {
		name := d.tool.Name
		in, err := mcpschema.CompileSchema(d.tool.InputSchema.(json.RawMessage))
		if err != nil {
			t.Fatalf("%s inputSchema: %v", name, err)
		}
		if _, err := mcpschema.CompileSchema(d.tool.OutputSchema.(json.RawMessage)); err != nil {
			t.Fatalf("%s outputSchema: %v", name, err)
		}
		examples := schemaExamples[name]
		if len(examples) == 0 {
			t.Errorf("%s has no examples", name)
		}
		for _, ex := range examples {
			doc, _ := mcpschema.Decode([]byte(ex))
			if err := in.Validate(doc); err != nil {
				t.Errorf("%s inputSchema refuses its example %s: %v", name, ex, err)
			}
			res, rerr := e.callRaw(t, name, []byte(ex))
			if rerr != nil {
				t.Fatalf("%s(%s): %v", name, ex, rerr)
			}
			if sc, _ := res["structuredContent"].(map[string]any); sc["errorKind"] == service.KindValidation {
				t.Errorf("%s refuses its example %s: %v", name, ex, sc)
			}
			var a map[string]any
			json.Unmarshal([]byte(ex), &a)
			a["surprise"] = 1
			bad, _ := json.Marshal(a)
			doc, _ = mcpschema.Decode(bad)
			if in.Validate(doc) == nil {
				t.Errorf("%s inputSchema takes the unknown property in %s", name, bad)
			}
			if hits, ok := a["hits"].([]any); ok && len(hits) > 0 {
				delete(a, "surprise")
				hits[0].(map[string]any)["surprise"] = 1
				bad, _ = json.Marshal(a)
				doc, _ = mcpschema.Decode(bad)
				if in.Validate(doc) == nil {
					t.Errorf("%s inputSchema takes the unknown hit property in %s", name, bad)
				}
			}
		}
		// The schema names exactly the arguments the decoder takes.
		var sch struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(d.tool.InputSchema.(json.RawMessage), &sch)
		args := map[string]any{
			"save_search_snapshot": &toolapi.SearchSnapshotArgs{}, "save_report": &toolapi.ReportArgs{}, "stat_resource": &toolapi.StatArgs{},
			"read_resource": &toolapi.ReadArgs{}, "list_resources": &toolapi.ListArgs{}, "delete_resource": &toolapi.DeleteArgs{},
			"grep_resource": &toolapi.GrepArgs{}, "query_resource": &toolapi.QueryArgs{},
		}[name]
		fields := mcptool.FieldNames(reflectElem(args))
		if len(fields) != len(sch.Properties) {
			t.Errorf("%s: decoder takes %d arguments, inputSchema names %d", name, len(fields), len(sch.Properties))
		}
		for f := range fields {
			if _, ok := sch.Properties[f]; !ok {
				t.Errorf("%s: argument %q is not in the inputSchema", name, f)
			}
		}
	}
}

func reflectElem(v any) reflect.Type { return reflect.TypeOf(v).Elem() }

// TestSchemasArePortable: no tool schema, fixtures included, has what
// single-type dialects refuse (a type array, a remote $ref, a schema that
// constrains nothing): the rules of the Inspector's --strict lint, which
// scripts/inspector-strict.sh runs for real. retention and downloadUrlTtl
// were ["string","number"].
func TestSchemasArePortable(t *testing.T) {
	e := newToolsEnv(t)
	res, rerr := e.rpcRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	tools := res["tools"].([]any)
	if len(tools) < 20 {
		t.Fatalf("tools/list lists %d tools; the fixtures are missing", len(tools))
	}
	for _, tl := range tools {
		tool := tl.(map[string]any)
		for _, which := range []string{"inputSchema", "outputSchema"} {
			sch, ok := tool[which]
			if !ok {
				continue
			}
			raw, _ := json.Marshal(sch)
			problems, err := mcptool.SchemaProblems(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("%s %s: %s", tool["name"], which, p)
			}
		}
	}
}

// TestSchemaProblemsFindsWhatTheInspectorFinds: the lint itself, on the
// constructs the Inspector reports.
func TestSchemaProblemsFindsWhatTheInspectorFinds(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   int
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, 0},
		{`{"type":"object","properties":{"a":{"type":["string","number"]}}}`, 1},
		{`{"type":"object","properties":{"a":{"description":"anything"}}}`, 1},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, 1},
		{`{"type":"object","properties":{"a":true}}`, 1},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"not":{}}}}`, 0},
		{`{"type":"object","anyOf":[{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}},{"type":["object","null"]}]}`, 1},
	} {
		got, err := mcptool.SchemaProblems([]byte(tc.schema))
		if err != nil || len(got) != tc.want {
			t.Errorf("SchemaProblems(%s) = %q, %v; want %d problems", tc.schema, got, err, tc.want)
		}
	}
}

// TestDurationsStillTakeSeconds: the schema advertises ISO-8601 strings
// only, but a number of seconds, the form documented before, is still
// taken by every duration argument.
func TestDurationsStillTakeSeconds(t *testing.T) {
	e := newLinkEnv(t)
	for _, d := range e.s.toolDefs() {
		var sch struct {
			Properties map[string]struct {
				Type    any    `json:"type"`
				Pattern string `json:"pattern"`
			} `json:"properties"`
		}
		json.Unmarshal(d.tool.InputSchema.(json.RawMessage), &sch)
		for _, name := range []string{"retention", "downloadUrlTtl"} {
			if p, ok := sch.Properties[name]; ok && (p.Type != "string" || p.Pattern == "") {
				t.Errorf("%s %s: type %v, pattern %q; want one type, string, with a pattern", d.tool.Name, name, p.Type, p.Pattern)
			}
		}
	}
	for _, c := range []struct{ tool, args string }{
		{"save_report", `{"path":"legacy/a","mimeType":"text/plain","text":"x","retention":3600,"includeDownloadUrl":true,"downloadUrlTtl":60}`},
		{"save_search_snapshot", `{"query":"q","hits":[],"retention":7200.5,"includeDownloadUrl":true,"downloadUrlTtl":120}`},
		{"stat_resource", `{"uri":"report://t1/legacy/a","includeDownloadUrl":true,"downloadUrlTtl":60}`},
		{"read_resource", `{"uri":"report://t1/legacy/a","includeDownloadUrl":true,"downloadUrlTtl":60}`},
	} {
		res, rerr := e.callRaw(t, c.tool, []byte(c.args))
		if rerr != nil {
			t.Fatal(rerr)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] == true || sc["downloadUrl"] == nil {
			t.Errorf("%s(%s) = %v", c.tool, c.args, sc)
		}
	}
}
