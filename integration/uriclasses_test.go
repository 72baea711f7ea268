package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// uriClasses is the catalogue of URIs every read route answers in one
// class (service.Resolve, docs/CONTRACT.md §2): "ok", "not_found" or
// "invalid", as tenant default (the owner of report://default/ok) and as
// another tenant.
var uriClasses = []struct{ uri, owner, other string }{
	{"report://default/ok", "ok", "not_found"},
	{"report://default/none", "not_found", "not_found"},
	{"search://default/ok", "not_found", "not_found"},
	{"REPORT://default/ok", "invalid", "invalid"},
	{"report://Default/ok", "invalid", "invalid"},
	{"report:default/ok", "invalid", "invalid"},
	{"report:/default/ok", "invalid", "invalid"},
	{"report://default/ok/", "invalid", "invalid"},
	{"report://default//ok", "invalid", "invalid"},
	{"report://default/./ok", "invalid", "invalid"},
	{"report://default/%6Fk", "invalid", "invalid"},
	{"report://default/ok?x=1", "invalid", "invalid"},
	{"report://other/ok", "not_found", "not_found"},
	{"file:///etc/passwd", "not_found", "not_found"},
	{"reports://default/ok", "not_found", "not_found"},
}

// TestURIClassesEveryRoute: resources/read, read_resource,
// stat_resource, grep_resource, query_resource, subscriptions/listen and
// a signed /v1 download give each URI of the catalogue the same class,
// through the real binary, on both protocol versions where they apply.
func TestURIClassesEveryRoute(t *testing.T) {
	in := startServer(t, "")
	other := in.as(in.mint(tokenClaims("other", "resources:read resources:write")))
	saved := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "ok", "mimeType": "application/json", "text": `{"a":1}`}), 1)
	sha := saved["sha256"].(string)

	for _, c := range uriClasses {
		for who, caller := range map[string]*instance{"owner": in, "other": other} {
			want := c.owner
			if who == "other" {
				want = c.other
			}
			for _, v := range versions {
				if got := readClass(t, caller, v, c.uri); got != want {
					t.Errorf("resources/read %s as %s (%s): %s, want %s", c.uri, who, v, got, want)
				}
				for tool, args := range map[string]map[string]any{
					"read_resource":  {"uri": c.uri},
					"stat_resource":  {"uri": c.uri},
					"grep_resource":  {"uri": c.uri, "pattern": "a"},
					"query_resource": {"uri": c.uri, "path": "$.a"},
				} {
					if got := toolClass(t, caller.call(v, tool, args)); got != want {
						t.Errorf("%s %s as %s (%s): %s, want %s", tool, c.uri, who, v, got, want)
					}
				}
			}
			if got := listenClass(t, caller, c.uri); got != want {
				t.Errorf("subscriptions/listen %s as %s: %s, want %s", c.uri, who, got, want)
			}
		}
		if got, ok := downloadClass(t, in, c.uri, sha); ok && got != c.owner {
			t.Errorf("download of %s: %s, want %s", c.uri, got, c.owner)
		}
	}
}

func readClass(t *testing.T, in *instance, v, uri string) string {
	t.Helper()
	r := in.rpc(v, "resources/read", map[string]any{"uri": uri})
	switch {
	case r.Error == nil:
		return "ok"
	case r.Error.Code != -32602:
		return fmt.Sprint("code ", r.Error.Code)
	case r.Error.Message == "Resource not found":
		return "not_found"
	case strings.HasPrefix(r.Error.Message, "Invalid resource URI: "):
		return "invalid"
	}
	return "message " + r.Error.Message
}

func toolClass(t *testing.T, r *toolResult) string {
	t.Helper()
	if !r.IsError {
		return "ok"
	}
	var f struct {
		ErrorKind   string `json:"errorKind"`
		FieldErrors []struct {
			Field string `json:"field"`
		} `json:"fieldErrors"`
	}
	if err := json.Unmarshal(r.StructuredContent, &f); err != nil {
		t.Fatal(err)
	}
	switch {
	case f.ErrorKind == "not_found":
		return "not_found"
	case f.ErrorKind == "validation_error" && len(f.FieldErrors) == 1 && f.FieldErrors[0].Field == "uri":
		return "invalid"
	}
	return f.ErrorKind
}

func listenClass(t *testing.T, in *instance, uri string) string {
	t.Helper()
	acked, code, msg, done := rawListen(t, in, []string{uri})
	done()
	switch {
	case acked:
		return "ok"
	case code == -32602 && msg == "Resource not found":
		return "not_found"
	case code == -32602 && strings.HasPrefix(msg, "Invalid resource URI: "):
		return "invalid"
	}
	return msg
}

// downloadClass follows a link the test signs itself (the server only
// signs URIs it saved): 200 ok, 404 not found, 403 a refused link. A URI
// that cannot be a link path (no "://", a '%', a '?', or a segment the
// HTTP mux cleans) is not asked: ok is false.
func downloadClass(t *testing.T, in *instance, uri, sha string) (string, bool) {
	t.Helper()
	scheme, rest, ok := strings.Cut(uri, "://")
	tenant, path, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || strings.ContainsAny(uri, "%?") || strings.Contains(path, "//") || strings.Contains("/"+path+"/", "/./") || strings.HasPrefix(path, "/") {
		return "", false
	}
	link := in.signLink(scheme, tenant, path, time.Now().Add(10*time.Minute).Unix(), "owner", sha)
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return "ok", true
	case http.StatusNotFound:
		return "not_found", true
	case http.StatusForbidden:
		return "invalid", true
	}
	return resp.Status, true
}
