package server

//lint:file-ignore SA1019 logging and roots are still served to 2025-11-25 clients during the deprecation window (SEP-2577)

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// headerAuth authenticates by the X-Test-Tenant header, so the test can
// read as several tenants.
type headerAuth struct{}

func (headerAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	t := r.Header.Get("X-Test-Tenant")
	if t == "" {
		t = "t1"
	}
	scopes := []string{auth.ScopeRead, auth.ScopeWrite}
	if r.Header.Get("X-Test-ReadOnly") != "" {
		scopes = scopes[:1]
	}
	return auth.Principal{Tenant: t, Subject: "test", Scopes: scopes}, nil
}

// hiddenViewer makes a backend look like one that keeps no encoded form
// (as s3store): reads copy the body out.
type hiddenViewer struct{ store.Backend }

func (hiddenViewer) KeepsEncoded() bool { return false }

// serverPair starts two servers on st and clock, the fast read path on and
// off, and returns the first and both URLs.
func serverPair(t *testing.T, st store.Backend, clock func() time.Time, tweak ...func(*Options)) (fastSrv *Server, fast, sdk string) {
	t.Helper()
	schemes := []Scheme{
		{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 1 << 20},
		{Name: "report", Kind: KindReport, TTL: 0, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 1 << 20},
	}
	start := func(noFast bool) (*Server, string) {
		opts := Options{Store: st, Schemes: schemes, Auth: headerAuth{}, Now: clock, BaseURL: "http://127.0.0.1", Version: "test"}
		for _, f := range tweak {
			f(&opts)
		}
		s, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		s.noFastRead = noFast
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		return s, ts.URL
	}
	fastSrv, fast = start(false)
	_, sdk = start(true)
	return fastSrv, fast, sdk
}

// readHeaders are the headers of a read by a well-behaved client.
func readHeaders(version, uri string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", version)
	if version == "2026-07-28" {
		h.Set("Mcp-Method", "resources/read")
		h.Set("Mcp-Name", uri)
	}
	return h
}

// sameAnswer posts body to both servers and fails unless status and bytes
// agree (go-sdk ends its responses with a newline, the fast path not).
func sameAnswer(t *testing.T, what, fast, sdk string, hdr http.Header, body []byte) {
	t.Helper()
	fs, _, fb := post(t, fast, hdr, body)
	ss, _, sb := post(t, sdk, hdr, body)
	if fs != ss || !bytes.Equal(bytes.TrimSuffix(fb, []byte("\n")), bytes.TrimSuffix(sb, []byte("\n"))) {
		t.Errorf("%s:\nfast: %d %.400s\nsdk:  %d %.400s", what, fs, fb, ss, sb)
	}
}

