package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

type readResult struct {
	TTLMs      *int64  `json:"ttlMs"`
	CacheScope *string `json:"cacheScope"`
	Contents   []struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		Text     *string        `json:"text"`
		Blob     *string        `json:"blob"`
		Meta     map[string]any `json:"_meta"`
	} `json:"contents"`
}

// read calls resources/read and returns the decoded result; it fails the
// test on a JSON-RPC error.
func (in *instance) read(version, uri string) *readResult {
	in.t.Helper()
	r := in.rpc(version, "resources/read", map[string]any{"uri": uri})
	if r.Error != nil {
		in.t.Fatalf("resources/read %s: error %d %s", uri, r.Error.Code, r.Error.Message)
	}
	var rr readResult
	if err := json.Unmarshal(r.Result, &rr); err != nil {
		in.t.Fatal(err)
	}
	if len(rr.Contents) != 1 {
		in.t.Fatalf("resources/read %s: %d contents, want 1", uri, len(rr.Contents))
	}
	return &rr
}

// body returns the read content's bytes, text or blob.
func (rr *readResult) body(t *testing.T) []byte {
	t.Helper()
	c := rr.Contents[0]
	switch {
	case c.Text != nil && c.Blob == nil:
		return []byte(*c.Text)
	case c.Blob != nil && c.Text == nil:
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		if err != nil {
			t.Fatalf("blob is not base64: %v", err)
		}
		return b
	}
	t.Fatalf("content has neither or both of text and blob")
	return nil
}

// show formats an optional field: its value, or "absent".
func show[T any](p *T) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// checkSuccess asserts the shape every successful tool result shares: not
// isError, a text item that is the JSON of structuredContent, and, when
// wantLinks >= 0, that many resource_link items with every field set.
func checkSuccess(t *testing.T, r *toolResult, wantLinks int) map[string]any {
	t.Helper()
	if r.IsError {
		t.Fatalf("isError result: %s", r.raw)
	}
	sc := r.structured(t)
	if len(r.Content) == 0 || r.Content[0].Type != "text" {
		t.Fatalf("first content item is not text: %s", r.raw)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(r.Content[0].Text), &fromText); err != nil {
		t.Fatalf("text item is not JSON: %v", err)
	}
	if !reflect.DeepEqual(fromText, sc) {
		t.Errorf("text item %s != structuredContent %s", r.Content[0].Text, r.StructuredContent)
	}
	links := 0
	for _, c := range r.Content[1:] {
		if c.Type != "resource_link" {
			t.Errorf("unexpected content item type %q", c.Type)
			continue
		}
		links++
		if c.URI == "" || c.Name == "" || c.Title == "" || c.Description == "" || c.MIMEType == "" || c.Size == nil || c.Annotations == nil || c.Annotations.LastModified == "" {
			t.Errorf("resource_link lacks a field: %+v", c)
		}
	}
	if wantLinks >= 0 && links != wantLinks {
		t.Errorf("%d resource_link items, want %d", links, wantLinks)
	}
	return sc
}

// checkFailure asserts an isError result of kind, whose text explains it.
func checkFailure(t *testing.T, r *toolResult, kind string) map[string]any {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want isError %s, got success: %s", kind, r.raw)
	}
	sc := r.structured(t)
	if sc["status"] != "failed" || sc["errorKind"] != kind {
		t.Fatalf("structuredContent = %s, want status failed, errorKind %s", r.StructuredContent, kind)
	}
	if _, ok := sc["retrySafe"].(bool); !ok {
		t.Errorf("retrySafe missing: %s", r.StructuredContent)
	}
	if len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, kind) || len(r.Content[0].Text) < 30 {
		t.Errorf("error text does not explain itself: %s", r.raw)
	}
	return sc
}

var hits = []map[string]any{
	{"id": "doc-1", "title": "Quarterly <report> & notes", "snippet": "revenue grew \"12%\"", "url": "https://example.com/1", "score": 0.93},
	{"id": "doc-2", "title": "日本語のタイトル", "snippet": "snippet two"},
}

