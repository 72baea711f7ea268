package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/mcpschema"
	"github.com/resourced/resourced/server/internal/fulltext"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
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

// TestSearchPageFitsBudget: pages of hits with the longest titles,
// descriptions, paths and snippets a save allows (every character one
// JSON escapes) fit the page budget, content and structuredContent both,
// and the cursors of the cut pages find every hit exactly once; short
// hits are not cut.
func TestSearchPageFitsBudget(t *testing.T) {
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	st := memstore.New(memstore.Options{Now: now})
	x := index.New(memindex.New(), index.Options{Now: now})
	serve := func(pageBytes int) *linkEnv {
		s, err := New(Options{
			Store: st, Index: x, DeepResearch: true, IndexPageBytes: pageBytes, BaseURL: "http://links.test", Auth: tenantAuth{}, Now: now,
			Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 1 << 20}},
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		t.Cleanup(hs.Close)
		return &linkEnv{clock: &clock, st: st, s: s, url: hs.URL}
	}
	e := serve(0)
	long := map[string]bool{}
	for i := range 12 {
		path := fmt.Sprintf("long/%s/%02d", strings.Repeat("p", 500), i)
		args, _ := json.Marshal(map[string]any{"path": path, "mimeType": "text/plain",
			"title":       strings.Repeat("<", 512),
			"description": strings.Repeat("&", 4096),
			"text":        strings.Repeat("<", 150) + " needle " + strings.Repeat(">", 300) + "\nneedle again\n"})
		if res, rerr := e.callRaw(t, "save_report", args); rerr != nil || res["isError"] == true {
			t.Fatalf("save_report: %v %v", res, rerr)
		}
		long["report://t1/"+path] = true
	}
	for i := range 10 {
		args, _ := json.Marshal(map[string]any{"path": fmt.Sprintf("short/%d", i), "mimeType": "text/plain",
			"title": "Weekly audit", "description": "An audit report", "text": "the haystack of week " + fmt.Sprint(i)})
		if res, rerr := e.callRaw(t, "save_report", args); rerr != nil || res["isError"] == true {
			t.Fatalf("save_report: %v %v", res, rerr)
		}
	}
	for _, budget := range []int{fulltext.DefaultPageBytes, fulltext.MinPageBytes} {
		e := serve(budget)
		if budget == fulltext.DefaultPageBytes {
			e = serve(0)
		}
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > len(long) {
				t.Fatalf("budget %d: more pages than hits", budget)
			}
			args, _ := json.Marshal(map[string]any{"query": "needle", "limit": 50, "cursor": cursor})
			content, structured := rawToolResult(t, e, "search_resources", args)
			if len(content) > budget || len(structured) > budget {
				t.Errorf("budget %d: a page of %d content bytes, %d structuredContent bytes", budget, len(content), len(structured))
			}
			var v toolapi.SearchResourcesResult
			if err := json.Unmarshal(structured, &v); err != nil || len(v.Hits) == 0 {
				t.Fatalf("budget %d: page %s (%v)", budget, structured, err)
			}
			for _, h := range v.Hits {
				if seen[h.URI] || !long[h.URI] {
					t.Errorf("budget %d: hit %s again or unknown", budget, h.URI)
				}
				seen[h.URI] = true
			}
			if cursor = v.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != len(long) {
			t.Errorf("budget %d: the pages found %d of %d hits", budget, len(seen), len(long))
		}
		content, structured := rawToolResult(t, e, "search", []byte(`{"query":"needle"}`))
		if len(content) > budget || len(structured) > budget {
			t.Errorf("budget %d: search answered %d content bytes, %d structuredContent bytes", budget, len(content), len(structured))
		}
	}
	// Ten short hits fit one page whole.
	_, structured := rawToolResult(t, e, "search_resources", []byte(`{"query":"haystack"}`))
	var v toolapi.SearchResourcesResult
	if err := json.Unmarshal(structured, &v); err != nil || len(v.Hits) != 10 || v.NextCursor != "" {
		t.Errorf("ten short hits: %d hits, nextCursor %q (%v)", len(v.Hits), v.NextCursor, err)
	}
}

// rawToolResult calls tool and returns its result's content and
// structuredContent as they came over the wire.
func rawToolResult(t *testing.T, e *linkEnv, tool string, args []byte) (content, structured []byte) {
	t.Helper()
	_, b := e.postRaw(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args))
	var env struct {
		Result struct {
			Content           json.RawMessage `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Result.IsError {
		t.Fatalf("%s(%s): %s", tool, args, b)
	}
	return env.Result.Content, env.Result.StructuredContent
}