// TestFastReadEdgeCases: requests and stored objects where a fast path is
// easily wrong, each answered as go-sdk answers it.
func TestFastReadEdgeCases(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, hide := range []bool{false, true} {
		mem := memstore.New(memstore.Options{Now: clock})
		var st store.Backend = mem
		if hide {
			st = hiddenViewer{mem}
		}
		fastSrv, fast, sdk := serverPair(t, st, clock)
		put := func(path, mimeType string, body []byte) string {
			k := store.MustKey("t1", "report", path)
			obj := &store.Object{Meta: store.Meta{Key: k, MIMEType: mimeType, Size: int64(len(body)), SHA256: store.Sum(body),
				Created: now, Modified: now, Visibility: store.Private}, Body: body, Encoded: fastSrv.svc.Encode(mimeType, body)}
			if _, _, err := st.Put(t.Context(), obj, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			return k.String()
		}
		u := put("x", "text/plain", []byte("hello"))
		read := func(version, id, meta string) []byte {
			params := `{"uri":"` + u + `"`
			if meta != "" {
				params += `,"_meta":{` + meta + `}`
			}
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":` + params + `}}`)
		}
		modern := `"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":`
		deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
		for name, c := range map[string]struct{ version, body string }{
			"id -0":                     {"2025-11-25", string(read("2025-11-25", "-0", ""))},
			"id invalid UTF-8":          {"2025-11-25", string(read("2025-11-25", "\"a\xffb\"", ""))},
			"clientInfo null":           {"2026-07-28", string(read("", "1", modern+`{},"`+metaClientInfo+`":null`))},
			"clientInfo name a number":  {"2026-07-28", string(read("", "1", modern+`{},"`+metaClientInfo+`":{"name":1}`))},
			"capabilities roots 5":      {"2026-07-28", string(read("", "1", modern+`{"roots":5}`))},
			"capabilities experimental": {"2026-07-28", string(read("", "1", modern+`{"experimental":1}`))},
			"capabilities roots object": {"2026-07-28", string(read("", "1", modern+`{"roots":{"listChanged":true},"sampling":{}}`))},
			"capabilities bad bool":     {"2026-07-28", string(read("", "1", modern+`{"roots":{"listChanged":"yes"}}`))},
			"logLevel a number":         {"2026-07-28", string(read("", "1", modern+`{},"`+metaLogLevel+`":3`))},
			"deep _meta, 2026-07-28":    {"2026-07-28", string(read("", "1", modern+`{},"x":`+deep))},
			"deep _meta, 2025-11-25":    {"2025-11-25", string(read("", "1", `"x":`+deep))},
			"method escaped":            {"2025-11-25", strings.Replace(string(read("", "1", "")), "resources/read", `resources\/read`, 1)},
			// go-sdk decodes _meta into a map of any, where 1e400 fails.
			"_meta 1e400, 2025-11-25":  {"2025-11-25", string(read("", "1", `"x":1e400`))},
			"_meta 1e400, 2026-07-28":  {"2026-07-28", string(read("", "1", modern+`{},"x":[1,{"y":-1e400}]`))},
			"_meta 1e-400, 2025-11-25": {"2025-11-25", string(read("", "1", `"x":1e-400`))},
		} {
			sameAnswer(t, fmt.Sprintf("%s (viewer hidden %v)", name, hide), fast, sdk, readHeaders(c.version, u), []byte(c.body))
		}

		// Stored objects: a media type with invalid UTF-8 (uploads accept
		// one in a quoted parameter), and bodies whose runes and escapes
		// sit on both sides of the streaming path's 16 KiB chunk ends.
		paths := []string{put("badmime", "text/plain; x=\"a\xffb\"", []byte("body"))}
		for ri, r := range []string{"é", "日", "😀", "\u2028", "<", "\x01"} {
			for off := 16<<10 - 5; off <= 16<<10+1; off++ {
				b := append(bytes.Repeat([]byte("a"), off), r...)
				b = append(b, strings.Repeat(r+"b", 9000)...)
				paths = append(paths, put(fmt.Sprintf("chunks/%d/%d", ri, off), "text/plain", b))
			}
		}
		for _, p := range paths {
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + p + `"}}`)
			sameAnswer(t, fmt.Sprintf("read of %s (viewer hidden %v)", p, hide), fast, sdk, readHeaders("2025-11-25", p), body)
		}
	}
}

// TestFastReadMatchesSDK sends the same randomized requests through the
// fast read path and through go-sdk's path (two servers on one store and one
// clock) and requires the same status, headers and JSON, for each way the
// fast path can find a body: the encoded form saved with it, none (encoded
// as it is read inside the backend's transaction), one from another
// version of the encoding (ignored), and a backend that keeps no encoded form
// (copied out and encoded as it is streamed); each with the form cache off
// and on (reads repeat, so most of them are hits).
func TestFastReadMatchesSDK(t *testing.T) {
	for _, variant := range []string{"stored", "none", "stale", "damaged", "no-viewer"} {
		for _, cache := range []int64{0, 16 << 20} {
			t.Run(fmt.Sprintf("%s/cache=%d", variant, cache), func(t *testing.T) { testFastReadMatchesSDK(t, variant, cache) })
		}
	}
}

