package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourced/resourced/mcpschema"
)

// TestBadInputCatalogue sends one server a catalogue of bad requests, each
// with the exact answer it must get, and checks after every one that the
// server still serves and that nothing stored changed; at the end every
// stored resource must read back byte for byte.
//
// Where the answer comes from go-sdk rather than from resourced, the case
// asserts what JSON-RPC 2.0, MCP or CONTRACT.md require, and says so when
// the server does not do it yet (bug).
func TestBadInputCatalogue(t *testing.T) {
	// report maxBytes is small so that bodies over it are cheap; search
	// needs room for 10 000 small hits (about 350 KB).
	in := startServer(t, "schemes:\n  search: {maxBytes: 512KiB}\n  report: {maxBytes: 64KiB}\n")
	const (
		reportMax = 64 << 10
		searchMax = 512 << 10
		httpLimit = 2*searchMax + 1<<20 // server.requestBodyLimit of the largest maxBytes
		base      = "report://default/"
	)

	// --- Data that must survive everything. ---------------------------------
	stored := map[string]string{} // URI -> sha256 of the body
	save := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		sc := checkSuccess(t, in.call(v2026, tool, args), 1)
		stored[sc["uri"].(string)] = sc["sha256"].(string)
		return sc
	}
	binBody := make([]byte, 1024)
	for i := range binBody {
		binBody[i] = byte(i)
	}
	text := save("save_report", map[string]any{"path": "keep/text", "mimeType": "text/markdown", "text": "# Précieux\n\nnot to be changed <&> \"quoted\"\n"})
	save("save_report", map[string]any{"path": "keep/bin", "mimeType": "application/octet-stream", "blobBase64": base64.StdEncoding.EncodeToString(binBody)})
	save("save_report", map[string]any{"path": "keep/listed", "mimeType": "text/plain", "text": "listed", "listed": true})
	save("save_report", map[string]any{"path": "keep/victim", "mimeType": "text/plain", "text": "a target for overwrites that must not happen"})
	save("save_search_snapshot", map[string]any{"query": "revenue 2026", "hits": hits})
	for u, sha := range stored {
		if got := sum(in.read(v2025, u).body(t)); got != sha {
			t.Fatalf("%s reads back with sha256 %s, saved as %s", u, got, sha)
		}
	}
	textSHA := text["sha256"].(string)

	// Another tenant with more than a page of listed reports, for cursors.
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	for i := range 101 {
		checkSuccess(t, acme.call(v2025, "save_report", map[string]any{"path": fmt.Sprintf("keep/%03d", i), "mimeType": "text/plain", "text": "acme", "listed": true}), 1)
	}
	cursorOf := func(r *rawResponse) string {
		t.Helper()
		var res struct {
			NextCursor string `json:"nextCursor"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.NextCursor == "" {
			t.Fatalf("no nextCursor: %s", r.Body)
		}
		return res.NextCursor
	}
	acmeListCursor := cursorOf(acme.rpc(v2025, "resources/list", nil))
	toolCursor := func(who *instance, args map[string]any) string {
		t.Helper()
		c, _ := checkSuccess(t, who.call(v2025, "list_resources", args), 1)["nextCursor"].(string)
		if c == "" {
			t.Fatalf("list_resources %v gave no nextCursor", args)
		}
		return c
	}
	keepPage := map[string]any{"scheme": "report", "prefix": "keep/", "limit": 1}
	ownCursor := toolCursor(in, keepPage)
	acmeCursor := toolCursor(acme, keepPage)
	readOnly := in.mint(tokenClaims("default", scopeRead))

	// --- Requests. -----------------------------------------------------------
	tl := toolsListReq()
	nest := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	hitsN := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"id":"h","title":"","snippet":""},`, n), ",") + "]"
	}
	// rep is save_report arguments: path, mimeType and text, with the
	// raw JSON values given as key, value pairs replacing or added to them.
	rep := func(kv ...string) string {
		m := [][2]string{{"path", `"bad/@V@"`}, {"mimeType", `"text/plain"`}, {"text", `"x"`}}
	next:
		for i := 0; i < len(kv); i += 2 {
			for j := range m {
				if m[j][0] == kv[i] {
					m[j][1] = kv[i+1]
					continue next
				}
			}
			m = append(m, [2]string{kv[i], kv[i+1]})
		}
		parts := make([]string, len(m))
		for j, p := range m {
			parts[j] = jsonStr(p[0]) + ":" + p[1]
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	pathArgs := func(path string) string {
		return `{"path":` + jsonStr(path) + `,"mimeType":"text/plain","text":"must not be stored"}`
	}
	uriErr := func(reason string) map[string]badOutcome { // malformed URI of a configured scheme
		return wantInvalidParams("Invalid resource URI: " + reason)
	}
	pathErr := func(reason string) map[string]badOutcome {
		return wantBoth(wantToolError("validation_error", "path: "+reason, "path"))
	}
	// offset of sub in the URI base+path, as the server reports it.
	at := func(path, sub string) int { return len(base) + strings.Index(path, sub) }
	cursorErr := wantBoth(wantToolError("validation_error", "cursor: is not a cursor of this listing", "cursor"))
	listCursorErr := wantInvalidParams("invalid cursor: pass the nextCursor of a previous resources/list result")
	mimeErr := func(msg string) map[string]badOutcome {
		return wantBoth(wantToolError("validation_error", "mimeType: "+msg, "mimeType"))
	}
	notBase64 := wantBoth(wantToolError("validation_error", "blobBase64: is not valid base64", "blobBase64"))
	bothBodies := wantBoth(wantToolError("validation_error", "pass exactly one of text and blobBase64, not both", "text", "blobBase64"))
	noBody := wantBoth(wantToolError("validation_error", "the body is missing", "text"))
	badLimit := wantBoth(wantToolError("validation_error", "limit: must be between 1 and 100", "limit"))
	tooLargeReport := func(n int) map[string]badOutcome {
		return wantBoth(wantToolError("too_large", fmt.Sprintf("the body is %d bytes; report:// stores at most %d bytes per resource", n, reportMax)))
	}
	long2k := strings.Repeat("a", 2048)
	headerMismatch := wantRPCError(400, -32020, "header mismatch")

	cases := []badCase{
		// Bodies that are not JSON, or not JSON-RPC.
		{name: "truncated JSON", req: rawRequest("tools/list", `{"jsonrpc":"2.0","id":1,"method":`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "not JSON", req: rawRequest("tools/list", `hello`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "empty body", req: rawRequest("tools/list", ``), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "UTF-8 BOM before the message", req: rawRequest("tools/list", "\ufeff"+tl.body), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "NUL byte between members", req: rawRequest("tools/list", strings.Replace(tl.body, `"method"`, "\x00\"method\"", 1)), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "100 KB of garbage is not echoed back", req: rawRequest("", strings.Repeat("A", 100<<10)), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value").maxBody(1024))},
		{name: "a JSON string", req: rawRequest("", `"tools/list"`), want: wantBoth(wantEnvelope(-32600, "a JSON-RPC message is an object"))},
		{name: "a JSON number", req: rawRequest("", `42`), want: wantBoth(wantEnvelope(-32600, "a JSON-RPC message is an object"))},
		{name: "JSON null", req: rawRequest("", `null`), want: wantBoth(wantEnvelope(-32600, "a JSON-RPC message is an object"))},
		{name: "empty object", req: rawRequest("", `{}`), want: wantBoth(wantEnvelope(-32600, `the jsonrpc member must be "2.0"`))},
		{name: "jsonrpc member missing", req: rawRequest("tools/list", `{"id":@ID@,"method":"tools/list","params":{@META@}}`), want: wantBoth(wantEnvelope(-32600, `the jsonrpc member must be "2.0"`))},
		{name: "jsonrpc 1.0", req: rawRequest("tools/list", `{"jsonrpc":"1.0","id":@ID@,"method":"tools/list","params":{@META@}}`), want: wantBoth(wantEnvelope(-32600, `the jsonrpc member must be "2.0"`))},
		{name: "method missing", req: rawRequest("", `{"jsonrpc":"2.0","id":@ID@,"params":{}}`), want: wantBoth(wantEnvelope(-32600, "a message with an id needs a method"))},
		{name: "method not a string", req: rawRequest("", `{"jsonrpc":"2.0","id":@ID@,"method":5}`), want: wantBoth(wantEnvelope(-32600, "the method must be a string"))},
		{name: "empty method", req: rawRequest("", `{"jsonrpc":"2.0","id":@ID@,"method":"","params":{@META@}}`),
			want: wantPer(wantRPCError(404, -32601, `Method not found: `), wantRPCError(200, -32601, `Method not found: `))},
		{name: "unknown method", req: rawRequest("foo/bar", `{"jsonrpc":"2.0","id":@ID@,"method":"foo/bar","params":{@META@}}`),
			want: wantPer(wantRPCError(404, -32601, `Method not found: foo/bar`), wantRPCError(200, -32601, `Method not found: foo/bar`))},
		{name: "request sent as a notification", req: rawRequest("tools/list", `{"jsonrpc":"2.0","method":"tools/list","params":{@META@}}`), want: wantBoth(wantRefused(400, `missing id for "tools/list"`))},
		{name: "id null", req: rawRequest("tools/list", `{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{@META@}}`), want: wantBoth(wantRefused(400, `missing id for "tools/list"`))},
		{name: "array of garbage", req: rawRequest("", `[1,"x",null]`), want: wantBoth(wantEnvelope(-32600, "a JSON-RPC message is an object"))},
		{name: "empty batch", req: rawRequest("", `[]`), want: wantBoth(wantRefused(400, "empty batch"))},
		{name: "batch of one valid request", req: rawRequest("tools/list", "["+tl.body+"]"), want: wantBoth(wantRefused(400, "batching is not supported"))},
		{name: "trailing garbage after the message", req: rawRequest("tools/list", tl.body+` trailing`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "two messages in one body", req: rawRequest("tools/list", tl.body+tl.body), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "a response to a request never sent", req: rawRequest("", `{"jsonrpc":"2.0","id":@ID@,"result":{}}`), want: wantBoth(wantAccepted())},

		// Parameters of the wrong type.
		{name: "params a string", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":"stat_resource"}`).named("stat_resource"),
			want: wantInvalidParams("Invalid params: params must be an object")},
		{name: "arguments an array", req: toolReq("stat_resource", `["report://default/keep/text"]`), want: wantBoth(wantToolError("validation_error", "arguments must be a JSON object"))},
		{name: "arguments a string", req: toolReq("stat_resource", `"report://default/keep/text"`), want: wantBoth(wantToolError("validation_error", "arguments must be a JSON object"))},
		{name: "name a number", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":{@META,@"name":7,"arguments":{}}}`).named("7"),
			want: wantInvalidParams("Invalid params: name must be a string")},
		{name: "tools/call without name", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":{@META,@"arguments":{"uri":"report://default/keep/text"}}}`),
			want: wantPer(wantRPCError(400, -32020, "missing required Mcp-Name header"), wantRPCError(200, -32602, `unknown tool ""`))},
		{name: "unknown tool", req: toolReq("no_such_tool", `{}`), want: wantInvalidParams(`unknown tool "no_such_tool"`)},
		{name: "tool name in upper case", req: toolReq("STAT_RESOURCE", `{"uri":"report://default/keep/text"}`), want: wantInvalidParams(`unknown tool "STAT_RESOURCE"`)},
		{name: "uri a number in resources/read", req: rawRequest("resources/read", `{"jsonrpc":"2.0","id":@ID@,"method":"resources/read","params":{@META,@"uri":7}}`).named("7"),
			want: wantInvalidParams("Invalid params: uri must be a string")},
		{name: "resources/read without params", req: rawRequest("resources/read", `{"jsonrpc":"2.0","id":@ID@,"method":"resources/read"}`), want: wantInvalidParams(`Invalid params: missing required "params"`)},
		{name: "resources/read with params null", req: rawRequest("resources/read", `{"jsonrpc":"2.0","id":@ID@,"method":"resources/read","params":null}`), want: wantInvalidParams(`Invalid params: missing required "params"`)},
		{name: "tools/call without params", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call"}`), want: wantInvalidParams(`Invalid params: missing required "params"`)},
		{name: "tools/call with params null", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":null}`), want: wantInvalidParams(`Invalid params: missing required "params"`)},
		{name: "resources/read without params or id", req: rawRequest("resources/read", `{"jsonrpc":"2.0","method":"resources/read"}`), want: wantBoth(wantRefused(400, `missing id for "resources/read"`))},
		{name: "cursor a number in resources/list", req: rawRequest("resources/list", `{"jsonrpc":"2.0","id":@ID@,"method":"resources/list","params":{@META,@"cursor":5}}`), want: wantInvalidParams("Invalid params: cursor must be a string")},
		{name: "uri a number", req: toolReq("stat_resource", `{"uri":7}`), want: wantBoth(wantToolError("validation_error", "uri: must be a string, not a JSON number", "uri"))},
		{name: "text a number", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":42}`), want: wantBoth(wantToolError("validation_error", "text: must be a string, not a JSON number", "text"))},
		{name: "hits an object", req: toolReq("save_search_snapshot", `{"query":"q","hits":{"id":"a","title":"","snippet":""}}`), want: wantBoth(wantToolError("validation_error", "hits: must be an array, not a JSON object", "hits"))},
		{name: "score a string", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":"","score":"high"}]}`), want: wantBoth(wantToolError("validation_error", "hits[0].score: must be a number, not a JSON string", "hits[0].score"))},
		{name: "score a string in the fourth hit", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":""},{"id":"b","title":"","snippet":""},{"id":"c","title":"","snippet":""},{"id":"d","title":"","snippet":"","score":"x"}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[3].score: must be a number, not a JSON string", "hits[3].score"))},
		{name: "hit id a number", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":5,"title":"","snippet":""}]}`), want: wantBoth(wantToolError("validation_error", "hits[0].id: must be a string, not a JSON number", "hits[0].id"))},
		// A hit's title and snippet are required (inputSchema, CONTRACT §4):
		// missing or null they would be stored as "".
		{name: "hit without title and snippet", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"1"},{"id":"2","title":null,"snippet":null}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[0].title: is required: a string", "hits[0].title"))},
		{name: "hit title and snippet null", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":""},{"id":"2","title":null,"snippet":null}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[1].title: must be a string, not null", "hits[1].title"))},
		{name: "hit without snippet", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"t"}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[0].snippet: is required: a string", "hits[0].snippet"))},
		{name: "hit url with port 99999", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"1","title":"","snippet":"","url":"https://example.com:99999/"}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[0].url: is not a URL: its port (5 digits) is not a TCP port from 1 to 65535", "hits[0].url"))},
		// search_resources' limit is 1 to 50 (inputSchema, CONTRACT §4): refused
		// outside, never capped.
		{name: "search limit 0", req: toolReq("search_resources", `{"query":"x","limit":0}`), want: wantBoth(wantToolError("validation_error", "limit: must be between 1 and 50", "limit"))},
		{name: "search limit 51", req: toolReq("search_resources", `{"query":"x","limit":51}`), want: wantBoth(wantToolError("validation_error", "limit: must be between 1 and 50", "limit"))},
		{name: "search limit 1000", req: toolReq("search_resources", `{"query":"x","limit":1000}`), want: wantBoth(wantToolError("validation_error", "limit: must be between 1 and 50", "limit"))},
		{name: "search limit 1e12", req: toolReq("search_resources", `{"query":"x","limit":1e12}`), want: wantBoth(wantToolError("validation_error", "limit: must be an integer, not a JSON number 1e12", "limit"))},
		{name: "search limit 1000000000000", req: toolReq("search_resources", `{"query":"x","limit":1000000000000}`), want: wantBoth(wantToolError("validation_error", "limit: must be between 1 and 50", "limit"))},
		// Type errors name the JSON argument, not a Go path such as
		// "saveOptions.listed".
		{name: "listed a string", req: toolReq("save_report", rep("listed", `"yes"`)), want: wantBoth(wantToolError("validation_error", "listed: must be a boolean, not a JSON string", "listed"))},
		{name: "visibility a number", req: toolReq("save_report", rep("visibility", `1`)), want: wantBoth(wantToolError("validation_error", "visibility: must be a string, not a JSON number", "visibility"))},
		{name: "scheme a boolean", req: toolReq("save_search_snapshot", `{"query":"q","hits":[],"scheme":true}`), want: wantBoth(wantToolError("validation_error", "scheme: must be a string, not a JSON bool", "scheme"))},
		{name: "limit a string", req: toolReq("list_resources", `{"limit":"10"}`), want: wantBoth(wantToolError("validation_error", "limit: must be an integer, not a JSON string", "limit"))},
		// encoding/json matches names case-insensitively (and folds U+017F
		// to s); the inputSchema admits no other spelling, and the last of
		// two spellings must not silently win (keep/victim).
		{name: "argument names differing in case", req: toolReq("save_report", `{"PATH":"case/@V@","MimeType":"text/plain","TEXT":"x"}`),
			want: wantBoth(wantToolError("validation_error", `PATH: is not an argument of this tool`, "PATH"))},
		{name: "argument name with a Unicode case fold", req: toolReq("save_report", `{"path":"fold/@V@","mimeType":"text/plain","text":"x","ſcheme":"report"}`),
			want: wantBoth(wantToolError("validation_error", `ſcheme: is not an argument of this tool`, "ſcheme"))},
		{name: "hit property named like an argument", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":"","query":"x"}]}`),
			want: wantBoth(wantToolError("validation_error", "hits[0].query: is not an argument", "hits[0].query"))},
		{name: "path given twice, in two cases", req: toolReq("save_report", `{"path":"decoy/@V@","Path":"keep/victim","mimeType":"text/plain","text":"overwritten","overwrite":true}`),
			want: wantBoth(wantToolError("validation_error", `Path: is not an argument of this tool`, "Path"))},

		// Huge and odd ids.
		{name: "64 KB string id", req: withID(tl, jsonStr(strings.Repeat("i", 64<<10))), want: wantBoth(wantResult("tools/list"))},
		{name: "id 1e400", req: withID(tl, `1e400`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id an object", req: withID(tl, `{"a":{"b":1}}`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id true", req: withID(tl, `true`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id of 100 000 nested arrays", req: withID(tl, nest("[", "]", 100000)), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "fractional id", req: withID(tl, `1.5`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id 2^53+1", req: withID(tl, `9007199254740993`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id 2^63-1", req: withID(tl, `9223372036854775807`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},
		{name: "id 1e30", req: withID(tl, `1e30`), want: wantBoth(wantEnvelope(-32600, "the id must be a string or an integer"))},

		// Sizes.
		{name: "HTTP body exactly at the limit", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":"@PAD@"}`).size(httpLimit),
			want: wantBoth(wantToolError("too_large", fmt.Sprintf("report:// stores at most %d bytes per resource", reportMax)))},
		{name: "HTTP body one byte over the limit", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":"@PAD@"}`).size(httpLimit + 1),
			want: wantBoth(wantRefused(413, fmt.Sprintf("request body exceeds %d bytes", httpLimit)))},
		{name: "HTTP body over the limit, read-only token", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":"@PAD@"}`).size(httpLimit + 1).as(readOnly),
			want: wantBoth(wantRefused(413, fmt.Sprintf("request body exceeds %d bytes", httpLimit)))},
		{name: "text one byte over maxBytes", req: toolReq("save_report", rep("text", `"`+strings.Repeat("x", reportMax+1)+`"`)), want: tooLargeReport(reportMax + 1)},
		{name: "text over maxBytes by a two-byte character", req: toolReq("save_report", rep("text", `"`+strings.Repeat("x", reportMax-1)+`é"`)), want: tooLargeReport(reportMax + 1)},
		{name: "blob decoding to one byte over maxBytes", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"application/octet-stream","blobBase64":"`+base64.StdEncoding.EncodeToString(make([]byte, reportMax+1))+`"}`), want: tooLargeReport(reportMax + 1)},
		{name: "text of exactly maxBytes", req: toolReq("save_report", `{"path":"max/@V@/text","mimeType":"text/plain","text":"`+strings.Repeat("x", reportMax)+`"}`), want: wantBoth(wantStored())},
		{name: "snapshot over search maxBytes", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":"`+strings.Repeat("s", searchMax)+`"}]}`),
			want: wantBoth(wantToolError("too_large", fmt.Sprintf("search:// stores at most %d bytes per resource", searchMax)))},
		{name: "10 000 hits", req: toolReq("save_search_snapshot", `{"query":"many","total":10000,"hits":`+hitsN(10000)+`}`), want: wantBoth(wantStored())},
		{name: "10 001 hits", req: toolReq("save_search_snapshot", `{"query":"too many","hits":`+hitsN(10001)+`}`), want: wantBoth(wantToolError("too_large", "hits has 10001 items; a snapshot holds at most 10000"))},

		// text or blobBase64.
		{name: "invalid base64", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"application/octet-stream","blobBase64":"@@@"}`), want: notBase64},
		{name: "base64url alphabet", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"application/octet-stream","blobBase64":"-_-_"}`), want: notBase64},
		{name: "base64 with a space", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"application/octet-stream","blobBase64":"aGVs bG8="}`), want: notBase64},
		{name: "base64 of padding only", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"application/octet-stream","blobBase64":"===="}`), want: notBase64},
		{name: "both text and blobBase64", req: toolReq("save_report", rep("blobBase64", `"eA=="`)), want: bothBodies},
		{name: "both text and blobBase64, empty", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":"","blobBase64":""}`), want: bothBodies},
		{name: "neither text nor blobBase64", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain"}`), want: noBody},
		{name: "text and blobBase64 null", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":null,"blobBase64":null}`), want: noBody},
		{name: "blobBase64 empty", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","blobBase64":""}`), want: wantBoth(wantToolError("validation_error", "the body is empty"))},

		// mimeType.
		{name: "mimeType without subtype", req: toolReq("save_report", rep("mimeType", `"text"`)), want: mimeErr(`"text" is not a media type`)},
		{name: "mimeType a/b/c", req: toolReq("save_report", rep("mimeType", `"a/b/c"`)), want: mimeErr(`"a/b/c" is not a media type`)},
		{name: "mimeType with a bare parameter", req: toolReq("save_report", rep("mimeType", `"text/plain; charset"`)), want: mimeErr(`"text/plain; charset" is not a media type`)},
		{name: "mimeType of 300 bytes", req: toolReq("save_report", rep("mimeType", `"text/`+strings.Repeat("a", 295)+`"`)), want: mimeErr("is longer than 255 bytes")},
		{name: "mimeType with CRLF", req: toolReq("save_report", rep("mimeType", `"text/plain\r\nX-Injected: 1"`)), want: mimeErr(`"text/plain\r\nX-Injected: 1" is not a media type`)},
		{name: "mimeType with a fullwidth solidus", req: toolReq("save_report", rep("mimeType", `"text／plain"`)), want: mimeErr(`"text／plain" is not a media type`)},
		{name: "mimeType empty", req: toolReq("save_report", rep("mimeType", `""`)), want: mimeErr("is required")},

		// Paths of save_report (core_test covers a/../b, %2e%2e/b, a//b, a/b/, a\uff0fb, a\x00b).
		{name: "path ..", req: toolReq("save_report", pathArgs("..")), want: pathErr(fmt.Sprintf(`path segment ".." is not allowed (byte %d)`, len(base)))},
		{name: "path .", req: toolReq("save_report", pathArgs(".")), want: pathErr(fmt.Sprintf(`path segment "." is not allowed (byte %d)`, len(base)))},
		{name: "path with a dot segment", req: toolReq("save_report", pathArgs("keep/./text")), want: pathErr(fmt.Sprintf(`path segment "." is not allowed (byte %d)`, at("keep/./text", "./")))},
		{name: "path %2e%2e", req: toolReq("save_report", pathArgs("%2e%2e")), want: pathErr(fmt.Sprintf("percent-encoding is not allowed ('%%' at byte %d)", len(base)))},
		{name: "path with a percent-encoded letter", req: toolReq("save_report", pathArgs("keep/%74ext")), want: pathErr(fmt.Sprintf("percent-encoding is not allowed ('%%' at byte %d)", at("keep/%74ext", "%")))},
		{name: "path keep//text", req: toolReq("save_report", pathArgs("keep//text")), want: pathErr(fmt.Sprintf(`path has an empty segment ("//" at byte %d)`, at("keep//text", "//")))},
		{name: "path with a trailing slash", req: toolReq("save_report", pathArgs("keep/")), want: pathErr(fmt.Sprintf("path has a trailing slash (byte %d)", at("keep/", "/")))},
		{name: "path with a leading slash", req: toolReq("save_report", pathArgs("/keep/text")), want: pathErr(`path must not start with "/"`)},
		{name: "path with a fullwidth solidus", req: toolReq("save_report", pathArgs("keep\uff0ftext")), want: pathErr(fmt.Sprintf("non-ASCII character U+FF0F at byte %d", at("keep\uff0ftext", "\uff0f")))},
		{name: "path with Cyrillic look-alikes", req: toolReq("save_report", pathArgs("k\u0435\u0435p/text")), want: pathErr(fmt.Sprintf("non-ASCII character U+0435 at byte %d", len(base)+1))},
		{name: "path with a zero-width space", req: toolReq("save_report", pathArgs("keep/te\u200bxt")), want: pathErr(fmt.Sprintf("non-ASCII character U+200B at byte %d", at("keep/te\u200bxt", "\u200b")))},
		{name: "path with NUL", req: toolReq("save_report", pathArgs("keep/te\x00xt")), want: pathErr(fmt.Sprintf("control character at byte %d (0x00)", at("keep/te\x00xt", "\x00")))},
		{name: "path with ESC", req: toolReq("save_report", pathArgs("keep/\x1b[31mtext")), want: pathErr(fmt.Sprintf("control character at byte %d (0x1b)", at("keep/\x1b[31mtext", "\x1b")))},
		{name: "path with DEL", req: toolReq("save_report", pathArgs("keep/te\x7fxt")), want: pathErr(fmt.Sprintf("control character at byte %d (0x7f)", at("keep/te\x7fxt", "\x7f")))},
		{name: "path of 2 KB", req: toolReq("save_report", pathArgs(long2k)), want: pathErr("is 2048 bytes; the limit is 512")},
		{name: "path one byte over limits.maxPathBytes", req: toolReq("save_report", pathArgs("max/@V@/"+strings.Repeat("a", 513-len("max/v26/")))), want: pathErr("is 513 bytes; the limit is 512")},
		{name: "path of exactly limits.maxPathBytes", req: toolReq("save_report", pathArgs("max/@V@/"+strings.Repeat("a", 512-len("max/v26/")))), want: wantBoth(wantStored())},
		{name: "create over a stored report", req: toolReq("save_report", `{"path":"keep/text","mimeType":"text/plain","text":"evil"}`),
			want: wantBoth(wantToolError("conflict", base+"keep/text already exists and was not changed"))},
		{name: "report scheme search", req: toolReq("save_report", rep("scheme", `"search"`)), want: wantBoth(wantToolError("validation_error", `scheme: "search" is not a configured report scheme`, "scheme"))},
		{name: "snapshot scheme report", req: toolReq("save_search_snapshot", `{"query":"q","hits":[],"scheme":"report"}`), want: wantBoth(wantToolError("validation_error", `scheme: "report" is not a configured search scheme`, "scheme"))},

		// Numbers.
		{name: "total as a string", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":""}],"total":"1"}`), want: wantBoth(wantToolError("validation_error", "total: must be an integer, not a JSON string", "total"))},
		{name: "total 1.5", req: toolReq("save_search_snapshot", `{"query":"q","hits":[{"id":"a","title":"","snippet":""}],"total":1.5}`), want: wantBoth(wantToolError("validation_error", "total: must be an integer, not a JSON number 1.5", "total"))},
		{name: "total -1", req: toolReq("save_search_snapshot", `{"query":"q","hits":[],"total":-1}`), want: wantBoth(wantToolError("validation_error", "total: is -1 but hits has 0 items", "total"))},
		// go-sdk decodes the arguments of a 2026-07-28 tools/call into Go
		// values to compare the name with Mcp-Name; a number beyond float64
		// makes that fail with a misleading "header mismatch" code.
		{name: "total 1e400", req: toolReq("save_search_snapshot", `{"query":"q","hits":[],"total":1e400}`),
			want: wantPer(wantRPCError(400, -32020, "failed to extract name from parameters"), wantToolError("validation_error", "total: must be an integer, not a JSON number 1e400", "total"))},
		{name: "negative limit", req: toolReq("list_resources", `{"limit":-1}`), want: badLimit},
		{name: "limit 0", req: toolReq("list_resources", `{"limit":0}`), want: badLimit},
		{name: "limit 1000", req: toolReq("list_resources", `{"limit":1000}`), want: badLimit},
		{name: "limit 1.5", req: toolReq("list_resources", `{"limit":1.5}`), want: wantBoth(wantToolError("validation_error", "limit: must be an integer, not a JSON number 1.5", "limit"))},
		{name: "retention -1", req: toolReq("save_report", rep("retention", `-1`)), want: wantBoth(wantToolError("validation_error", "retention: must be", "retention"))},
		{name: "retention 1e400", req: toolReq("save_report", rep("retention", `1e400`)),
			want: wantPer(wantRPCError(400, -32020, "failed to extract name from parameters"), wantToolError("validation_error", "retention: must be a number of seconds or an ISO-8601 duration", "retention"))},
		// A positive retention that rounds to nothing must not save a
		// resource that is already expired when acknowledged.
		{name: "retention below a nanosecond", req: toolReq("save_report", `{"path":"ret/@V@","mimeType":"text/plain","text":"x","retention":1e-10}`),
			want: wantBoth(wantToolError("validation_error", "retention: must be", "retention"))},
		{name: "retention of half a millisecond", req: toolReq("save_report", `{"path":"ret/@V@","mimeType":"text/plain","text":"x","retention":0.0005}`),
			want: wantBoth(wantToolError("validation_error", "retention: must be", "retention"))},

		// Cursors of list_resources.
		{name: "cursor garbage", req: toolReq("list_resources", `{"cursor":"!!not a cursor!!"}`), want: cursorErr},
		{name: "cursor base64 of {}", req: toolReq("list_resources", `{"cursor":"`+base64.RawURLEncoding.EncodeToString([]byte("{}"))+`"}`), want: cursorErr},
		{name: "cursor of 5 KB", req: toolReq("list_resources", `{"cursor":"`+strings.Repeat("A", 5000)+`"}`), want: cursorErr},
		{name: "another tenant's cursor", req: toolReq("list_resources", `{"scheme":"report","prefix":"keep/","limit":1,"cursor":`+jsonStr(acmeCursor)+`}`), want: cursorErr},
		{name: "cursor with another prefix", req: toolReq("list_resources", `{"scheme":"report","prefix":"keep/t","limit":1,"cursor":`+jsonStr(ownCursor)+`}`), want: cursorErr},
		{name: "cursor without its scheme and prefix", req: toolReq("list_resources", `{"limit":1,"cursor":`+jsonStr(ownCursor)+`}`), want: cursorErr},
		{name: "resources/list cursor in list_resources", req: toolReq("list_resources", `{"cursor":`+jsonStr(acmeListCursor)+`}`), want: cursorErr},
		{name: "control: own cursor with its own filter", req: toolReq("list_resources", `{"scheme":"report","prefix":"keep/","limit":1,"cursor":`+jsonStr(ownCursor)+`}`), want: wantBoth(wantToolOK(1))},
		// Cursors of resources/list.
		{name: "resources/list cursor garbage", req: listReq("!!not a cursor!!"), want: listCursorErr},
		{name: "resources/list cursor base64 of {}", req: listReq(base64.RawURLEncoding.EncodeToString([]byte("{}"))), want: listCursorErr},
		{name: "resources/list cursor of another tenant", req: listReq(acmeListCursor), want: listCursorErr},
		{name: "resources/list with a list_resources cursor", req: listReq(ownCursor), want: listCursorErr},
		{name: "control: resources/list cursor of its tenant", req: listReq(acmeListCursor).as(acme.Token), want: wantBoth(wantResult("resources/list"))},

		// Deep nesting.
		{name: "100 000 nested arrays in params", req: rawRequest("tools/list", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":{@META,@"x":`+nest("[", "]", 100000)+`}}`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "100 000 nested arrays in an argument", req: toolReq("stat_resource", `{"uri":`+nest("[", "]", 100000)+`}`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "100 000 nested objects in an argument", req: toolReq("save_report", `{"path":"bad/@V@","mimeType":"text/plain","text":"x","title":`+nest(`{"a":`, "}", 100000)+`}`), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "900 nested arrays in an argument", req: toolReq("stat_resource", `{"uri":`+nest("[", "]", 900)+`}`), want: wantBoth(wantToolError("validation_error", "uri: must be a string, not a JSON array", "uri"))},

		// resources/read (core_test covers REPORT://, a 2 KB report URI, ?, :80, a%2Fb, and NUL/ESC on 2025-11-25).
		{name: "2 KB URI of another scheme", req: readReq("https://example.com/" + long2k), want: wantNotFound()},
		{name: "URI of exactly 1024 bytes", req: readReq(base + strings.Repeat("a", 1024-len(base))), want: wantNotFound()},
		{name: "URI of 1025 bytes", req: readReq(base + strings.Repeat("a", 1025-len(base))), want: uriErr("URI is longer than 1024 bytes (1025 bytes)")},
		{name: "2 KB search URI", req: readReq("search://default/results/" + long2k), want: uriErr(fmt.Sprintf("URI is longer than 1024 bytes (%d bytes)", len("search://default/results/")+2048))},
		{name: "64 KB URI", req: readReq(base + strings.Repeat("a", 64<<10)), want: uriErr(fmt.Sprintf("URI is longer than 1024 bytes (%d bytes)", len(base)+64<<10))},
		{name: "stored resource, scheme capitalised", req: readReq("Report://default/keep/text"), want: uriErr("scheme must be lower-case")},
		{name: "upper-case scheme that is not configured", req: readReq("HTTPS://example.com/x"), want: wantNotFound()},
		{name: "stored resource with a trailing slash", req: readReq(base + "keep/text/"), want: uriErr(fmt.Sprintf("path has a trailing slash (byte %d)", len(base+"keep/text")))},
		{name: "stored resource with a dot segment", req: readReq(base + "keep/./text"), want: uriErr(fmt.Sprintf(`path segment "." is not allowed (byte %d)`, at("keep/./text", "./")))},
		{name: "stored resource with a percent-encoded letter", req: readReq(base + "keep/%74ext"), want: uriErr(fmt.Sprintf("percent-encoding is not allowed ('%%' at byte %d)", at("keep/%74ext", "%")))},
		// 2026-07-28 carries the URI in Mcp-Name too; a client encodes a
		// non-ASCII value as SEP-2243 asks, which go-sdk v1.8.0 does not
		// decode (decisions.md), so the transport refuses it.
		{name: "look-alike solidus in the path", req: readReq(base + "keep\uff0ftext"),
			want: wantPer(headerMismatch, wantRPCError(200, -32602, fmt.Sprintf("Invalid resource URI: non-ASCII character U+FF0F at byte %d", at("keep\uff0ftext", "\uff0f"))))},
		{name: "look-alike solidus, raw UTF-8 in Mcp-Name", req: readReq(base + "keep\uff0ftext").rawName(),
			want: wantOnly(v2026, wantRPCError(400, -32602, fmt.Sprintf("Invalid resource URI: non-ASCII character U+FF0F at byte %d", at("keep\uff0ftext", "\uff0f"))))},
		{name: "Cyrillic look-alike scheme", req: readReq("r\u0435port://default/keep/text"), want: wantPer(headerMismatch, wantRPCError(200, -32602, "Resource not found"))},
		{name: "Cyrillic look-alike scheme, raw UTF-8 in Mcp-Name", req: readReq("r\u0435port://default/keep/text").rawName(), want: wantOnly(v2026, wantRPCError(400, -32602, "Resource not found"))},
		{name: "zero-width space in the path", req: readReq(base + "keep/te\u200bxt"),
			want: wantPer(headerMismatch, wantRPCError(200, -32602, fmt.Sprintf("Invalid resource URI: non-ASCII character U+200B at byte %d", at("keep/te\u200bxt", "\u200b"))))},
		{name: "NUL in the scheme", req: readReq("report\x00://default/keep/text"), want: wantOnly(v2025, wantRPCError(200, -32602, "Resource not found"))},
		{name: "NUL in the tenant", req: readReq("report://def\x00ault/keep/text"), want: wantOnly(v2025, wantRPCError(200, -32602, fmt.Sprintf("Invalid resource URI: control character at byte %d (0x00)", len("report://def"))))},
		{name: "NUL after a stored URI", req: readReq(base + "keep/text\x00"), want: wantOnly(v2025, wantRPCError(200, -32602, fmt.Sprintf("Invalid resource URI: control character at byte %d (0x00)", len(base+"keep/text"))))},
		{name: "DEL in the path", req: readReq(base + "keep/te\x7fxt"), want: wantOnly(v2025, wantRPCError(200, -32602, fmt.Sprintf("Invalid resource URI: control character at byte %d (0x7f)", at("keep/te\x7fxt", "\x7f"))))},

		// Tools naming stored resources wrongly must not touch them.
		{name: "delete with a capitalised scheme", req: toolReq("delete_resource", `{"uri":"Report://default/keep/text"}`), want: wantBoth(wantToolError("validation_error", "uri: scheme must be lower-case", "uri"))},
		{name: "delete with a trailing slash", req: toolReq("delete_resource", `{"uri":"report://default/keep/text/"}`), want: wantBoth(wantToolError("validation_error", fmt.Sprintf("uri: path has a trailing slash (byte %d)", len(base+"keep/text")), "uri"))},
		{name: "delete through ..", req: toolReq("delete_resource", `{"uri":"report://default/keep/x/../text"}`), want: wantBoth(wantToolError("validation_error", fmt.Sprintf(`uri: path segment ".." is not allowed (byte %d)`, at("keep/x/../text", "../")), "uri"))},
		{name: "delete with a zero-width space", req: toolReq("delete_resource", `{"uri":"report://default/keep/te\u200bxt"}`), want: wantBoth(wantToolError("validation_error", fmt.Sprintf("uri: non-ASCII character U+200B at byte %d", at("keep/te\u200bxt", "\u200b")), "uri"))},
		{name: "delete with NUL after the URI", req: toolReq("delete_resource", `{"uri":"report://default/keep/text\u0000"}`), want: wantBoth(wantToolError("validation_error", fmt.Sprintf("uri: control character at byte %d (0x00)", len(base+"keep/text")), "uri"))},
		{name: "delete with a wrong ifMatch", req: toolReq("delete_resource", `{"uri":"report://default/keep/text","ifMatch":"`+strings.Repeat("0", 64)+`"}`), want: wantBoth(wantToolError("conflict", "was not deleted: its sha256 is not "+strings.Repeat("0", 64)))},
		{name: "delete with the sha256 in upper case", req: toolReq("delete_resource", `{"uri":"report://default/keep/text","ifMatch":"`+strings.ToUpper(textSHA)+`"}`), want: wantBoth(wantToolError("validation_error", "ifMatch: must be the 64 lower-case hex digits of a SHA-256", "ifMatch"))},
		{name: "stat a 2 KB URI", req: toolReq("stat_resource", `{"uri":"`+base+long2k+`"}`), want: wantBoth(wantToolError("validation_error", fmt.Sprintf("uri: URI is longer than 1024 bytes (%d bytes)", len(base)+2048), "uri"))},
		{name: "stat a 2 KB URI of another scheme", req: toolReq("stat_resource", `{"uri":"https://example.com/`+long2k+`"}`), want: wantBoth(wantToolError("not_found", "is available to you"))},
		{name: "stat with an upper-case scheme", req: toolReq("stat_resource", `{"uri":"REPORT://default/keep/text"}`), want: wantBoth(wantToolError("validation_error", "uri: scheme must be lower-case", "uri"))},

		// A token without resources:write must be refused before MCP, whatever the body looks like.
		{name: "read-only token, save behind trailing garbage", req: toolReq("save_report", rep()).suffix(" x").as(readOnly), want: wantBoth(wantEnvelope(-32700, "Parse error: the body must be one JSON value"))},
		{name: "read-only token, method repeated in upper case", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","METHOD":"tools/list","params":{@META,@"name":"save_report","arguments":`+rep()+`}}`).named("save_report").as(readOnly),
			want: wantBoth(wantRefusedAny(403))},
		{name: "read-only token, tool name repeated in upper case", req: rawRequest("tools/call", `{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":{@META,@"name":"save_report","NAME":"stat_resource","arguments":`+rep()+`}}`).named("save_report").as(readOnly),
			want: wantBoth(wantRefusedAny(403))},
	}

	// --- Run. ----------------------------------------------------------------
	damaged := map[string]bool{} // resources a case changed or removed
	for _, c := range cases {
		for _, v := range versions {
			o, ok := c.want[v]
			if !ok {
				continue
			}
			t.Run(c.name+"/"+v, func(t *testing.T) {
				if c.bug != "" {
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("known server bug: %s", c.bug)
						}
					})
				}
				ci := *in
				ci.t = t
				hdr, body, id := c.req.build(&ci, v)
				t.Cleanup(func() { afterCase(t, &ci, v, stored, damaged) })
				r := ci.post(hdr, body)
				if uri, sha := o.check(t, v, c.req, id, r); uri != "" {
					stored[uri] = sha
				}
			})
		}
	}

	// --- Everything stored before reads back byte for byte. ------------------
	for _, v := range versions {
		for u, sha := range stored {
			rr := in.read(v, u)
			if got := sum(rr.body(t)); got != sha || rr.Contents[0].Meta["sha256"] != sha {
				t.Errorf("%s %s: body sha256 %s, _meta.sha256 %v, want %s", v, u, got, rr.Contents[0].Meta["sha256"], sha)
			}
		}
	}
	for u := range damaged {
		t.Errorf("%s was changed or removed by a bad request (see above)", u)
	}
	if got := listAll(t, in); !mapsEqual(got, stored) {
		t.Errorf("list_resources after the catalogue:\n got %v\nwant %v", got, stored)
	}
}

// afterCase checks that the server still serves and that list_resources
// shows exactly the resources stored so far. It deletes what a case stored
// by mistake, and records in damaged what it changed or removed, so that
// one failure is not blamed on the next cases.
func afterCase(t *testing.T, in *instance, v string, stored map[string]string, damaged map[string]bool) {
	t.Helper()
	select {
	case <-in.done:
		t.Fatalf("resourced exited")
	default:
	}
	if r := in.rpc(v, "tools/list", nil); r.Status != 200 || r.Error != nil {
		t.Fatalf("tools/list after the case: HTTP %d %s", r.Status, r.Body)
	}
	got := listAll(t, in)
	for u, sha := range got {
		want, ok := stored[u]
		switch {
		case !ok:
			t.Errorf("the case stored %s; deleting it", u)
			checkSuccess(t, in.call(v2025, "delete_resource", map[string]any{"uri": u}), 0)
		case sha != want:
			t.Errorf("the case changed %s: sha256 %s, stored %s", u, sha, want)
			stored[u], damaged[u] = sha, true
		}
	}
	for u := range stored {
		if _, ok := got[u]; !ok {
			t.Errorf("the case removed %s", u)
			delete(stored, u)
			damaged[u] = true
		}
	}
}

// listAll returns list_resources of the caller as URI -> sha256.
func listAll(t *testing.T, in *instance) map[string]string {
	t.Helper()
	sc := checkSuccess(t, in.call(v2025, "list_resources", map[string]any{"limit": 100}), -1)
	if c, ok := sc["nextCursor"]; ok {
		t.Fatalf("more than 100 resources (nextCursor %v)", c)
	}
	m := map[string]string{}
	for _, it := range sc["items"].([]any) {
		item := it.(map[string]any)
		m[item["uri"].(string)] = item["sha256"].(string)
	}
	return m
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// badCase is one bad request and what each protocol version must answer; a
// version without an entry is not sent.
type badCase struct {
	name string
	req  badRequest
	want map[string]badOutcome
	bug  string // the server does not do this yet: what it does instead
}

// badRequest is a raw JSON-RPC request. Its body may hold placeholders:
// @ID@ (a fresh numeric id), @META@ / @META,@ (the 2026-07-28 _meta member,
// without / with a trailing comma; nothing on 2025-11-25), @V@ (a short tag
// of the version, so that saves do not collide) and @PAD@ (filled with x to
// make the body exactly size bytes).
type badRequest struct {
	method  string // JSON-RPC method: Mcp-Method on 2026-07-28 ("" none)
	name    string // Mcp-Name on 2026-07-28 ("" none)
	raw     bool   // send name as it is, not encoded per SEP-2243
	body    string
	id      string // the JSON id the body carries, when not @ID@
	uri     string // resources/read: the URI sent
	token   string // "" means the instance's token
	padSize int
}

func (q badRequest) named(n string) badRequest  { q.name = n; return q }
func (q badRequest) rawName() badRequest        { q.raw = true; return q }
func (q badRequest) as(token string) badRequest { q.token = token; return q }
func (q badRequest) size(n int) badRequest      { q.padSize = n; return q }
func (q badRequest) suffix(s string) badRequest { q.body += s; return q }

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"resourced-it","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

func jsonStr(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func rawRequest(method, body string) badRequest { return badRequest{method: method, body: body} }

func rpcBody(method, params string) string {
	return `{"jsonrpc":"2.0","id":@ID@,"method":"` + method + `","params":` + params + `}`
}

func toolsListReq() badRequest { return rawRequest("tools/list", rpcBody("tools/list", `{@META@}`)) }

func toolReq(tool, args string) badRequest {
	return rawRequest("tools/call", rpcBody("tools/call", `{@META,@"name":`+jsonStr(tool)+`,"arguments":`+args+`}`)).named(tool)
}

func readReq(uri string) badRequest {
	q := rawRequest("resources/read", rpcBody("resources/read", `{@META,@"uri":`+jsonStr(uri)+`}`)).named(uri)
	q.uri = uri
	return q
}

func listReq(cursor string) badRequest {
	return rawRequest("resources/list", rpcBody("resources/list", `{@META,@"cursor":`+jsonStr(cursor)+`}`))
}

// withID is q with a literal id instead of @ID@.
func withID(q badRequest, id string) badRequest {
	q.body = strings.Replace(q.body, "@ID@", id, 1)
	q.id = id
	return q
}

// build returns the headers, the body and the id sent ("" when none).
func (q badRequest) build(in *instance, v string) (http.Header, []byte, string) {
	hdr := in.header()
	if q.token != "" {
		hdr.Set("Authorization", "Bearer "+q.token)
	}
	hdr.Set("MCP-Protocol-Version", v)
	meta, tag := "", "v25"
	if v == v2026 {
		meta, tag = meta2026, "v26"
		if q.method != "" {
			hdr.Set("Mcp-Method", q.method)
		}
		if q.name != "" {
			if q.raw {
				hdr["Mcp-Name"] = []string{q.name}
			} else {
				hdr.Set("Mcp-Name", headerValue(q.name))
			}
		}
	}
	id := q.id
	body := q.body
	if strings.Contains(body, "@ID@") {
		id = strconv.FormatInt(nextID(), 10)
		body = strings.Replace(body, "@ID@", id, 1)
	}
	comma := ""
	if meta != "" {
		comma = ","
	}
	body = strings.ReplaceAll(body, "@META,@", meta+comma)
	body = strings.ReplaceAll(body, "@META@", meta)
	body = strings.ReplaceAll(body, "@V@", tag)
	if q.padSize > 0 {
		n := q.padSize - (len(body) - len("@PAD@"))
		if n < 0 {
			panic("padSize too small")
		}
		body = strings.Replace(body, "@PAD@", strings.Repeat("x", n), 1)
		if len(body) != q.padSize {
			panic("padding went wrong")
		}
	}
	return hdr, []byte(body), id
}

// badOutcome is the exact answer a request must get.
type badOutcome struct {
	what     string // refused, refusedAny, accepted, rpcError, toolError, toolOK, result, idSafe
	status   int
	statuses []int
	text     string // refused: the plain-text body contains this
	max      int    // refused: the body is at most this long (0: no limit)
	code     int64
	msg      string // JSON-RPC error message or tool error message contains this
	kind     string
	fields   []string
	method   string // result: the method whose result schema applies
	links    int
	stores   bool
}

// wantRefused: the transport answers status with a plain-text body containing text.
func wantRefused(status int, text string) badOutcome {
	return badOutcome{what: "refused", status: status, text: text}
}

func (o badOutcome) maxBody(n int) badOutcome { o.max = n; return o }

// wantRefusedAny: any of statuses, and no JSON-RPC result.
func wantRefusedAny(statuses ...int) badOutcome {
	return badOutcome{what: "refusedAny", statuses: statuses}
}

// wantEnvelope: resourced's envelope check (server/internal/envelope) refuses the
// body before go-sdk sees it: HTTP 400 and a JSON-RPC error without an id.
func wantEnvelope(code int64, msg string) badOutcome {
	return badOutcome{what: "envelope", status: 400, code: code, msg: msg}
}

// wantAccepted: 202 with no body (nothing to answer).
func wantAccepted() badOutcome { return badOutcome{what: "accepted", status: 202} }

func wantRPCError(status int, code int64, msg string) badOutcome {
	return badOutcome{what: "rpcError", status: status, code: code, msg: msg}
}

// wantInvalidParams is -32602, which go-sdk sends with HTTP 400 on 2026-07-28
// and 200 on 2025-11-25 (decisions.md).
func wantInvalidParams(msg string) map[string]badOutcome {
	return wantPer(wantRPCError(400, -32602, msg), wantRPCError(200, -32602, msg))
}

// wantNotFound is the answer to a URI the caller cannot read.
func wantNotFound() map[string]badOutcome { return wantInvalidParams("Resource not found") }

// wantToolError: an isError result of kind whose message contains msg and whose
// fieldErrors name exactly fields.
func wantToolError(kind, msg string, fields ...string) badOutcome {
	return badOutcome{what: "toolError", status: 200, kind: kind, msg: msg, fields: fields}
}

// wantToolOK: a successful tool result with links resource_link items.
func wantToolOK(links int) badOutcome { return badOutcome{what: "toolOK", status: 200, links: links} }

// wantStored: a successful save of one resource, which must then survive.
func wantStored() badOutcome { return badOutcome{what: "toolOK", status: 200, links: 1, stores: true} }

// wantResult: a successful JSON-RPC result of method.
func wantResult(method string) badOutcome {
	return badOutcome{what: "result", status: 200, method: method}
}

func wantBoth(o badOutcome) map[string]badOutcome { return map[string]badOutcome{v2026: o, v2025: o} }

func wantPer(o2026, o2025 badOutcome) map[string]badOutcome {
	return map[string]badOutcome{v2026: o2026, v2025: o2025}
}

func wantOnly(v string, o badOutcome) map[string]badOutcome { return map[string]badOutcome{v: o} }

// check asserts r is the outcome o; for a save it returns the URI and sha256
// stored.
func (o badOutcome) check(t *testing.T, v string, q badRequest, id string, r *rawResponse) (string, string) {
	t.Helper()
	isJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	short := truncateBytes(r.Body, 600)
	if isJSON {
		method := o.method
		if method == "" {
			method = q.method
		}
		if _, known := mcpschema.ResultDef(method); r.Error != nil || known {
			validateResponse(t, v, method, r.Body)
		} else {
			t.Errorf("unexpected result to %q: %s", method, short)
		}
		if o.what != "envelope" {
			checkID(t, id, r)
		}
	}
	switch o.what {
	case "envelope":
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(r.Body, &env)
		if r.Status != o.status || !isJSON || r.Error == nil || r.Error.Code != o.code || !strings.Contains(r.Error.Message, o.msg) || env.ID != nil {
			t.Fatalf("got HTTP %d %q: %s\nwant HTTP %d, JSON-RPC error %d containing %q and no id", r.Status, r.Header.Get("Content-Type"), short, o.status, o.code, o.msg)
		}
		if o.max > 0 && len(r.Body) > o.max {
			t.Errorf("the error body is %d bytes, want at most %d (the input must not be echoed)", len(r.Body), o.max)
		}
	case "refused":
		if r.Status != o.status || isJSON || !strings.Contains(string(r.Body), o.text) {
			t.Fatalf("got HTTP %d %q: %s\nwant HTTP %d, a plain-text body containing %q", r.Status, r.Header.Get("Content-Type"), short, o.status, o.text)
		}
		if o.max > 0 && len(r.Body) > o.max {
			t.Errorf("the refusal is %d bytes long, want at most %d: %s", len(r.Body), o.max, short)
		}
	case "refusedAny":
		if !slices.Contains(o.statuses, r.Status) || r.Result != nil {
			t.Fatalf("got HTTP %d: %s\nwant HTTP %v and no JSON-RPC answer", r.Status, short, o.statuses)
		}
	case "accepted":
		if r.Status != 202 || len(r.Body) != 0 {
			t.Fatalf("got HTTP %d: %s\nwant 202 with no body", r.Status, short)
		}
	case "rpcError":
		if r.Status != o.status || !isJSON || r.Error == nil || r.Error.Code != o.code || !strings.Contains(r.Error.Message, o.msg) {
			t.Fatalf("got HTTP %d: %s\nwant HTTP %d, JSON-RPC error %d with a message containing %q", r.Status, short, o.status, o.code, o.msg)
		}
		if q.uri != "" && o.code == -32602 && (r.Error.Message == "Resource not found" || strings.HasPrefix(r.Error.Message, "Invalid resource URI: ")) {
			var data map[string]string
			if err := json.Unmarshal(r.Error.Data, &data); err != nil || data["uri"] != q.uri {
				t.Errorf("error data %.200s does not echo the URI sent (%v)", r.Error.Data, err)
			}
			reason, invalid := strings.CutPrefix(r.Error.Message, "Invalid resource URI: ")
			if invalid && (data["reason"] != reason || len(data) != 2) || !invalid && len(data) != 1 {
				t.Errorf("error data %.200s: want uri, plus the reason when the URI is malformed", r.Error.Data)
			}
		}
	case "result":
		if r.Status != 200 || !isJSON || r.Error != nil || r.Result == nil {
			t.Fatalf("got HTTP %d: %s\nwant a %s result", r.Status, short, o.method)
		}
	case "toolError", "toolOK":
		if r.Status != 200 || !isJSON || r.Error != nil {
			t.Fatalf("got HTTP %d: %s\nwant HTTP 200 with a tool result", r.Status, short)
		}
		var res toolResult
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		res.raw = r.Result
		if o.what == "toolOK" {
			sc := checkSuccess(t, &res, o.links)
			if o.stores {
				return sc["uri"].(string), sc["sha256"].(string)
			}
			return "", ""
		}
		if !res.IsError {
			t.Fatalf("got a success: %.600s\nwant %s: %q (fields %v)", res.StructuredContent, o.kind, o.msg, o.fields)
		}
		sc := checkFailure(t, &res, o.kind)
		if msg, _ := sc["message"].(string); !strings.Contains(msg, o.msg) {
			t.Errorf("message %q does not contain %q", msg, o.msg)
		}
		var fields []string
		fe, _ := sc["fieldErrors"].([]any)
		for _, f := range fe {
			fields = append(fields, f.(map[string]any)["field"].(string))
		}
		if !slices.Equal(fields, o.fields) {
			t.Errorf("fieldErrors name %q, want %q", fields, o.fields)
		}
	default:
		t.Fatalf("unknown outcome %q", o.what)
	}
	return "", ""
}

func idOf(r *rawResponse) string {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(r.Body, &env)
	return string(env.ID)
}

// checkID fails unless a JSON-RPC response carries the id of the request
// (null when the request had none that could be read).
func checkID(t *testing.T, sent string, r *rawResponse) {
	t.Helper()
	got := idOf(r)
	if got == "" || sent == "" {
		return // 202, or an id the case judges itself
	}
	if !sameID(sent, got) && got != "null" {
		t.Errorf("response id %.80s, request id %.80s", got, sent)
	}
}

// sameID compares two JSON ids by value: strings exactly, numbers as
// exact decimals.
func sameID(a, b string) bool {
	if a == b {
		return true
	}
	var sa, sb string
	if json.Unmarshal([]byte(a), &sa) == nil && json.Unmarshal([]byte(b), &sb) == nil {
		return sa == sb
	}
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}
