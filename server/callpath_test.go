package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// callServers starts two servers on two stores with the same clock, the
// first with the fast call path, the second without (every call through
// go-sdk). Their tool handlers on the fast path are counted in *fastCalls.
type callServers struct {
	fastSrv   *Server
	sdkSrv    *Server
	fast, sdk string
	stores    [2]store.Backend
	logs      [2]*syncBuffer
	logged    [2]int // request lines seen so far
	fastCalls *atomic.Int64
}

func startCallServers(t *testing.T, clock func() time.Time, tweak ...func(*Options)) *callServers {
	t.Helper()
	schemes := []Scheme{
		{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 1 << 20},
		{Name: "report", Kind: KindReport, TTL: 0, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 1 << 20},
	}
	cs := &callServers{fastCalls: new(atomic.Int64)}
	start := func(i int) (*Server, string) {
		st := memstore.New(memstore.Options{Now: clock})
		cs.stores[i], cs.logs[i] = st, &syncBuffer{}
		opts := Options{Store: st, Schemes: schemes, Auth: headerAuth{}, Now: clock, BaseURL: "http://127.0.0.1", Version: "test",
			LinkKey: bytes.Repeat([]byte("k"), 32), Limits: Limits{MaxReadChars: 2000},
			Logger: slog.New(slog.NewJSONHandler(cs.logs[i], &slog.HandlerOptions{Level: slog.LevelWarn - 100}))}
		for _, f := range tweak {
			f(&opts)
		}
		s, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			s.noFastCall, s.noFastRead = true, true
		}
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		return s, ts.URL
	}
	cs.fastSrv, cs.fast = start(0)
	cs.sdkSrv, cs.sdk = start(1)
	for name, h := range cs.fastSrv.calls.tools {
		cs.fastSrv.calls.tools[name] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs.fastCalls.Add(1)
			return h(ctx, req)
		}
	}
	return cs
}

