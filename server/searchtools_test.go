package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// TestSearchToolsRenderOneValue: grep_resource and query_resource answer
// over MCP with one value, its JSON text equal to structuredContent, and
// another tenant's private body is the not_found stat_resource gives.
func TestSearchToolsRenderOneValue(t *testing.T) {
	e := newLinkEnv(t)
	e.put(t, "t1", "g", "one\ntwo needle\nthree", store.Private)
	e.put(t, "t1", "j", `{"a":[1,{"b":"x"}]}`, store.Private)
	e.put(t, "t2", "secret", "needle", store.Private)
	for _, c := range []struct{ tool, args, want string }{
		{"grep_resource", `{"uri":"report://t1/g","pattern":"need.e","context":1}`,
			`[{"line":2,"offset":8,"length":6,"text":"two needle","before":["one"],"after":["three"]}]`},
		{"query_resource", `{"uri":"report://t1/j","path":"$.a[*]"}`,
			`[{"path":"$['a'][0]","value":1},{"path":"$['a'][1]","value":{"b":"x"}}]`},
	} {
		res, rerr := e.callRaw(t, c.tool, []byte(c.args))
		if rerr != nil {
			t.Fatalf("%s: %v", c.tool, rerr)
		}
		content := res["content"].([]any)
		if len(content) != 1 {
			t.Fatalf("%s: %d content items, want 1", c.tool, len(content))
		}
		var text map[string]any
		json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &text)
		if diff := cmp.Diff(res["structuredContent"], text); diff != "" {
			t.Fatalf("%s: text and structuredContent differ:\n%s", c.tool, diff)
		}
		var want any
		json.Unmarshal([]byte(c.want), &want)
		if diff := cmp.Diff(want, text["matches"]); diff != "" || text["status"] != "ok" {
			t.Fatalf("%s matches (-want +got):\n%s", c.tool, diff)
		}
	}
	stat, _ := e.callRaw(t, "stat_resource", []byte(`{"uri":"report://t2/secret"}`))
	for _, tool := range []string{"grep_resource", "query_resource"} {
		res, _ := e.callRaw(t, tool, []byte(`{"uri":"report://t2/secret",`+map[string]string{"grep_resource": `"pattern":"n"}`, "query_resource": `"path":"$"}`}[tool]))
		if res["isError"] != true || !cmp.Equal(res["structuredContent"], stat["structuredContent"]) {
			t.Fatalf("%s of another tenant's private body: %v, stat_resource: %v", tool, res["structuredContent"], stat["structuredContent"])
		}
	}
}
