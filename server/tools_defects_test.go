package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// callRaw sends tools/call with args as raw bytes (which may hold invalid
// UTF-8) speaking 2025-11-25, and returns the result and the JSON-RPC error.
func (e *linkEnv) callRaw(t *testing.T, tool string, args []byte) (map[string]any, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	body.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`)
	name, _ := json.Marshal(tool)
	body.Write(name)
	body.WriteString(`,"arguments":`)
	body.Write(args)
	body.WriteString(`}}`)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", &body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: HTTP %d, not JSON: %s", tool, resp.StatusCode, b)
	}
	return env.Result, env.Error
}

// structuredOf returns the structuredContent of a tool result.
func structuredOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("result without structuredContent: %v", res)
	}
	return sc
}

// newToolsEnv is a linkEnv whose server also has the fixture tools, so
// every tool resourced can register is there.
func newToolsEnv(t *testing.T) *linkEnv {
	t.Helper()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := &linkEnv{clock: &clock}
	e.st = memstore.New(memstore.Options{Now: func() time.Time { return *e.clock }})
	s, err := New(Options{
		Store: e.st, BaseURL: "http://links.test", Auth: tenantAuth{}, Fixtures: true,
		Now:     func() time.Time { return *e.clock },
		Budgets: Budgets{SaveRate: -1}, // calls every tool with every kind of value, fast
		LinkKey: testLinkKey, LinkTTL: 5 * time.Minute, LinkMaxTTL: 10 * time.Minute,
		Schemes: []Scheme{
			{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 720 * time.Hour, MaxBytes: 1 << 20},
			{Name: "report", Kind: KindReport, TTL: 30 * time.Second, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 1000},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// TestInvalidUnicodeArgumentsRefused: a string argument that holds half a
// surrogate pair is a validation_error naming it, and one with bytes that
// are not UTF-8 makes the body not JSON (-32700, the envelope's answer);
// encoding/json would have stored U+FFFD instead. Either way nothing is
// stored. A U+FFFD the caller sent, raw or escaped, is stored as sent.
func TestInvalidUnicodeArgumentsRefused(t *testing.T) {
	e := newLinkEnv(t)
	report := func(extra string) string {
		return `{"path":"u/x","mimeType":"text/plain","text":"ok"` + extra + `}`
	}
	for _, tc := range []struct{ tool, args string }{
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"a` + "\xff" + `b"}`},
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"` + "\xc3" + `"}`},
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"` + "\xed\xa0\x80" + `"}`}, // a surrogate, UTF-8 encoded
		{"save_report", report(`,"title":"t` + "\x80" + `"`)},
		{"save_report", `{"path":"u/` + "\xff" + `","mimeType":"text/plain","text":"x"}`},
		{"save_report", `{"path":"u/a","mimeType":"text/plain; a=\"` + "\xff" + `\"","text":"x"}`},
		{"save_report", report(`,"retention":"P1D` + "\xff" + `"`)},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"t","snippet":"s` + "\xfe" + `"}]}`},
	} {
		res, rerr := e.callRaw(t, tc.tool, []byte(tc.args))
		if res != nil || rerr == nil || rerr["code"] != float64(-32700) || !strings.Contains(fmt.Sprint(rerr["message"]), "not UTF-8") {
			t.Errorf("%s %q = %v %v, want -32700: the body is not UTF-8", tc.tool, tc.args, res, rerr)
		}
	}
	for _, tc := range []struct{ tool, args, field string }{
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"a\ud800b"}`, "text"},
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"\udc00"}`, "text"},
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"\uD800\u0041"}`, "text"},
		{"save_report", `{"path":"u/a","mimeType":"text/plain","text":"end\ud83d"}`, "text"},
		{"save_report", report(`,"description":"\udfff"`), "description"},
		{"save_report", report(`,"title":"t\uDBFF"`), "title"},
		{"save_report", `{"path":"u/\ud800","mimeType":"text/plain","text":"x"}`, "path"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"t","snippet":"s\udc00"}]}`, "hits[0].snippet"},
		{"save_search_snapshot", `{"query":"q\ud800","hits":[]}`, "query"},
	} {
		res, rerr := e.callRaw(t, tc.tool, []byte(tc.args))
		if rerr != nil {
			t.Errorf("%s %q: JSON-RPC error %v", tc.tool, tc.args, rerr)
			continue
		}
		sc := structuredOf(t, res)
		fe, _ := sc["fieldErrors"].([]any)
		if res["isError"] != true || sc["errorKind"] != service.KindValidation || len(fe) != 1 || fe[0].(map[string]any)["field"] != tc.field {
			t.Errorf("%s %q = %v, want a validation_error naming %s", tc.tool, tc.args, sc, tc.field)
		}
	}
	if page, err := e.st.List(context.Background(), store.ListQuery{Tenant: "t1", Limit: 10}); err != nil || len(page.Items) != 0 {
		t.Errorf("resources stored from invalid arguments: %v %v", page.Items, err)
	}
	for path, tc := range map[string]struct{ text, want string }{
		"u/raw":     {"a\xef\xbf\xbdb", "a\ufffdb"},
		"u/escaped": {`a\ufffdb`, "a\ufffdb"},
		"u/pair":    {`\ud83d\ude00 \uD83D\uDE00`, "😀 😀"},
		"u/slash":   {`\\ud800`, `\ud800`}, // an escaped backslash, then letters
	} {
		res, rerr := e.callRaw(t, "save_report", []byte(`{"path":"`+path+`","mimeType":"text/plain","text":"`+tc.text+`"}`))
		if rerr != nil || res["isError"] == true {
			t.Errorf("save_report text %q: %v %v", tc.text, rerr, res["structuredContent"])
			continue
		}
		obj, err := e.st.Get(context.Background(), store.MustKey("t1", "report", path))
		if err != nil || string(obj.Body) != tc.want {
			t.Errorf("text %q stored as %q (%v), want %q", tc.text, obj.Body, err, tc.want)
		}
	}
}

// goTypeName matches what Go type names look like in a message.
var goTypeName = regexp.MustCompile(`\*[A-Za-z]|\bmcp\.|\bserver\.|\bjson\.|\bstruct\b|\bu?int(8|16|32|64)?\b|\bfloat(32|64)\b|\[\]|RawMessage|\bGo (value|struct|type)|reflect`)

// TestArgumentErrorsNameNoGoTypes sends every argument of every tool
// (fixtures included) values of each JSON type, and hits' members too:
// each answer that is an error names the argument by its JSON path and a
// JSON type, never a Go type.
func TestArgumentErrorsNameNoGoTypes(t *testing.T) {
	e := newToolsEnv(t)
	res, rerr := e.rpcRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	values := []string{`"x"`, `5`, `-1`, `1.5`, `1e30`, `99999999999999999999`, `true`, `{}`, `{"a":1}`, `[]`, `[1]`, `["x"]`, `[{}]`, `[[]]`}
	hitValues := []string{`5`, `"x"`, `true`, `{}`, `[]`, `1.5`, `1e400`}
	tools := res["tools"].([]any)
	if len(tools) < 10 {
		t.Fatalf("tools/list has %d tools", len(tools))
	}
	checked := 0
	for _, tl := range tools {
		tool := tl.(map[string]any)
		name := tool["name"].(string)
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		var args []string
		for prop := range props {
			for _, v := range values {
				args = append(args, `{"`+prop+`":`+v+`}`)
			}
		}
		if _, ok := props["hits"]; ok {
			for _, hp := range []string{"id", "title", "snippet", "url", "score"} {
				for _, v := range hitValues {
					args = append(args, `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"`+hp+`":`+v+`}]}`)
				}
			}
		}
		args = append(args, `5`, `"x"`, `[]`, `true`)
		for _, a := range args {
			res, rerr := e.callRaw(t, name, []byte(a))
			if rerr != nil {
				t.Errorf("%s(%s): JSON-RPC error %v", name, a, rerr)
				continue
			}
			if res["isError"] != true {
				continue
			}
			checked++
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if sc, ok := res["structuredContent"].(map[string]any); ok {
				b, _ := json.Marshal(sc)
				text += string(b)
			}
			if m := goTypeName.FindString(text); m != "" {
				t.Errorf("%s(%s): the error names a Go type (%q): %s", name, a, m, text)
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d error answers checked", checked)
	}
}

// TestArgumentErrorsNameThePath: wrong JSON types and bad integers are
// named by their JSON path, with the JSON type wanted (elements of hits
// by their index: hits[1].score).
func TestArgumentErrorsNameThePath(t *testing.T) {
	e := newLinkEnv(t)
	for _, tc := range []struct{ tool, args, field, msg string }{
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"id":"2","title":"","snippet":"","score":"x"}]}`, "hits[1].score", "must be a number, not a JSON string"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},5]}`, "hits[1]", "must be an object, not a JSON number"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":"","url":{}}]}`, "hits[0].url", "must be a string, not a JSON object"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":"","score":1e400}]}`, "hits[0].score", "must be a number, not a JSON number 1e400 (the largest is"},
		{"save_search_snapshot", `{"query":"q","hits":[],"total":1e30}`, "total", "must be an integer, not a JSON number 1e30 (digits only"},
		{"save_search_snapshot", `{"query":"q","hits":[],"total":99999999999999999999}`, "total", "must be an integer, not a JSON number 99999999999999999999 (the bounds are"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"id":"2","title":"","snippet":""},{"id":"3","title":"","snippet":""},{"id":"4","title":"","snippet":"","score":"x"}]}`, "hits[3].score", "must be a number, not a JSON string"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":5}]}`, "hits[0].id", "must be a string, not a JSON number"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1"}]}`, "hits[0].title", "is required: a string"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":""}]}`, "hits[0].snippet", "is required: a string"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"id":"2","title":null,"snippet":null}]}`, "hits[1].title", "must be a string, not null"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"id":"2","title":"","snippet":null}]}`, "hits[1].snippet", "must be a string, not null"},
		{"save_search_snapshot", `{"query":"q","hits":[{"title":"","snippet":""}]}`, "hits[0].id", "is required: a string"},
		{"save_search_snapshot", `{"query":"q","hits":[{"id":null,"title":"","snippet":""}]}`, "hits[0].id", "must be a string, not null"},
		{"save_report", `{"path":"a","mimeType":"text/plain","text":"x","listed":"yes"}`, "listed", "must be a boolean, not a JSON string"},
		{"read_resource", `{"uri":"report://t1/a","offset":1.5}`, "offset", "must be an integer, not a JSON number 1.5 (digits only"},
		{"list_resources", `{"limit":[]}`, "limit", "must be an integer, not a JSON array"},
	} {
		res, rerr := e.callRaw(t, tc.tool, []byte(tc.args))
		if rerr != nil {
			t.Fatal(rerr)
		}
		sc := structuredOf(t, res)
		fe, _ := sc["fieldErrors"].([]any)
		if len(fe) != 1 || fe[0].(map[string]any)["field"] != tc.field || !strings.Contains(fe[0].(map[string]any)["message"].(string), tc.msg) {
			t.Errorf("%s(%s) = %v, want %s: %s…", tc.tool, tc.args, sc, tc.field, tc.msg)
		}
	}
}

// TestSnapshotHitsNeedEveryRequiredMember: a hit without title or
// snippet (or with null) is refused, as its inputSchema requires them,
// and nothing is stored; "" and the optional members left out are fine.
func TestSnapshotHitsNeedEveryRequiredMember(t *testing.T) {
	e := newLinkEnv(t)
	for _, args := range []string{
		`{"query":"q","hits":[{"id":"1"},{"id":"2","title":null,"snippet":null}]}`,
		`{"query":"q","hits":[{"id":"1","snippet":"s"}]}`,
		`{"query":"q","hits":[{"id":"1","title":"t"}]}`,
		`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s","url":null,"score":null},{"id":"2","title":"t"}]}`,
	} {
		res, rerr := e.callRaw(t, "save_search_snapshot", []byte(args))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if sc := structuredOf(t, res); res["isError"] != true || sc["errorKind"] != service.KindValidation {
			t.Errorf("save_search_snapshot(%s) = %v, want a validation_error", args, sc)
		}
	}
	page, err := e.st.List(context.Background(), store.ListQuery{Tenant: "t1", Limit: 100})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("refused snapshots stored: %v %v", page.Items, err)
	}
	res, rerr := e.callRaw(t, "save_search_snapshot", []byte(`{"query":"q","hits":[{"id":"1","title":"","snippet":"","url":null,"score":null}]}`))
	if rerr != nil || res["isError"] == true {
		t.Errorf("a hit with empty title and snippet, null url and score: %v %v", rerr, res)
	}
}