func TestSnapshotUnlistedRead(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			r := in.call(v, "save_search_snapshot", map[string]any{"query": "revenue 2026", "hits": hits})
			sc := checkSuccess(t, r, 1)
			link := r.Content[1]
			if sc["status"] != "created" || sc["uri"] != link.URI || !strings.HasPrefix(link.URI, "search://default/results/") {
				t.Fatalf("structuredContent %s, link %s", r.StructuredContent, link.URI)
			}
			if sc["total"] != float64(2) || sc["mimeType"] != "application/json" || sc["expiresAt"] == nil {
				t.Errorf("structuredContent %s lacks total/mimeType/expiresAt", r.StructuredContent)
			}

			// Unlisted: resources/list does not show it...
			lr := in.rpc(v, "resources/list", nil)
			if lr.Error != nil || bytes.Contains(lr.Result, []byte(link.URI)) {
				t.Fatalf("resources/list shows the unlisted link or fails: %s", lr.Body)
			}
			// ...yet resources/read serves it.
			rr := in.read(v, link.URI)
			body := rr.body(t)
			if int64(len(body)) != *link.Size || sc["size"] != float64(len(body)) {
				t.Errorf("size %d (link) / %v (structured), body has %d bytes", *link.Size, sc["size"], len(body))
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"query": "revenue 2026", "total": 2, "hits": hits}
			wantJSON, _ := json.Marshal(want)
			var wantDoc map[string]any
			json.Unmarshal(wantJSON, &wantDoc)
			if !reflect.DeepEqual(doc, wantDoc) {
				t.Errorf("read body %s, want %s", body, wantJSON)
			}
			c := rr.Contents[0]
			if c.URI != link.URI || c.MIMEType != "application/json" || c.Text == nil {
				t.Errorf("content uri %q mimeType %q text %v", c.URI, c.MIMEType, c.Text != nil)
			}
			if rr.TTLMs == nil || *rr.TTLMs <= 0 || *rr.TTLMs > 3600000 {
				t.Errorf("ttlMs = %s, want the search ttl (0 < ttl <= 1h)", show(rr.TTLMs))
			}
			if rr.CacheScope == nil || *rr.CacheScope != "private" {
				t.Errorf("cacheScope = %s, want private", show(rr.CacheScope))
			}
			if c.Meta["sha256"] != sum(body) || c.Meta["sha256"] != sc["sha256"] || c.Meta["size"] != float64(len(body)) || c.Meta["lastModified"] == nil {
				t.Errorf("_meta = %v", c.Meta)
			}
		})
	}
}

func TestSnapshotValidation(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			r := in.call(v, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "total": 999})
			sc := checkFailure(t, r, "validation_error")
			if !strings.Contains(r.Content[0].Text, "total") || sc["retrySafe"] != false {
				t.Errorf("text %q should name total", r.Content[0].Text)
			}
			r = in.call(v, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "total": "2"})
			checkFailure(t, r, "validation_error")
			r = in.call(v, "save_search_snapshot", map[string]any{"hits": hits})
			checkFailure(t, r, "validation_error")
			r = in.call(v, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "bogus": 1})
			checkFailure(t, r, "validation_error")
			// A matching total is fine.
			checkSuccess(t, in.call(v, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "total": 2}), 1)
		})
	}
}

func TestReportSaveReplace(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			path := "billing/" + v + "/import-dry-run"
			uri := "report://default/" + path
			save := func(extra map[string]any) *toolResult {
				args := map[string]any{"path": path, "mimeType": "text/markdown", "text": "# v1\n", "title": "Import dry run"}
				for k, x := range extra {
					args[k] = x
				}
				return in.call(v, "save_report", args)
			}
			sc := checkSuccess(t, save(nil), 1)
			if sc["status"] != "created" || sc["uri"] != uri {
				t.Fatalf("first save: %v", sc)
			}
			sha1 := sc["sha256"].(string)
			checkFailure(t, save(map[string]any{"text": "# v1 again\n"}), "conflict")
			checkFailure(t, save(map[string]any{"text": "# v2\n", "ifMatch": strings.Repeat("0", 64)}), "conflict")
			// Nothing changed by the failed saves.
			if got := in.read(v, uri).body(t); string(got) != "# v1\n" {
				t.Fatalf("body after failed saves = %q", got)
			}
			sc = checkSuccess(t, save(map[string]any{"text": "# v2\n", "ifMatch": sha1}), 1)
			if sc["status"] != "replaced" || sc["sha256"] != sum([]byte("# v2\n")) {
				t.Fatalf("replace: %v", sc)
			}
			rr := in.read(v, uri)
			if string(rr.body(t)) != "# v2\n" || rr.TTLMs == nil || *rr.TTLMs != 0 || rr.CacheScope == nil || *rr.CacheScope != "private" {
				t.Errorf("after replace: body %q ttlMs %s cacheScope %s, want ttlMs 0 and private", rr.body(t), show(rr.TTLMs), show(rr.CacheScope))
			}
			sc = checkSuccess(t, save(map[string]any{"text": "# v3\n", "overwrite": true}), 1)
			if sc["status"] != "replaced" {
				t.Errorf("overwrite: %v", sc)
			}
			checkFailure(t, in.call(v, "save_report", map[string]any{"path": path + "-missing", "mimeType": "text/plain", "text": "x", "ifMatch": sha1}), "conflict")

			st := checkSuccess(t, in.call(v, "stat_resource", map[string]any{"uri": uri}), 1)
			if st["sha256"] != sum([]byte("# v3\n")) || st["size"] != float64(5) || st["title"] != "Import dry run" {
				t.Errorf("stat: %v", st)
			}
		})
	}
}

