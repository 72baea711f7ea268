package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// TestEnvelopeAnswersInJSONRPC: what go-sdk would answer in Go's words (a
// text/plain 400, a message naming Go types) is answered before it, in
// JSON-RPC, with the request's id and the HTTP status go-sdk gives that
// code on each protocol version.
func TestEnvelopeAnswersInJSONRPC(t *testing.T) {
	_, url, _ := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	for _, tc := range []struct {
		body       string
		code       int64
		status2025 int
		status2026 int
		message    string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":5}}`, -32602, 200, 400, "Invalid params: uri must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":"x"}`, -32602, 200, 400, "Invalid params: params must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":5}}`, -32602, 200, 400, "Invalid params: cursor must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, -32602, 200, 400, "Invalid params: name must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, -32602, 200, 400, "Invalid params: params must be an object"},
		// A method whose params are required, with none: go-sdk answered a
		// text/plain 400 when they were absent and -32600 "handling …"
		// when null. Both are malformed params (CONTRACT §4).
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read"}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":null}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":"r","method":"tools/call"}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":null}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":null}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel"}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":null}`, -32602, 200, 400, `Invalid params: missing required "params"`},
		// SEP-2322: inputResponses is an object of objects; null or a
		// number is a protocol error, not something to forward.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"inputResponses":null}}`, -32602, 200, 400, "Invalid params: inputResponses must be an object whose values are input responses (objects)"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"inputResponses":{"user_name":12345}}}`, -32602, 200, 400, "Invalid params: inputResponses must be an object whose values are input responses (objects)"},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","inputResponses":[]}}`, -32602, 200, 400, "Invalid params: inputResponses must be an object whose values are input responses (objects)"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x","inputResponses":{"a":"b"}}}`, -32602, 200, 400, "Invalid params: inputResponses must be an object whose values are input responses (objects)"},
		// go-sdk decodes _meta into a map of any; its refusal of a number
		// beyond float64 quoted the params escaped twice (a 2 MB request,
		// an 8 MB answer): refused before it, in a few words.
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x","_meta":{"x":1e400}}}`, -32602, 200, 400, "Invalid params: a number in _meta is beyond float64's range"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"progressToken":-1e400}}}`, -32602, 200, 400, "Invalid params: a number in _meta is beyond float64's range"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"a":[{"b":2e308}]},"name":5}}`, -32602, 200, 400, "Invalid params: a number in _meta is beyond float64's range"},
		{`{"jsonrpc":"2.0","id":"x","method":"nope/nope","params":{}}`, -32601, 200, 404, "Method not found: nope/nope"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, -32600, 400, 400, "Invalid Request: the method must be a string"},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600, 400, 400, `Invalid Request: the jsonrpc member must be "2.0"`},
		{`{"id":1,"method":"ping"}`, -32600, 400, 400, `Invalid Request: the jsonrpc member must be "2.0"`},
		// Duplicate members at every depth, not only the top: encoding/json
		// would keep the last "path" and write j/b.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"j/a","path":"j/b","mimeType":"text/plain","text":"x"}}}`,
			-32600, 400, 400, `Invalid Request: member "path" appears twice in params.arguments`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_search_snapshot","arguments":{"query":"q","hits":[{"url":"a","url":"b"}]}}}`,
			-32600, 400, 400, `Invalid Request: member "url" appears twice in params.arguments.hits[0]`},
	} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			hdr := readHeaders(version, "x")
			hdr.Del("Mcp-Name")
			status, h, got := post(t, url, hdr, []byte(tc.body))
			want := tc.status2025
			if version == "2026-07-28" {
				want = tc.status2026
			}
			var resp struct {
				ID    any `json:"id"`
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(got, &resp); err != nil || resp.Error == nil || h.Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s: %d %s %q: want a JSON-RPC error", version, tc.body, status, h.Get("Content-Type"), got)
			}
			if status != want || resp.Error.Code != tc.code || resp.Error.Message != tc.message {
				t.Errorf("%s %s:\n got %d %d %q\nwant %d %d %q", version, tc.body, status, resp.Error.Code, resp.Error.Message, want, tc.code, tc.message)
			}
			for _, goWord := range []string{"mcp.", "jsonrpc2", "Go ", "unmarshal", "*", "struct"} {
				if strings.Contains(resp.Error.Message, goWord) {
					t.Errorf("%s %s: the message %q names Go's %q", version, tc.body, resp.Error.Message, goWord)
				}
			}
		}
	}
	// An unknown notification is accepted and answered with nothing.
	status, _, got := post(t, url, readHeaders("2025-11-25", "x"), []byte(`{"jsonrpc":"2.0","method":"notifications/nope"}`))
	if status != http.StatusAccepted || len(got) != 0 {
		t.Errorf("unknown notification: %d %q, want 202 and no body", status, got)
	}
}

