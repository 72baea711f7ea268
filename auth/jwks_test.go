package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// jwksServer serves a JWK set that tests can replace, and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	hang    chan struct{} // when set, requests block until it is closed
	fetches atomic.Int64
}

type testJWK struct {
	kid string
	alg jwkset.ALG
	key any // public key
}

func newJWKSServer(t *testing.T, keys ...testJWK) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.serve(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		body, hang := s.body, s.hang
		s.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// serve replaces the served set with keys, built with jwkset.
func (s *jwksServer) serve(t *testing.T, keys ...testJWK) {
	t.Helper()
	ctx := context.Background()
	set := jwkset.NewMemoryStorage()
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.key, jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: k.alg, USE: jwkset.UseSig},
		})
		if err != nil {
			t.Fatalf("NewJWKFromKey(%s): %v", k.kid, err)
		}
		if err := set.KeyWrite(ctx, jwk); err != nil {
			t.Fatal(err)
		}
	}
	body, err := set.JSONPublic(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// jwksJWT verifies against the JWKS at url. wait is JWKSUnknownKIDWait:
// tests whose fetch must succeed give it seconds, so that a loaded machine
// cannot turn a slow loopback fetch into ErrUnavailable.
func jwksJWT(t *testing.T, url string, wait time.Duration) *JWT {
	return newJWT(t, JWTOptions{
		Algorithms:         []string{"RS256", "ES256", "EdDSA"},
		JWKSURL:            url,
		JWKSUnknownKIDWait: wait,
	})
}

// fetchWait is the unknown-kid wait of tests whose fetches must finish.
const fetchWait = 4 * time.Second

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func checkVerifies(t *testing.T, j *JWT, token string) {
	t.Helper()
	p, err := j.Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("Verify: %v (reason %s)", err, Reason(err))
	}
	if p.Tenant != "acme" {
		t.Fatalf("Verify = %+v, want tenant acme", p)
	}
}

func TestJWKSRotationAndOutage(t *testing.T) {
	k := testKeys()
	k1, k2, k3 := newECKey(t), k.rsa, newECKey(t)
	srv := newJWKSServer(t,
		testJWK{kid: "k1", alg: jwkset.AlgES256, key: &k1.PublicKey},
		testJWK{kid: "ed", alg: jwkset.AlgEdDSA, key: k.ed.Public()},
	)
	j := jwksJWT(t, srv.URL, fetchWait)
	ctx := context.Background()

	tok1 := sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "k1"})
	checkVerifies(t, j, tok1)
	checkVerifies(t, j, sign(t, jwt.SigningMethodEdDSA, k.ed, claims(nil), map[string]any{"kid": "ed"}))

	t.Run("kid not in a freshly fetched set", func(t *testing.T) {
		token := sign(t, jwt.SigningMethodES256, k3, claims(nil), map[string]any{"kid": "nope"})
		before := srv.fetches.Load()
		_, err := j.Verify(ctx, token)
		checkUnauthenticated(t, err, "unknown_kid", token)
		if got := srv.fetches.Load() - before; got != 1 {
			t.Errorf("unknown kid caused %d fetches, want 1", got)
		}
	})
	t.Run("known kid, wrong key", func(t *testing.T) {
		token := sign(t, jwt.SigningMethodES256, k3, claims(nil), map[string]any{"kid": "k1"})
		_, err := j.Verify(ctx, token)
		checkUnauthenticated(t, err, "bad_signature", token)
	})
	t.Run("kid names a key of another type", func(t *testing.T) {
		token := sign(t, jwt.SigningMethodRS256, k.rsa, claims(nil), map[string]any{"kid": "k1"})
		_, err := j.Verify(ctx, token)
		checkUnauthenticated(t, err, "bad_algorithm", token)
	})
	t.Run("kid not a string", func(t *testing.T) {
		token := sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": 7})
		_, err := j.Verify(ctx, token)
		checkUnauthenticated(t, err, "malformed", token)
	})
	t.Run("no kid: any fitting key", func(t *testing.T) {
		checkVerifies(t, j, sign(t, jwt.SigningMethodES256, k1, claims(nil), nil))
		token := sign(t, jwt.SigningMethodES256, k3, claims(nil), nil)
		_, err := j.Verify(ctx, token)
		checkUnauthenticated(t, err, "bad_signature", token)
	})

	// Rotate: the server now serves k2 only. A token with the new kid
	// verifies on the same JWT through the unknown-kid refresh.
	srv.serve(t, testJWK{kid: "k2", alg: jwkset.AlgRS256, key: &k2.PublicKey})
	tok2 := sign(t, jwt.SigningMethodRS256, k2, claims(nil), map[string]any{"kid": "k2"})
	checkVerifies(t, j, tok2)
	// The refresh replaced the cache: k1 is revoked.
	_, err := j.Verify(ctx, tok1)
	checkUnauthenticated(t, err, "unknown_kid", tok1)

	// Outage: an uncached kid cannot be checked (503); the cached one still
	// verifies.
	srv.Close()
	tok3 := sign(t, jwt.SigningMethodES256, k3, claims(nil), map[string]any{"kid": "k3"})
	_, err = j.Verify(ctx, tok3)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnauthenticated) || Reason(err) != "unavailable" {
		t.Fatalf("Verify(uncached kid, JWKS down) = %v (reason %q), want only ErrUnavailable", err, Reason(err))
	}
	checkVerifies(t, j, tok2)
	// And again, whether this lookup gets its own (failing) fetch or is
	// rate-limited and judged by the last fetch.
	_, err = j.Verify(ctx, tok3)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("second Verify(uncached kid, JWKS down) = %v, want ErrUnavailable", err)
	}
	// Invalid tokens are still 401 during the outage.
	bad := sign(t, jwt.SigningMethodRS256, k2, claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}), map[string]any{"kid": "k2"})
	_, err = j.Verify(ctx, bad)
	checkUnauthenticated(t, err, "expired", bad)
}