// postRaw posts one JSON-RPC request speaking 2025-11-25 and returns the
// HTTP status and the answer's bytes as written.
func (e *linkEnv) postRaw(t *testing.T, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// rpcRaw posts one JSON-RPC request speaking 2025-11-25.
func (e *linkEnv) rpcRaw(t *testing.T, body string) (map[string]any, map[string]any) {
	t.Helper()
	status, b := e.postRaw(t, body)
	var env struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("HTTP %d, not JSON: %s", status, b)
	}
	return env.Result, env.Error
}

// TestErrorsEchoBoundedInput: a tool error repeats at most a short part of
// what the caller sent (CONTRACT §4: a short text). Every string argument
// of every tool, and an unknown argument's name, is sent 1 MB long; each
// error answer must stay under 4 KB, the text and structuredContent
// together.
func TestErrorsEchoBoundedInput(t *testing.T) {
	e := newToolsEnv(t)
	res, rerr := e.rpcRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	huge := strings.Repeat("x", 1<<20)
	checked := 0
	for _, tl := range res["tools"].([]any) {
		tool := tl.(map[string]any)
		name := tool["name"].(string)
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		// The value alone, and with arguments that make the rest of the
		// call valid (those the tool has), so later checks see it too.
		var base []string
		for _, b := range []string{`"query":"q"`, `"hits":[]`, `"path":"a"`, `"mimeType":"text/plain"`, `"text":"x"`, `"uri":"report://t1/a"`, `"pattern":"x"`} {
			if k, _, _ := strings.Cut(b[1:], `"`); props[k] != nil {
				base = append(base, b)
			}
		}
		args := []string{`{"` + huge + `":1}`, `{` + strings.Join(append(base, `"`+huge+`":1`), ",") + `}`}
		for prop, p := range props {
			if typ := p.(map[string]any)["type"]; typ == "string" || typ == nil {
				args = append(args, `{"`+prop+`":"`+huge+`"}`, `{`+strings.Join(append(slices.Clone(base), `"`+prop+`":"`+huge+`"`), ",")+`}`)
			}
		}
		for _, a := range args {
			res, rerr := e.callRaw(t, name, []byte(a))
			if rerr != nil {
				if b, _ := json.Marshal(rerr); len(b) > 4096 {
					t.Errorf("%s(%.80s…): a JSON-RPC error of %d bytes", name, a, len(b))
				}
				continue
			}
			if res["isError"] != true {
				continue
			}
			checked++
			if b, _ := json.Marshal(res); len(b) > 4096 {
				t.Errorf("%s(%.80s…): an error result of %d bytes: %.300s", name, a, len(b), b)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d error answers checked", checked)
	}
}
