package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const metadataURL = testBaseURL + "/.well-known/oauth-protected-resource"

// listTools sends tools/list with the instance's token and returns the
// HTTP exchange (schema-validated when it is JSON-RPC).
func (in *instance) listTools() *rawResponse {
	in.t.Helper()
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", v2025)
	return in.post(hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
}

// refusal is the OAuth error body of a refused registration.
type refusal struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
	Scope       string `json:"scope"`
}

// challengeParams parses a Bearer WWW-Authenticate value into its
// auth-params (RFC 6750 §3: quoted strings without escapes).
func challengeParams(t *testing.T, ch string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(ch, "Bearer ")
	if !ok {
		t.Errorf("WWW-Authenticate = %q, want the Bearer scheme", ch)
		return nil
	}
	params := map[string]string{}
	for _, m := range regexp.MustCompile(`([a-z_]+)="([^"\\]*)"(, |$)`).FindAllStringSubmatch(rest, -1) {
		params[m[1]] = m[2]
	}
	return params
}

// checkUnauthorized asserts a 401 whose challenge names the cause: with a
// token sent, error="invalid_token" and an error_description containing
// want, the same in the plain-text body, and neither echoing the token.
// With static keys no resource_metadata is advertised.
func checkUnauthorized(t *testing.T, r *rawResponse, token, what, want string) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Errorf("%s: HTTP %d, want 401: %s", what, r.Status, r.Body)
		return
	}
	ch := r.Header.Get("WWW-Authenticate")
	p := challengeParams(t, ch)
	body, ok := strings.CutPrefix(strings.TrimSpace(string(r.Body)), "Unauthorized: ")
	if !ok || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("%s: body %q (%s), want text saying Unauthorized: and the cause", what, r.Body, r.Header.Get("Content-Type"))
	}
	if _, ok := p["resource_metadata"]; ok {
		t.Errorf("%s: WWW-Authenticate %q advertises resource_metadata with static keys", what, ch)
	}
	wantError := "invalid_token"
	if token == "" || what == "basic auth" {
		wantError = "" // RFC 6750 §3.1: no error code without a bearer token
	}
	if p["error"] != wantError {
		t.Errorf("%s: WWW-Authenticate %q, want error %q", what, ch, wantError)
	}
	if wantError != "" && p["error_description"] != body {
		t.Errorf("%s: header says %q, body %q", what, p["error_description"], body)
	}
	if !strings.Contains(body, want) {
		t.Errorf("%s: refusal %q, want it to contain %q", what, body, want)
	}
	if len(token) > 8 {
		for _, part := range strings.Split(token, ".") {
			if len(part) > 8 && (strings.Contains(ch, part) || strings.Contains(string(r.Body), part)) {
				t.Errorf("%s: the refusal echoes the token: %s %s", what, ch, r.Body)
			}
		}
	}
}