func TestJWKSDownAtStart(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()

	j := jwksJWT(t, url, fetchWait)
	k := newECKey(t)
	for _, header := range []map[string]any{{"kid": "k1"}, nil} {
		token := sign(t, jwt.SigningMethodES256, k, claims(nil), header)
		_, err := j.Verify(context.Background(), token)
		if !errors.Is(err, ErrUnavailable) || Reason(err) != "unavailable" {
			t.Errorf("Verify(kid %v) with JWKS down since start = %v, want ErrUnavailable", header["kid"], err)
		}
	}
}

func TestJWKSServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	j := jwksJWT(t, srv.URL, fetchWait)
	token := sign(t, jwt.SigningMethodES256, newECKey(t), claims(nil), map[string]any{"kid": "k1"})
	if _, err := j.Verify(context.Background(), token); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Verify with JWKS answering 500 = %v, want ErrUnavailable", err)
	}
}

// Unknown kids cannot make the server hammer the identity provider: many
// concurrent lookups cause at most about one fetch per wait interval.
func TestJWKSUnknownKIDRateLimit(t *testing.T) {
	k1 := newECKey(t)
	srv := newJWKSServer(t, testJWK{kid: "k1", alg: jwkset.AlgES256, key: &k1.PublicKey})
	j := newJWT(t, JWTOptions{
		Algorithms:         []string{"ES256"},
		JWKSURL:            srv.URL,
		JWKSUnknownKIDWait: fetchWait,
	})
	before := srv.fetches.Load()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			token := sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "random-" + string(rune('a'+i))})
			_, err := j.Verify(context.Background(), token)
			if !errors.Is(err, ErrUnauthenticated) || Reason(err) != "unknown_kid" {
				t.Errorf("Verify(random kid) = %v, want unknown_kid", err)
			}
		})
	}
	wg.Wait()
	if got := srv.fetches.Load() - before; got > 3 {
		t.Errorf("20 concurrent unknown kids caused %d fetches, want at most 3", got)
	}
	checkVerifies(t, j, sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "k1"}))
}

func TestJWKSClose(t *testing.T) {
	k1 := newECKey(t)
	srv := newJWKSServer(t, testJWK{kid: "k1", alg: jwkset.AlgES256, key: &k1.PublicKey})
	j, err := NewJWT(context.Background(), JWTOptions{
		Algorithms: []string{"ES256"},
		Audiences:  []string{testAudience},
		JWKSURL:    srv.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	j.Close()
	// Cached keys keep working after Close.
	checkVerifies(t, j, sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "k1"}))
}

func TestNewJWTCanceledContext(t *testing.T) {
	srv := newJWKSServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j, err := NewJWT(ctx, JWTOptions{Algorithms: []string{"ES256"}, Audiences: []string{testAudience}, JWKSURL: srv.URL})
	if err == nil {
		j.Close()
		t.Fatal("NewJWT with a canceled context succeeded")
	}
}

// A JWKS that hangs: a lookup of an uncached kid gives up after
// JWKSUnknownKIDWait with ErrUnavailable; cached kids keep verifying.
func TestJWKSSlow(t *testing.T) {
	k1 := newECKey(t)
	srv := newJWKSServer(t, testJWK{kid: "k1", alg: jwkset.AlgES256, key: &k1.PublicKey})
	j := jwksJWT(t, srv.URL, 100*time.Millisecond)
	release := make(chan struct{})
	srv.mu.Lock()
	srv.hang = release
	srv.mu.Unlock()
	t.Cleanup(func() { close(release) })

	token := sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "k2"})
	start := time.Now()
	_, err := j.Verify(context.Background(), token)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Verify(uncached kid, JWKS hanging) = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Verify took %s, want about JWKSUnknownKIDWait (100ms)", d)
	}
	checkVerifies(t, j, sign(t, jwt.SigningMethodES256, k1, claims(nil), map[string]any{"kid": "k1"}))

	// A canceled request does not wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Verify(ctx, token); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Verify(canceled, uncached kid) = %v, want ErrUnavailable", err)
	}
}
