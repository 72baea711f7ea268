package integration

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Large bodies and every client (docs/large-reports.md): the read_resource
// tool, signed download links (/v1/blobs) and streamed uploads
// (PUT /v1/resources), against the real binary.

// httpResponse is a plain HTTP exchange.
type httpResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// json decodes the body as a JSON object.
func (r *httpResponse) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("HTTP %d body is not a JSON object: %v\n%s", r.Status, err, truncateBytes(r.Body, 500))
	}
	return m
}

// do sends one request and reads the whole response.
func do(t *testing.T, req *http.Request) *httpResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL.Path, err)
	}
	return &httpResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// hideLen hides a reader's length, so the client streams it chunked.
type hideLen struct{ r io.Reader }

func (h hideLen) Read(p []byte) (int, error) { return h.r.Read(p) }

// upload PUTs body to /v1/resources/<scheme>/<path>?query with the
// instance's token. A *bytes.Reader body is sent with a Content-Length,
// anything else chunked.
func (in *instance) upload(scheme, path, query string, body io.Reader, hdr map[string]string) *httpResponse {
	in.t.Helper()
	u := in.URL + "/v1/resources/" + scheme + "/" + path
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(http.MethodPut, u, body)
	if err != nil {
		in.t.Fatal(err)
	}
	if in.Token != "" {
		req.Header.Set("Authorization", "Bearer "+in.Token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(in.t, req)
}

// local rewrites a link minted for testBaseURL to the running process.
func (in *instance) local(link string) string {
	in.t.Helper()
	rest, ok := strings.CutPrefix(link, testBaseURL)
	if !ok {
		in.t.Fatalf("link %q does not start with the baseURL %s", link, testBaseURL)
	}
	return in.URL + rest
}

// fetch sends method to a (local) link with hdr.
func fetch(t *testing.T, method, link string, hdr map[string]string) *httpResponse {
	t.Helper()
	req, err := http.NewRequest(method, link, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// linkKey reads the links key the server created in its data directory.
func (in *instance) linkKey() []byte {
	in.t.Helper()
	raw, err := os.ReadFile(filepath.Join(in.dataDir, "links-hmac.key"))
	if err != nil {
		in.t.Fatalf("links key: %v", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		in.t.Fatal(err)
	}
	return key
}

// signLink signs a link the way the server does (server/blobs.go), so the
// test can make links the server would never hand out.
func (in *instance) signLink(scheme, tenant, path string, exp int64, access, digest string) string {
	mac := hmac.New(sha256.New, in.linkKey())
	fmt.Fprintf(mac, "v2|%s|%s|%s|%d|%s|%s", scheme, tenant, path, exp, access, digest)
	u := fmt.Sprintf("%s/v1/blobs/%s/%s/%s?exp=%d&sha256=%s", in.URL, scheme, tenant, path, exp, digest)
	if access == "public" {
		u += "&access=public"
	}
	return u + "&sig=" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func randomBytes(n int, seed uint64) []byte {
	r := mrand.New(mrand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// statLink returns the downloadUrl stat_resource hands out for uri.
func (in *instance) statLink(uri string, extra map[string]any) map[string]any {
	in.t.Helper()
	args := map[string]any{"uri": uri, "includeDownloadUrl": true}
	for k, v := range extra {
		args[k] = v
	}
	sc := checkSuccess(in.t, in.call(v2026, "stat_resource", args), 1)
	if _, ok := sc["downloadUrl"].(string); !ok {
		in.t.Fatalf("stat_resource with includeDownloadUrl: no downloadUrl in %v", sc)
	}
	return sc
}

func wantStatus(t *testing.T, what string, r *httpResponse, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: HTTP %d, want %d: %s", what, r.Status, status, truncateBytes(r.Body, 500))
	}
}

// wantFailure checks a JSON failure value of kind with HTTP status.
func wantFailure(t *testing.T, what string, r *httpResponse, status int, kind string) map[string]any {
	t.Helper()
	wantStatus(t, what, r, status)
	m := r.json(t)
	if m["status"] != "failed" || m["errorKind"] != kind {
		t.Fatalf("%s: %s, want status failed, errorKind %s", what, r.Body, kind)
	}
	if msg, _ := m["message"].(string); len(msg) < 20 {
		t.Errorf("%s: message %q does not explain itself", what, msg)
	}
	if _, ok := m["retrySafe"].(bool); !ok {
		t.Errorf("%s: no retrySafe: %s", what, r.Body)
	}
	return m
}

// roundTrip uploads a 10 MiB body, reads it back with resources/read and
// downloads it through the signed link: all byte-identical.
func roundTrip(t *testing.T, in *instance) {
	body := randomBytes(10<<20, 1)
	r := in.upload("report", "big/blob.bin", "includeDownloadUrl=true&title=Big", bytes.NewReader(body), map[string]string{"Content-Type": "application/octet-stream"})
	wantStatus(t, "upload 10 MiB", r, http.StatusCreated)
	sc := r.json(t)
	if sc["status"] != "created" || sc["uri"] != "report://default/big/blob.bin" || sc["size"] != float64(len(body)) || sc["sha256"] != sum(body) || sc["title"] != "Big" {
		t.Fatalf("upload result: %s", r.Body)
	}
	for _, f := range []string{"name", "description", "mimeType", "createdAt", "lastModified", "expiresAt", "listed", "visibility", "downloadUrl", "downloadUrlExpiresAt", "howToRead"} {
		if _, ok := sc[f]; !ok {
			t.Errorf("upload result lacks %s: %s", f, r.Body)
		}
	}
	if r.Header.Get("ETag") != `"`+sum(body)+`"` {
		t.Errorf("upload ETag = %q", r.Header.Get("ETag"))
	}
	rr := in.read(v2026, "report://default/big/blob.bin")
	if got := rr.body(t); !bytes.Equal(got, body) {
		t.Fatalf("resources/read returned %d bytes (sha %s), want the %d uploaded", len(got), sum(got), len(body))
	}
	d := fetch(t, http.MethodGet, in.local(sc["downloadUrl"].(string)), nil)
	wantStatus(t, "download", d, http.StatusOK)
	if !bytes.Equal(d.Body, body) {
		t.Fatalf("download returned %d bytes (sha %s), want the %d uploaded", len(d.Body), sum(d.Body), len(body))
	}
	if d.Header.Get("Content-Length") != strconv.Itoa(len(body)) || d.Header.Get("Content-Type") != "application/octet-stream" ||
		d.Header.Get("ETag") != `"`+sum(body)+`"` || d.Header.Get("Cache-Control") != "private, max-age=0" {
		t.Errorf("download headers: %v", d.Header)
	}
	// A range from the middle, through the store's streaming reader.
	g := fetch(t, http.MethodGet, in.local(sc["downloadUrl"].(string)), map[string]string{"Range": "bytes=5000000-5999999"})
	wantStatus(t, "range download", g, http.StatusPartialContent)
	if !bytes.Equal(g.Body, body[5000000:6000000]) {
		t.Errorf("range download: %d bytes that differ from the body", len(g.Body))
	}

	// A chunked upload (no Content-Length) of text replaces it, bound to
	// the hash.
	text := strings.Repeat("line of text ✓\n", 100000)
	r = in.upload("report", "big/blob.bin", "", hideLen{strings.NewReader(text)}, map[string]string{"Content-Type": "text/plain; charset=utf-8", "If-Match": `"` + sum(body) + `"`})
	wantStatus(t, "chunked replace", r, http.StatusOK)
	if sc := r.json(t); sc["status"] != "replaced" || sc["size"] != float64(len(text)) || sc["sha256"] != sum([]byte(text)) {
		t.Fatalf("chunked replace result: %s", r.Body)
	}
	if got := in.read(v2025, "report://default/big/blob.bin").body(t); string(got) != text {
		t.Fatalf("resources/read after the chunked replace: %d bytes", len(got))
	}
}

const largeConfig = "schemes:\n  search: {}\n  report: {maxBytes: 24MiB}\n"

func TestLargeBodiesRoundTrip(t *testing.T) {
	roundTrip(t, startServer(t, largeConfig))
}

func TestLargeBodiesRoundTripS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	roundTrip(t, startServer(t, largeConfig+s3Config(endpoint, bucket, "it-"+randomHex(6))))
}

// withS3 runs f against a server with extraYAML on bbolt and, when the S3
// test server is configured, on S3.
func withS3(t *testing.T, extraYAML string, f func(t *testing.T, in *instance)) {
	t.Run("bbolt", func(t *testing.T) { f(t, startServer(t, extraYAML)) })
	t.Run("s3", func(t *testing.T) {
		endpoint, bucket := s3Target(t)
		f(t, startServer(t, extraYAML+s3Config(endpoint, bucket, "it-"+randomHex(6))))
	})
}

func TestUploadPreconditions(t *testing.T) { withS3(t, "", uploadPreconditions) }

func uploadPreconditions(t *testing.T, in *instance) {
	put := func(body string, hdr map[string]string, query string) *httpResponse {
		h := map[string]string{"Content-Type": "text/markdown"}
		for k, v := range hdr {
			h[k] = v
		}
		return in.upload("report", "docs/readme", query, strings.NewReader(body), h)
	}
	r := put("# v1\n", nil, "listed=true&retention=P1D")
	wantStatus(t, "create", r, http.StatusCreated)
	v1 := r.json(t)
	if v1["listed"] != true || v1["mimeType"] != "text/markdown" || v1["title"] != "readme" {
		t.Errorf("create: %s", r.Body)
	}
	sha1 := sum([]byte("# v1\n"))
	wantFailure(t, "create over an existing path", put("# v2\n", nil, ""), http.StatusPreconditionFailed, "conflict")
	wantFailure(t, "If-None-Match: * over an existing path", put("# v2\n", map[string]string{"If-None-Match": "*"}, ""), http.StatusPreconditionFailed, "conflict")
	m := wantFailure(t, "wrong If-Match", put("# v2\n", map[string]string{"If-Match": `"` + strings.Repeat("0", 64) + `"`}, ""), http.StatusPreconditionFailed, "conflict")
	if !strings.Contains(m["message"].(string), "If-Match") {
		t.Errorf("conflict message does not say how to proceed: %v", m["message"])
	}
	if got := in.read(v2026, "report://default/docs/readme").body(t); string(got) != "# v1\n" {
		t.Fatalf("body after failed uploads: %q", got)
	}
	r = put("# v2\n", map[string]string{"If-Match": `"` + sha1 + `"`}, "")
	wantStatus(t, "replace with If-Match", r, http.StatusOK)
	if sc := r.json(t); sc["status"] != "replaced" || sc["createdAt"] != v1["createdAt"] {
		t.Errorf("replace: %s (created %v)", r.Body, v1["createdAt"])
	}
	r = put("# v3\n", nil, "overwrite=true")
	wantStatus(t, "overwrite", r, http.StatusOK)
	r = in.upload("report", "docs/missing", "", strings.NewReader("x"), map[string]string{"If-Match": sha1})
	wantFailure(t, "If-Match on a missing path", r, http.StatusPreconditionFailed, "conflict")
	wantFailure(t, "If-Match and overwrite", put("x", map[string]string{"If-Match": sha1}, "overwrite=true"), http.StatusBadRequest, "validation_error")
	wantFailure(t, "If-None-Match other than *", put("x", map[string]string{"If-None-Match": `"abc"`}, ""), http.StatusBadRequest, "validation_error")

	// The upload is a report like any other: stat_resource and the
	// tools see it, and save_report's ifMatch accepts its hash.
	st := checkSuccess(t, in.call(v2026, "stat_resource", map[string]any{"uri": "report://default/docs/readme"}), 1)
	checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "docs/readme", "mimeType": "text/plain", "text": "v4", "ifMatch": st["sha256"]}), 1)
}

func TestUploadTooLarge(t *testing.T) {
	in := startServer(t, "schemes:\n  search: {}\n  report: {maxBytes: 1MiB}\n")
	body := randomBytes(1<<20+1, 2)
	r := in.upload("report", "too/big", "", bytes.NewReader(body), nil)
	m := wantFailure(t, "upload of maxBytes+1 with a Content-Length", r, http.StatusRequestEntityTooLarge, "too_large")
	if !strings.Contains(m["message"].(string), "1048576") {
		t.Errorf("too_large message does not state the limit: %v", m["message"])
	}
	// Without a Content-Length the limit is enforced while reading.
	r = in.upload("report", "too/big", "", hideLen{bytes.NewReader(randomBytes(3<<20, 3))}, nil)
	wantFailure(t, "chunked upload over maxBytes", r, http.StatusRequestEntityTooLarge, "too_large")
	checkFailure(t, in.call(v2026, "stat_resource", map[string]any{"uri": "report://default/too/big"}), "not_found")
	// Exactly maxBytes is fine.
	r = in.upload("report", "too/big", "", hideLen{bytes.NewReader(body[:1<<20])}, nil)
	wantStatus(t, "upload of exactly maxBytes", r, http.StatusCreated)
}

func TestUploadAuthAndValidation(t *testing.T) {
	in := startServer(t, "")
	noToken := in.as("")
	r := noToken.upload("report", "x", "", strings.NewReader("x"), nil)
	checkUnauthorized(t, &rawResponse{Status: r.Status, Header: r.Header, Body: r.Body}, "", "upload without a token", "this server needs a bearer token")
	bad := in.as(in.Token + "x")
	r = bad.upload("report", "x", "", strings.NewReader("x"), nil)
	checkUnauthorized(t, &rawResponse{Status: r.Status, Header: r.Header, Body: r.Body}, bad.Token, "upload with a bad token", "signature does not verify")
	if !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("bad token: WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
	}
	ro := in.as(in.mint(tokenClaims("default", scopeRead)))
	r = ro.upload("report", "x", "", strings.NewReader("x"), nil)
	wantStatus(t, "upload with a read-only token", r, http.StatusForbidden)
	if ch := r.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="resources:write"`) {
		t.Errorf("read-only upload: WWW-Authenticate %q", ch)
	}
	checkFailure(t, in.call(v2026, "stat_resource", map[string]any{"uri": "report://default/x"}), "not_found")

	// The tenant comes from the token.
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	r = acme.upload("report", "mine", "", strings.NewReader("acme's"), nil)
	wantStatus(t, "acme upload", r, http.StatusCreated)
	if u := r.json(t)["uri"]; u != "report://acme/mine" {
		t.Errorf("acme upload stored at %v", u)
	}
	checkFailure(t, in.call(v2026, "stat_resource", map[string]any{"uri": "report://acme/mine"}), "not_found")

	for _, tc := range []struct {
		what, scheme, path, query string
		body                      io.Reader
		hdr                       map[string]string
		status                    int
		kind                      string
	}{
		{"empty body", "report", "e", "", strings.NewReader(""), nil, 400, "validation_error"},
		{"dot-dot path", "report", "a/../b", "", strings.NewReader("x"), nil, 400, "validation_error"},
		{"empty segment", "report", "a//b", "", strings.NewReader("x"), nil, 400, "validation_error"},
		{"percent-encoding", "report", "a%2Fb", "", strings.NewReader("x"), nil, 400, "validation_error"},
		{"unknown scheme", "notes", "a", "", strings.NewReader("x"), nil, 404, "not_found"},
		{"search scheme", "search", "a", "", strings.NewReader("x"), nil, 400, "validation_error"},
		{"unknown parameter", "report", "a", "colour=red", strings.NewReader("x"), nil, 400, "validation_error"},
		{"bad listed", "report", "a", "listed=yes", strings.NewReader("x"), nil, 400, "validation_error"},
		{"bad visibility", "report", "a", "visibility=everyone", strings.NewReader("x"), nil, 400, "validation_error"},
		{"bad retention", "report", "a", "retention=P1M", strings.NewReader("x"), nil, 400, "validation_error"},
		{"bad media type", "report", "a", "", strings.NewReader("x"), map[string]string{"Content-Type": "nonsense"}, 400, "validation_error"},
	} {
		r := in.upload(tc.scheme, tc.path, tc.query, tc.body, tc.hdr)
		wantFailure(t, tc.what, r, tc.status, tc.kind)
	}
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/v1/resources/report/a", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer "+in.Token)
	if r := do(t, req); r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "PUT" {
		t.Errorf("POST upload: HTTP %d, Allow %q", r.Status, r.Header.Get("Allow"))
	}
	// A browser origin that is not allowed is refused, as on /mcp.
	req, _ = http.NewRequest(http.MethodPut, in.URL+"/v1/resources/report/a", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer "+in.Token)
	req.Header.Set("Origin", "https://evil.example")
	if r := do(t, req); r.Status != http.StatusForbidden {
		t.Errorf("upload from a foreign origin: HTTP %d", r.Status)
	}
}

func TestBlobLinks(t *testing.T) { withS3(t, "links: {defaultTTL: 10m, maxTTL: 30m}\n", blobLinks) }

func blobLinks(t *testing.T, in *instance) {
	body := []byte("0123456789abcdefghij")
	sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{
		"path": "links/a.txt", "mimeType": "text/plain", "text": string(body), "includeDownloadUrl": true,
	}), 1)
	link, _ := sc["downloadUrl"].(string)
	exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(sc["downloadUrlExpiresAt"]))
	if err != nil || link == "" {
		t.Fatalf("save_report with includeDownloadUrl: %v", sc)
	}
	if d := time.Until(exp); d < 9*time.Minute || d > 10*time.Minute+time.Second {
		t.Errorf("downloadUrlExpiresAt %v is not the default 10m away", exp)
	}
	if !strings.HasPrefix(link, testBaseURL+"/v1/blobs/report/default/links/a.txt?exp=") {
		t.Errorf("downloadUrl %q", link)
	}
	local := in.local(link)

	g := fetch(t, http.MethodGet, local, map[string]string{"Origin": "https://anywhere.example"})
	wantStatus(t, "GET", g, 200)
	if !bytes.Equal(g.Body, body) || g.Header.Get("Content-Type") != "text/plain" || g.Header.Get("Content-Length") != "20" ||
		g.Header.Get("ETag") != `"`+sum(body)+`"` || g.Header.Get("Cache-Control") != "private, max-age=0" ||
		g.Header.Get("Access-Control-Allow-Origin") != "*" || g.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("GET: %q %v", g.Body, g.Header)
	}
	if g.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(g.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("GET: the body is not sandboxed: %v", g.Header)
	}
	h := fetch(t, http.MethodHead, local, nil)
	if h.Status != 200 || len(h.Body) != 0 || h.Header.Get("Content-Length") != "20" || h.Header.Get("ETag") != g.Header.Get("ETag") {
		t.Errorf("HEAD: HTTP %d, %d body bytes, %v", h.Status, len(h.Body), h.Header)
	}
	for _, tc := range []struct {
		rng, want, contentRange string
	}{
		{"bytes=2-5", "2345", "bytes 2-5/20"},
		{"bytes=15-", "fghij", "bytes 15-19/20"},
		{"bytes=-3", "hij", "bytes 17-19/20"},
		{"bytes=19-100", "j", "bytes 19-19/20"},
	} {
		r := fetch(t, http.MethodGet, local, map[string]string{"Range": tc.rng})
		if r.Status != http.StatusPartialContent || string(r.Body) != tc.want || r.Header.Get("Content-Range") != tc.contentRange {
			t.Errorf("Range %s: HTTP %d %q %q, want 206 %q %q", tc.rng, r.Status, r.Body, r.Header.Get("Content-Range"), tc.want, tc.contentRange)
		}
	}
	if r := fetch(t, http.MethodGet, local, map[string]string{"Range": "bytes=20-30"}); r.Status != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("Range past the end: HTTP %d", r.Status)
	}
	if r := fetch(t, http.MethodGet, local, map[string]string{"Range": "bytes=0-1,4-5"}); r.Status != http.StatusPartialContent ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/byteranges") {
		t.Errorf("two ranges: HTTP %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if r := fetch(t, http.MethodGet, local, map[string]string{"If-None-Match": `"` + sum(body) + `"`}); r.Status != http.StatusNotModified || len(r.Body) != 0 {
		t.Errorf("If-None-Match with the ETag: HTTP %d", r.Status)
	}
	if r := fetch(t, http.MethodGet, local, map[string]string{"If-Range": `"other"`, "Range": "bytes=0-1"}); r.Status != 200 || !bytes.Equal(r.Body, body) {
		t.Errorf("If-Range with another ETag: HTTP %d", r.Status)
	}
	if r := fetch(t, http.MethodOptions, local, map[string]string{"Origin": "https://x.example", "Access-Control-Request-Method": "GET"}); r.Status != http.StatusNoContent ||
		r.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Range") {
		t.Errorf("preflight: HTTP %d %v", r.Status, r.Header)
	}

	// Refused links: one status, one body, whatever is wrong.
	u, _ := url.Parse(local)
	q := u.Query()
	sig := q.Get("sig")
	tamper := func(f func(q url.Values, u *url.URL)) string {
		c := *u
		cq := url.Values{}
		for k, v := range q {
			cq[k] = append([]string(nil), v...)
		}
		f(cq, &c)
		c.RawQuery = cq.Encode()
		return c.String()
	}
	flip := []byte(sig)
	if flip[3] == 'A' {
		flip[3] = 'B'
	} else {
		flip[3] = 'A'
	}
	// Another tenant's resource at the same path.
	other := in.as(in.mint(tokenClaims("other", scopeRead+" "+scopeWrite)))
	checkSuccess(t, other.call(v2026, "save_report", map[string]any{"path": "links/a.txt", "mimeType": "text/plain", "text": "other's secret"}), 1)
	var refusal []byte
	for name, bad := range map[string]string{
		"tampered signature":  tamper(func(q url.Values, _ *url.URL) { q.Set("sig", string(flip)) }),
		"no signature":        tamper(func(q url.Values, _ *url.URL) { q.Del("sig") }),
		"later expiry":        tamper(func(q url.Values, _ *url.URL) { q.Set("exp", strconv.FormatInt(exp.Unix()+60, 10)) }),
		"another tenant":      tamper(func(_ url.Values, u *url.URL) { u.Path = strings.Replace(u.Path, "/default/", "/other/", 1) }),
		"another path":        tamper(func(_ url.Values, u *url.URL) { u.Path = strings.Replace(u.Path, "a.txt", "b.txt", 1) }),
		"public access":       tamper(func(q url.Values, _ *url.URL) { q.Set("access", "public") }),
		"extra parameter":     tamper(func(q url.Values, _ *url.URL) { q.Set("x", "1") }),
		"expired":             in.signLink("report", "default", "links/a.txt", time.Now().Add(-time.Second).Unix(), "owner", sum(body)),
		"beyond maxTTL":       in.signLink("report", "default", "links/a.txt", time.Now().Add(2*time.Hour).Unix(), "owner", sum(body)),
		"percent-encoded":     strings.Replace(local, "a.txt", "a%2Etxt", 1),
		"garbage":             in.URL + "/v1/blobs/x",
		"other tenant signed": strings.Replace(in.signLink("report", "default", "links/a.txt", exp.Unix(), "owner", sum(body)), "/default/", "/other/", 1),
	} {
		r := fetch(t, http.MethodGet, bad, nil)
		if r.Status != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 403: %s", name, r.Status, r.Body)
			continue
		}
		if refusal == nil {
			refusal = r.Body
		} else if !bytes.Equal(r.Body, refusal) {
			t.Errorf("%s: refusal %q differs from %q", name, r.Body, refusal)
		}
		if bytes.Contains(r.Body, []byte("secret")) || bytes.Contains(r.Body, body) {
			t.Errorf("%s: refusal leaks the body", name)
		}
	}
	// The test signs like the server: a fresh link of its own works...
	if r := fetch(t, http.MethodGet, in.signLink("report", "default", "links/a.txt", time.Now().Add(time.Minute).Unix(), "owner", sum(body)), nil); r.Status != 200 {
		t.Fatalf("a link signed by the test with the server's key: HTTP %d (the canonical string changed?)", r.Status)
	}
	// ...and with a valid link, every missing resource is the same 404.
	var missing []byte
	for name, l := range map[string]string{
		"never existed": in.signLink("report", "default", "links/none", exp.Unix(), "owner", sum(body)),
		"bad grammar":   in.signLink("report", "default", "a//b", exp.Unix(), "owner", sum(body)),
		// A scheme no longer configured is not found, as on every route
		// (service.Resolve).
		"no scheme": in.signLink("notes", "default", "links/a.txt", exp.Unix(), "owner", sum(body)),
	} {
		r := fetch(t, http.MethodGet, l, nil)
		if name == "bad grammar" {
			if r.Status != http.StatusForbidden {
				t.Errorf("%s: HTTP %d, want 403 (the server never signs it)", name, r.Status)
			}
			continue
		}
		wantStatus(t, name, r, http.StatusNotFound)
		missing = r.Body
	}
	checkSuccess(t, in.call(v2026, "delete_resource", map[string]any{"uri": "report://default/links/a.txt"}), 0)
	r := fetch(t, http.MethodGet, local, nil)
	if r.Status != http.StatusNotFound || !bytes.Equal(r.Body, missing) {
		t.Errorf("deleted: HTTP %d %q, want the 404 of a resource that never existed (%q)", r.Status, r.Body, missing)
	}

	// A link to another tenant's public resource stops working when it is
	// no longer public; a caller may ask for a shorter life, and a longer
	// one is capped at maxTTL.
	pub := checkSuccess(t, other.call(v2026, "save_report", map[string]any{"path": "pub/doc", "mimeType": "text/csv", "text": "a,b\n1,2\n", "visibility": "public"}), 1)
	st := in.statLink(pub["uri"].(string), map[string]any{"downloadUrlTtl": "PT2M"})
	pl := in.local(st["downloadUrl"].(string))
	if !strings.Contains(pl, "access=public") {
		t.Errorf("link to another tenant's public resource: %s", pl)
	}
	pexp, _ := time.Parse(time.RFC3339Nano, st["downloadUrlExpiresAt"].(string))
	if d := time.Until(pexp); d > 2*time.Minute || d < time.Minute {
		t.Errorf("downloadUrlTtl PT2M gave a link expiring in %v", d)
	}
	r = fetch(t, http.MethodGet, pl, nil)
	if r.Status != 200 || string(r.Body) != "a,b\n1,2\n" || r.Header.Get("Cache-Control") != "public, max-age=0" {
		t.Errorf("public link: HTTP %d %q %v", r.Status, r.Body, r.Header)
	}
	long := in.statLink(pub["uri"].(string), map[string]any{"downloadUrlTtl": 86400})
	lexp, _ := time.Parse(time.RFC3339Nano, long["downloadUrlExpiresAt"].(string))
	if d := time.Until(lexp); d > 30*time.Minute+time.Second {
		t.Errorf("downloadUrlTtl of a day gave a link expiring in %v, beyond maxTTL 30m", d)
	}
	checkSuccess(t, other.call(v2026, "save_report", map[string]any{"path": "pub/doc", "mimeType": "text/csv", "text": "now private\n", "overwrite": true}), 1)
	if r := fetch(t, http.MethodGet, pl, nil); r.Status != http.StatusNotFound || !bytes.Equal(r.Body, missing) {
		t.Errorf("public link after the resource became private: HTTP %d %q", r.Status, r.Body)
	}
	// The owner's own link keeps working.
	own := other.statLink(pub["uri"].(string), nil)
	if r := fetch(t, http.MethodGet, in.local(own["downloadUrl"].(string)), nil); r.Status != 200 || string(r.Body) != "now private\n" {
		t.Errorf("owner's link: HTTP %d %q", r.Status, r.Body)
	}
	// Snapshots get links too, and a link never outlives its resource.
	snap := checkSuccess(t, in.call(v2026, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "retention": 120, "includeDownloadUrl": true}), 1)
	sexp, _ := time.Parse(time.RFC3339Nano, snap["downloadUrlExpiresAt"].(string))
	rexp, _ := time.Parse(time.RFC3339Nano, snap["expiresAt"].(string))
	if sexp.After(rexp) {
		t.Errorf("snapshot link expires at %v, after the snapshot (%v)", sexp, rexp)
	}
	r = fetch(t, http.MethodGet, in.local(snap["downloadUrl"].(string)), nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.Header.Get("Cache-Control"), "private, max-age=") {
		t.Errorf("snapshot link: HTTP %d %v", r.Status, r.Header)
	}
	// Link arguments are validated.
	checkFailure(t, in.call(v2026, "stat_resource", map[string]any{"uri": pub["uri"], "downloadUrlTtl": 60}), "validation_error")
	checkFailure(t, in.call(v2026, "stat_resource", map[string]any{"uri": pub["uri"], "includeDownloadUrl": true, "downloadUrlTtl": "soon"}), "validation_error")
	// Blob links are not a way around the method: no PUT or DELETE.
	req, _ := http.NewRequest(http.MethodDelete, pl, nil)
	if r := do(t, req); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE on a link: HTTP %d", r.Status)
	}
}

// readTool calls read_resource and returns the result, its structured
// value and the window bytes.
func (in *instance) readTool(version string, args map[string]any) (*toolResult, map[string]any, []byte) {
	in.t.Helper()
	r := in.rpc(version, "tools/call", map[string]any{"name": "read_resource", "arguments": args})
	if r.Error != nil {
		in.t.Fatalf("read_resource: JSON-RPC error %s", r.Body)
	}
	var res struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Resource *struct {
				URI      string  `json:"uri"`
				MIMEType string  `json:"mimeType"`
				Text     *string `json:"text"`
				Blob     *string `json:"blob"`
			} `json:"resource"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		in.t.Fatal(err)
	}
	tr := &toolResult{raw: r.Result, StructuredContent: res.StructuredContent, IsError: res.IsError}
	for _, c := range res.Content {
		tr.Content = append(tr.Content, struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			URI         string `json:"uri"`
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
			MIMEType    string `json:"mimeType"`
			Size        *int64 `json:"size"`
			Annotations *struct {
				LastModified string `json:"lastModified"`
			} `json:"annotations"`
		}{Type: c.Type, Text: c.Text})
	}
	if res.IsError {
		return tr, nil, nil
	}
	sc := tr.structured(in.t)
	if len(res.Content) != 2 || res.Content[0].Type != "text" {
		in.t.Fatalf("read_resource: want a JSON text item and a window item: %s", r.Result)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].Text), &fromText); err != nil || fmt.Sprint(fromText) != fmt.Sprint(sc) {
		in.t.Errorf("read_resource: first text item is not the structured value: %s", res.Content[0].Text)
	}
	var window []byte
	chars := utf8.RuneCountInString(res.Content[0].Text)
	switch w := res.Content[1]; {
	case w.Type == "text" && sc["encoding"] == "text":
		window = []byte(w.Text)
		chars += utf8.RuneCountInString(w.Text)
	case w.Type == "resource" && w.Resource != nil && w.Resource.Blob != nil && sc["encoding"] == "base64":
		b, err := base64.StdEncoding.DecodeString(*w.Resource.Blob)
		if err != nil {
			in.t.Fatal(err)
		}
		window = b
		chars += len(*w.Resource.Blob)
		if w.Resource.URI != sc["uri"] {
			in.t.Errorf("embedded resource uri %q", w.Resource.URI)
		}
	default:
		in.t.Fatalf("read_resource: window item %s does not match encoding %v", r.Result, sc["encoding"])
	}
	if chars > readLimit {
		in.t.Errorf("read_resource result holds %d characters, over the limit %d", chars, readLimit)
	}
	rng := sc["range"].(map[string]any)
	if int(rng["length"].(float64)) != len(window) {
		in.t.Errorf("range.length %v, window of %d bytes", rng["length"], len(window))
	}
	return tr, sc, window
}