func testFastReadMatchesSDK(t *testing.T, variant string, cache int64) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := memstore.New(memstore.Options{Now: clock})
	var st store.Backend = mem
	if variant == "no-viewer" {
		st = hiddenViewer{mem}
	}
	fastSrv, fast, sdk := serverPair(t, st, clock, func(o *Options) { o.FormCache = cache })
	encodedPuts := 0

	put := func(tenant, scheme, path, mimeType string, body []byte, vis store.Visibility, expires time.Time) string {
		k := store.MustKey(tenant, scheme, path)
		obj := &store.Object{Meta: store.Meta{Key: k, MIMEType: mimeType, Size: int64(len(body)), SHA256: store.Sum(body),
			Created: now.Add(-time.Minute), Modified: now.Add(-time.Second), Expires: expires, Title: path, Visibility: vis}, Body: body}
		switch variant {
		case "stored", "no-viewer":
			obj.Encoded = fastSrv.svc.Encode(mimeType, body)
		case "stale":
			obj.Encoded = append([]byte{jsonwire.FormVersion + 1}, `"text":"stale"`...)
		case "damaged":
			// A form whose checksum fails (a flipped byte on disk) is never
			// served: the read encodes the body.
			if obj.Encoded = fastSrv.svc.Encode(mimeType, body); len(obj.Encoded) > 8 {
				obj.Encoded[len(obj.Encoded)-2] ^= 0x20
			}
		}
		if obj.Encoded != nil {
			encodedPuts++
		}
		if _, _, err := st.Put(t.Context(), obj, store.Cond{}); err != nil {
			t.Fatal(err)
		}
		return k.String()
	}
	binary := make([]byte, 1000)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	tricky := "quotes \" backslash \\ <b>&amp;</b> \x00\x01\x1f\x7f tab\t nl\n cr\r \u2028\u2029 é 日本 😀 \ufeff"
	uris := []string{
		put("t1", "report", "a/text", "text/plain; charset=utf-8", []byte(tricky), store.Private, now.Add(time.Hour)),
		put("t1", "report", "a/json", "application/json", []byte(`{"x":"<y>","z":[1,2]}`), store.Private, now.Add(time.Hour)),
		put("t1", "report", "a/bin", "application/octet-stream", binary, store.Private, now.Add(time.Hour)),
		put("t1", "report", "a/badutf8", "text/plain", []byte{'a', 0xff, 'b'}, store.Private, now.Add(time.Hour)),
		put("t1", "search", "results/snap", "application/json", []byte(`{"query":"q","total":0,"hits":[]}`), store.Private, now.Add(30*time.Minute)),
		put("t2", "report", "pub", "text/csv", []byte("a,b\n1,2\n"), store.Public, now.Add(time.Hour)),
		put("t2", "report", "priv", "text/plain", []byte("secret"), store.Private, now.Add(time.Hour)),
		put("t1", "report", "expired", "text/plain", []byte("old"), store.Private, now.Add(-time.Second)),
		put("t1", "report", "controls", "text/plain", bytes.Repeat([]byte{1, '<'}, 300), store.Private, time.Time{}),
		put("t1", "report", "large", "text/markdown", bytes.Repeat([]byte("# é <&>\n\"q\" 日本 \u2028 😀 plain text runs here\n"), 2000), store.Private, now.Add(time.Hour)),
		put("t1", "report", "large-bin", "image/png", bytes.Repeat(binary, 70), store.Private, now.Add(time.Hour)),
		// A textual type whose body is not UTF-8: served as a blob.
		put("t1", "report", "large-badutf8", "text/plain", bytes.Repeat([]byte{'a', 0xff, '"'}, 20000), store.Private, now.Add(time.Hour)),
		"report://t1/missing", "report://t1/a//b", "REPORT://t1/a/text", "file:///etc/passwd", "report://t1/a/text?x", "",
	}
	ids := []string{`1`, `42`, `"abc"`, `"a\u0062c"`, `-7`, `9007199254740991`, `"<&>"`, `"é\u2028\u003c\n"`, "\"日本\u2028\""}
	tenants := []string{"t1", "t2", "t10"}

	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	fastHits := 0
	for n := 0; n < 800; n++ {
		u, id, version := pick(uris), pick(ids), pick([]string{"2026-07-28", "2025-11-25"})
		params := map[string]any{"uri": u}
		if version == "2026-07-28" && rng.IntN(10) > 0 {
			meta := map[string]any{metaProtocolVersion: version, metaClientCapabilities: map[string]any{}}
			if rng.IntN(2) == 0 {
				meta[metaClientInfo] = map[string]any{"name": "c", "version": "1"}
			}
			if rng.IntN(20) == 0 {
				meta[metaClientCapabilities] = "nope"
			}
			params["_meta"] = meta
		}
		if rng.IntN(20) == 0 {
			params["extra"] = true
		}
		p, _ := json.Marshal(params)
		body := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":` + string(p) + `}`)
		if rng.IntN(4) == 0 {
			// Unusual spellings of a read: each is either served by the
			// fast path exactly as go-sdk would, or left to go-sdk.
			q, _ := json.Marshal(u)
			m := `{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{}}`
			body = []byte(pick([]string{
				`{"jsonrpc":"2\u002e0","id":` + id + `,"method":"resources/read","params":{"uri":` + string(q) + `,"_meta":` + m + `}}`,
				`{"method":"resources/read","params":{"_meta":` + m + `,"uri":` + string(q) + `},"id":` + id + `,"jsonrpc":"2.0"}`,
				" \n{ \"jsonrpc\" : \"2.0\" , \"id\" : " + id + " , \"method\" : \"resources/read\" , \"params\" : { \"uri\" : " + string(q) + " , \"_meta\" : " + m + " } }\n",
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":` + strings.ReplaceAll(string(q), "/", `\/`) + `,"_meta":` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"x","uri":` + string(q) + `,"_meta":` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"URI":` + string(q) + `,"_meta":` + m + `}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":` + string(q) + `,"_meta":null}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":null}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":` + string(q) + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaProtocolVersion + `":"2025-11-25","` + metaClientCapabilities + `":{}}}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":` + string(q) + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":[],"` + metaClientInfo + `":{"name":1}}}}`,
				`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":` + string(q) + `,"_meta":{"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{},"` + metaLogLevel + `":"debug","other":1}}}`,
			}))
		}
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Accept", "application/json, text/event-stream")
		if rng.IntN(30) == 0 {
			hdr.Set("Accept", "application/json")
		}
		hdr.Set("MCP-Protocol-Version", version)
		if rng.IntN(30) == 0 {
			hdr.Set("MCP-Protocol-Version", "2025-06-18")
		}
		if version == "2026-07-28" {
			hdr.Set("Mcp-Method", "resources/read")
			hdr.Set("Mcp-Name", u)
			if rng.IntN(20) == 0 {
				hdr.Set("Mcp-Name", u+"x")
			}
		}
		if rng.IntN(30) == 0 {
			// go-sdk refuses a POST carrying Last-Event-ID (400); the read
			// stage must not answer it differently.
			hdr.Set("Last-Event-ID", "5")
		}
		hdr.Set("X-Test-Tenant", pick(tenants))
		if rng.IntN(20) == 0 {
			hdr.Set("X-Test-ReadOnly", "1")
		}
		what := fmt.Sprintf("request %d: %s %s", n, hdr, body)
		fs, fh, fb := post(t, fast, hdr, body)
		ss, sh, sb := post(t, sdk, hdr, body)
		if fs != ss || fh.Get("Content-Type") != sh.Get("Content-Type") || fh.Get("Cache-Control") != sh.Get("Cache-Control") {
			t.Fatalf("%s\nfast: %d %v\nsdk:  %d %v", what, fs, fh, ss, sh)
		}
		var fj, sj any
		if err := json.Unmarshal(fb, &fj); err != nil {
			if !bytes.Equal(fb, sb) {
				t.Fatalf("%s\nfast: %s\nsdk:  %s", what, fb, sb)
			}
			continue
		}
		if err := json.Unmarshal(sb, &sj); err != nil || !reflect.DeepEqual(fj, sj) {
			t.Fatalf("%s\nfast: %s\nsdk:  %s", what, fb, sb)
		}
		if fs == 200 && strings.Contains(string(fb), `"contents"`) {
			fastHits++
			// Byte for byte: the same escapes and field order as go-sdk.
			if !bytes.Equal(fb, bytes.TrimSuffix(sb, []byte("\n"))) {
				t.Fatalf("%s\nfast: %s\nsdk:  %s", what, fb, sb)
			}
		}
	}
	switch {
	case variant == "stored" && encodedPuts < 8, (variant == "stale" || variant == "damaged") && encodedPuts == 0:
		t.Errorf("%d puts carried an encoded form: the variant tests nothing", encodedPuts)
	case variant == "no-viewer" && encodedPuts != 0:
		t.Errorf("%d puts carried an encoded form to a backend that cannot keep one", encodedPuts)
	}
	if fastHits < 100 {
		t.Errorf("only %d successful reads compared; the request mix does not exercise the fast path", fastHits)
	}
	if st := fastSrv.forms.Stats(); cache > 0 && st.Hits < int64(fastHits)/2 {
		t.Errorf("%d of %d reads hit the form cache: the cached answers were not compared", st.Hits, fastHits)
	}
}