// put stores the same object in both stores.
func (cs *callServers) put(t *testing.T, tenant, scheme, path, mimeType string, body []byte, vis store.Visibility, now, expires time.Time) string {
	t.Helper()
	k := store.MustKey(tenant, scheme, path)
	for _, st := range cs.stores {
		obj := &store.Object{Meta: store.Meta{Key: k, MIMEType: mimeType, Size: int64(len(body)), SHA256: store.Sum(body),
			Created: now.Add(-time.Minute), Modified: now.Add(-time.Second), Expires: expires, Title: path, Visibility: vis, Listed: true},
			Body: body, Encoded: cs.fastSrv.svc.Encode(mimeType, body)}
		if _, _, err := st.Put(t.Context(), obj, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	return k.String()
}

// callHeaders are the headers of a tools/call by a well-behaved client.
func callHeaders(version, tool string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", version)
	if version == "2026-07-28" {
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", tool)
	}
	return h
}

// modernCallMeta is the _meta member of a 2026-07-28 call.
const modernCallMeta = `"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{}}`

// callBody is a tools/call of tool with args (raw JSON), with the
// 2026-07-28 _meta when modern.
func callBody(id, tool, args string, modern bool) []byte {
	params := `{"name":"` + tool + `","arguments":` + args
	if modern {
		params += "," + modernCallMeta
	}
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}}`)
}

// snapshotID matches the ULID of a saved search snapshot: the one value of
// a result that is random (service/ids.go), replaced by a placeholder of
// the same length before answers are compared. Snapshots are saved by a
// tenant that never lists, so the two stores differ only in those names.
var snapshotID = regexp.MustCompile(`results/[0-9A-HJKMNP-TV-Z]{26}`)

func normalizeIDs(b []byte) []byte {
	return snapshotID.ReplaceAll(b, []byte("results/SNAPSHOT_ID_PLACEHOLDER_26"))
}

// compareCall posts one request to both servers and fails unless status,
// Content-Type, Cache-Control and the JSON agree; when the fast path
// answered a call, the bytes must agree too. It reports whether the fast
// path ran the tool.
func (cs *callServers) compareCall(t *testing.T, what string, hdr http.Header, body []byte) (fastPath bool, status int, answer []byte) {
	t.Helper()
	before := cs.fastCalls.Load()
	fs, fh, fb := post(t, cs.fast, hdr, body)
	fastPath = cs.fastCalls.Load() != before
	ss, sh, sb := post(t, cs.sdk, hdr, body)
	if fl, sl := cs.lastRequestLog(t, 0), cs.lastRequestLog(t, 1); fl != sl {
		t.Fatalf("%s: request logs differ\nfast: %s\nsdk:  %s", what, fl, sl)
	}
	fb, sb = normalizeIDs(fb), normalizeIDs(sb)
	if fs != ss || fh.Get("Content-Type") != sh.Get("Content-Type") || fh.Get("Cache-Control") != sh.Get("Cache-Control") {
		t.Fatalf("%s\nfast: %d %v %.300s\nsdk:  %d %v %.300s", what, fs, fh, fb, ss, sh, sb)
	}
	var fj, sj any
	if err := json.Unmarshal(fb, &fj); err != nil {
		if !bytes.Equal(fb, sb) {
			t.Fatalf("%s\nfast: %s\nsdk:  %s", what, fb, sb)
		}
		return fastPath, fs, fb
	}
	if err := json.Unmarshal(sb, &sj); err != nil || !reflect.DeepEqual(fj, sj) {
		t.Fatalf("%s\nfast: %s\nsdk:  %s", what, fb, sb)
	}
	if fastPath && !bytes.Equal(fb, bytes.TrimSuffix(sb, []byte("\n"))) {
		t.Fatalf("%s: same JSON, other bytes\nfast: %s\nsdk:  %s", what, fb, sb)
	}
	return fastPath, fs, fb
}

// lastRequestLog waits for the request log line of the last request
// server i answered (it is written after the response), and returns what
// both paths must agree on: status, method, tool, tenant, outcome, and
// the line count so far.
func (cs *callServers) lastRequestLog(t *testing.T, i int) string {
	t.Helper()
	type line struct {
		Msg, Method, Tool, Tenant, Outcome string
		Status                             int
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var last *line
		n := 0
		for _, l := range strings.Split(cs.logs[i].String(), "\n") {
			var v line
			if json.Unmarshal([]byte(l), &v) == nil && v.Msg == "request" {
				n, last = n+1, &v
			}
		}
		if last != nil && n > cs.logged[i] {
			cs.logged[i] = n
			return fmt.Sprintf("%d %+v", n, *last)
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d wrote no request log line", i)
		}
	}
}

// TestFastCallMatchesSDK sends the same randomized tools/call requests of
// every tool of the server, valid and not, on both protocol versions, to a
// server with the fast call path and one without, over stores that start
// equal and stay so, and requires the same answers.
func TestFastCallMatchesSDK(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cs := startCallServers(t, clock)
	lines := strings.Repeat("line one <&> \"quoted\" é 日本\nsecond line with needle here\n", 40)
	seeded := []string{
		cs.put(t, "t1", "report", "a/text", "text/plain; charset=utf-8", []byte(lines), store.Private, now, now.Add(time.Hour)),
		cs.put(t, "t1", "report", "a/json", "application/json", []byte(`{"x":"<y>","z":[1,2,{"w":"needle"}],"hits":[{"id":"1","score":0.9}]}`), store.Private, now, now.Add(time.Hour)),
		cs.put(t, "t1", "report", "a/bin", "application/octet-stream", []byte{0, 1, 2, 0xff, 0xfe}, store.Private, now, now.Add(time.Hour)),
		cs.put(t, "t1", "search", "results/snap", "application/json", []byte(`{"query":"q","total":1,"hits":[{"id":"h","title":"T","snippet":"needle"}]}`), store.Private, now, now.Add(30*time.Minute)),
		cs.put(t, "t2", "report", "pub", "text/csv", []byte("a,b\n1,needle\n"), store.Public, now, now.Add(time.Hour)),
		cs.put(t, "t2", "report", "priv", "text/plain", []byte("secret needle"), store.Private, now, now.Add(time.Hour)),
	}
	uris := append(append(seeded, seeded...), "report://t1/missing", "report://t1/a//b", "REPORT://t1/a/text", "file:///etc/passwd", "", "report://t1/new/0")
	paths := []string{"new/0", "new/1", "new/2", "new/3", "new/4", "a/text", "bad//path", "", "deep/" + strings.Repeat("x", 300)}
	ids := []string{`1`, `42`, `"abc"`, `"a\u0062c"`, `-7`, `9007199254740991`, `"<&>"`, "\"日本\u2028\""}
	tenants := []string{"t1", "t1", "t2", "t10"}

	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	maybe := func(n int) bool { return rng.IntN(n) == 0 }
	sha := func() string { return fmt.Sprintf("%x", store.Sum([]byte(lines))) }

	args := func(tool, tenant string) map[string]any {
		a := map[string]any{}
		switch tool {
		case "save_report":
			a["path"], a["mimeType"] = pick(paths), pick([]string{"text/markdown", "text/plain", "text/plain", "application/json", "image/png", "not a type"})
			if maybe(3) {
				a["blobBase64"] = base64.StdEncoding.EncodeToString([]byte(pick([]string{"bin\x00\xff", "x"})))
			} else {
				a["text"] = pick([]string{"# Report\n<b>&</b> é 😀 \u2028", "{\"a\":1}", "", "plain", "plain too"})
			}
			if maybe(4) {
				a["overwrite"] = true
			}
			if maybe(6) {
				a["ifMatch"] = pick([]string{sha(), strings.Repeat("0", 64), "nope"})
			}
			if maybe(5) {
				a["title"], a["description"] = "Title <&>", "Desc é"
			}
			if maybe(5) {
				a["retention"] = pick([]string{"PT1H", "P7D", "bad", "PT0S"})
			}
			if maybe(6) {
				a["visibility"] = pick([]string{"public", "private", "secret"})
			}
			if maybe(6) {
				a["listed"] = true
			}
			if maybe(5) {
				a["includeDownloadUrl"] = true
				if maybe(2) {
					a["downloadUrlTtl"] = pick([]string{"PT10M", "PT5H", "x"})
				}
			}
		case "save_search_snapshot":
			hits := []map[string]any{}
			for i := range rng.IntN(4) {
				hits = append(hits, map[string]any{"id": fmt.Sprint(i), "title": "T <" + fmt.Sprint(i) + ">", "snippet": "s & é", "score": 0.5})
			}
			a["query"], a["hits"] = pick([]string{"q", "golang <&>", ""}), hits
			if maybe(4) {
				a["total"] = len(hits) + rng.IntN(2)
			}
			if maybe(6) {
				a["scheme"] = pick([]string{"search", "report", "nope"})
			}
		case "stat_resource", "read_resource", "delete_resource":
			a["uri"] = pick(uris)
			if tool == "read_resource" && maybe(2) {
				a["offset"], a["length"] = rng.IntN(100), 1+rng.IntN(3000)
			}
			if tool == "read_resource" && maybe(4) {
				a["startLine"], a["lineCount"] = 1+rng.IntN(5), 1+rng.IntN(5)
			}
			if tool != "delete_resource" && maybe(5) {
				a["includeDownloadUrl"] = true
			}
			if tool == "delete_resource" && maybe(4) {
				a["ifMatch"] = pick([]string{sha(), strings.Repeat("0", 64)})
			}
		case "list_resources":
			if maybe(2) {
				a["scheme"] = pick([]string{"report", "search", "nope"})
				if maybe(2) {
					a["prefix"] = pick([]string{"a/", "new/", "x"})
				}
			}
			if maybe(3) {
				a["limit"] = pick([]string{"1", "2", "0", "1000"})
			}
			if maybe(6) {
				a["cursor"] = pick([]string{"bogus", ""})
			}
		case "grep_resource":
			a["uri"], a["pattern"] = pick(uris), pick([]string{"needle", "line", "(", "^s", "é"})
			if maybe(3) {
				a["literal"] = true
			}
			if maybe(3) {
				a["context"], a["maxMatches"] = rng.IntN(3), 1+rng.IntN(5)
			}
		case "query_resource":
			a["uri"], a["path"] = pick(uris), pick([]string{"$.z[*]", "$..id", "$[", "$.hits[?@.score > 0.5]", "$"})
			if maybe(3) {
				a["maxMatches"] = 1 + rng.IntN(3)
			}
		}
		if v, ok := a["limit"].(string); ok {
			var n int
			fmt.Sscan(v, &n)
			a["limit"] = n
		}
		// Invalid arguments: an unknown field, a field in the wrong case, a
		// value of the wrong type, a required field missing.
		switch rng.IntN(24) {
		case 0:
			a["bogus"] = 1
		case 1:
			for k, v := range a {
				delete(a, k)
				a[strings.ToUpper(k[:1])+k[1:]] = v
				break
			}
		case 2:
			for k := range a {
				a[k] = []int{1}
				break
			}
		case 3:
			for k := range a {
				delete(a, k)
				break
			}
		}
		return a
	}

	tools := []string{"save_report", "save_report", "save_search_snapshot", "stat_resource", "list_resources", "delete_resource",
		"read_resource", "grep_resource", "query_resource"}
	fastHits := map[string]int{}
	kinds := map[string]int{}
	savesOK := 0
	defer func() {
		t.Logf("fast path per tool: %v; its answers: %v; successful saves: %d", fastHits, kinds, savesOK)
	}()
	for n := 0; n < 700; n++ {
		tool, id, version, tenant := pick(tools), pick(ids), pick([]string{"2026-07-28", "2025-11-25"}), pick(tenants)
		if tool == "save_search_snapshot" {
			tenant = "t3" // the one tenant that holds snapshots of random names
		}
		if tool == "list_resources" && tenant == "t3" {
			tenant = "t1"
		}
		a := args(tool, tenant)
		raw, _ := json.Marshal(a)
		if maybe(5) {
			raw, _ = json.MarshalIndent(a, " ", "\t")
		}
		if maybe(20) {
			raw = []byte(`{"path":"new/u","mimeType":"text/plain","text":"a` + "\xff" + `b"}`) // invalid UTF-8 in an argument
		}
		modern := version == "2026-07-28" && !maybe(12)
		body := callBody(id, tool, string(raw), modern)
		if maybe(6) {
			// Unusual spellings: each either taken by the fast path
			// exactly as go-sdk answers it, or left to go-sdk.
			m := ""
			if modern {
				m = "," + modernCallMeta
			}
			r := string(raw)
			body = []byte(pick([]string{
				`{"method":"tools/call","params":{"arguments":` + r + m + `,"name":"` + tool + `"},"id":` + id + `,"jsonrpc":"2.0"}`,
				" \n{ \"jsonrpc\" : \"2.0\" , \"id\" : " + id + " , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"" + tool + "\" , \"arguments\" : " + r + m + " } }\n",
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + strings.Replace(tool, "_", `\u005f`, 1) + `","arguments":` + r + m + `}}`,
				`{"jsonrpc":"2\u002e0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":null` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":[1]` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + m + `,"requestState":"x"}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + m + `,"inputResponses":{}}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + m + `,"Name":"x"}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"nope","arguments":` + r + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools\/call","params":{"name":"` + tool + `","arguments":` + r + m + `}}`,
				`{"json\u0072pc":"2.0","\u0069d":` + id + `,"method":"tools/call","p\u0061rams":{"n\u0061me":"` + tool + `","\u0061rguments":` + r + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + `,"_meta":{"progressToken":"p","x":[1]}}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{"roots":5}}}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + r + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{},"` + metaLogLevel + `":"debug","progressToken":7}}}`,
			}))
		}
		hdr := callHeaders(version, tool)
		switch rng.IntN(40) {
		case 0:
			hdr.Set("Mcp-Name", tool+"x")
		case 1:
			hdr.Set("Accept", "application/json")
		case 2:
			hdr.Set("Last-Event-ID", "5")
		case 3:
			hdr.Set("Mcp-Param-Path", "new/0")
		case 4:
			hdr.Del("Mcp-Method")
		case 5:
			hdr.Set("MCP-Protocol-Version", "2025-06-18")
		}
		hdr.Set("X-Test-Tenant", tenant)
		if maybe(15) {
			hdr.Set("X-Test-ReadOnly", "1")
		}
		what := fmt.Sprintf("request %d: %s %s", n, hdr, body)
		if fast, st, ans := cs.compareCall(t, what, hdr, body); fast {
			fastHits[tool]++
			k := fmt.Sprint(st)
			switch {
			case bytes.Contains(ans, []byte(`"isError":true`)):
				k += " isError"
			case strings.HasPrefix(tool, "save_"):
				savesOK++
			case bytes.Contains(ans, []byte(`"error":`)):
				k += " rpcError"
			}
			if modern {
				k += " modern"
			}
			kinds[k]++
		}
	}
	// The stores stayed equal: every save and delete did the same on both.
	for _, tenant := range []string{"t1", "t2", "t10"} {
		var lists [2][]store.Meta
		for i, st := range cs.stores {
			page, err := st.List(t.Context(), store.ListQuery{Tenant: tenant, Limit: 1000})
			if err != nil || page.More {
				t.Fatalf("listing %s: %v (more: %v)", tenant, err, page.More)
			}
			lists[i] = page.Items
		}
		if !reflect.DeepEqual(lists[0], lists[1]) {
			t.Errorf("the stores of tenant %s differ:\nfast: %+v\nsdk:  %+v", tenant, lists[0], lists[1])
		}
	}
	if savesOK < 20 {
		t.Errorf("only %d successful saves took the fast path", savesOK)
	}
	for _, tool := range tools {
		if fastHits[tool] < 15 {
			t.Errorf("only %d calls of %s took the fast path; the mix does not exercise it (%v)", fastHits[tool], tool, fastHits)
		}
	}
}

// TestFastCallFallsThrough: requests the fast path must leave to go-sdk,
// each answered as go-sdk answers it, without the fast path running a
// tool.
func TestFastCallFallsThrough(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now })
	args := `{"path":"x/1","mimeType":"text/plain","text":"hi"}`
	save := func(v string) http.Header { return callHeaders(v, "save_report") }
	withHeader := func(h http.Header, k, v string) http.Header { h.Set(k, v); return h }
	for name, c := range map[string]struct {
		hdr  http.Header
		body string
	}{
		"batch":               {save("2025-11-25"), "[" + string(callBody("1", "save_report", args, false)) + "]"},
		"escaped name":        {save("2025-11-25"), strings.Replace(string(callBody("1", "save_report", args, false)), "save_report", `save\u005freport`, 1)},
		"unknown tool":        {callHeaders("2025-11-25", "nope"), string(callBody("1", "nope", args, false))},
		"inputResponses":      {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":` + args + `,"inputResponses":{"a":{}}}}`},
		"requestState":        {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":` + args + `,"requestState":"s"}}`},
		"duplicate member":    {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","name":"save_report","arguments":` + args + `}}`},
		"wrong Mcp-Name":      {withHeader(save("2026-07-28"), "Mcp-Name", "stat_resource"), string(callBody("1", "save_report", args, true))},
		"no Mcp-Name":         {withHeader(save("2026-07-28"), "Mcp-Name", ""), string(callBody("1", "save_report", args, true))},
		"wrong Mcp-Method":    {withHeader(save("2026-07-28"), "Mcp-Method", "tools/list"), string(callBody("1", "save_report", args, true))},
		"no _meta on modern":  {save("2026-07-28"), string(callBody("1", "save_report", args, false))},
		"meta on legacy":      {save("2025-11-25"), string(callBody("1", "save_report", args, true))},
		"id null":             {save("2025-11-25"), `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"save_report","arguments":` + args + `}}`},
		"notification":        {save("2025-11-25"), `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"save_report","arguments":` + args + `}}`},
		"Mcp-Session-Id":      {withHeader(save("2025-11-25"), "Mcp-Session-Id", "abc"), string(callBody("1", "save_report", args, false))},
		"Last-Event-ID":       {withHeader(save("2025-11-25"), "Last-Event-ID", "1"), string(callBody("1", "save_report", args, false))},
		"Mcp-Param header":    {withHeader(save("2026-07-28"), "Mcp-Param-Path", "x/1"), string(callBody("1", "save_report", args, true))},
		"old protocol":        {save("2025-06-18"), string(callBody("1", "save_report", args, false))},
		"no protocol header":  {withHeader(save("2025-11-25"), "MCP-Protocol-Version", ""), string(callBody("1", "save_report", args, false))},
		"arguments missing":   {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report"}}`},
		"arguments a string":  {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":"x"}}`},
		"extra top member":    {save("2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","x":1,"params":{"name":"save_report","arguments":` + args + `}}`},
		"deep arguments":      {save("2025-11-25"), string(callBody("1", "save_report", `{"path":"x/2","mimeType":"text/plain","text":"a","title":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`, false))},
		"text/plain content":  {withHeader(save("2025-11-25"), "Content-Type", "text/plain"), string(callBody("1", "save_report", args, false))},
		"clientInfo a number": {save("2026-07-28"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":` + args + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{},"` + metaClientInfo + `":{"name":1}}}}`},
	} {
		before := cs.fastCalls.Load()
		cs.compareCall(t, name, c.hdr, []byte(c.body))
		if cs.fastCalls.Load() != before {
			t.Errorf("%s: the fast path ran the tool; it must leave the request to go-sdk", name)
		}
	}
}

// putCounter counts the writes that reach the backend.
type putCounter struct {
	store.Backend
	puts atomic.Int64
}

func (c *putCounter) Put(ctx context.Context, obj *store.Object, cond store.Cond) (store.Meta, bool, error) {
	c.puts.Add(1)
	return c.Backend.Put(ctx, obj, cond)
}

// TestFastCallRunsToolOnce: a save taken by the fast path writes once and
// is answered once; one left to go-sdk writes once too.
func TestFastCallRunsToolOnce(t *testing.T) {
	cs := &putCounter{Backend: memstore.New(memstore.Options{})}
	s, err := New(Options{Store: cs, Schemes: []Scheme{{Name: "report", Kind: KindReport, MaxBytes: 1 << 20}}, Auth: headerAuth{}, BaseURL: "http://127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	h := s.calls.tools["save_report"]
	s.calls.tools["save_report"] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return h(ctx, req)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	for i, c := range []struct {
		version string
		body    []byte
		fast    bool
	}{
		{"2025-11-25", callBody("1", "save_report", `{"path":"once/a","mimeType":"text/plain","text":"x"}`, false), true},
		{"2026-07-28", callBody("2", "save_report", `{"path":"once/b","mimeType":"text/plain","text":"x"}`, true), true},
		{"2025-11-25", []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"save\u005freport","arguments":{"path":"once/c","mimeType":"text/plain","text":"x"}}}`), false},
	} {
		puts, before := cs.puts.Load(), runs.Load()
		status, _, got := post(t, ts.URL, callHeaders(c.version, "save_report"), c.body)
		if status != http.StatusOK || !bytes.Contains(got, []byte(`"status":"created"`)) {
			t.Fatalf("call %d = %d %s", i, status, got)
		}
		if n := cs.puts.Load() - puts; n != 1 {
			t.Errorf("call %d wrote %d times, want 1", i, n)
		}
		want := int64(0)
		if c.fast {
			want = 1
		}
		if n := runs.Load() - before; n != want {
			t.Errorf("call %d: the fast path ran the tool %d times, want %d", i, n, want)
		}
	}
}

