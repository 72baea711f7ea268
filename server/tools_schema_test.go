package server

import (
	"github.com/resourced/resourced/toolapi"

	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/resourced/resourced/mcpschema"
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
		{"list_resources", "limit", "maximum", maxListLimit},
		{"list_resources", "limit", "default", defaultListLimit},
	} {
		if got := num(c.tool, c.prop, c.kw); got != c.want {
			t.Errorf("%s inputSchema %s.%s = %v, want %v", c.tool, c.prop, c.kw, got, c.want)
		}
	}
	// And the server holds to it: 123 hits pass, 124 do not.
	hits := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"query": "q", "hits": make([]hit, n)})
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
		`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s","url":"https://example.com","score":0.5}],"total":1,"title":"T","description":"D","retention":"P7D","listed":true,"visibility":"public","scheme":"search","includeDownloadUrl":true,"downloadUrlTtl":60}`,
	},
	"save_report": {
		`{"path":"ex/a","mimeType":"text/plain","text":"hello"}`,
		`{"path":"ex/b","mimeType":"application/octet-stream","blobBase64":"AAEC","title":"T","description":"D","overwrite":true,"retention":3600,"listed":false,"visibility":"private","includeDownloadUrl":true,"downloadUrlTtl":"PT10M"}`,
	},
	"stat_resource":   {`{"uri":"report://t1/ex/a"}`, `{"uri":"report://t1/ex/a","includeDownloadUrl":true,"downloadUrlTtl":60}`},
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
			if sc, _ := res["structuredContent"].(map[string]any); sc["errorKind"] == kindValidation {
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
			"save_search_snapshot": &snapshotArgs{}, "save_report": &reportArgs{}, "stat_resource": &statArgs{},
			"read_resource": &readArgs{}, "list_resources": &listArgs{}, "delete_resource": &uriArgs{},
			"grep_resource": &toolapi.GrepArgs{}, "query_resource": &toolapi.QueryArgs{},
		}[name]
		fields := fieldNames(reflectElem(args))
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
