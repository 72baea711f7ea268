package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The search and fetch pair, as OpenAI documents it for ChatGPT's deep
// research and company knowledge (docs/decisions.md, "Full-text search"):
//
//	search {query: string} → exactly one content item, type "text", whose
//	  text is the JSON {"results": [{"id", "title", "url"}]}
//	fetch {id: string} → exactly one content item, type "text", whose text
//	  is the JSON {"id", "title", "text", "url", "metadata"} (metadata
//	  optional key/value pairs)
//
// openAIShape checks r against that: one text item, its JSON an object
// with exactly keys (metadata optional), each a string but metadata. It
// returns the decoded object.
func openAIShape(t *testing.T, tool string, r *toolResult, keys ...string) map[string]any {
	t.Helper()
	if r.IsError {
		t.Fatalf("%s failed: %s", tool, r.raw)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("%s: want exactly one text content item, got %s", tool, r.raw)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Content[0].Text), &v); err != nil {
		t.Fatalf("%s: the text item is not JSON: %v\n%s", tool, err, r.Content[0].Text)
	}
	var got []string
	for k := range v {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: keys %v, want %v", tool, got, want)
	}
	for _, k := range keys {
		if _, isString := v[k].(string); k != "metadata" && k != "results" && !isString {
			t.Errorf("%s: %s = %#v, want a string", tool, k, v[k])
		}
	}
	var sc any
	if err := json.Unmarshal(r.StructuredContent, &sc); err != nil || !reflect.DeepEqual(sc, any(v)) {
		t.Errorf("%s: structuredContent %s is not the text item's value", tool, r.StructuredContent)
	}
	return v
}

// deepSearch calls search and returns its results, shape-checked.
func (in *instance) deepSearch(t *testing.T, version, query string) []map[string]any {
	t.Helper()
	v := openAIShape(t, "search", in.call(version, "search", map[string]any{"query": query}), "results")
	list, ok := v["results"].([]any)
	if !ok {
		t.Fatalf("search: results = %#v, want an array", v["results"])
	}
	var out []map[string]any
	for _, e := range list {
		h, _ := e.(map[string]any)
		if len(h) != 3 || h["id"] == "" || h["url"] == "" || h["title"] == "" {
			t.Errorf("search: result %#v, want exactly non-empty id, title and url", e)
		}
		for _, k := range []string{"id", "title", "url"} {
			if _, ok := h[k].(string); !ok {
				t.Errorf("search: result %s = %#v, want a string", k, h[k])
			}
		}
		out = append(out, h)
	}
	return out
}

const deepConfig = "index:\n  deepResearch: true\n"