func TestBinaryReport(t *testing.T) {
	in := startServer(t, "")
	body := make([]byte, 256*4)
	for i := range body {
		body[i] = byte(i)
	}
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			r := in.call(v, "save_report", map[string]any{"path": "bin/" + v, "mimeType": "application/octet-stream", "blobBase64": base64.StdEncoding.EncodeToString(body)})
			sc := checkSuccess(t, r, 1)
			if sc["size"] != float64(len(body)) || *r.Content[1].Size != int64(len(body)) {
				t.Errorf("size %v, want %d", sc["size"], len(body))
			}
			rr := in.read(v, sc["uri"].(string))
			if rr.Contents[0].Blob == nil {
				t.Fatalf("binary body not served as blob")
			}
			if got := rr.body(t); !bytes.Equal(got, body) {
				t.Errorf("read back %d bytes, differ from the %d saved", len(got), len(body))
			}
		})
	}
}

func TestReportInputErrors(t *testing.T) {
	in := startServer(t, "")
	base := func() map[string]any {
		return map[string]any{"path": "ok/path", "mimeType": "text/plain", "text": "hello"}
	}
	cases := []struct {
		name  string
		edit  func(map[string]any)
		kind  string
		field string
	}{
		{"both bodies", func(a map[string]any) { a["blobBase64"] = "aGk=" }, "validation_error", "blobBase64"},
		{"no body", func(a map[string]any) { delete(a, "text") }, "validation_error", "text"},
		{"empty body", func(a map[string]any) { a["text"] = "" }, "validation_error", "empty"},
		{"bad base64", func(a map[string]any) { delete(a, "text"); a["blobBase64"] = "not base64!!" }, "validation_error", "base64"},
		{"dotdot path", func(a map[string]any) { a["path"] = "a/../b" }, "validation_error", "path"},
		{"encoded dotdot", func(a map[string]any) { a["path"] = "%2e%2e/b" }, "validation_error", "path"},
		{"double slash", func(a map[string]any) { a["path"] = "a//b" }, "validation_error", "path"},
		{"trailing slash", func(a map[string]any) { a["path"] = "a/b/" }, "validation_error", "path"},
		{"look-alike slash", func(a map[string]any) { a["path"] = "a\uff0fb" }, "validation_error", "path"},
		{"NUL in path", func(a map[string]any) { a["path"] = "a\x00b" }, "validation_error", "path"},
		{"garbage mimeType", func(a map[string]any) { a["mimeType"] = "not a type" }, "validation_error", "mimeType"},
		{"ifMatch and overwrite", func(a map[string]any) { a["ifMatch"] = strings.Repeat("a", 64); a["overwrite"] = true }, "validation_error", "overwrite"},
		{"short ifMatch", func(a map[string]any) { a["ifMatch"] = "abc" }, "validation_error", "ifMatch"},
		{"path wrong type", func(a map[string]any) { a["path"] = 7 }, "validation_error", "path"},
		{"bad retention", func(a map[string]any) { a["retention"] = "forever" }, "validation_error", "retention"},
		{"bad visibility", func(a map[string]any) { a["visibility"] = "everyone" }, "validation_error", "visibility"},
	}
	// A resource that must survive every bad call untouched.
	keep := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "keep/me", "mimeType": "text/plain", "text": "precious"}), 1)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := base()
			c.edit(a)
			r := in.call(v2026, "save_report", a)
			checkFailure(t, r, c.kind)
			if !strings.Contains(r.Content[0].Text, c.field) {
				t.Errorf("error text %q does not mention %q", r.Content[0].Text, c.field)
			}
		})
	}
	if got := in.read(v2025, keep["uri"].(string)).body(t); string(got) != "precious" {
		t.Errorf("stored body changed to %q", got)
	}
	// Nothing was stored by the failed calls.
	lr := checkSuccess(t, in.call(v2026, "list_resources", map[string]any{"scheme": "report"}), 1)
	if items := lr["items"].([]any); len(items) != 1 {
		t.Errorf("list_resources shows %d reports, want only keep/me", len(items))
	}
}