// TestPlainTextCasesStay: the bodies go-sdk refuses before dispatch keep
// its text/plain 400 (docs/decisions.md, "The JSON-RPC envelope"), also
// when their method needs params and they have none: a request without
// an id or with "id": null, and a batch (empty, of one message or more).
func TestPlainTextCasesStay(t *testing.T) {
	_, url, _ := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	for body, want := range map[string]string{
		`[]`: "",
		`{"jsonrpc":"2.0","method":"resources/read"}`:                                                   `missing id for "resources/read"`,
		`{"jsonrpc":"2.0","id":null,"method":"resources/read"}`:                                         `missing id for "resources/read"`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`:                               `missing id for "tools/call"`,
		`[{"jsonrpc":"2.0","id":1,"method":"resources/read"}]`:                                          "batching is not supported",
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}]`:                                "batching is not supported",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"resources/read"}]`: "batching is not supported",
	} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			hdr := readHeaders(version, "x")
			hdr.Del("Mcp-Name")
			hdr.Del("Mcp-Method")
			status, h, got := post(t, url, hdr, []byte(body))
			if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || !strings.Contains(string(got), want) {
				t.Errorf("%s %s: %d %s %q, want go-sdk's text/plain 400 saying %q", version, body, status, h.Get("Content-Type"), got, want)
			}
		}
	}
}

// TestDeepBodyAnswersInJSONRPC: go-sdk refuses a body nested deeper than
// 1000 with a text/plain 400; the envelope answers it first with a
// JSON-RPC -32700, as it answers a body beyond encoding/json's 10 000.
// One level less reaches the tool.
func TestDeepBodyAnswersInJSONRPC(t *testing.T) {
	_, url, _ := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	deep := func(depth int) []byte { // message, params, arguments: 3 levels
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"x":` +
			strings.Repeat("[", depth-3) + strings.Repeat("]", depth-3) + `}}}`)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		hdr := readHeaders(version, "x")
		hdr.Del("Mcp-Name")
		// (2026-07-28 wants _meta in a call, which this one has not.)
		if status, _, got := post(t, url, hdr, deep(1000)); version == "2025-11-25" && (status != http.StatusOK || !strings.Contains(string(got), `"isError":true`)) {
			t.Errorf("%s, 1000 deep: %d %.300s, want the tool's validation_error", version, status, got)
		}
		for depth, want := range map[int]string{
			1001:  "Parse error: the body nests arrays and objects deeper than 1000 levels",
			10000: "Parse error: the body nests arrays and objects deeper than 1000 levels",
			10001: "Parse error: the body must be one JSON value",
		} {
			status, h, got := post(t, url, hdr, deep(depth))
			var resp struct {
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(got, &resp); err != nil || resp.Error == nil || h.Get("Content-Type") != "application/json" ||
				status != http.StatusBadRequest || resp.Error.Code != -32700 || resp.Error.Message != want {
				t.Errorf("%s, %d deep: %d %s %.300q, want 400 and a JSON-RPC -32700 %q", version, depth, status, h.Get("Content-Type"), got, want)
			}
		}
	}
}

