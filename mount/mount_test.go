package mount_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/client/clienttest"
	"github.com/resourced/resourced/mount"
)

// env is resourced plus a producing go-sdk server that mounts it. Users of
// the producer authenticate with their own keys; the producer maps each
// user to a resourced token of the user's tenant.
type env struct {
	rd       *clienttest.Server
	producer string // MCP endpoint of the producing server
	tokens   map[string]string
}

var users = map[string]string{"alice-key": "alice", "bob-key": "bob", "carol-key": "carol"}

func newEnv(t testing.TB, rdOpts *clienttest.Options, cache *mount.Cache) *env {
	t.Helper()
	rd := clienttest.New(t, rdOpts)
	return newEnvOn(t, rd, rd.URL, cache)
}

func newEnvOn(t testing.TB, rd *clienttest.Server, endpoint string, cache *mount.Cache) *env {
	t.Helper()
	e := &env{rd: rd, tokens: map[string]string{"alice": rd.Token("acme"), "bob": rd.Token("beta")}}
	cl, err := resourced.NewClient(endpoint, resourced.StaticToken(e.tokens["alice"]),
		&resourced.Options{Retry: resourced.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "producer", Version: "1"}, nil)
	err = mount.Resources(s, cl, mount.Options{
		Cache: cache,
		TokenFor: func(ctx context.Context, req *mcp.ReadResourceRequest) (string, error) {
			tok, ok := e.tokens[req.Extra.TokenInfo.UserID]
			if !ok {
				return "", errors.New("no tenant for this user")
			}
			return tok, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(_ context.Context, key string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		u, ok := users[key]
		if !ok {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: u, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(sdkauth.RequireBearerToken(verify, nil)(h))
	t.Cleanup(hs.Close)
	e.producer = hs.URL
	return e
}

// save stores a report as tenant acme directly in resourced.
func (e *env) save(t testing.TB, r *resourced.Report) *resourced.Saved {
	t.Helper()
	c, _ := resourced.NewClient(e.rd.URL, resourced.StaticToken(e.tokens["alice"]), nil)
	s, err := c.SaveReport(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type rpcAnswer struct {
	Status int
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// read sends resources/read as raw JSON-RPC speaking version, with the
// bearer token, and returns the answer.
func read(t testing.TB, endpoint, token, version, uri string) rpcAnswer {
	t.Helper()
	params := map[string]any{"uri": uri}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Authorization": {"Bearer " + token}, "Mcp-Protocol-Version": {version}}
	if version >= "2026-07-28" {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mount-test", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		hdr.Set("Mcp-Method", "resources/read")
		hdr.Set("Mcp-Name", uri)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": params})
	req, _ := http.NewRequest("POST", endpoint, bytes.NewReader(body))
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := rpcAnswer{Status: resp.StatusCode}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%s answered HTTP %d, not JSON: %s", endpoint, resp.StatusCode, b)
	}
	return a
}

// jsonEqual compares two results, except for the serverInfo each server
// puts in a 2026-07-28 result's _meta: the mount's must name the producer.
func jsonEqual(t testing.TB, what string, want, got json.RawMessage) {
	t.Helper()
	var w, g map[string]any
	json.Unmarshal(want, &w)
	json.Unmarshal(got, &g)
	const si = "io.modelcontextprotocol/serverInfo"
	for _, m := range []map[string]any{w, g} {
		meta, _ := m["_meta"].(map[string]any)
		if info, ok := meta[si].(map[string]any); ok {
			if m == nil {
				continue
			}
			m["serverInfo"] = info["name"]
			delete(meta, si)
			if len(meta) == 0 {
				delete(m, "_meta")
			}
		}
	}
	if g["serverInfo"] != nil {
		if g["serverInfo"] != "producer" {
			t.Errorf("%s: serverInfo through the mount names %v, want the producer", what, g["serverInfo"])
		}
		g["serverInfo"] = w["serverInfo"]
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s: through the mount differs from resourced (-resourced +mount):\n%s", what, diff)
	}
}

var versions = []string{"2026-07-28", "2025-11-25"}

func TestPassThrough(t *testing.T) {
	e := newEnv(t, nil, nil)
	text := e.save(t, &resourced.Report{Path: "r/text", MIMEType: "text/csv", Text: "a,b\n1,2\n"})
	bin := e.save(t, &resourced.Report{Path: "r/bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 0xff}})
	pub := e.save(t, &resourced.Report{Path: "r/pub", MIMEType: "text/plain", Text: "for all", SaveOptions: resourced.SaveOptions{Visibility: resourced.Public}})
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			for _, uri := range []string{text.URI, bin.URI, pub.URI} {
				want := read(t, e.rd.URL, e.tokens["alice"], v, uri)
				got := read(t, e.producer+"/", "alice-key", v, uri)
				if want.Error != nil || got.Error != nil {
					t.Fatalf("read %s: resourced %s, mount %s", uri, want.Error, got.Error)
				}
				jsonEqual(t, "result of "+uri, want.Result, got.Result)
			}
			// The public report, read by another tenant.
			jsonEqual(t, "public report for bob", read(t, e.rd.URL, e.tokens["bob"], v, pub.URI).Result,
				read(t, e.producer, "bob-key", v, pub.URI).Result)
		})
	}
}

func TestErrorsPassThrough(t *testing.T) {
	e := newEnv(t, nil, nil)
	saved := e.save(t, &resourced.Report{Path: "secret", MIMEType: "text/plain", Text: "acme only"})
	cases := []struct {
		name, user, uri string
		versions        []string
	}{
		{"unknown", "alice", "report://acme/nope", versions},
		{"another tenant's", "bob", saved.URI, versions},
		{"malformed", "alice", "report://acme/a//b", versions},
		{"upper-case scheme (no template matches)", "alice", "REPORT://acme/x", versions},
		{"no path (no template matches)", "alice", "report://acme", versions},
		{"control character (no template matches)", "alice", "report://acme/a\x01b", []string{"2025-11-25"}},
		{"html characters", "alice", "report://acme/<b>&", versions},
	}
	for _, c := range cases {
		for _, v := range c.versions {
			t.Run(c.name+"/"+v, func(t *testing.T) {
				want := read(t, e.rd.URL, e.tokens[c.user], v, c.uri)
				got := read(t, e.producer, c.user+"-key", v, c.uri)
				if want.Error == nil {
					t.Fatalf("resourced served %s", c.uri)
				}
				if !bytes.Equal(want.Error, got.Error) {
					t.Errorf("error through the mount:\n got %s\nwant %s", got.Error, want.Error)
				}
			})
		}
	}
	// A user the producer has no tenant for gets the not-found answer.
	want := read(t, e.rd.URL, e.tokens["alice"], "2025-11-25", "report://acme/nope")
	got := read(t, e.producer, "carol-key", "2025-11-25", "report://acme/nope")
	if !bytes.Equal(want.Error, got.Error) {
		t.Errorf("TokenFor failing: got %s, want %s", got.Error, want.Error)
	}
}

func TestResourcedDown(t *testing.T) {
	rd := clienttest.New(t, nil)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	e := newEnvOn(t, rd, dead, nil)
	got := read(t, e.producer, "alice-key", "2025-11-25", "report://acme/x")
	var je struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	json.Unmarshal(got.Error, &je)
	if je.Code != -32603 || strings.Contains(string(got.Error), "127.0.0.1") {
		t.Errorf("resourced down: %s, want a generic -32603 naming no address", got.Error)
	}
}

// TestGoSDKClient reads through the mount with go-sdk's client, both
// protocols, and checks the hints it sees.
func TestGoSDKClient(t *testing.T) {
	e := newEnv(t, &clienttest.Options{ReportTTL: time.Minute}, nil)
	saved := e.save(t, &resourced.Report{Path: "r/x", MIMEType: "text/plain", Text: "hello"})
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			hc := &http.Client{Transport: bearer{"alice-key"}}
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.producer, HTTPClient: hc, DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: saved.URI})
			if err != nil {
				t.Fatal(err)
			}
			if res.Contents[0].Text != "hello" || res.CacheScope != "private" || res.TTLMs <= 0 || res.TTLMs > 60000 {
				t.Errorf("read = %+v ttl %d scope %q", res.Contents[0], res.TTLMs, res.CacheScope)
			}
			tl, err := cs.ListResourceTemplates(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tp := range tl.ResourceTemplates {
				got = append(got, tp.URITemplate)
			}
			if diff := cmp.Diff([]string{"report://{tenant}/{+path}", "search://{tenant}/{+path}"}, got); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
		})
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

func TestCache(t *testing.T) {
	cache := mount.NewCache(1 << 20)
	e := newEnv(t, &clienttest.Options{ReportTTL: time.Minute}, cache)
	priv := e.save(t, &resourced.Report{Path: "c/private", MIMEType: "text/plain", Text: "acme"})
	pub := e.save(t, &resourced.Report{Path: "c/public", MIMEType: "text/plain", Text: "all", SaveOptions: resourced.SaveOptions{Visibility: resourced.Public}})
	v := "2025-11-25"

	first := read(t, e.producer, "alice-key", v, priv.URI)
	second := read(t, e.producer, "alice-key", v, priv.URI)
	if s := cache.Stats(); s.Hits != 1 || s.Stores != 1 {
		t.Errorf("after two reads: %+v, want 1 store and 1 hit", s)
	}
	var a, b struct {
		TTLMs    int    `json:"ttlMs"`
		Scope    string `json:"cacheScope"`
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	json.Unmarshal(first.Result, &a)
	json.Unmarshal(second.Result, &b)
	if b.Contents[0].Text != "acme" || b.Scope != "private" || b.TTLMs > a.TTLMs || b.TTLMs <= 0 {
		t.Errorf("cached answer %+v after %+v: want the same body, private, ttl not above the first", b, a)
	}

	// A private entry is never served for another token: bob asks resourced
	// and gets its not-found.
	got := read(t, e.producer, "bob-key", v, priv.URI)
	want := read(t, e.rd.URL, e.tokens["bob"], v, priv.URI)
	if got.Error == nil || !bytes.Equal(got.Error, want.Error) {
		t.Errorf("bob read alice's cached private report: %s %s", got.Result, got.Error)
	}

	// A public entry is.
	read(t, e.producer, "alice-key", v, pub.URI)
	hits := cache.Stats().Hits
	if r := read(t, e.producer, "bob-key", v, pub.URI); r.Error != nil || cache.Stats().Hits != hits+1 {
		t.Errorf("public entry not shared: %s, hits %d -> %d", r.Error, hits, cache.Stats().Hits)
	}

	// ttlMs 0 is never cached.
	e0 := newEnv(t, nil, mount.NewCache(1<<20))
	r0 := e0.save(t, &resourced.Report{Path: "c/zero", MIMEType: "text/plain", Text: "x"})
	read(t, e0.producer, "alice-key", v, r0.URI)
	read(t, e0.producer, "alice-key", v, r0.URI)
}

func TestCacheBounds(t *testing.T) {
	cache := mount.NewCache(64 << 10)
	e := newEnv(t, &clienttest.Options{ReportTTL: time.Minute}, cache)
	body := strings.Repeat("x", 10<<10)
	for i := range 10 {
		s := e.save(t, &resourced.Report{Path: fmt.Sprintf("b/%d", i), MIMEType: "text/plain", Text: body})
		read(t, e.producer, "alice-key", "2025-11-25", s.URI)
	}
	big := e.save(t, &resourced.Report{Path: "b/big", MIMEType: "text/plain", Text: strings.Repeat("y", 20<<10)})
	read(t, e.producer, "alice-key", "2025-11-25", big.URI)
	s := cache.Stats()
	if s.Bytes > 64<<10 || s.Evictions == 0 || s.Stores != 10 {
		t.Errorf("stats %+v: want at most 64 KiB, evictions, and the 20 KiB body (over a quarter) not stored", s)
	}
}

func TestOptions(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	c, _ := resourced.NewClient("http://127.0.0.1:1/mcp", resourced.StaticToken("t"), nil)
	if err := mount.Resources(s, c, mount.Options{}); err == nil {
		t.Error("Resources without TokenFor succeeded")
	}
	tf := func(context.Context, *mcp.ReadResourceRequest) (string, error) { return "", nil }
	if err := mount.Resources(s, c, mount.Options{TokenFor: tf, Schemes: []string{"Report"}}); err == nil {
		t.Error("Resources accepted an upper-case scheme")
	}
}

// BenchmarkRead measures a 2 MB report read through the mount, without and
// with the cache (report ttl 1m so it can be cached), against resourced
// read directly. Run: go test -run - -bench . ./mount
func BenchmarkRead(b *testing.B) {
	body := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1, 2, 3}, 512<<10))[:2<<20]
	rd := clienttest.New(b, &clienttest.Options{ReportTTL: time.Minute})
	for _, cfg := range []struct {
		name  string
		cache *mount.Cache
	}{{"direct", nil}, {"mount", nil}, {"mount+cache", mount.NewCache(0)}} {
		b.Run(cfg.name, func(b *testing.B) {
			e := newEnvOn(b, rd, rd.URL, cfg.cache)
			s := e.save(b, &resourced.Report{Path: "bench/" + strings.ReplaceAll(cfg.name, "+", "-"), MIMEType: "text/csv", Text: body})
			endpoint, tok := e.producer, "alice-key"
			if cfg.name == "direct" {
				endpoint, tok = rd.URL, e.tokens["alice"]
			}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for b.Loop() {
				if r := read(b, endpoint, tok, "2026-07-28", s.URI); r.Error != nil {
					b.Fatal(string(r.Error))
				}
			}
		})
	}
}