// TestFastCallSaveRate: saves on the fast path are charged to the
// tenant's save rate exactly as go-sdk's are: past the burst the answer is
// 429, and the tool does not run.
func TestFastCallSaveRate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now }, func(o *Options) {
		o.Budgets = Budgets{SaveRate: 1, SaveBurst: 3, SaveWait: -1}
	})
	var statuses []int
	for i := range 5 {
		body := callBody(fmt.Sprint(i), "save_report", `{"path":"rate/`+fmt.Sprint(i)+`","mimeType":"text/plain","text":"x"}`, false)
		before := cs.fastCalls.Load()
		_, status, got := cs.compareCall(t, fmt.Sprintf("save %d", i), callHeaders("2025-11-25", "save_report"), body)
		statuses = append(statuses, status)
		ran := cs.fastCalls.Load() != before
		if ran != (status == http.StatusOK) {
			t.Errorf("save %d: status %d, fast path ran the tool: %v (%s)", i, status, ran, got)
		}
	}
	if !reflect.DeepEqual(statuses, []int{200, 200, 200, 429, 429}) {
		t.Errorf("statuses %v, want three saves and two refusals (burst 3, the clock stands still)", statuses)
	}
}

// TestFastCallPanics: a tool that panics on the fast path gives the
// unavailable result (and log line) recoverMCP gives on go-sdk's, and the
// server keeps serving.
func TestFastCallPanics(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now })
	boom := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("boom") }
	cs.fastSrv.calls.tools["stat_resource"] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs.fastCalls.Add(1)
		return boom(ctx, req)
	}
	for _, d := range cs.sdkSrv.toolDefs() {
		if d.tool.Name == "stat_resource" {
			cs.sdkSrv.mcp.AddTool(d.tool, boom)
		}
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		fast, status, got := cs.compareCall(t, "panic on "+v, callHeaders(v, "stat_resource"), callBody("1", "stat_resource", `{"uri":"report://t1/x"}`, v == "2026-07-28"))
		if !fast || status != http.StatusOK || !bytes.Contains(got, []byte(`"isError":true`)) || !bytes.Contains(got, []byte(`"errorKind":"unavailable"`)) {
			t.Fatalf("panicking tool on %s (fast path %v) = %d %s", v, fast, status, got)
		}
	}
	if !strings.Contains(cs.logs[0].String(), `"panic recovered"`) {
		t.Error("the fast path's panic was not logged")
	}
	status, _, got := post(t, cs.fast, callHeaders("2025-11-25", "list_resources"), callBody("2", "list_resources", `{}`, false))
	if status != http.StatusOK || !bytes.Contains(got, []byte(`"status":"ok"`)) {
		t.Fatalf("after a panic: %d %s", status, got)
	}
}