func TestBadTokensAreRejected(t *testing.T) {
	in := startServer(t, "")
	other := make([]byte, 32)
	rand.Read(other)
	sign := func(key []byte, c jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	with := func(edit func(jwt.MapClaims)) string {
		c := tokenClaims("default", scopeRead+" "+scopeWrite)
		edit(c)
		return sign(in.Key, c)
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	future := time.Now().Add(time.Hour).Truncate(time.Second)
	b64 := base64.RawURLEncoding.EncodeToString
	claimsJSON, _ := json.Marshal(tokenClaims("default", scopeRead))
	cases := []struct{ name, token, want string }{
		{"no token", "", "this server needs a bearer token"},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(claimsJSON) + ".", "algorithm or key type this server does not accept (accepted: HS256)"},
		{"wrong signature", sign(other, tokenClaims("default", scopeRead)), "signature does not verify with this server's keys"},
		{"expired", with(func(c jwt.MapClaims) { c["exp"] = past.Unix() }), "the token expired at " + past.UTC().Format(time.RFC3339) + ": get a new one"},
		{"nbf in the future", with(func(c jwt.MapClaims) { c["nbf"] = future.Unix() }), "not valid before " + future.UTC().Format(time.RFC3339)},
		{"missing exp", with(func(c jwt.MapClaims) { delete(c, "exp") }), "no exp claim"},
		{"wrong aud", with(func(c jwt.MapClaims) { c["aud"] = "http://elsewhere.test" }), "audience (aud) is not this server: it must contain " + testBaseURL},
		{"missing aud", with(func(c jwt.MapClaims) { delete(c, "aud") }), "it must contain " + testBaseURL},
		{"wrong iss", with(func(c jwt.MapClaims) { c["iss"] = "http://evil.test" }), "issuer (iss) is not the one this server trusts: it must be " + testBaseURL},
		{"missing tenant", with(func(c jwt.MapClaims) { delete(c, "tenant") }), "tenant claim, which names the tenant, is missing"},
		{"upper-case tenant", with(func(c jwt.MapClaims) { c["tenant"] = "ACME" }), "not a tenant name"},
		{"tenant with slash", with(func(c jwt.MapClaims) { c["tenant"] = "a/../b" }), "not a tenant name"},
		{"tenant not string", with(func(c jwt.MapClaims) { c["tenant"] = 7 }), "not a tenant name"},
		{"scope not string", with(func(c jwt.MapClaims) { c["scope"] = 7 }), "scope a string or an array of strings"},
		{"64 KB token", with(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", 64<<10) }), "longer than 8192 bytes"},
		{"garbage base64", "!!!.@@@.###", "not a JWT"},
		{"two segments", "abc.def", "not a JWT"},
		{"two tokens", "abc def", "more than one token"},
		{"quote in token", `a"b.c\d.e`, "not a JWT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkUnauthorized(t, in.as(c.token).listTools(), c.token, c.name, c.want)
		})
	}
	// Not a bearer scheme at all.
	hdr := http.Header{"Authorization": {"Basic " + b64([]byte("a:b"))}, "Mcp-Protocol-Version": {v2025}}
	checkUnauthorized(t, in.post(hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)), "", "basic auth", "send Authorization: Bearer <token>")
	// Two Authorization headers.
	hdr = http.Header{"Authorization": {"Bearer " + in.Token, "Bearer " + in.Token}, "Mcp-Protocol-Version": {v2025}}
	checkUnauthorized(t, in.post(hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)), in.Token, "two headers", "more than one Authorization header")
	// The server kept serving throughout.
	if r := in.listTools(); r.Status != 200 || r.Error != nil {
		t.Fatalf("valid token after bad ones: HTTP %d %s", r.Status, r.Body)
	}
	if strings.Contains(in.logs.String(), in.Token) {
		t.Error("the server logged a token")
	}
}