const readLimit = 4096

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func TestReadResourceTool(t *testing.T) {
	withS3(t, fmt.Sprintf("limits: {maxReadChars: %d}\n", readLimit), readResourceTool)
}

func readResourceTool(t *testing.T, in *instance) {
	save := func(path, mimeType string, body []byte) string {
		args := map[string]any{"path": path, "mimeType": mimeType}
		if utf8.Valid(body) {
			args["text"] = string(body)
		} else {
			args["blobBase64"] = base64.StdEncoding.EncodeToString(body)
		}
		return checkSuccess(t, in.call(v2026, "save_report", args), 1)["uri"].(string)
	}
	multi := "aé日🙂z\nsecond line ✓\nthird\n"
	mu := save("read/multi", "text/plain", []byte(multi))

	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			// Bytes.
			_, sc, w := in.readTool(v, map[string]any{"uri": mu, "offset": 0, "length": 1})
			if string(w) != "a" || num(sc["nextOffset"]) != 1 || sc["truncated"] != false || sc["totalSize"] != float64(len(multi)) || sc["sha256"] != sum([]byte(multi)) {
				t.Errorf("offset 0 length 1: %q %v", w, sc)
			}
			// An offset inside "é" (bytes 1-2) starts at its first byte; a
			// length ending inside "日" (bytes 3-5) stops before it.
			_, sc, w = in.readTool(v, map[string]any{"uri": mu, "offset": 2, "length": 3})
			if string(w) != "é" || num(sc["range"].(map[string]any)["offset"]) != 1 || num(sc["nextOffset"]) != 3 {
				t.Errorf("offset 2 length 3: %q %v", w, sc)
			}
			// A window too short for the character it starts on holds it.
			_, sc, w = in.readTool(v, map[string]any{"uri": mu, "offset": 6, "length": 1})
			if string(w) != "🙂" || num(sc["nextOffset"]) != 10 {
				t.Errorf("offset 6 length 1: %q %v", w, sc)
			}
			// Lines.
			_, sc, w = in.readTool(v, map[string]any{"uri": mu, "startLine": 2, "lineCount": 1})
			rng := sc["range"].(map[string]any)
			if string(w) != "second line ✓\n" || num(sc["nextLine"]) != 3 || num(rng["startLine"]) != 2 || num(rng["lineCount"]) != 1 || num(rng["offset"]) != 12 {
				t.Errorf("line 2: %q %v", w, sc)
			}
			_, sc, w = in.readTool(v, map[string]any{"uri": mu, "startLine": 3})
			if string(w) != "third\n" || sc["nextLine"] != nil || sc["nextOffset"] != nil || sc["truncated"] != false {
				t.Errorf("line 3 to the end: %q %v", w, sc)
			}
			// Past the end.
			r, _, _ := in.readTool(v, map[string]any{"uri": mu, "startLine": 4})
			if f := checkFailure(t, r, "validation_error"); !strings.Contains(fmt.Sprint(f["message"]), "3 lines") {
				t.Errorf("startLine 4: %v", f["message"])
			}
			r, _, _ = in.readTool(v, map[string]any{"uri": mu, "offset": len(multi) + 1})
			checkFailure(t, r, "validation_error")
			_, sc, w = in.readTool(v, map[string]any{"uri": mu, "offset": len(multi)})
			if len(w) != 0 || sc["nextOffset"] != nil {
				t.Errorf("offset at the end: %q %v", w, sc)
			}
			// Argument errors.
			for _, args := range []map[string]any{
				{"uri": mu, "offset": 1, "startLine": 1},
				{"uri": mu, "length": 0},
				{"uri": mu, "startLine": 0},
				{"uri": mu, "offset": -1},
				{"uri": "REPORT://default/read/multi"},
				{"uri": mu, "colour": 1},
			} {
				r, _, _ := in.readTool(v, args)
				checkFailure(t, r, "validation_error")
			}
			// Unreadable URIs are not_found, all alike.
			other := in.as(in.mint(tokenClaims("other", scopeRead)))
			for _, u := range []string{"report://default/read/none", "unknown://default/x", mu} {
				caller := in
				if u == mu {
					caller = other // another tenant's private report
				}
				r, _, _ := caller.readTool(v, map[string]any{"uri": u})
				checkFailure(t, r, "not_found")
			}
		})
	}

	// Long bodies come in windows that reassemble to the body, each within
	// the limit, whether followed by offset or by line.
	var long strings.Builder
	for i := 0; long.Len() < 30000; i++ {
		fmt.Fprintf(&long, "%05d ünïcödé 日本語 🙂 line\n", i)
	}
	lu := save("read/long", "text/markdown", []byte(long.String()))
	var got []byte
	windows := 0
	for off := int64(0); ; windows++ {
		_, sc, w := in.readTool(v2026, map[string]any{"uri": lu, "offset": off})
		if !utf8.Valid(w) {
			t.Fatalf("window at %d is not valid UTF-8", off)
		}
		got = append(got, w...)
		if sc["nextOffset"] == nil {
			if sc["truncated"] != false {
				t.Errorf("last window truncated")
			}
			break
		}
		if sc["truncated"] != true {
			t.Errorf("window at %d stopped early without truncated", off)
		}
		off = num(sc["nextOffset"])
	}
	if string(got) != long.String() || windows < 3 {
		t.Errorf("byte windows reassemble %d bytes in %d windows, want the %d of the body", len(got), windows+1, long.Len())
	}
	got = got[:0]
	for line := int64(1); ; {
		_, sc, w := in.readTool(v2026, map[string]any{"uri": lu, "startLine": line})
		if len(w) == 0 || w[len(w)-1] != '\n' {
			t.Fatalf("line window at %d does not end with a whole line", line)
		}
		got = append(got, w...)
		if sc["nextLine"] == nil {
			break
		}
		if num(sc["nextLine"]) <= line {
			t.Fatalf("nextLine %v does not advance from %d", sc["nextLine"], line)
		}
		line = num(sc["nextLine"])
	}
	if string(got) != long.String() {
		t.Errorf("line windows reassemble %d bytes, want %d", len(got), long.Len())
	}
	_, sc, w := in.readTool(v2026, map[string]any{"uri": lu, "startLine": 10, "lineCount": 2})
	if strings.Count(string(w), "\n") != 2 || !strings.HasPrefix(string(w), "00009 ") || num(sc["nextLine"]) != 12 || sc["truncated"] != false {
		t.Errorf("lines 10-11: %q %v", w, sc)
	}
	_, sc, _ = in.readTool(v2026, map[string]any{"uri": lu, "offset": 0, "length": 100000})
	if sc["truncated"] != true {
		t.Errorf("a window longer than the limit is not marked truncated: %v", sc)
	}

	// One line longer than the limit: its start, with nextOffset only.
	huge := strings.Repeat("x", 10000) + "\nend\n"
	hu := save("read/oneline", "text/plain", []byte(huge))
	_, sc, w = in.readTool(v2026, map[string]any{"uri": hu, "startLine": 1})
	if len(w) == 0 || len(w) >= 10000 || sc["nextLine"] != nil || sc["nextOffset"] == nil || sc["truncated"] != true {
		t.Errorf("a line over the limit: %d bytes %v", len(w), sc)
	}

	// Binary bodies: embedded base64 blobs, exact byte windows.
	bin := randomBytes(5000, 9)
	bu := save("read/bin", "application/octet-stream", bin)
	got = got[:0]
	for off := int64(0); ; {
		_, sc, w := in.readTool(v2026, map[string]any{"uri": bu, "offset": off})
		if sc["encoding"] != "base64" {
			t.Fatalf("binary window encoding %v", sc["encoding"])
		}
		got = append(got, w...)
		if sc["nextOffset"] == nil {
			break
		}
		off = num(sc["nextOffset"])
	}
	if !bytes.Equal(got, bin) {
		t.Errorf("binary windows reassemble %d bytes, want %d", len(got), len(bin))
	}
	_, sc, w = in.readTool(v2026, map[string]any{"uri": bu, "offset": 4990, "length": 5})
	if !bytes.Equal(w, bin[4990:4995]) || num(sc["nextOffset"]) != 4995 {
		t.Errorf("binary offset 4990 length 5: %v", sc)
	}
	r, _, _ := in.readTool(v2026, map[string]any{"uri": bu, "startLine": 1})
	checkFailure(t, r, "validation_error")
	// Text that is not UTF-8 goes out as base64 too.
	bad := []byte("ok \xff\xfe bytes\n")
	xu := save("read/latin1", "text/plain", bad)
	_, sc, w = in.readTool(v2026, map[string]any{"uri": xu})
	if sc["encoding"] != "base64" || !bytes.Equal(w, bad) {
		t.Errorf("invalid UTF-8 text: %v %q", sc["encoding"], w)
	}

	// A read-only token may read, and public resources of others are
	// readable; includeDownloadUrl works here too.
	pub := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "read/pub", "mimeType": "text/plain", "text": "shared", "visibility": "public"}), 1)
	ro := in.as(in.mint(tokenClaims("other", scopeRead)))
	_, sc, w = ro.readTool(v2025, map[string]any{"uri": pub["uri"], "includeDownloadUrl": true})
	if string(w) != "shared" || !strings.Contains(fmt.Sprint(sc["downloadUrl"]), "access=public") {
		t.Errorf("public read by another tenant: %q %v", w, sc)
	}
}

