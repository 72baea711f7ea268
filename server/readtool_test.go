package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/links"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// linkEnv is a server on a memstore (no streaming driver: the Bucket's fallback
// paths) with a links key, behind httptest.
type linkEnv struct {
	s     *Server
	st    store.Backend
	url   string
	clock *time.Time
}

var testLinkKey = bytes.Repeat([]byte{7}, 32)

// tenantAuth makes every caller the tenant of its X-Tenant header (t1 by
// default), with both scopes.
type tenantAuth struct{}

func (tenantAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	t := r.Header.Get("X-Tenant")
	if t == "" {
		t = "t1"
	}
	return auth.Principal{Tenant: t, Subject: "test", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}}, nil
}

func newLinkEnv(t *testing.T) *linkEnv {
	t.Helper()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := &linkEnv{clock: &clock}
	e.st = memstore.New(memstore.Options{Now: func() time.Time { return *e.clock }})
	s, err := New(Options{
		Store: e.st, BaseURL: "http://links.test", Auth: tenantAuth{},
		Now:     func() time.Time { return *e.clock },
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

func (e *linkEnv) put(t *testing.T, tenant, path, body string, vis store.Visibility) store.Meta {
	t.Helper()
	k := store.MustKey(tenant, "report", path)
	m, _, err := e.st.Put(context.Background(), &store.Object{Meta: store.Meta{
		Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
		Created: *e.clock, Modified: *e.clock, Expires: e.clock.Add(time.Hour), Visibility: vis,
	}, Body: []byte(body)}, store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *linkEnv) get(t *testing.T, link string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(link, "http://links.test", e.url, 1), nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestDownloadLinks(t *testing.T) {
	e := newLinkEnv(t)
	m := e.put(t, "t1", "a/b", "hello links", store.Private)
	link, exp := e.s.links.URL(&m, "t1", 5*time.Minute)
	if want := e.clock.Add(5 * time.Minute); !exp.Equal(want) {
		t.Errorf("link expires at %v, want %v", exp, want)
	}
	// The canonical string, as docs/large-reports.md describes it.
	mac := hmac.New(sha256.New, testLinkKey)
	fmt.Fprintf(mac, "v2|report|t1|a/b|%d|owner|%s", exp.Unix(), m.SHA256)
	if want := fmt.Sprintf("http://links.test/v1/blobs/report/t1/a/b?exp=%d&sha256=%s&sig=%s", exp.Unix(), m.SHA256, base64.RawURLEncoding.EncodeToString(mac.Sum(nil))); link != want {
		t.Errorf("downloadURL = %s, want %s", link, want)
	}
	code, h, body := e.get(t, link)
	if code != 200 || body != "hello links" || h.Get("Cache-Control") != "private, max-age=30" || h.Get("ETag") != `"`+m.SHA256+`"` {
		t.Errorf("GET = %d %q %v", code, body, h)
	}
	code, h, body = e.get(t, link, "Range", "bytes=6-")
	if code != 206 || body != "links" || h.Get("Content-Range") != "bytes 6-10/11" {
		t.Errorf("Range = %d %q %v", code, body, h)
	}
	// max-age never outlives the link.
	*e.clock = e.clock.Add(5*time.Minute - 10*time.Second)
	if _, h, _ := e.get(t, link); h.Get("Cache-Control") != "private, max-age=10" {
		t.Errorf("near expiry: Cache-Control %q", h.Get("Cache-Control"))
	}
	*e.clock = e.clock.Add(10 * time.Second)
	if code, _, body := e.get(t, link); code != 403 || body != links.Refused {
		t.Errorf("at expiry: %d %q", code, body)
	}
	// A link is never longer than the resource lives.
	*e.clock = e.clock.Add(58 * time.Minute)
	m.Expires = e.clock.Add(2 * time.Minute)
	_, exp = e.s.links.URL(&m, "t1", 5*time.Minute)
	if !exp.Equal(m.Expires) {
		t.Errorf("link of a resource expiring in 2m expires at %v", exp)
	}
}

func TestLinkTTLArgument(t *testing.T) {
	e := newLinkEnv(t)
	for _, tc := range []struct {
		include bool
		raw     string
		want    time.Duration
		err     bool
	}{
		{false, "", 0, false},
		{true, "", 5 * time.Minute, false},
		{true, "60", time.Minute, false},
		{true, `"PT2M"`, 2 * time.Minute, false},
		{true, "86400", 10 * time.Minute, false}, // capped at the maximum
		{true, "1e12", 10 * time.Minute, false},
		{true, "9223372036854775808", 10 * time.Minute, false},
		{true, `"P99999999999D"`, 10 * time.Minute, false},
		{true, `"PT1.5S"`, 1500 * time.Millisecond, false},
		{true, "-1", 0, true},
		{true, "0", 0, true},
		{true, `"soon"`, 0, true},
		{true, "true", 0, true},
		{true, "0.5", 0, true},
		{true, `"P1M"`, 0, true},
		{false, "60", 0, true}, // a ttl without includeDownloadUrl
	} {
		got, terr := e.s.svc.LinkTTL(tc.include, json.RawMessage(tc.raw))
		if (terr != nil) != tc.err || got != tc.want {
			t.Errorf("linkTTL(%v, %s) = %v, %v; want %v, error %v", tc.include, tc.raw, got, terr, tc.want, tc.err)
		}
	}
	noLinks, err := New(Options{Store: e.st, BaseURL: "http://x.test", Schemes: []Scheme{{Name: "report", Kind: KindReport, MaxBytes: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, terr := noLinks.svc.LinkTTL(true, nil); terr == nil {
		t.Error("linkTTL on a server without a key = nil error")
	}
}

// TestUploadWithoutStreamer: uploads to a backend whose driver does not stream
// read the (bounded) body and Put it.
func TestUploadWithoutStreamer(t *testing.T) {
	e := newLinkEnv(t)
	put := func(path, body string, hdr ...string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPut, e.url+"/v1/resources/report/"+path, strings.NewReader(body))
		req.Header.Set("X-Tenant", "t1")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	code, v := put("up/one", "uploaded", "Content-Type", "text/plain")
	if code != 201 || v["status"] != "created" || v["sha256"] != store.Sum([]byte("uploaded")) {
		t.Fatalf("upload = %d %v", code, v)
	}
	if code, v := put("up/big", strings.Repeat("x", 1001)); code != 413 || v["errorKind"] != service.KindTooLarge {
		t.Errorf("upload over maxBytes = %d %v", code, v)
	}
	if _, err := e.st.Stat(context.Background(), store.MustKey("t1", "report", "up/big")); !service.IsNotFound(err) {
		t.Errorf("a refused upload was stored: %v", err)
	}
	if code, v := put("up/one", "again", "If-Match", `"`+store.Sum([]byte("uploaded"))+`"`); code != 200 || v["status"] != "replaced" {
		t.Errorf("replace = %d %v", code, v)
	}
	// A coded body is refused (415), never stored as its media type: the
	// new path stays absent and the old one keeps its bytes.
	for _, enc := range []string{"gzip", "identity, gzip", "br"} {
		for _, path := range []string{"up/coded", "up/one"} {
			code, v := put(path, "\x1f\x8b coded", "Content-Type", "text/plain", "Content-Encoding", enc, "If-Match", "*")
			if code != 415 || v["errorKind"] != service.KindValidation {
				t.Errorf("upload with Content-Encoding %q to %s = %d %v, want 415 validation_error", enc, path, code, v)
			}
		}
	}
	if _, err := e.st.Stat(context.Background(), store.MustKey("t1", "report", "up/coded")); !service.IsNotFound(err) {
		t.Errorf("a coded upload was stored: %v", err)
	}
	if m, err := e.st.Stat(context.Background(), store.MustKey("t1", "report", "up/one")); err != nil || m.SHA256 != store.Sum([]byte("again")) {
		t.Errorf("a refused coded replace changed the stored body: %v %v", m.SHA256, err)
	}
	if code, v := put("up/plain", "plain", "Content-Type", "text/plain", "Content-Encoding", "identity"); code != 201 {
		t.Errorf("upload with Content-Encoding identity = %d %v, want 201", code, v)
	}
}

// readEnv is a server on a memstore with the smallest maxReadChars and
// room for bodies several times larger.
func readEnv(t *testing.T) *linkEnv {
	t.Helper()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := &linkEnv{clock: &clock}
	e.st = memstore.New(memstore.Options{Now: func() time.Time { return *e.clock }})
	s, err := New(Options{
		Store: e.st, BaseURL: "http://links.test", Auth: tenantAuth{},
		Now:     func() time.Time { return *e.clock },
		Limits:  Limits{MaxReadChars: 4096},
		LinkKey: testLinkKey, LinkTTL: 5 * time.Minute, LinkMaxTTL: 10 * time.Minute,
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
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

// TestReadWindowInStructuredContent: read_resource's value, which is its
// structuredContent and its first text item, holds the window (text or
// blob), the same bytes as the window item; following nextOffset over
// bodies full of characters JSON escapes gives the body back, and no
// result's content exceeds maxReadChars.
func TestReadWindowInStructuredContent(t *testing.T) {
	e := readEnv(t)
	var escapes strings.Builder
	for i := 0; escapes.Len() < 20000; i++ {
		escapes.WriteString([]string{`"`, `\`, "\n", "<", ">", "&", "\u2028", "\x01", "\t", "é", "a", "日"}[i%12])
	}
	bodies := map[string]struct {
		mime string
		body string
	}{
		"escapes": {"text/plain", escapes.String()},
		"plain":   {"text/plain", strings.Repeat("0123456789abcdef\n", 1500)},
		"binary":  {"application/octet-stream", strings.Repeat("\x00\x01\xfe\xff", 3000)},
		"invalid": {"text/plain", strings.Repeat("ab\xffcd", 2000)},
	}
	for name, b := range bodies {
		e.put(t, "t1", "read/"+name, b.body, store.Private)
		if b.mime != "text/plain" {
			m, _ := e.st.Stat(context.Background(), store.MustKey("t1", "report", "read/"+name))
			m.MIMEType = b.mime
			e.st.Put(context.Background(), &store.Object{Meta: m, Body: []byte(b.body)}, store.Cond{})
		}
		var got []byte
		for off, calls := int64(0), 0; ; calls++ {
			if calls > 100 {
				t.Fatalf("%s: no end after %d windows", name, calls)
			}
			args, _ := json.Marshal(map[string]any{"uri": "report://t1/read/" + name, "offset": off})
			res, rerr := e.callRaw(t, "read_resource", args)
			if rerr != nil || res["isError"] == true {
				t.Fatalf("%s at %d: %v %v", name, off, rerr, res)
			}
			content := res["content"].([]any)
			first := content[0].(map[string]any)["text"].(string)
			var fromText map[string]any
			json.Unmarshal([]byte(first), &fromText)
			sc := res["structuredContent"].(map[string]any)
			if fmt.Sprint(fromText) != fmt.Sprint(sc) {
				t.Fatalf("%s: the text item is not the structured value", name)
			}
			chars := utf8.RuneCountInString(first)
			var window []byte
			switch sc["encoding"] {
			case "text":
				item := content[1].(map[string]any)["text"].(string)
				if sc["text"] != item || sc["blob"] != nil {
					t.Fatalf("%s at %d: structured text %q, window item %q", name, off, sc["text"], item)
				}
				window, chars = []byte(item), chars+utf8.RuneCountInString(item)
			case "base64":
				blob := content[1].(map[string]any)["resource"].(map[string]any)["blob"].(string)
				if sc["blob"] != blob || sc["text"] != nil {
					t.Fatalf("%s at %d: structured blob differs from the embedded one", name, off)
				}
				window, _ = base64.StdEncoding.DecodeString(blob)
				chars += len(blob)
			}
			if chars > 4096 {
				t.Fatalf("%s at %d: the content holds %d characters, over 4096", name, off, chars)
			}
			if rng := sc["range"].(map[string]any); int64(rng["offset"].(float64)) != off || int(rng["length"].(float64)) != len(window) || len(window) == 0 {
				t.Fatalf("%s at %d: range %v, window of %d bytes", name, off, rng, len(window))
			}
			got = append(got, window...)
			next, ok := sc["nextOffset"].(float64)
			if !ok {
				break
			}
			off = int64(next)
		}
		if string(got) != b.body {
			t.Errorf("%s: the windows do not reassemble the body", name)
		}
	}
}

// TestLinksAreBoundToTheirBody: a link serves only the body it was minted
// for. After a replace, and after a delete and re-create with another
// body, it answers the one 404, which says to ask for a new link; an
// unchanged body (rewritten with the same bytes too) still downloads; a
// link whose digest was changed, or dropped, is refused like any bad link
// (403); a link of version 1, without a digest, is refused too.
func TestLinksAreBoundToTheirBody(t *testing.T) {
	e := newLinkEnv(t)
	ctx := context.Background()
	m := e.put(t, "t1", "bound/a", "first body", store.Private)
	link, exp := e.s.links.URL(&m, "t1", 5*time.Minute)
	if code, _, body := e.get(t, link); code != 200 || body != "first body" {
		t.Fatalf("fresh link: %d %q", code, body)
	}
	// The same bytes written again: the same digest, the link still works.
	e.put(t, "t1", "bound/a", "first body", store.Private)
	if code, _, body := e.get(t, link); code != 200 || body != "first body" {
		t.Errorf("after rewriting the same body: %d %q", code, body)
	}
	// Replaced: 404, saying to ask for a new link; a new link serves the new body.
	m2 := e.put(t, "t1", "bound/a", "second body", store.Private)
	code, h, body := e.get(t, link)
	if code != 404 || body != links.Missing || !strings.Contains(body, "ask for a new link") || h.Get("Cache-Control") != "no-store" {
		t.Errorf("after a replace: %d %q %v", code, body, h)
	}
	fresh, _ := e.s.links.URL(&m2, "t1", 5*time.Minute)
	if code, _, body := e.get(t, fresh); code != 200 || body != "second body" {
		t.Errorf("a new link after the replace: %d %q", code, body)
	}
	// Deleted and re-created with another body: the old link stays dead.
	if err := e.st.Delete(ctx, store.MustKey("t1", "report", "bound/a"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if code, _, body := e.get(t, fresh); code != 404 || body != links.Missing {
		t.Errorf("deleted: %d %q", code, body)
	}
	e.put(t, "t1", "bound/a", "third body, re-created", store.Private)
	for name, l := range map[string]string{"first": link, "second": fresh} {
		if code, _, body := e.get(t, l); code != 404 || body != links.Missing {
			t.Errorf("the %s link after delete and re-create: %d %q", name, code, body)
		}
	}
	// A tampered digest (the third body's, which the server would serve)
	// breaks the signature: 403, never the body.
	m3, _ := e.st.Stat(ctx, store.MustKey("t1", "report", "bound/a"))
	tampered := strings.Replace(fresh, "sha256="+m2.SHA256, "sha256="+m3.SHA256, 1)
	dropped := strings.Replace(fresh, "&sha256="+m2.SHA256, "", 1)
	upper := strings.Replace(fresh, "sha256="+m2.SHA256, "sha256="+strings.ToUpper(m2.SHA256), 1)
	for name, l := range map[string]string{"tampered": tampered, "dropped": dropped, "upper case": upper} {
		if l == fresh {
			t.Fatalf("%s: the test did not change the link", name)
		}
		if code, _, body := e.get(t, l); code != 403 || body != links.Refused {
			t.Errorf("%s digest: %d %q", name, code, body)
		}
	}
	// A version 1 link (no digest), correctly signed under the key: refused.
	mac := hmac.New(sha256.New, testLinkKey)
	fmt.Fprintf(mac, "v1|report|t1|bound/a|%d|owner", exp.Unix())
	v1 := fmt.Sprintf("http://links.test/v1/blobs/report/t1/bound/a?exp=%d&sig=%s", exp.Unix(), base64.RawURLEncoding.EncodeToString(mac.Sum(nil)))
	if code, _, body := e.get(t, v1); code != 403 || body != links.Refused {
		t.Errorf("a version 1 link: %d %q", code, body)
	}
}

// TestDownloadFileDescriptor: a result with a signed link also carries it
// as a SEP-2631 AuthorizedFile: the file (uri, name, mimeType, size and
// sha-256 digest in base64url) and the HTTPS GET with the link's own
// expiry, which is not the resource's.
func TestDownloadFileDescriptor(t *testing.T) {
	e := newLinkEnv(t)
	body := "col\n1\n"
	res, _ := e.callRaw(t, "save_report", []byte(`{"path":"files/out.csv","mimeType":"text/csv","text":"col\n1\n","includeDownloadUrl":true,"downloadUrlTtl":"PT2M"}`))
	sc := res["structuredContent"].(map[string]any)
	df, ok := sc["downloadFile"].(map[string]any)
	if !ok {
		t.Fatalf("no downloadFile: %v", sc)
	}
	file, dl := df["file"].(map[string]any), df["download"].(map[string]any)
	sum := sha256.Sum256([]byte(body))
	digest := file["digest"].(map[string]any)
	if file["uri"] != "report://t1/files/out.csv" || file["name"] != "out.csv" || file["mimeType"] != "text/csv" ||
		file["size"] != float64(len(body)) || digest["algorithm"] != "sha-256" || digest["value"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Errorf("file = %v", file)
	}
	if dl["transport"] != "https" || dl["method"] != "GET" || dl["url"] != sc["downloadUrl"] || dl["expiresAt"] != sc["downloadUrlExpiresAt"] {
		t.Errorf("download = %v (downloadUrl %v, downloadUrlExpiresAt %v)", dl, sc["downloadUrl"], sc["downloadUrlExpiresAt"])
	}
	// Two clocks: the link lives 2 minutes, the resource a week.
	if want := e.clock.Add(2 * time.Minute).Format(time.RFC3339Nano); dl["expiresAt"] != want || sc["expiresAt"] == dl["expiresAt"] {
		t.Errorf("link expiresAt %v (want %s), resource expiresAt %v", dl["expiresAt"], want, sc["expiresAt"])
	}
	if code, _, got := e.get(t, dl["url"].(string)); code != 200 || got != body {
		t.Errorf("GET of download.url: %d %q", code, got)
	}
	// read_resource and stat_resource carry the same descriptor; without a
	// link there is none.
	for _, c := range []struct{ tool, args string }{
		{"read_resource", `{"uri":"report://t1/files/out.csv","includeDownloadUrl":true}`},
		{"stat_resource", `{"uri":"report://t1/files/out.csv","includeDownloadUrl":true}`},
	} {
		res, _ := e.callRaw(t, c.tool, []byte(c.args))
		sc := res["structuredContent"].(map[string]any)
		if df, ok := sc["downloadFile"].(map[string]any); !ok || df["download"].(map[string]any)["url"] != sc["downloadUrl"] {
			t.Errorf("%s: downloadFile %v", c.tool, sc["downloadFile"])
		}
	}
	res, _ = e.callRaw(t, "stat_resource", []byte(`{"uri":"report://t1/files/out.csv"}`))
	if _, ok := res["structuredContent"].(map[string]any)["downloadFile"]; ok {
		t.Errorf("downloadFile without includeDownloadUrl: %v", res["structuredContent"])
	}
}