// TestFastCallHandlerEdges: results no tool of ours returns today — no
// content, a result _meta of its own, JSON-RPC errors of each status — are
// rendered as go-sdk renders them, with the same handler on both servers.
func TestFastCallHandlerEdges(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now })
	for name, h := range map[string]mcp.ToolHandler{
		"no content": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"a": "<&>"}}, nil
		},
		"own _meta": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Meta: mcp.Meta{"z": 1, "a": "é"}, Content: []mcp.Content{&mcp.TextContent{Text: "t"}}}, nil
		},
		"own serverInfo": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Meta: mcp.Meta{mcp.MetaKeyServerInfo: "mine"}, Content: []mcp.Content{&mcp.TextContent{Text: "t"}}}, nil
		},
		"invalid params": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, invalidParams("bad <params>")
		},
		"method not found": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, rpcError(-32601, "no", nil)
		},
		"plain error": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("plain <error>")
		},
		"wrapped invalid params": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("outer: %w", invalidParams("inner"))
		},
		"internal": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, cs.fastSrv.internal(ctx, "test", context.Canceled)
		},
		"scope": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, func() error { _, err := mcptool.RequireScope(ctx, "resources:none"); return err }()
		},
	} {
		cs.fastSrv.calls.tools["stat_resource"] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs.fastCalls.Add(1)
			return h(ctx, req)
		}
		for _, tool := range cs.sdkSrv.toolDefs() {
			if tool.tool.Name == "stat_resource" {
				cs.sdkSrv.mcp.AddTool(tool.tool, h)
			}
		}
		for _, v := range []string{"2025-11-25", "2026-07-28"} {
			what := name + " on " + v
			fast, _, _ := cs.compareCall(t, what, callHeaders(v, "stat_resource"), callBody(`"x"`, "stat_resource", `{"uri":"report://t1/x"}`, v == "2026-07-28"))
			if !fast {
				t.Errorf("%s: not taken by the fast path", what)
			}
		}
	}
}

