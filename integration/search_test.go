package integration

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestSearchTools: grep_resource and query_resource through the real
// binary on both protocol versions: matches with lines, offsets and
// context, continuation, JSONPath values with normalized paths, the
// validation errors, and another tenant's identical not_found.
func TestSearchTools(t *testing.T) {
	in := startServer(t, "")
	other := in.as(in.mint(tokenClaims("other", "resources:read")))
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			var b strings.Builder
			for i := 1; i <= 30; i++ {
				fmt.Fprintf(&b, "line %d %s\n", i, map[bool]string{true: "ERROR disk full", false: "ok"}[i%3 == 0])
			}
			path := "search-test/" + v
			r := in.call(v, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": b.String(), "overwrite": true})
			u := checkSuccess(t, r, 1)["uri"].(string)

			sc := checkSuccess(t, in.call(v, "grep_resource", map[string]any{"uri": u, "pattern": `ERROR \w+`, "context": 1, "maxMatches": 4}), 0)
			ms := sc["matches"].([]any)
			first := ms[0].(map[string]any)
			if len(ms) != 4 || sc["truncated"] != true || first["line"] != float64(3) || first["text"] != "line 3 ERROR disk full" ||
				!reflect.DeepEqual(first["before"], []any{"line 2 ok"}) || !reflect.DeepEqual(first["after"], []any{"line 4 ok"}) {
				t.Fatalf("grep: %v", sc)
			}
			if off := int(first["offset"].(float64)); b.String()[off:off+5] != "ERROR" {
				t.Fatalf("offset %d does not hold the match", off)
			}
			sc = checkSuccess(t, in.call(v, "grep_resource", map[string]any{"uri": u, "pattern": "ERROR", "literal": true, "afterOffset": sc["nextAfterOffset"]}), 0)
			if ms := sc["matches"].([]any); len(ms) != 6 || sc["truncated"] != false || ms[0].(map[string]any)["line"] != float64(15) {
				t.Fatalf("continued grep: %v", sc)
			}
			checkFailure(t, in.call(v, "grep_resource", map[string]any{"uri": u, "pattern": "(ERROR"}), "validation_error")

			r = in.call(v, "save_search_snapshot", map[string]any{"query": "q", "hits": hits})
			snap := checkSuccess(t, r, 1)["uri"].(string)
			sc = checkSuccess(t, in.call(v, "query_resource", map[string]any{"uri": snap, "path": "$.hits[?@.score > 0.5].id"}), 0)
			if !reflect.DeepEqual(sc["matches"], []any{map[string]any{"path": "$['hits'][0]['id']", "value": "doc-1"}}) || sc["count"] != float64(1) {
				t.Fatalf("query: %v", sc)
			}
			checkFailure(t, in.call(v, "query_resource", map[string]any{"uri": snap, "path": "$.hits[?"}), "validation_error")
			checkFailure(t, in.call(v, "query_resource", map[string]any{"uri": u, "path": "$"}), "validation_error")

			r = in.call(v, "save_report", map[string]any{"path": path + ".bin", "mimeType": "application/octet-stream", "blobBase64": "AAEC", "overwrite": true})
			bin := checkSuccess(t, r, 1)["uri"].(string)
			if fail := checkFailure(t, in.call(v, "grep_resource", map[string]any{"uri": bin, "pattern": "x"}), "validation_error"); !strings.Contains(fail["message"].(string), "read_resource") {
				t.Fatalf("binary: %v", fail)
			}

			want := checkFailure(t, other.call(v, "stat_resource", map[string]any{"uri": u}), "not_found")
			for tool, args := range map[string]map[string]any{
				"grep_resource":  {"uri": u, "pattern": "ERROR"},
				"query_resource": {"uri": u, "path": "$"},
			} {
				if got := checkFailure(t, other.call(v, tool, args), "not_found"); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s of another tenant's private resource: %v, stat_resource: %v", tool, got, want)
				}
			}
		})
	}
}