// TestOutOfRangeMetaAnswersShort: a request padded to 1 MB whose _meta holds
// 1e400 gets an answer of a few hundred bytes on both methods and
// versions, not go-sdk's quote of the params (four times the request).
func TestOutOfRangeMetaAnswersShort(t *testing.T) {
	_, url, _ := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	pad := strings.Repeat(`\"`, 1<<20/3)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x","_meta":{"x":1e400,"pad":"` + pad + `"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{},"_meta":{"pad":"` + pad + `","progressToken":1e400}}}`,
	} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			hdr := readHeaders(version, "x")
			hdr.Del("Mcp-Name")
			_, _, got := post(t, url, hdr, []byte(body))
			if len(got) > 512 || !strings.Contains(string(got), "beyond float64") {
				t.Errorf("%s %.60s…: %d bytes of answer (%.200q), want a short -32602", version, body, len(got), got)
			}
		}
	}
}

// TestDuplicateArgumentWritesNothing: the save with a duplicated path is
// refused before any tool runs, so neither path is written.
func TestDuplicateArgumentWritesNothing(t *testing.T) {
	ms := memstore.New(memstore.Options{})
	_, url, _ := serverPair(t, ms, time.Now)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"j/a","path":"j/b","mimeType":"text/plain","text":"x"}}}`
	if status, _, got := post(t, url, readHeaders("2025-11-25", "x"), []byte(body)); status != http.StatusBadRequest {
		t.Fatalf("save with a duplicate path: %d %s, want 400", status, got)
	}
	for _, p := range []string{"j/a", "j/b"} {
		if _, err := ms.Stat(t.Context(), store.MustKey("t1", "report", p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestSchemeWithoutSlashesIsInvalidURI: one of our schemes without "://"
// is a malformed URI of ours (-32602 with the reason, CONTRACT §3), not a
// URI we do not serve.
func TestSchemeWithoutSlashesIsInvalidURI(t *testing.T) {
	_, fast, sdk := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	for _, u := range []string{"report:/t1/x", "report:t1/x", "Report:t1/x"} {
		for _, url := range []string{fast, sdk} {
			body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + u + `"}}`
			status, _, got := post(t, url, readHeaders("2025-11-25", u), []byte(body))
			if status != http.StatusOK || !strings.Contains(string(got), `"code":-32602,"message":"Invalid resource URI: missing \"://\" after the scheme`) ||
				!strings.Contains(string(got), `"reason":`) {
				t.Errorf("read of %s: %d %s, want -32602 invalid URI with the reason", u, status, got)
			}
		}
	}
	// Another scheme stays not found.
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mailto:a@b"}}`
	if _, _, got := post(t, fast, readHeaders("2025-11-25", ""), []byte(body)); !strings.Contains(string(got), "Resource not found") {
		t.Errorf("read of mailto: %s, want not found", got)
	}
}