func post(t *testing.T, url string, hdr http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", bytes.NewReader(body))
	req.Header = hdr.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// accessCounter counts the backend accesses of reads.
type accessCounter struct {
	store.Backend
	accesses atomic.Int64
}

func (c *accessCounter) Get(ctx context.Context, k store.Key) (*store.Object, error) {
	c.accesses.Add(1)
	return c.Backend.Get(ctx, k)
}

func (c *accessCounter) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	c.accesses.Add(1)
	return c.Backend.Stat(ctx, k)
}

func (c *accessCounter) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	c.accesses.Add(1)
	return c.Backend.View(ctx, k, fn)
}

func (c *accessCounter) ReadIf(ctx context.Context, k store.Key, allow func(*store.Meta) bool, fn func(m *store.Meta, encoded, body []byte) error) error {
	c.accesses.Add(1)
	return c.Backend.ReadIf(ctx, k, allow, fn)
}

// TestOneStoreAccessPerMissedRead: a read of a URI that does not exist, or
// that the caller may not read, costs one backend access, whether the read
// stage or go-sdk's dispatch answers it (before, a miss fell through the
// fast path to go-sdk and was looked up again).
func TestOneStoreAccessPerMissedRead(t *testing.T) {
	ms := memstore.New(memstore.Options{})
	cs := &accessCounter{Backend: ms}
	now := time.Now()
	body := []byte("private")
	if _, _, err := ms.Put(t.Context(), &store.Object{Meta: store.Meta{Key: store.MustKey("t2", "report", "priv"), MIMEType: "text/plain",
		Size: int64(len(body)), SHA256: store.Sum(body), Created: now, Modified: now, Visibility: store.Private}, Body: body}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, fast, sdk := serverPair(t, cs, time.Now)
	for _, u := range []string{"report://t1/missing", "report://t2/priv"} {
		for _, tc := range []struct {
			name, url, body string
		}{
			{"read stage", fast, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + u + `"}}`},
			{"go-sdk", sdk, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + u + `"}}`},
			// An escaped slash is not the plainest form: go-sdk answers.
			{"go-sdk via the read server", fast, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + strings.ReplaceAll(u, "/", `\/`) + `"}}`},
		} {
			before := cs.accesses.Load()
			status, _, got := post(t, tc.url, readHeaders("2025-11-25", u), []byte(tc.body))
			if status != http.StatusOK || !bytes.Contains(got, []byte(`"code":-32602`)) {
				t.Fatalf("%s: read of %s = %d %s, want -32602", tc.name, u, status, got)
			}
			if n := cs.accesses.Load() - before; n != 1 {
				t.Errorf("%s: read of %s cost %d backend accesses, want 1", tc.name, u, n)
			}
		}
	}
}

// TestFormCacheServesOnlyWhatTheCallerMayRead: the form cache is keyed by
// content and readability is decided on the metadata first, so a replace,
// a delete, an expiry, another tenant's read or another media type never
// gets bytes it should not, on a backend with stored forms and on one
// without; every answer is go-sdk's, byte for byte.
func TestFormCacheServesOnlyWhatTheCallerMayRead(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprintf("hidden=%v", hide), func(t *testing.T) {
			var now atomic.Int64
			now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
			mem := memstore.New(memstore.Options{Now: clock})
			var st store.Backend = mem
			if hide {
				st = hiddenViewer{mem}
			}
			srv, fast, sdk := serverPair(t, st, clock, func(o *Options) { o.FormCache = 8 << 20 })
			put := func(tenant, path, mimeType, body string, vis store.Visibility, expires time.Time) string {
				t.Helper()
				k := store.MustKey(tenant, "report", path)
				b := []byte(body)
				obj := &store.Object{Meta: store.Meta{Key: k, MIMEType: mimeType, Size: int64(len(b)), SHA256: store.Sum(b),
					Created: clock(), Modified: clock(), Expires: expires, Visibility: vis}, Body: b, Encoded: srv.svc.Encode(mimeType, b)}
				if _, _, err := st.Put(t.Context(), obj, store.Cond{}); err != nil {
					t.Fatal(err)
				}
				return k.String()
			}
			// read reads u as tenant through both servers, requires the
			// same bytes, and returns the text or blob served ("" when
			// not found).
			read := func(tenant, u string) string {
				t.Helper()
				hdr := readHeaders("2025-11-25", u)
				hdr.Set("X-Test-Tenant", tenant)
				body := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + u + `"}}`)
				sameAnswer(t, tenant+" reads "+u, fast, sdk, hdr, body)
				_, _, got := post(t, fast, hdr, body)
				var res struct {
					Result struct {
						Contents []struct{ Text, Blob string } `json:"contents"`
					} `json:"result"`
				}
				if err := json.Unmarshal(got, &res); err != nil {
					t.Fatalf("%s reads %s: %v in %.300s", tenant, u, err, got)
				}
				if len(res.Result.Contents) == 0 {
					return ""
				}
				return "text:" + res.Result.Contents[0].Text + "blob:" + res.Result.Contents[0].Blob
			}
			big := func(s string) string { return strings.Repeat(s, 40<<10/len(s)) }
			a, b := big(`first "quoted" <body> `), big(`second \ escaped `+"\u2028 ")
			u := put("t1", "doc", "text/plain", a, store.Private, time.Time{})
			for range 3 {
				if got := read("t1", u); got != "text:"+a+"blob:" {
					t.Fatalf("read %.40q, want the first body", got)
				}
			}
			hits := srv.forms.Stats().Hits
			if hits == 0 {
				t.Fatal("three reads of one body never hit the cache")
			}
			// Another tenant: the body is cached, the object is private.
			if got := read("t2", u); got != "" {
				t.Fatalf("t2 read t1's private object: %.40q", got)
			}
			// The same body stored by t2 is t2's to read, as its own object.
			u2 := put("t2", "copy", "text/plain", a, store.Private, time.Time{})
			if got := read("t2", u2); got != "text:"+a+"blob:" {
				t.Fatalf("t2's own copy read %.40q", got)
			}
			if got := read("t1", u2); got != "" {
				t.Fatalf("t1 read t2's private copy: %.40q", got)
			}
			// The same body under a binary type is a blob, not the cached text.
			ub := put("t1", "bin", "application/octet-stream", a, store.Private, time.Time{})
			if got := read("t1", ub); got != "text:blob:"+base64.StdEncoding.EncodeToString([]byte(a)) {
				t.Fatalf("the body under a binary type read %.40q", got)
			}
			// A replace serves the new body, and back again the old one.
			put("t1", "doc", "text/plain", b, store.Private, time.Time{})
			if got := read("t1", u); got != "text:"+b+"blob:" {
				t.Fatalf("after a replace read %.40q, want the second body", got)
			}
			put("t1", "doc", "text/plain", a, store.Public, time.Time{})
			if got := read("t1", u); got != "text:"+a+"blob:" {
				t.Fatalf("after replacing back read %.40q", got)
			}
			if got := read("t2", u); got != "text:"+a+"blob:" {
				t.Fatalf("t2 cannot read t1's public object: %.40q", got)
			}
			// A delete and an expiry: not found, though the bytes are cached.
			if err := st.Delete(t.Context(), store.MustKey("t1", "report", "doc"), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			if got := read("t1", u); got != "" {
				t.Fatalf("a deleted object read %.40q", got)
			}
			ue := put("t1", "short", "text/plain", b, store.Private, clock().Add(time.Minute))
			if got := read("t1", ue); got != "text:"+b+"blob:" {
				t.Fatalf("before its expiry read %.40q", got)
			}
			now.Add(int64(2 * time.Minute))
			if got := read("t1", ue); got != "" {
				t.Fatalf("an expired object read %.40q", got)
			}
			if srv.forms.Stats().Hits <= hits {
				t.Fatal("no later read hit the cache")
			}
		})
	}
}

// The _meta members of a modern request, as the tests write them.
const (
	metaProtocolVersion    = mcp.MetaKeyProtocolVersion
	metaClientInfo         = mcp.MetaKeyClientInfo
	metaClientCapabilities = mcp.MetaKeyClientCapabilities
	metaLogLevel           = mcp.MetaKeyLogLevel
)