// TestDeepResearchTools drives search and fetch over the real binary in
// both protocol versions: the documented shapes, the text whole, the
// tenant rule, and the one not_found for an unknown id and another
// tenant's private one.
func TestDeepResearchTools(t *testing.T) {
	in := startServer(t, deepConfig)
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	beta := in.as(in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))
	body := "# Incident review\n\nThe payment gateway timed out at 02:00.\n"
	for _, s := range []struct {
		who        *instance
		path, text string
		public     bool
	}{
		{acme, "reviews/inc-1", body, false},
		{beta, "reviews/beta-private", "beta's payment gateway secrets", false},
		{beta, "reviews/beta-public", "a public payment digest", true},
	} {
		args := map[string]any{"path": s.path, "mimeType": "text/markdown", "text": s.text, "title": "Review " + s.path}
		if s.public {
			args["visibility"], args["listed"] = "public", true
		}
		if r := s.who.call(v2025, "save_report", args); r.IsError {
			t.Fatalf("save_report: %s", r.raw)
		}
	}

	for _, version := range []string{v2025, v2026} {
		t.Run(version, func(t *testing.T) {
			var ids []string
			for _, h := range acme.deepSearch(t, version, "payment gateway") {
				ids = append(ids, h["id"].(string))
				if h["url"] != h["id"] {
					t.Errorf("result %v: url should be the resource URI (its id)", h)
				}
			}
			if !slices.Equal(ids, []string{"report://acme/reviews/inc-1"}) {
				t.Errorf("search payment gateway = %v, want acme's review only", ids)
			}
			// A question in plain words: any of its words.
			ids = nil
			for _, h := range acme.deepSearch(t, version, "When did the payment gateway time out?") {
				ids = append(ids, h["id"].(string))
			}
			if len(ids) != 2 || ids[0] != "report://acme/reviews/inc-1" || ids[1] != "report://beta/reviews/beta-public" {
				t.Errorf("search of a question = %v, want acme's review, then beta's public digest", ids)
			}

			v := openAIShape(t, "fetch", acme.call(version, "fetch", map[string]any{"id": "report://acme/reviews/inc-1"}),
				"id", "title", "text", "url", "metadata")
			if v["text"] != body || v["id"] != "report://acme/reviews/inc-1" || v["url"] != v["id"] || v["title"] != "Review reviews/inc-1" {
				t.Errorf("fetch = %v", v)
			}
			md, _ := v["metadata"].(map[string]any)
			if md["truncated"] != false || md["sha256"] == "" || md["mimeType"] != "text/markdown" {
				t.Errorf("fetch metadata = %v", md)
			}

			unknown := acme.call(version, "fetch", map[string]any{"id": "report://beta/reviews/none"})
			private := acme.call(version, "fetch", map[string]any{"id": "report://beta/reviews/beta-private"})
			if !unknown.IsError || !private.IsError || !strings.Contains(string(unknown.StructuredContent), `"not_found"`) {
				t.Fatalf("fetch of unknown = %s, of another tenant's private = %s: want not_found", unknown.raw, private.raw)
			}
			if a, b := strings.ReplaceAll(string(unknown.raw), "none", "beta-private"), string(private.raw); a != b {
				t.Errorf("unknown and another tenant's private differ beyond the id:\n%s\n%s", a, b)
			}
			if r := acme.call(version, "fetch", map[string]any{"id": "report://acme/a/../b"}); !r.IsError || !strings.Contains(string(r.StructuredContent), `"field":"id"`) {
				t.Errorf("fetch of a malformed id = %s, want a validation_error of id", r.raw)
			}
		})
	}

	// A long body comes whole up to the limit, with where to read on.
	long := strings.Repeat("line of the long report\n", 4000)
	if r := acme.call(v2025, "save_report", map[string]any{"path": "long", "mimeType": "text/plain", "text": long}); r.IsError {
		t.Fatalf("save_report: %s", r.raw)
	}
	v := openAIShape(t, "fetch", acme.call(v2025, "fetch", map[string]any{"id": "report://acme/long"}), "id", "title", "text", "url", "metadata")
	md := v["metadata"].(map[string]any)
	text := v["text"].(string)
	next, _ := md["nextOffset"].(float64)
	if md["truncated"] != true || int(next) != len(text) || !strings.HasPrefix(long, text) || len(text) < 10000 {
		t.Fatalf("fetch of a long body: truncated %v, nextOffset %v, %d bytes of text", md["truncated"], md["nextOffset"], len(text))
	}
	rest := acme.call(v2025, "read_resource", map[string]any{"uri": "report://acme/long", "offset": int(next)})
	var w struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(rest.StructuredContent, &w); err != nil || !strings.HasPrefix(long[len(text):], w.Text) || w.Text == "" {
		t.Errorf("read_resource at metadata.nextOffset does not continue the text: %v", err)
	}
}

// TestDeepResearchOffByDefault: without index.deepResearch there is no
// search or fetch tool (search_resources is there).
func TestDeepResearchOffByDefault(t *testing.T) {
	in := startServer(t, "")
	r := in.rpc(v2025, "tools/list", nil)
	var v struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range v.Tools {
		names = append(names, tl.Name)
	}
	if slices.Contains(names, "search") || slices.Contains(names, "fetch") || !slices.Contains(names, "search_resources") {
		t.Errorf("tools without deepResearch = %v", names)
	}
}

// TestDeepResearchTypeScript drives search and fetch with the official
// TypeScript client (ts/deep-research.mjs), which validates each
// structuredContent against the tool's outputSchema.
func TestDeepResearchTypeScript(t *testing.T) {
	node := requireTS(t)
	for _, mode := range []string{"auto", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			in := startServer(t, deepConfig)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "deep-research.mjs"), in.URL+"/mcp", mode)
			cmd.Env = append(os.Environ(), "RESOURCED_TOKEN="+in.Token)
			var stdout bytes.Buffer
			combined := &syncBuffer{}
			cmd.Stdout = io.MultiWriter(&stdout, combined)
			cmd.Stderr = combined
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("node ts/deep-research.mjs %s timed out; output:\n%s", mode, combined)
			}
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("running node: %v", err)
			}
			if err != nil {
				t.Fatalf("node ts/deep-research.mjs %s failed (%v); output:\n%s", mode, err, combined)
			}
			if summary := lastLine(stdout.String()); !strings.Contains(summary, `"ok":true`) {
				t.Fatalf("no JSON summary line; output:\n%s", combined)
			}
		})
	}
}