// TestFastCallTools: the fast path knows exactly the tools addTools
// registers, with fixtures on too (a fixture is go-sdk's to call), and
// none of ours in gateway mode, where the front decides what a tool is
// (the path takes the front's calls there: TestGatewayFastCallMatchesSDK).
func TestFastCallTools(t *testing.T) {
	s, err := New(Options{Store: memstore.New(memstore.Options{}), Schemes: []Scheme{{Name: "report", Kind: KindReport, MaxBytes: 1 << 20},
		{Name: "search", Kind: KindSearch, MaxBytes: 1 << 20}}, BaseURL: "http://127.0.0.1", Fixtures: true})
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, d := range s.toolDefs() {
		own = append(own, d.tool.Name)
		if _, ok := s.calls.tools[d.tool.Name]; !ok {
			t.Errorf("tool %s is not on the fast path", d.tool.Name)
		}
	}
	if len(s.calls.tools) != len(own) {
		t.Errorf("the fast path has %d tools, addTools registers %d (%v)", len(s.calls.tools), len(own), own)
	}
	if len(s.toolScopes) <= len(own) {
		t.Fatalf("no fixture tools registered (%d tools): the test tests nothing", len(s.toolScopes))
	}
	e := newGWEnvWith(t, 1<<20, nil, fsUpstream())
	if len(e.srv.calls.tools) != 0 {
		t.Errorf("gateway mode has our tools on the fast call path: %d", len(e.srv.calls.tools))
	}
}

