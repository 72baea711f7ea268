package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "https://mcp.example"
)

// testKeys are generated once per test binary; RSA generation is slow.
var testKeys = sync.OnceValue(func() (k struct {
	hmac, otherHMAC []byte
	rsa, otherRSA   *rsa.PrivateKey
	ec, ec384       *ecdsa.PrivateKey
	ed              ed25519.PrivateKey
}) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var err error
	k.hmac, k.otherHMAC = make([]byte, 32), make([]byte, 32)
	rand.Read(k.hmac)
	rand.Read(k.otherHMAC)
	k.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.otherRSA, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	_, k.ed, err = ed25519.GenerateKey(rand.Reader)
	must(err)
	return k
})

// claims returns valid claims for tenant "acme", modified by mods: a nil
// value deletes the claim.
func claims(mods map[string]any) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss":    testIssuer,
		"aud":    testAudience,
		"sub":    "alice",
		"tenant": "acme",
		"scope":  "resources:read resources:write",
		"iat":    now.Unix(),
		"exp":    now.Add(time.Hour).Unix(),
	}
	for k, v := range mods {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing %s: %v", m.Alg(), err)
	}
	return s
}

// unsigned builds a token by hand, e.g. with alg "none".
func unsigned(header, payload map[string]any, sig string) string {
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(payload)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
}

func newJWT(t *testing.T, o JWTOptions) *JWT {
	t.Helper()
	if o.Audiences == nil {
		o.Audiences = []string{"https://other.example", testAudience}
	}
	if o.Issuer == "" {
		o.Issuer = testIssuer
	}
	j, err := NewJWT(context.Background(), o)
	if err != nil {
		t.Fatalf("NewJWT: %v", err)
	}
	t.Cleanup(j.Close)
	return j
}

func hmacJWT(t *testing.T) *JWT {
	return newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: testKeys().hmac})
}

func asymJWT(t *testing.T) *JWT {
	k := testKeys()
	return newJWT(t, JWTOptions{
		Algorithms: []string{"RS256", "PS256", "ES256", "EdDSA"},
		PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey, &k.ec.PublicKey, k.ed.Public()},
	})
}