func TestScopesAreEnforced(t *testing.T) {
	in := startServer(t, "")
	ro := in.as(in.mint(tokenClaims("default", scopeRead)))
	wo := in.as(in.mint(tokenClaims("default", scopeWrite)))
	body := func(method, params string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`)
	}
	forbidden := func(t *testing.T, r *rawResponse, scope string) {
		t.Helper()
		ch := r.Header.Get("WWW-Authenticate")
		p := challengeParams(t, ch)
		want := "this call needs the " + scope + " scope"
		if r.Status != http.StatusForbidden || p["error"] != "insufficient_scope" || p["scope"] != scope || !strings.Contains(p["error_description"], want) {
			t.Errorf("HTTP %d WWW-Authenticate %q, want 403 insufficient_scope %s", r.Status, ch, scope)
		}
		if got := strings.TrimSpace(string(r.Body)); got != "Forbidden: "+p["error_description"] {
			t.Errorf("403 body %q does not say what the challenge %q says", got, ch)
		}
	}
	save := body("tools/call", `{"name":"save_report","arguments":{"path":"x","mimeType":"text/plain","text":"x"}}`)
	forbidden(t, ro.post(ro.http2025(), save), scopeWrite)
	forbidden(t, ro.post(ro.http2025(), body("tools/call", `{"name":"delete_resource","arguments":{"uri":"report://default/x"}}`)), scopeWrite)
	forbidden(t, wo.post(wo.http2025(), body("resources/read", `{"uri":"report://default/x"}`)), scopeRead)
	forbidden(t, wo.post(wo.http2025(), body("resources/list", `{}`)), scopeRead)
	forbidden(t, wo.post(wo.http2025(), body("tools/call", `{"name":"stat_resource","arguments":{"uri":"report://default/x"}}`)), scopeRead)
	// A batch hiding a write behind a read is judged by every message.
	forbidden(t, ro.post(ro.http2025(), []byte("["+string(body("tools/list", "{}"))+","+string(save)+"]")), scopeWrite)

	// What each token may do, it does.
	sc := checkSuccess(t, wo.call(v2026, "save_report", map[string]any{"path": "scoped", "mimeType": "text/plain", "text": "hello"}), 1)
	if got := ro.read(v2026, sc["uri"].(string)).body(t); string(got) != "hello" {
		t.Errorf("read-only token read %q", got)
	}
	for _, c := range []*instance{ro, wo} {
		if r := c.listTools(); r.Status != 200 {
			t.Errorf("tools/list with a single-scope token: HTTP %d", r.Status)
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	in := startServer(t, "")
	a := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	b := in.as(in.mint(tokenClaims("acme-b", scopeRead+" "+scopeWrite)))
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			path := "billing/" + v + "/private"
			sa := checkSuccess(t, a.call(v, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "A's secret", "listed": true}), 1)
			aURI := sa["uri"].(string)
			if aURI != "report://acme/"+path {
				t.Fatalf("A's uri = %s", aURI)
			}
			// B reading A's URI looks exactly like B reading nothing.
			never := "report://acme/never/" + v
			r1 := b.rpc(v, "resources/read", map[string]any{"uri": aURI})
			r2 := b.rpc(v, "resources/read", map[string]any{"uri": never})
			if got, want := errorMember(t, r1), strings.Replace(errorMember(t, r2), never, aURI, 1); got != want || r1.Status != r2.Status {
				t.Errorf("foreign read differs from unknown read:\n%s\n%s", got, want)
			}
			checkFailure(t, b.call(v, "stat_resource", map[string]any{"uri": aURI}), "not_found")
			checkFailure(t, b.call(v, "delete_resource", map[string]any{"uri": aURI}), "not_found")
			// Neither list shows A's resources to B.
			if lr := b.rpc(v, "resources/list", nil); strings.Contains(string(lr.Body), "acme/") && strings.Contains(string(lr.Body), path) {
				t.Errorf("B's resources/list shows A's resource: %s", lr.Body)
			}
			lb := checkSuccess(t, b.call(v, "list_resources", map[string]any{}), -1)
			for _, it := range lb["items"].([]any) {
				if strings.HasPrefix(it.(map[string]any)["uri"].(string), "report://acme/") {
					t.Errorf("B's list_resources shows %v", it)
				}
			}
			// B saving the same path creates B's own resource; A's is untouched.
			sb := checkSuccess(t, b.call(v, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "B's own"}), 1)
			if sb["status"] != "created" || sb["uri"] != "report://acme-b/"+path {
				t.Errorf("B's save: %v", sb)
			}
			if got := a.read(v, aURI).body(t); string(got) != "A's secret" {
				t.Errorf("A's body is now %q", got)
			}
			// A public resource of A is readable by B, and only it is public.
			pub := checkSuccess(t, a.call(v, "save_report", map[string]any{"path": "public/" + v, "mimeType": "text/plain", "text": "for all", "visibility": "public"}), 1)
			rr := b.read(v, pub["uri"].(string))
			if string(rr.body(t)) != "for all" || rr.CacheScope == nil || *rr.CacheScope != "public" {
				t.Errorf("B reading A's public resource: %q cacheScope %s", rr.body(t), show(rr.CacheScope))
			}
			if rr := a.read(v, aURI); *rr.CacheScope != "private" {
				t.Errorf("A's private resource served with cacheScope %s", *rr.CacheScope)
			}
			// B cannot write into A's public resource either.
			checkFailure(t, b.call(v, "delete_resource", map[string]any{"uri": pub["uri"]}), "not_found")
		})
	}
}

// TestProtectedResourceMetadata: RFC 9728 metadata is served, and named
// in challenges, only with an authorization server configured. With static
// keys there is none, and a dynamic client registration is refused with
// the reason the request's token was refused.
func TestProtectedResourceMetadata(t *testing.T) {
	paths := []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}
	t.Run("static keys", func(t *testing.T) {
		in := startServer(t, "")
		for _, path := range paths {
			if code, body := getText(t, in.URL+path); code != http.StatusNotFound {
				t.Errorf("GET %s with static keys: HTTP %d %s, want 404", path, code, body)
			}
		}
		register := func(token string) (int, refusal) {
			req, _ := http.NewRequest("POST", in.URL+"/register", strings.NewReader(`{"redirect_uris":["http://localhost:1/cb"]}`))
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r refusal
			json.NewDecoder(resp.Body).Decode(&r)
			return resp.StatusCode, r
		}
		wrongAud := tokenClaims("default", scopeRead)
		wrongAud["aud"] = "http://127.0.0.1:8765"
		for _, c := range []struct{ name, token, want string }{
			{"no token", "", "it takes bearer tokens issued out of band"},
			{"wrong audience", in.mint(wrongAud), "the token this request carried was refused: the token's audience (aud) is not this server: it must contain " + testBaseURL},
			{"good token", in.Token, "the token this request carried is valid here"},
		} {
			code, r := register(c.token)
			if code != http.StatusForbidden || r.Error != "registration_not_supported" || !strings.Contains(r.Description, c.want) {
				t.Errorf("POST /register, %s: HTTP %d %+v, want 403 registration_not_supported saying %q", c.name, code, r, c.want)
			}
		}
	})
	t.Run("authorization server", func(t *testing.T) {
		in := startServer(t, "  authorizationServers: [https://idp.test]\n")
		for _, path := range paths {
			resp, err := http.Get(in.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var md map[string]any
			json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if resp.StatusCode != 200 || md["resource"] != testBaseURL+"/mcp" {
				t.Errorf("GET %s: HTTP %d %v", path, resp.StatusCode, md)
			}
			if s, _ := json.Marshal(md["authorization_servers"]); string(s) != `["https://idp.test"]` {
				t.Errorf("GET %s: authorization_servers = %s", path, s)
			}
			if s, _ := json.Marshal(md["scopes_supported"]); !strings.Contains(string(s), scopeWrite) {
				t.Errorf("GET %s: scopes_supported = %s", path, s)
			}
		}
		for _, token := range []string{"", "garbage"} {
			r := in.as(token).listTools()
			if p := challengeParams(t, r.Header.Get("WWW-Authenticate")); r.Status != 401 || p["resource_metadata"] != metadataURL {
				t.Errorf("token %q: HTTP %d WWW-Authenticate %q, want resource_metadata=%q", token, r.Status, r.Header.Get("WWW-Authenticate"), metadataURL)
			}
		}
		// The authorization server registers clients, not resourced.
		resp, err := http.Post(in.URL+"/register", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST /register with an authorization server: HTTP %d, want 404", resp.StatusCode)
		}
	})
}

func TestOriginAndHostProtection(t *testing.T) {
	in := startServer(t, "")
	cases := []struct {
		name, origin, host string
		want               int
	}{
		{"foreign origin", "http://evil.example", "", 403},
		{"own origin", testBaseURL, "", 200},
		{"rebinding host", "", "evil.example:8765", 403},
		{"localhost host", "", "localhost:8765", 200},
		{"base host", "", "resourced.test", 200},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", in.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header = in.http2025()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// TestFirstStartAndTokenCommand: with no key configured the first start
// creates a 0600 key and prints a working token; `resourced token` mints
// more from the same key.
func TestFirstStartAndTokenCommand(t *testing.T) {
	in := startServerConfig(t, "baseURL: "+testBaseURL+"\n")
	out := in.stdout.String()
	m := regexp.MustCompile(`(?m)^(ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("first start printed no token; stdout:\n%s", out)
	}
	if strings.Contains(in.logs.String(), m[1]) {
		t.Error("the first-start token went into the log stream")
	}
	keyFile := filepath.Join(in.dataDir, "auth-hmac.key")
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, mode %v, want 0600", keyFile, err, st.Mode().Perm())
	}
	first := in.as(m[1])
	checkSuccess(t, first.call(v2026, "save_report", map[string]any{"path": "first", "mimeType": "text/plain", "text": "x"}), 1)

	cmd := exec.Command(binary, "token", "--config", in.config, "--data-dir", in.dataDir, "--tenant", "t1", "--scope", scopeRead, "--ttl", "10m")
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_DATA_DIR=")
	tok, err := cmd.Output()
	if err != nil {
		t.Fatalf("resourced token: %v", err)
	}
	ro := in.as(strings.TrimSpace(string(tok)))
	sc := checkSuccess(t, ro.call(v2026, "list_resources", map[string]any{}), 0)
	if len(sc["items"].([]any)) != 0 {
		t.Errorf("tenant t1 sees default's resources: %v", sc)
	}
	if r := ro.post(ro.http2025(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"x","mimeType":"text/plain","text":"x"}}}`)); r.Status != 403 {
		t.Errorf("read-only minted token could write: HTTP %d", r.Status)
	}
	// A restart does not print a token again.
	in.restart()
	if strings.Count(in.stdout.String(), "ey") != 0 {
		t.Errorf("second start printed a token again: %s", in.stdout)
	}
}

func TestAuthNoneOnlyOnLoopback(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("auth: {mode: none}\n"), 0o600)
	cmd := exec.Command(binary, "serve", "--config", cfg, "--listen", "0.0.0.0:0", "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "auth.mode: none is allowed only when listen is a loopback address") {
		t.Errorf("auth none on 0.0.0.0: err %v, output %s", err, out)
	}
	// On loopback it serves every caller as tenant default, without a token.
	in := startServerConfig(t, "auth: {mode: none}\n")
	sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "anon", "mimeType": "text/plain", "text": "x"}), 1)
	if sc["uri"] != "report://default/anon" {
		t.Errorf("auth none saved %v", sc["uri"])
	}
}

// jwksServer serves a JSON Web Key Set that the test can rotate and stop.
type jwksServer struct {
	mu   sync.Mutex
	keys map[string]*ecdsa.PrivateKey
	srv  *httptest.Server
	hits int
}

func newJWKSServer(t *testing.T) *jwksServer {
	j := &jwksServer{keys: map[string]*ecdsa.PrivateKey{}}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.hits++
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		for kid, k := range j.keys {
			set.Keys = append(set.Keys, map[string]string{
				"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
				"x": b64int(k.X), "y": b64int(k.Y),
			})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func b64int(n *big.Int) string {
	b := make([]byte, 32)
	return base64.RawURLEncoding.EncodeToString(n.FillBytes(b))
}

func (j *jwksServer) add(t *testing.T, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	j.keys[kid] = k
	j.mu.Unlock()
}

func (j *jwksServer) sign(t *testing.T, kid string, c jwt.MapClaims) string {
	j.mu.Lock()
	k := j.keys[kid]
	j.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJWKSRotationAndOutage(t *testing.T) {
	j := newJWKSServer(t)
	j.add(t, "k1")
	in := startServerConfig(t, fmt.Sprintf("baseURL: %s\nauth:\n  issuer: https://idp.test\n  jwksURL: %s\n  jwksRefresh: 1h\n", testBaseURL, j.srv.URL))
	claims := func() jwt.MapClaims {
		c := tokenClaims("acme", scopeRead+" "+scopeWrite)
		c["iss"] = "https://idp.test"
		return c
	}
	if r := in.as(j.sign(t, "k1", claims())).listTools(); r.Status != 200 {
		t.Fatalf("token of k1: HTTP %d %s", r.Status, r.Body)
	}
	// Rotation: a new kid verifies without a restart.
	j.add(t, "k2")
	if r := in.as(j.sign(t, "k2", claims())).listTools(); r.Status != 200 {
		t.Fatalf("token of rotated k2: HTTP %d %s", r.Status, r.Body)
	}
	// Algorithm confusion: an HS256 token keyed with public material is refused.
	hs, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims()).SignedString([]byte("k1"))
	checkUnauthorized(t, in.as(hs).listTools(), hs, "HS256 against a JWKS", "(accepted: RS256, ES256, EdDSA)")
	// A kid the issuer's set does not hold, after a fresh fetch.
	stray := newJWKSServer(t)
	stray.add(t, "k9")
	k9 := stray.sign(t, "k9", claims())
	checkUnauthorized(t, in.as(k9).listTools(), k9, "unknown kid", "key id (kid) is not in the issuer's key set")
	// Another issuer's token, signed with a known key.
	c := claims()
	c["iss"] = "https://other-idp.test"
	otherIss := j.sign(t, "k1", c)
	checkUnauthorized(t, in.as(otherIss).listTools(), otherIss, "wrong issuer", "it must be https://idp.test")
	// Outage: a kid not yet seen cannot be verified → 503, never 500; the
	// cached kids keep working.
	j.add(t, "k3")
	k3 := j.sign(t, "k3", claims())
	j.srv.Close()
	r := in.as(k3).listTools()
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("JWKS down, unknown kid: HTTP %d Retry-After %q, want 503 with Retry-After", r.Status, r.Header.Get("Retry-After"))
	}
	if r := in.as(j.sign(t, "k2", claims())).listTools(); r.Status != 200 {
		t.Errorf("JWKS down, cached kid: HTTP %d", r.Status)
	}
	if r := in.as(j.sign(t, "k2", claims())).listTools(); r.Status == 500 {
		t.Errorf("HTTP 500 during JWKS outage")
	}
}

func TestPublicKeyFileAndAlgorithmConfusion(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	dir := t.TempDir()
	pub := filepath.Join(dir, "idp.pem")
	os.WriteFile(pub, pemBytes, 0o644)
	in := startServerConfig(t, fmt.Sprintf("baseURL: %s\nauth:\n  issuer: https://idp.test\n  algorithms: [RS256]\n  publicKeyFiles: [%s]\n", testBaseURL, pub))
	c := tokenClaims("acme", scopeRead)
	c["iss"] = "https://idp.test"
	good, _ := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(k)
	if r := in.as(good).listTools(); r.Status != 200 {
		t.Fatalf("RS256 token: HTTP %d %s", r.Status, r.Body)
	}
	// The classic confusion: HS256 with the PEM of the public key as secret.
	confused, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(pemBytes)
	checkUnauthorized(t, in.as(confused).listTools(), confused, "HS256 signed with the RSA public key", "(accepted: RS256)")
	// Signed by another RSA key.
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(k2)
	checkUnauthorized(t, in.as(otherKey).listTools(), otherKey, "another RSA key", "signature does not verify")
}

// listURIs pages through resources/list and returns every URI in order.
func (in *instance) listURIs(version string) []string {
	in.t.Helper()
	var uris []string
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r := in.rpc(version, "resources/list", params)
		var res struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			NextCursor string `json:"nextCursor"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			in.t.Fatalf("resources/list: %s", r.Body)
		}
		for _, x := range res.Resources {
			uris = append(uris, x.URI)
		}
		if res.NextCursor == "" {
			return uris
		}
		cursor = res.NextCursor
	}
	in.t.Fatal("resources/list paging does not end")
	return nil
}

