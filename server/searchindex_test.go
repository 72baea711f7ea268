package server

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/mcpschema"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/store/memstore"
)

// TestIndexToolSchemas: search_resources, search and fetch have portable
// schemas, take their example arguments, and answer, on success and on
// failure, a structuredContent their outputSchema accepts.
func TestIndexToolSchemas(t *testing.T) {
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := &linkEnv{clock: &clock}
	e.st = memstore.New(memstore.Options{Now: func() time.Time { return *e.clock }})
	x := index.New(memindex.New(), index.Options{Now: func() time.Time { return *e.clock }})
	s, err := New(Options{
		Store: e.st, Index: x, DeepResearch: true, BaseURL: "http://links.test", Auth: tenantAuth{},
		Now: func() time.Time { return *e.clock },
		Schemes: []Scheme{
			{Name: "report", Kind: KindReport, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 1 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	if res, _ := e.callRaw(t, "save_report", []byte(`{"path":"ex/a","mimeType":"text/plain","text":"hello world","title":"Hello"}`)); res["isError"] == true {
		t.Fatalf("save_report: %v", res)
	}
	calls := map[string][]string{
		"search_resources": {`{"query":"hello"}`, `{"query":"-only"}`},
		"search":           {`{"query":"hello"}`, `{"query":""}`},
		"fetch":            {`{"id":"report://t1/ex/a"}`, `{"id":"report://t2/ex/a"}`},
	}
	found := 0
	for _, d := range s.toolDefs() {
		examples, ok := calls[d.tool.Name]
		if !ok {
			continue
		}
		found++
		for _, raw := range []json.RawMessage{d.tool.InputSchema.(json.RawMessage), d.tool.OutputSchema.(json.RawMessage)} {
			problems, err := mcptool.SchemaProblems(raw)
			if err != nil || len(problems) > 0 {
				t.Errorf("%s: schema problems %v %v", d.tool.Name, problems, err)
			}
		}
		in, err := mcpschema.CompileSchema(d.tool.InputSchema.(json.RawMessage))
		if err != nil {
			t.Fatal(err)
		}
		out, err := mcpschema.CompileSchema(d.tool.OutputSchema.(json.RawMessage))
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range examples {
			doc, _ := mcpschema.Decode([]byte(ex))
			if err := in.Validate(doc); err != nil {
				t.Errorf("%s inputSchema refuses %s: %v", d.tool.Name, ex, err)
			}
			res, rerr := e.callRaw(t, d.tool.Name, []byte(ex))
			if rerr != nil {
				t.Fatalf("%s(%s): %v", d.tool.Name, ex, rerr)
			}
			sc, _ := json.Marshal(res["structuredContent"])
			v, _ := mcpschema.Decode(sc)
			if err := out.Validate(v); err != nil {
				t.Errorf("%s(%s): outputSchema refuses %s: %v", d.tool.Name, ex, sc, err)
			}
		}
	}
	if found != len(calls) {
		t.Errorf("%d of the %d index tools are registered", found, len(calls))
	}
}

// TestReadyzSaysTheIndexIsLocal: /readyz adds Options.IndexNote after
// ready (cmd sets it for a bleve index on S3).
func TestReadyzSaysTheIndexIsLocal(t *testing.T) {
	x := index.New(memindex.New(), index.Options{})
	s, err := New(Options{
		Store: memstore.New(memstore.Options{}), Index: x, IndexNote: "search index: local to this instance", Auth: tenantAuth{}, BaseURL: "http://127.0.0.1",
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/readyz", nil))
	if rec.Code != 200 || rec.Body.String() != "ready\nsearch index: local to this instance\n" {
		t.Errorf("/readyz = %d %q", rec.Code, rec.Body.String())
	}
}