func rsaPublicPEM(t *testing.T, k *rsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func request(header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for _, h := range header {
		r.Header.Add("Authorization", h)
	}
	return r
}

func checkUnauthenticated(t *testing.T, err error, reason, token string) {
	t.Helper()
	if !errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want only ErrUnauthenticated", err)
	}
	if got := Reason(err); got != reason {
		t.Errorf("Reason(%v) = %q, want %q", err, got, reason)
	}
	if len(token) > 8 && strings.Contains(err.Error(), token) {
		t.Errorf("error text contains the token: %v", err)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	k := testKeys()
	hs := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, k.hmac, c, nil) }
	good := hs(claims(nil))
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"tenant":"evil","exp":9999999999}`)) + "." + parts[2]

	tests := []struct {
		name    string
		rsaOnly bool // verifier allows RS256 with the RSA public key only
		header  []string
		reason  string
	}{
		{name: "no header", reason: "missing"},
		{name: "empty header", header: []string{""}, reason: "missing"},
		{name: "basic", header: []string{"Basic dXNlcjpwYXNz"}, reason: "missing"},
		{name: "bearer without token", header: []string{"Bearer"}, reason: "malformed"},
		{name: "bearer and spaces", header: []string{"Bearer   "}, reason: "malformed"},
		{name: "two tokens", header: []string{"Bearer " + good + " " + good}, reason: "malformed"},
		{name: "two headers", header: []string{"Bearer " + good, "Bearer " + good}, reason: "malformed"},
		{name: "alg none", header: []string{"Bearer " + unsigned(map[string]any{"alg": "none", "typ": "JWT"}, claims(nil), "")}, reason: "bad_algorithm"},
		{name: "alg none with HS256 allowed", header: []string{"Bearer " + unsigned(map[string]any{"alg": "none"}, claims(nil), "")}, reason: "bad_algorithm"},
		{name: "alg missing", header: []string{"Bearer " + unsigned(map[string]any{"typ": "JWT"}, claims(nil), "x")}, reason: "bad_algorithm"},
		{name: "alg not a string", header: []string{"Bearer " + unsigned(map[string]any{"alg": 7}, claims(nil), "x")}, reason: "malformed"},
		{
			name:    "algorithm confusion: HS256 keyed with the RSA public PEM",
			rsaOnly: true,
			header:  []string{"Bearer " + sign(t, jwt.SigningMethodHS256, rsaPublicPEM(t, &k.rsa.PublicKey), claims(nil), nil)},
			reason:  "bad_algorithm",
		},
		{name: "ES256 when only RS256 allowed", rsaOnly: true, header: []string{"Bearer " + sign(t, jwt.SigningMethodES256, k.ec, claims(nil), nil)}, reason: "bad_algorithm"},
		{name: "wrong HMAC key", header: []string{"Bearer " + sign(t, jwt.SigningMethodHS256, k.otherHMAC, claims(nil), nil)}, reason: "bad_signature"},
		{name: "wrong RSA key", rsaOnly: true, header: []string{"Bearer " + sign(t, jwt.SigningMethodRS256, k.otherRSA, claims(nil), nil)}, reason: "bad_signature"},
		{name: "tampered payload", header: []string{"Bearer " + tampered}, reason: "bad_signature"},
		{name: "signature stripped", header: []string{"Bearer " + parts[0] + "." + parts[1] + "."}, reason: "bad_signature"},
		{name: "expired", header: []string{"Bearer " + hs(claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}))}, reason: "expired"},
		{name: "expired beyond leeway", header: []string{"Bearer " + hs(claims(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}))}, reason: "expired"},
		{name: "nbf in the future", header: []string{"Bearer " + hs(claims(map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}))}, reason: "not_yet_valid"},
		{name: "missing exp", header: []string{"Bearer " + hs(claims(map[string]any{"exp": nil}))}, reason: "missing_exp"},
		{name: "exp not a number", header: []string{"Bearer " + hs(claims(map[string]any{"exp": "tomorrow"}))}, reason: "bad_claims"},
		{name: "wrong aud", header: []string{"Bearer " + hs(claims(map[string]any{"aud": "https://evil.example"}))}, reason: "bad_audience"},
		{name: "wrong aud list", header: []string{"Bearer " + hs(claims(map[string]any{"aud": []string{"a", "b"}}))}, reason: "bad_audience"},
		{name: "missing aud", header: []string{"Bearer " + hs(claims(map[string]any{"aud": nil}))}, reason: "bad_audience"},
		{name: "wrong iss", header: []string{"Bearer " + hs(claims(map[string]any{"iss": "https://evil.example"}))}, reason: "bad_issuer"},
		{name: "missing iss", header: []string{"Bearer " + hs(claims(map[string]any{"iss": nil}))}, reason: "bad_issuer"},
		{name: "missing tenant", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": nil}))}, reason: "bad_tenant"},
		{name: "tenant ACME", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": "ACME"}))}, reason: "bad_tenant"},
		{name: "tenant with slash", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": "acme/../other"}))}, reason: "bad_tenant"},
		{name: "tenant empty", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": ""}))}, reason: "bad_tenant"},
		{name: "tenant leading dash", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": "-acme"}))}, reason: "bad_tenant"},
		{name: "tenant 64 chars", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": strings.Repeat("a", 64)}))}, reason: "bad_tenant"},
		{name: "tenant number", header: []string{"Bearer " + hs(claims(map[string]any{"tenant": 42}))}, reason: "bad_tenant"},
		{name: "scope number", header: []string{"Bearer " + hs(claims(map[string]any{"scope": 42}))}, reason: "bad_claims"},
		{name: "scope array with number", header: []string{"Bearer " + hs(claims(map[string]any{"scope": []any{"resources:read", 1}}))}, reason: "bad_claims"},
		{name: "sub number", header: []string{"Bearer " + hs(claims(map[string]any{"sub": 42}))}, reason: "bad_claims"},
		{name: "64 KB token", header: []string{"Bearer " + hs(claims(map[string]any{"pad": strings.Repeat("x", 64<<10)}))}, reason: "too_large"},
		{name: "64 KB of garbage", header: []string{"Bearer " + strings.Repeat("a", 64<<10)}, reason: "too_large"},
		{name: "garbage base64", header: []string{"Bearer !!!.###.$$$"}, reason: "malformed"},
		{name: "payload not base64", header: []string{"Bearer " + parts[0] + ".%%%." + parts[2]}, reason: "malformed"},
		{name: "header not JSON", header: []string{"Bearer " + base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + parts[1] + "." + parts[2]}, reason: "malformed"},
		{name: "one segment", header: []string{"Bearer abc"}, reason: "malformed"},
		{name: "two segments", header: []string{"Bearer " + parts[0] + "." + parts[1]}, reason: "malformed"},
		{name: "four segments", header: []string{"Bearer " + good + ".x"}, reason: "malformed"},
	}
	hj, rj := hmacJWT(t), newJWT(t, JWTOptions{Algorithms: []string{"RS256"}, PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := hj
			if tt.rsaOnly {
				j = rj
			}
			p, err := j.Authenticate(request(tt.header...))
			if err == nil {
				t.Fatalf("Authenticate = %+v, nil; want %s", p, tt.reason)
			}
			token := ""
			if len(tt.header) > 0 {
				token = strings.TrimPrefix(tt.header[0], "Bearer ")
			}
			checkUnauthenticated(t, err, tt.reason, token)
		})
	}
}

func TestVerifyAccepts(t *testing.T) {
	k := testKeys()
	want := Principal{Tenant: "acme", Subject: "alice", Scopes: []string{ScopeRead, ScopeWrite}}
	tests := []struct {
		name   string
		j      func(*testing.T) *JWT
		method jwt.SigningMethod
		key    any
		mods   map[string]any
		want   Principal
	}{
		{name: "HS256", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac, want: want},
		{name: "RS256", j: asymJWT, method: jwt.SigningMethodRS256, key: k.rsa, want: want},
		{name: "PS256", j: asymJWT, method: jwt.SigningMethodPS256, key: k.rsa, want: want},
		{name: "ES256", j: asymJWT, method: jwt.SigningMethodES256, key: k.ec, want: want},
		{name: "EdDSA", j: asymJWT, method: jwt.SigningMethodEdDSA, key: k.ed, want: want},
		{name: "kid is ignored with static keys", j: asymJWT, method: jwt.SigningMethodES256, key: k.ec, mods: map[string]any{}, want: want},
		{
			name: "aud list containing an accepted audience", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"aud": []string{"x", testAudience}}, want: want,
		},
		{
			name: "exp within leeway", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"exp": time.Now().Add(-10 * time.Second).Unix()}, want: want,
		},
		{
			name: "nbf within leeway", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"nbf": time.Now().Add(10 * time.Second).Unix()}, want: want,
		},
		{
			name: "scope array", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"scope": []string{ScopeRead}},
			want: Principal{Tenant: "acme", Subject: "alice", Scopes: []string{ScopeRead}},
		},
		{
			name: "scp string, duplicates dropped", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"scope": nil, "scp": "resources:write openid resources:write"},
			want: Principal{Tenant: "acme", Subject: "alice", Scopes: []string{ScopeWrite, "openid"}},
		},
		{
			name: "scp array", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"scope": nil, "scp": []string{ScopeRead, ScopeWrite}}, want: want,
		},
		{
			name: "no scope, no sub", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"scope": nil, "sub": nil}, want: Principal{Tenant: "acme"},
		},
		{
			name: "tenant edge", j: hmacJWT, method: jwt.SigningMethodHS256, key: k.hmac,
			mods: map[string]any{"tenant": "a-" + strings.Repeat("0", 61)},
			want: Principal{Tenant: "a-" + strings.Repeat("0", 61), Subject: "alice", Scopes: want.Scopes},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := sign(t, tt.method, tt.key, claims(tt.mods), map[string]any{"kid": "whatever"})
			got, err := tt.j(t).Verify(context.Background(), token)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Verify principal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthenticateAccepts(t *testing.T) {
	j := hmacJWT(t)
	token := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(nil), nil)
	for _, h := range []string{"Bearer " + token, "bearer " + token, "BEARER  " + token + " "} {
		p, err := j.Authenticate(request(h))
		if err != nil {
			t.Fatalf("Authenticate(%.10q...) = %v", h, err)
		}
		if p.Tenant != "acme" || !p.Has(ScopeWrite) {
			t.Errorf("Authenticate(%.10q...) = %+v", h, p)
		}
	}
}

func TestTenantClaimOption(t *testing.T) {
	k := testKeys()
	j := newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, TenantClaim: "https://example.com/org"})
	token := sign(t, jwt.SigningMethodHS256, k.hmac, claims(map[string]any{"https://example.com/org": "org1"}), nil)
	p, err := j.Verify(context.Background(), token)
	if err != nil || p.Tenant != "org1" {
		t.Fatalf("Verify = %+v, %v; want tenant org1", p, err)
	}
}

func TestMaxTokenBytes(t *testing.T) {
	k := testKeys()
	j := newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, MaxTokenBytes: 100})
	token := sign(t, jwt.SigningMethodHS256, k.hmac, claims(nil), nil)
	_, err := j.Verify(context.Background(), token)
	checkUnauthenticated(t, err, "too_large", token)
}

func TestStaticKeyCurveMustMatch(t *testing.T) {
	k := testKeys()
	// ES256 and ES384 allowed, only a P-384 key configured: an ES256 token
	// must not be checked against the P-384 key.
	j := newJWT(t, JWTOptions{Algorithms: []string{"ES256", "ES384"}, PublicKeys: []crypto.PublicKey{&k.ec384.PublicKey}})
	token := sign(t, jwt.SigningMethodES256, k.ec, claims(nil), nil)
	_, err := j.Verify(context.Background(), token)
	checkUnauthenticated(t, err, "bad_algorithm", token)
	token = sign(t, jwt.SigningMethodES384, k.ec384, claims(nil), nil)
	if _, err := j.Verify(context.Background(), token); err != nil {
		t.Fatalf("ES384: %v", err)
	}
}

func TestNewJWTErrors(t *testing.T) {
	k := testKeys()
	tests := []struct {
		name string
		o    JWTOptions
		want []string // substrings of the error
	}{
		{name: "nothing", o: JWTOptions{}, want: []string{"auth.algorithms: required", "auth.audiences: required"}},
		{name: "alg none", o: JWTOptions{Algorithms: []string{"none"}}, want: []string{`auth.algorithms: unsupported algorithm "none"`}},
		{
			name: "HS256 with public keys",
			o:    JWTOptions{Algorithms: []string{"HS256", "RS256"}, HMACSecret: k.hmac, PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey}},
			want: []string{"auth.algorithms: HS256 may not be allowed together", "algorithm confusion"},
		},
		{
			name: "HS256 with JWKS",
			o:    JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, JWKSURL: "https://idp.example/jwks"},
			want: []string{"algorithm confusion"},
		},
		{name: "HS256 without secret", o: JWTOptions{Algorithms: []string{"HS256"}}, want: []string{"auth.hmacSecret: required for HS256"}},
		{name: "short secret", o: JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: []byte("short")}, want: []string{"auth.hmacSecret: must be at least 32 bytes"}},
		{name: "secret without HS", o: JWTOptions{Algorithms: []string{"RS256"}, HMACSecret: k.hmac, PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey}}, want: []string{"auth.hmacSecret: set but"}},
		{name: "RS256 without keys", o: JWTOptions{Algorithms: []string{"RS256"}}, want: []string{"auth.publicKeys: auth.publicKeys or auth.jwksURL required for RS256"}},
		{name: "key fits no alg", o: JWTOptions{Algorithms: []string{"ES256"}, PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey}}, want: []string{"auth.publicKeys[0]: RSA-2048 key fits none"}},
		{name: "private key given", o: JWTOptions{Algorithms: []string{"RS256"}, PublicKeys: []crypto.PublicKey{k.rsa}}, want: []string{"auth.publicKeys[0]: unsupported key type *rsa.PrivateKey"}},
		{
			name: "keys and JWKS",
			o:    JWTOptions{Algorithms: []string{"RS256"}, PublicKeys: []crypto.PublicKey{&k.rsa.PublicKey}, JWKSURL: "https://idp.example/jwks"},
			want: []string{"auth.jwksURL: may not be combined"},
		},
		{name: "JWKS over plain http", o: JWTOptions{Algorithms: []string{"RS256"}, JWKSURL: "http://idp.example/jwks"}, want: []string{"auth.jwksURL:", "use https"}},
		{name: "JWKS not a URL", o: JWTOptions{Algorithms: []string{"RS256"}, JWKSURL: "idp"}, want: []string{"auth.jwksURL:"}},
		{name: "JWKS refresh too short", o: JWTOptions{Algorithms: []string{"RS256"}, JWKSURL: "https://idp.example/jwks", JWKSRefresh: time.Second}, want: []string{"auth.jwksRefresh: must be between"}},
		{name: "negative leeway", o: JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, Leeway: -time.Second}, want: []string{"auth.leeway:"}},
		{name: "registered tenant claim", o: JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, TenantClaim: "sub"}, want: []string{`auth.tenantClaim: "sub" is a registered claim`}},
		{name: "empty audience", o: JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: k.hmac, Audiences: []string{""}}, want: []string{"auth.audiences[0]: empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if o.Audiences == nil && tt.name != "nothing" {
				o.Audiences = []string{testAudience}
			}
			j, err := NewJWT(context.Background(), o)
			if err == nil {
				j.Close()
				t.Fatalf("NewJWT(%s) = nil error, want %q", tt.name, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("NewJWT(%s) = %v, want it to contain %q", tt.name, err, w)
				}
			}
		})
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{unauthenticated(reasonExpired, "x"), "expired"},
		{fmt.Errorf("wrapped: %w", unavailable("down")), "unavailable"},
		{fmt.Errorf("x: %w", ErrUnavailable), "unavailable"},
		{fmt.Errorf("x: %w", ErrUnauthenticated), "unauthenticated"},
		{errors.New("other"), "unknown"},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestVerifyConcurrent(t *testing.T) {
	j := hmacJWT(t)
	token := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(nil), nil)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := j.Verify(context.Background(), token); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
	wg.Wait()
}

// TestAuthenticateHeaderSpellings holds Authenticate's shortcut for the
// plain "Bearer <token>" to the general split (strings.Fields): every
// spelling the split accepts is accepted, with the same principal, and
// a token with anything around or inside it is refused as before.
func TestAuthenticateHeaderSpellings(t *testing.T) {
	k := testKeys()
	good := sign(t, jwt.SigningMethodHS256, k.hmac, claims(nil), nil)
	j := hmacJWT(t)
	want, err := j.Verify(context.Background(), good)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{
		"Bearer " + good, "bearer " + good, "BEARER " + good, "Bearer  " + good, " Bearer " + good,
		"Bearer " + good + " ", "Bearer\t" + good, "Bearer " + good + "\u00a0", "Bearer\u00a0" + good,
	} {
		p, err := j.Authenticate(request(h))
		if err != nil || !cmp.Equal(p, want) {
			t.Errorf("Authenticate(%q) = %+v, %v; want %+v", h, p, err, want)
		}
	}
	for h, reason := range map[string]string{
		"Bearer " + good + " x":                 "malformed",
		"Bearer " + good + "\u00a0x":            "malformed",
		"Bearer " + good[:10] + " " + good[10:]: "malformed",
		"Bearer " + good + "x":                  "bad_signature",
		"Bearer x" + good:                       "malformed",
		"Bearer\x00" + good:                     "missing",
	} {
		_, err := j.Authenticate(request(h))
		if err == nil {
			t.Errorf("Authenticate(%q) accepted", h)
			continue
		}
		checkUnauthenticated(t, err, reason, good)
	}
}