// errorMember returns the raw "error" member of a JSON-RPC response.
func errorMember(t *testing.T, r *rawResponse) string {
	t.Helper()
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Error == nil {
		t.Fatalf("not a JSON-RPC error: %s", r.Body)
	}
	return string(env.Error)
}

func TestNotFoundIsIndistinguishable(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			uri := "report://default/gone/" + v
			unknown := in.rpc(v, "resources/read", map[string]any{"uri": uri})
			if unknown.Error == nil || unknown.Error.Code != -32602 {
				t.Fatalf("unknown URI: %s", unknown.Body)
			}
			var data map[string]string
			if err := json.Unmarshal(unknown.Error.Data, &data); err != nil || data["uri"] != uri {
				t.Errorf("error data = %s, want {\"uri\": %q}", unknown.Error.Data, uri)
			}
			sc := checkSuccess(t, in.call(v, "save_report", map[string]any{"path": "gone/" + v, "mimeType": "text/plain", "text": "soon gone"}), 1)
			in.read(v, uri)
			del := checkSuccess(t, in.call(v, "delete_resource", map[string]any{"uri": uri, "ifMatch": sc["sha256"]}), 0)
			if del["status"] != "deleted" {
				t.Fatalf("delete: %v", del)
			}
			deleted := in.rpc(v, "resources/read", map[string]any{"uri": uri})
			if a, b := errorMember(t, unknown), errorMember(t, deleted); a != b {
				t.Errorf("unknown and deleted differ:\n%s\n%s", a, b)
			}
			if unknown.Status != deleted.Status {
				t.Errorf("HTTP status differs: %d vs %d", unknown.Status, deleted.Status)
			}
			// Another tenant's URI and a scheme we do not serve: same error, other uri.
			for _, other := range []string{"report://acme/gone/" + v, "file:///etc/passwd", "https://example.com/x"} {
				r := in.rpc(v, "resources/read", map[string]any{"uri": other})
				want := strings.Replace(errorMember(t, unknown), uri, other, 1)
				if got := errorMember(t, r); got != want {
					t.Errorf("read %s:\n got %s\nwant %s", other, got, want)
				}
			}
			// Tools say not_found the same way.
			checkFailure(t, in.call(v, "stat_resource", map[string]any{"uri": uri}), "not_found")
			checkFailure(t, in.call(v, "delete_resource", map[string]any{"uri": uri}), "not_found")
			checkFailure(t, in.call(v, "stat_resource", map[string]any{"uri": "report://acme/x"}), "not_found")
		})
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

func TestMalformedURIs(t *testing.T) {
	in := startServer(t, "")
	cases := map[string]string{
		"report://default/a/../b":                       "..",
		"report://default/a//b":                         "empty",
		"report://default/a/":                           "slash",
		"report://default/a%2Fb":                        "percent",
		"REPORT://default/x":                            "lower-case",
		"report://default/x?y=1":                        "query",
		"report://default:80/x":                         "port",
		"report://DEFAULT/x":                            "tenant",
		"report://default/" + strings.Repeat("a", 2048): "1024",
	}
	for _, v := range versions {
		for u, want := range cases {
			r := in.rpc(v, "resources/read", map[string]any{"uri": u})
			if r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s read %.40q: %s", v, u, r.Body)
				continue
			}
			if !strings.Contains(r.Error.Message, "Invalid resource URI") || !strings.Contains(r.Error.Message, want) {
				t.Errorf("%s read %.40q: message %q should give the reason (%s)", v, u, r.Error.Message, want)
			}
			// A malformed URI naming another tenant gets the same answer.
			other := strings.Replace(u, "default", "acme", 1)
			if other != u {
				r2 := in.rpc(v, "resources/read", map[string]any{"uri": other})
				// Only byte offsets may differ (the tenant names differ in length).
				if r2.Error == nil || digits.ReplaceAllString(r2.Error.Message, "N") != digits.ReplaceAllString(r.Error.Message, "N") {
					t.Errorf("%s: malformed URI of another tenant answered differently: %.300s vs %.300s", v, r2.Body, r.Body)
				}
			}
		}
	}
	// Control characters: the 2025-11-25 path reaches our validation and
	// must answer valid JSON (go-sdk's own not-found error would not).
	for _, u := range []string{"report://default/a\x00b", "report://default/\x1b[31mred", "file://x/\x00"} {
		r := in.rpc(v2025, "resources/read", map[string]any{"uri": u})
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("control character URI %q: %s", u, r.Body)
		}
		var data map[string]string
		if err := json.Unmarshal(r.Error.Data, &data); err != nil || data["uri"] != u {
			t.Errorf("error data %q does not echo the URI as JSON: %v", r.Error.Data, err)
		}
		// 2026-07-28 carries the URI in the Mcp-Name header too; whatever
		// the transport answers, it must be an error and the server must
		// keep serving.
		r = in.rpc(v2026, "resources/read", map[string]any{"uri": u})
		if r.Error == nil && r.Status == 200 {
			t.Errorf("2026-07-28 read of %q succeeded: %s", u, r.Body)
		}
	}
	if resp := in.rpc(v2026, "tools/list", nil); resp.Error != nil {
		t.Fatalf("server stopped serving: %s", resp.Body)
	}
}