// TestPublicResourcesAreListedForEveryone: resources/list shows the
// caller's own listed resources, then other tenants' listed public ones.
func TestPublicResourcesAreListedForEveryone(t *testing.T) {
	in := startServer(t, "")
	a := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	b := in.as(in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))
	save := func(c *instance, path string, listed bool, vis string) {
		checkSuccess(t, c.call(v2026, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": path, "listed": listed, "visibility": vis}), 1)
	}
	save(a, "pub/1", true, "public")
	save(a, "pub/2", true, "public")
	save(a, "priv/listed", true, "private")
	save(a, "pub/unlisted", false, "public")
	save(b, "own/1", true, "private")
	// Enough public resources of A to need a second page of resources/list.
	for i := 0; i < 100; i++ {
		save(a, fmt.Sprintf("many/%03d", i), true, "public")
	}
	for _, v := range versions {
		got := b.listURIs(v)
		if len(got) != 103 || got[0] != "report://beta/own/1" {
			t.Fatalf("%s: B lists %d resources starting %v, want its own then A's 102 public", v, len(got), got[:min(3, len(got))])
		}
		seen := map[string]bool{}
		for _, u := range got {
			if seen[u] {
				t.Errorf("%s: %s listed twice", v, u)
			}
			seen[u] = true
			if strings.Contains(u, "priv/") || strings.Contains(u, "unlisted") {
				t.Errorf("%s: B lists %s", v, u)
			}
		}
		// A sees its own listed ones exactly once (public ones are its own).
		if ga := a.listURIs(v); len(ga) != 103 {
			t.Errorf("%s: A lists %d, want 103", v, len(ga))
		}
	}
	// A cursor of B's listing is refused for A.
	r := b.rpc(v2026, "resources/list", nil)
	var res struct {
		NextCursor string `json:"nextCursor"`
	}
	json.Unmarshal(r.Result, &res)
	if res.NextCursor == "" {
		t.Fatal("no second page")
	}
	if ar := a.rpc(v2026, "resources/list", map[string]any{"cursor": res.NextCursor}); ar.Error == nil || ar.Error.Code != -32602 {
		t.Errorf("A used B's cursor: %s", ar.Body)
	}
}
