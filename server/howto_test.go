package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLinkedResultsSayHowToRead: every result that carries a
// resource_link says in its value (its JSON text and structuredContent),
// in plain words, how to read it: resources/read of the URI, or
// read_resource with the URI and a window, and the signed link only when
// one was asked for. Following the words works.
func TestLinkedResultsSayHowToRead(t *testing.T) {
	e := newLinkEnv(t)
	check := func(what string, res map[string]any, uri string, signed bool) {
		t.Helper()
		sc, _ := res["structuredContent"].(map[string]any)
		how, _ := sc["howToRead"].(string)
		for _, want := range []string{"resources/read", "read_resource", uri, "nextOffset"} {
			if !strings.Contains(how, want) {
				t.Errorf("%s: howToRead %q does not mention %q", what, how, want)
			}
		}
		if got := strings.Contains(how, "downloadUrl"); got != signed {
			t.Errorf("%s: howToRead mentions downloadUrl: %v, want %v: %q", what, got, signed, how)
		}
		if signed && !strings.Contains(how, sc["downloadUrlExpiresAt"].(string)) {
			t.Errorf("%s: howToRead does not say when the link expires: %q", what, how)
		}
		content := res["content"].([]any)
		if !strings.Contains(content[0].(map[string]any)["text"].(string), "read_resource") {
			t.Errorf("%s: the text item does not say how to read", what)
		}
		links := 0
		for _, c := range content {
			if c.(map[string]any)["type"] == "resource_link" {
				links++
			}
		}
		if links == 0 {
			t.Errorf("%s: no resource_link", what)
		}
	}
	res, _ := e.callRaw(t, "save_report", []byte(`{"path":"how/a","mimeType":"text/plain","text":"line one\nline two\n"}`))
	check("save_report", res, "report://t1/how/a", false)
	res, _ = e.callRaw(t, "save_report", []byte(`{"path":"how/b","mimeType":"text/plain","text":"b","listed":true,"includeDownloadUrl":true}`))
	check("save_report with a link", res, "report://t1/how/b", true)
	res, _ = e.callRaw(t, "save_search_snapshot", []byte(`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s"}]}`))
	uri := res["structuredContent"].(map[string]any)["uri"].(string)
	check("save_search_snapshot", res, uri, false)
	res, _ = e.callRaw(t, "stat_resource", []byte(`{"uri":"report://t1/how/a","includeDownloadUrl":true}`))
	check("stat_resource", res, "report://t1/how/a", true)

	res, _ = e.callRaw(t, "list_resources", []byte(`{}`))
	how, _ := res["structuredContent"].(map[string]any)["howToRead"].(string)
	if !strings.Contains(how, "resources/read") || !strings.Contains(how, "read_resource") {
		t.Errorf("list_resources: howToRead %q", how)
	}
	// What the words say works: read_resource with the URI.
	args, _ := json.Marshal(map[string]any{"uri": "report://t1/how/a"})
	res, _ = e.callRaw(t, "read_resource", args)
	if sc := res["structuredContent"].(map[string]any); sc["text"] != "line one\nline two\n" {
		t.Errorf("read_resource as howToRead says: %v", sc)
	}
	// Results without a link say nothing of the kind.
	res, _ = e.callRaw(t, "delete_resource", []byte(`{"uri":"report://t1/how/b"}`))
	if _, ok := res["structuredContent"].(map[string]any)["howToRead"]; ok {
		t.Errorf("delete_resource has howToRead: %v", res)
	}
}