// TestLargeBodiesRSS measures the server's peak resident memory for a
// 64 MiB upload and download (bench/LARGE-BODIES.md). It runs only with
// RESOURCED_IT_RSS=1 (Linux: it reads /proc); RESOURCED_IT_RSS_MIB sets
// another size.
func TestLargeBodiesRSS(t *testing.T) {
	if os.Getenv("RESOURCED_IT_RSS") != "1" {
		t.Skip("set RESOURCED_IT_RSS=1 to measure peak RSS for 64 MiB bodies")
	}
	mib := 64
	if v, err := strconv.Atoi(os.Getenv("RESOURCED_IT_RSS_MIB")); err == nil && v > 0 {
		mib = v
	}
	size := mib << 20
	cfg := fmt.Sprintf("schemes:\n  search: {}\n  report: {maxBytes: %dMiB}\n", mib+16)
	backends := map[string]string{"bbolt": ""}
	if e, b := os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET"); e != "" && b != "" {
		backends["s3"] = s3Config(e, b, "rss-"+randomHex(6))
	}
	for name, extra := range backends {
		t.Run(name, func(t *testing.T) {
			in := startServer(t, cfg+extra)
			body := randomBytes(size, 64)
			// Each measurement runs in a fresh process (same data), so
			// that memory an earlier request left to the Go heap does not
			// hide what this one needs.
			measure := func(what string, f func()) {
				t.Helper()
				in.restart()
				pid := in.cmd.Process.Pid
				base := procStatus(t, pid, "VmRSS")
				if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
					t.Fatalf("resetting VmHWM: %v", err)
				}
				start := time.Now()
				stop := make(chan struct{})
				peaks := make(chan [2]float64)
				go func() { // the anonymous (heap) and file-backed (mmap) parts, sampled
					var anon, file float64
					tick := time.NewTicker(2 * time.Millisecond)
					defer tick.Stop()
					for {
						anon, file = max(anon, readStatus(pid, "RssAnon")), max(file, readStatus(pid, "RssFile"))
						select {
						case <-stop:
							peaks <- [2]float64{anon, file}
							return
						case <-tick.C:
						}
					}
				}()
				f()
				close(stop)
				pk := <-peaks
				hwm := procStatus(t, pid, "VmHWM")
				t.Logf("RSS %s %-34s baseline %6.1f MiB  peak %6.1f MiB (+%5.1f; sampled peaks: anon %6.1f, file %5.1f)  %v",
					name, what, base, hwm, hwm-base, pk[0], pk[1], time.Since(start).Round(time.Millisecond))
			}
			var link string
			measure(fmt.Sprintf("PUT /v1/resources %d MiB", mib), func() {
				r := in.upload("report", "rss/up", "includeDownloadUrl=true", hideLen{bytes.NewReader(body)}, nil)
				wantStatus(t, "upload", r, http.StatusCreated)
				link = r.json(t)["downloadUrl"].(string)
			})
			measure(fmt.Sprintf("GET /v1/blobs %d MiB", mib), func() {
				req, _ := http.NewRequest(http.MethodGet, in.local(link), nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				h := sha256.New()
				n, err := io.Copy(h, resp.Body)
				resp.Body.Close()
				if err != nil || n != int64(size) || fmt.Sprintf("%x", h.Sum(nil)) != sum(body) {
					t.Fatalf("download: %d bytes, %v", n, err)
				}
			})
			measure(fmt.Sprintf("save_report %d MiB (JSON-RPC)", mib), func() {
				r := in.call(v2025, "save_report", map[string]any{"path": "rss/tool", "mimeType": "application/octet-stream", "blobBase64": base64.StdEncoding.EncodeToString(body)})
				checkSuccess(t, r, 1)
			})
			measure(fmt.Sprintf("resources/read %d MiB (JSON-RPC)", mib), func() {
				if _, err := postRaw(in.URL, in.Token, []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://default/rss/tool"}}`)); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// procStatus returns a VmRSS/VmHWM-style field of /proc/PID/status in MiB.
func procStatus(t *testing.T, pid int, field string) float64 {
	t.Helper()
	v := readStatus(pid, field)
	if v < 0 {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	return v
}

// readStatus is procStatus without a test: -1 when it cannot be read.
func readStatus(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}
