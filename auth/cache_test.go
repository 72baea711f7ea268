package auth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

// fakeClock is a settable clock for JWTOptions.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestTokenCacheRemembersUntilExpOrTTL(t *testing.T) {
	clock := &fakeClock{t: time.Now().Truncate(time.Second)}
	j := newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: testKeys().hmac, Now: clock.Now, TokenCache: time.Minute, Leeway: time.Second})
	ctx := context.Background()
	exp := clock.Now().Add(90 * time.Second)
	token := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(map[string]any{"exp": exp.Unix()}), nil)

	first, err := j.Verify(ctx, token)
	if err != nil {
		t.Fatalf("Verify = %v", err)
	}
	if j.cache.len() != 1 {
		t.Fatalf("after one verification the cache holds %d tokens, want 1", j.cache.len())
	}
	again, err := j.Verify(ctx, token)
	if err != nil || !cmp.Equal(first, again) {
		t.Fatalf("cached Verify = %+v, %v; want %+v", again, err, first)
	}
	if e := j.cache.m[token]; !e.until.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("cached until %v, want verification time + TokenCache", e.until)
	}

	// Past the TTL: verified again (and remembered until exp, which is
	// now nearer than another minute).
	clock.Add(61 * time.Second)
	if _, err := j.Verify(ctx, token); err != nil {
		t.Fatalf("Verify after the TTL = %v", err)
	}
	if e := j.cache.m[token]; !e.until.Equal(exp) {
		t.Errorf("cached until %v, want the token's exp %v", e.until, exp)
	}
	// Past exp and the leeway: refused, cached or not.
	clock.Add(31 * time.Second)
	if _, err := j.Verify(ctx, token); Reason(err) != "expired" {
		t.Fatalf("Verify after exp = %v (reason %q), want expired", err, Reason(err))
	}
}

func TestTokenCacheOnlySuccesses(t *testing.T) {
	j := hmacJWT(t)
	ctx := context.Background()
	bad := sign(t, jwt.SigningMethodHS256, testKeys().otherHMAC, claims(nil), nil)
	for range 2 {
		if _, err := j.Verify(ctx, bad); Reason(err) != "bad_signature" {
			t.Fatalf("Verify(wrong key) = %v, want bad_signature", err)
		}
	}
	noTenant := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(map[string]any{"tenant": nil}), nil)
	if _, err := j.Verify(ctx, noTenant); err == nil {
		t.Fatal("Verify(no tenant) succeeded")
	}
	if n := j.cache.len(); n != 0 {
		t.Errorf("failed verifications left %d cache entries", n)
	}
	// Two tokens, two principals: a cached one is never another's.
	a := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(map[string]any{"tenant": "a"}), nil)
	b := sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(map[string]any{"tenant": "b", "scope": "resources:read"}), nil)
	for range 2 {
		pa, errA := j.Verify(ctx, a)
		pb, errB := j.Verify(ctx, b)
		if errA != nil || errB != nil || pa.Tenant != "a" || pb.Tenant != "b" || pb.Has(ScopeWrite) {
			t.Fatalf("Verify = %+v %v, %+v %v", pa, errA, pb, errB)
		}
	}
}

func TestTokenCacheOff(t *testing.T) {
	j := newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: testKeys().hmac, TokenCache: -1})
	if j.cache != nil {
		t.Fatal("TokenCache -1 left a cache")
	}
	if _, err := j.Verify(context.Background(), sign(t, jwt.SigningMethodHS256, testKeys().hmac, claims(nil), nil)); err != nil {
		t.Fatalf("Verify without a cache = %v", err)
	}
	if _, err := NewJWT(context.Background(), JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: testKeys().hmac,
		Audiences: []string{"a"}, TokenCache: time.Hour}); err == nil || !strings.Contains(err.Error(), "auth.tokenCache") {
		t.Errorf("NewJWT(TokenCache 1h) = %v, want an auth.tokenCache error", err)
	}
}

func TestTokenCacheBounded(t *testing.T) {
	c := newTokenCache(time.Minute, 3)
	now := time.Now()
	p := Principal{Tenant: "t"}
	c.put("expiring", p, now, now.Add(time.Second), 0)
	c.put("a", p, now, now.Add(time.Hour), 0)
	c.put("b", p, now, now.Add(time.Hour), 0)
	// Full: the expired entry goes first.
	later := now.Add(2 * time.Second)
	c.put("c", p, later, later.Add(time.Hour), 0)
	if _, ok := c.get("a", later); !ok || c.len() != 3 {
		t.Fatalf("after pruning: %d entries, a cached %v; want 3 and true", c.len(), ok)
	}
	// Full of live entries: all go.
	c.put("d", p, later, later.Add(time.Hour), 0)
	if c.len() != 1 {
		t.Fatalf("after overflow: %d entries, want 1", c.len())
	}
	if _, ok := c.get("d", later); !ok {
		t.Fatal("the newest token is not cached")
	}
	// Already expired at put: not stored.
	c.put("gone", p, later, later, 0)
	if _, ok := c.get("gone", later); ok {
		t.Fatal("a token expiring now was cached")
	}
	for i := range 10 {
		c.put(fmt.Sprint(i), p, later, later.Add(time.Hour), 0)
	}
	if c.len() > 3 {
		t.Fatalf("cache holds %d entries, bound 3", c.len())
	}
}

// TestTokenCacheClearWinsOverPut: a verification that was under way when
// the key set changed does not put its token back into the cleared cache.
func TestTokenCacheClearWinsOverPut(t *testing.T) {
	c := newTokenCache(time.Minute, 10)
	now := time.Now()
	gen := c.generation() // a verification starts...
	c.clear()             // ...a JWKS fetch stores another key set...
	c.put("tok", Principal{Tenant: "t"}, now, now.Add(time.Hour), gen)
	if _, ok := c.get("tok", now); ok {
		t.Fatal("a token verified before the key set changed was cached after it")
	}
	c.put("tok", Principal{Tenant: "t"}, now, now.Add(time.Hour), c.generation())
	if _, ok := c.get("tok", now); !ok {
		t.Fatal("a token verified after the change was not cached")
	}
}