// TestFastCallNumbers: on 2026-07-28 go-sdk decodes the arguments into an
// any before the tool runs, and refuses numbers beyond float64 there
// (-32020); on 2025-11-25 the tool sees them. Numbers at and around the
// ends of the range, in arguments and inside hits, and strings a decoder
// may stumble on, are answered as go-sdk answers them.
func TestFastCallNumbers(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now })
	for _, lit := range []string{"1e400", "-1e400", "1E+400", "1e-400", "-2e-324", "4.9e-324", "1e308", "1.7976931348623157e308",
		"1.7976931348623159e308", "123456789012345678901234567890", "0e999", "-0.0e-999", "0.5", "1e-7", "-0", "1e2"} {
		for _, v := range []string{"2025-11-25", "2026-07-28"} {
			for i, args := range []string{
				`{"query":"q","hits":[],"total":` + lit + `}`,
				`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s","score":` + lit + `}]}`,
				`{"query":"q","hits":[{"id":"1","title":"t","snippet":"s","extra":[` + lit + `]}]}`,
				"meta",
			} {
				what := fmt.Sprintf("%s in arguments %d on %s", lit, i, v)
				hdr := callHeaders(v, "save_search_snapshot")
				hdr.Set("X-Test-Tenant", "t3")
				body := callBody("1", "save_search_snapshot", args, v == "2026-07-28")
				if args == "meta" {
					what = fmt.Sprintf("%s in _meta on %s", lit, v)
					m := `"x":{"y":[` + lit + `]}`
					if v == "2026-07-28" {
						m = `"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{},` + m
					}
					body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_search_snapshot","arguments":{"query":"q","hits":[]},"_meta":{` + m + `}}}`)
				}
				fast, status, got := cs.compareCall(t, what, hdr, body)
				if lit == "1e400" && v == "2026-07-28" && args != "meta" && (fast || status != http.StatusBadRequest) {
					t.Errorf("%s: fast path %v, %d %s; want go-sdk's -32020", what, fast, status, got)
				}
				if lit == "1e400" && args == "meta" && fast {
					t.Errorf("%s: taken by the fast path (%d %s)", what, status, got)
				}
				if lit == "0.5" && !fast {
					t.Errorf("%s: not taken by the fast path", what)
				}
			}
		}
	}
	for _, s := range []string{`"\ud800"`, `"\udc00x\ud83d"`, "\"a\xffb\"", `"\u0000"`} {
		for _, v := range []string{"2025-11-25", "2026-07-28"} {
			hdr := callHeaders(v, "save_report")
			cs.compareCall(t, s+" on "+v, hdr, callBody("1", "save_report", `{"path":"n/1","mimeType":"text/plain","overwrite":true,"text":`+s+`}`, v == "2026-07-28"))
		}
	}
}