// TestHostAllowListIgnoresCase: host names are case-insensitive.
func TestHostAllowListIgnoresCase(t *testing.T) {
	s, err := New(Options{Store: memstore.New(memstore.Options{}), Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
		Auth: headerAuth{}, BaseURL: "https://Resourced.Example.com", AllowedHosts: []string{"MCP.Example.org"}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	for host, want := range map[string]int{"resourced.example.COM": 200, "mcp.example.ORG": 200, "MCP.EXAMPLE.ORG:443": 200, "evil.example": 403} {
		if got := pingWithHost(t, ts.URL, host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}

// pingWithHost is the HTTP status of a ping to url's /mcp sent with Host
// host.
func pingWithHost(t *testing.T, url, host string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header = readHeaders("2025-11-25", "")
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHostWithMalformedPortRefused: on a loopback listener, a Host whose
// port is not a port number is refused as a foreign Host is (403), though
// the name before it is localhost, a loopback address or the base URL's
// host (127.0.0.1 here).
func TestHostWithMalformedPortRefused(t *testing.T) {
	_, url, _ := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	for host, want := range map[string]int{
		"127.0.0.1:18777":          200,
		"localhost:18777":          200,
		"evil.com:18777":           403,
		"127.0.0.1:evil.com":       403,
		"localhost:evil.com":       403,
		"127.0.0.1:18777.evil.com": 403,
		"[::1]:evil.com":           403,
	} {
		if got := pingWithHost(t, url, host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}

// TestInvalidUnicodeAnswers: a body with bytes that are not UTF-8 is not
// JSON (RFC 8259 §8.1) and is answered as other bodies that are not JSON
// are: HTTP 400, -32700, no id, the message naming the first such byte.
// go-sdk decoded such an id into U+FFFD and answered that, an id the
// client cannot match. An id with an escape that is half a surrogate pair
// is JSON but cannot be written back as sent: -32600, no id. Both servers
// of the pair (fast paths on and off) answer alike: the envelope refuses
// these bodies before either path.
func TestInvalidUnicodeAnswers(t *testing.T) {
	_, fast, sdk := serverPair(t, memstore.New(memstore.Options{}), time.Now)
	// notUTF8 is the answer to body, whose first byte that is not UTF-8
	// is the first b in it.
	notUTF8 := func(body string, b byte) string {
		return fmt.Sprintf("Parse error: the body is not UTF-8: byte %d (0x%02x) is not part of a character", strings.IndexByte(body, b), b)
	}
	for _, tc := range []struct {
		body    string
		bad     byte // the first byte that is not UTF-8; 0: none
		code    int64
		message string
	}{
		{body: "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", bad: 0xff},
		{body: "{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}", bad: 0xed}, // a surrogate, UTF-8 encoded
		{body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}", bad: 0xff},
		{body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"report://t1/\xff\"}}", bad: 0xff},
		{body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stat_resource\xff\",\"arguments\":{}}}", bad: 0xff},
		{body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"save_report\",\"arguments\":{\"path\":\"u/a\",\"mimeType\":\"text/plain\",\"text\":\"a\xc3\"}}}", bad: 0xc3},
		{body: `{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`, code: -32600, message: `Invalid Request: the id must be a Unicode string: its escape \ud800 is half of a UTF-16 surrogate pair`},
		{body: `{"jsonrpc":"2.0","id":"\udfff","method":"resources/read","params":{"uri":"report://t1/x"}}`, code: -32600, message: `Invalid Request: the id must be a Unicode string: its escape \udfff is half of a UTF-16 surrogate pair`},
	} {
		if tc.bad != 0 {
			tc.code, tc.message = -32700, notUTF8(tc.body, tc.bad)
		}
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			for _, url := range []string{fast, sdk} {
				hdr := readHeaders(version, "report://t1/x")
				status, h, got := post(t, url, hdr, []byte(tc.body))
				var resp map[string]json.RawMessage
				if err := json.Unmarshal(got, &resp); err != nil || h.Get("Content-Type") != "application/json" || status != http.StatusBadRequest {
					t.Errorf("%s %q: %d %s %q, want 400 and a JSON-RPC error", version, tc.body, status, h.Get("Content-Type"), got)
					continue
				}
				var e struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				}
				json.Unmarshal(resp["error"], &e)
				if _, hasID := resp["id"]; hasID || e.Code != tc.code || e.Message != tc.message {
					t.Errorf("%s %q:\n got %s\nwant no id, %d %q", version, tc.body, got, tc.code, tc.message)
				}
			}
		}
	}
	// Ids that are Unicode come back as sent: a pair of escapes, é, an
	// escaped backslash before letters, U+FFFD sent as such.
	for _, id := range []string{`"\ud83d\ude00"`, `"é"`, `"\\ud800"`, `"\ufffd"`, "\"\xef\xbf\xbd\""} {
		var want any
		json.Unmarshal([]byte(id), &want)
		_, _, got := post(t, fast, readHeaders("2025-11-25", ""), []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
		var resp struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(got, &resp); err != nil || resp.ID != want || resp.Result == nil {
			t.Errorf("ping with id %s: %s, want a result with id %q", id, got, want)
		}
	}
}