func TestListedResourcesAndPaging(t *testing.T) {
	in := startServer(t, "")
	for i := 0; i < 5; i++ {
		checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "listed/" + string(rune('a'+i)), "mimeType": "text/plain", "text": "x", "listed": true}), 1)
		checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "hidden/" + string(rune('a'+i)), "mimeType": "text/plain", "text": "y"}), 1)
	}
	for _, v := range versions {
		lr := in.rpc(v, "resources/list", nil)
		var res struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			CacheScope string `json:"cacheScope"`
		}
		json.Unmarshal(lr.Result, &res)
		if len(res.Resources) != 5 || res.CacheScope != "private" {
			t.Errorf("%s resources/list: %s", v, lr.Body)
		}
		for _, r := range res.Resources {
			if !strings.HasPrefix(r.URI, "report://default/listed/") {
				t.Errorf("%s listed %s", v, r.URI)
			}
		}
		bad := in.rpc(v, "resources/list", map[string]any{"cursor": "bogus"})
		if bad.Error == nil || bad.Error.Code != -32602 {
			t.Errorf("%s bogus cursor: %s", v, bad.Body)
		}
		tl := in.rpc(v, "resources/templates/list", nil)
		for _, want := range []string{`"report://{tenant}/{+path}"`, `"search://{tenant}/{+path}"`} {
			if !bytes.Contains(tl.Result, []byte(want)) {
				t.Errorf("%s templates/list lacks %s: %s", v, want, tl.Body)
			}
		}
	}
	// list_resources pages through all ten, listed or not, without gaps.
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		args := map[string]any{"scheme": "report", "limit": 3}
		if cursor != "" {
			args["cursor"] = cursor
		}
		sc := checkSuccess(t, in.call(v2026, "list_resources", args), -1)
		for _, it := range sc["items"].([]any) {
			u := it.(map[string]any)["uri"].(string)
			if seen[u] {
				t.Errorf("%s listed twice", u)
			}
			seen[u] = true
		}
		c, _ := sc["nextCursor"].(string)
		if c == "" {
			break
		}
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		cursor = c
	}
	if len(seen) != 10 {
		t.Errorf("list_resources saw %d resources, want 10", len(seen))
	}
	checkFailure(t, in.call(v2026, "list_resources", map[string]any{"limit": -1}), "validation_error")
	checkFailure(t, in.call(v2026, "list_resources", map[string]any{"scheme": "search", "cursor": cursor}), "validation_error")
}

func TestDataSurvivesRestart(t *testing.T) {
	in := startServer(t, "")
	sc := checkSuccess(t, in.call(v2026, "save_search_snapshot", map[string]any{"query": "durable", "hits": hits}), 1)
	rep := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "durable/report", "mimeType": "text/csv", "text": "a,b\n1,2\n"}), 1)
	before := in.read(v2026, sc["uri"].(string)).body(t)
	in.restart()
	if got := in.read(v2025, sc["uri"].(string)).body(t); !bytes.Equal(got, before) {
		t.Errorf("snapshot after restart = %q, want %q", got, before)
	}
	if got := in.read(v2026, rep["uri"].(string)).body(t); string(got) != "a,b\n1,2\n" {
		t.Errorf("report after restart = %q", got)
	}
}

func TestProtocolErrors(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		r := in.rpc(v, "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
		if r.Error == nil {
			t.Errorf("%s unknown tool: %s", v, r.Body)
		}
	}
	// Malformed JSON: an HTTP error, and the server keeps serving.
	r := in.post(in.http2025(), []byte(`{"jsonrpc":"2.0","id":1,"method":`))
	if r.Status < 400 {
		t.Errorf("malformed JSON got HTTP %d", r.Status)
	}
	if resp := in.rpc(v2025, "tools/list", nil); resp.Error != nil {
		t.Fatalf("server stopped serving: %s", resp.Body)
	}
}