// slowPut blocks each Put until its context ends or 400ms pass, noting
// whether the context was cancelled.
type slowPut struct {
	store.Backend
	cancelled, done atomic.Int64
}

func (s *slowPut) Put(ctx context.Context, obj *store.Object, cond store.Cond) (store.Meta, bool, error) {
	select {
	case <-ctx.Done():
		s.cancelled.Add(1)
		return store.Meta{}, false, ctx.Err()
	case <-time.After(400 * time.Millisecond):
	}
	s.done.Add(1)
	return s.Backend.Put(ctx, obj, cond)
}

// TestFastCallClientGoneMidSave: a client that goes away mid-save. go-sdk
// runs the tool on a context detached from the HTTP request (jsonrpc2's
// notDone), so the save completes; the fast path must too, on both
// versions (it cancelled the store write before).
func TestFastCallClientGoneMidSave(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var slows []*slowPut
	cs := startCallServers(t, func() time.Time { return now }, func(o *Options) {
		sp := &slowPut{Backend: o.Store}
		slows = append(slows, sp)
		o.Store = sp
	})
	for j, v := range []string{"2025-11-25", "2026-07-28"} {
		for i, url := range []string{cs.fast, cs.sdk} {
			body := callBody("1", "save_report", `{"path":"dc/`+v+`","mimeType":"text/plain","text":"hi"}`, v == "2026-07-28")
			hdr := callHeaders(v, "save_report")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			req, _ := http.NewRequestWithContext(ctx, "POST", url+"/mcp", bytes.NewReader(body))
			req.Header = hdr
			_, err := http.DefaultClient.Do(req)
			cancel()
			if err == nil {
				t.Fatalf("server %d answered before the timeout", i)
			}
			// The save goes on after the client left: wait until it has
			// completed or been cancelled (a loaded machine may take far
			// longer than the put's 400 ms to get there).
			for deadline := time.Now().Add(20 * time.Second); slows[i].cancelled.Load()+slows[i].done.Load() < int64(j+1); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s server %d: the save neither completed nor was cancelled in 20s", v, i)
				}
			}
			t.Logf("%s server %d (0 fast, 1 sdk): put cancelled=%d completed=%d", v, i, slows[i].cancelled.Load(), slows[i].done.Load())
		}
	}
	if slows[0].cancelled.Load() != 0 || slows[0].done.Load() != 2 || slows[1].done.Load() != 2 {
		t.Fatalf("fast path and go-sdk differ on a client that goes away mid-save: fast cancelled=%d done=%d, sdk cancelled=%d done=%d",
			slows[0].cancelled.Load(), slows[0].done.Load(), slows[1].cancelled.Load(), slows[1].done.Load())
	}
}

// TestScopeRefusalLogNamesTheCall: a call refused for a missing scope (a
// read-only token calling save_report) is logged with its method and
// tool, not with empty ones.
func TestScopeRefusalLogNamesTheCall(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs := startCallServers(t, func() time.Time { return now })
	hdr := callHeaders("2025-11-25", "save_report")
	hdr.Set("X-Test-ReadOnly", "1")
	req, _ := http.NewRequest(http.MethodPost, cs.fast+"/mcp", bytes.NewReader(callBody("1", "save_report", `{"path":"x","mimeType":"text/plain","text":"hi"}`, false)))
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403", resp.StatusCode)
	}
	var line struct{ Method, Tool, Outcome string }
	for _, l := range strings.Split(strings.TrimSpace(cs.logs[0].String()), "\n") {
		if strings.Contains(l, `"outcome":"auth:insufficient_scope"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line.Method != "tools/call" || line.Tool != "save_report" {
		t.Errorf("log of the refusal: method %q, tool %q; want tools/call, save_report\n%s", line.Method, line.Tool, cs.logs[0].String())
	}
}
