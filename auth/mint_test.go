package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMintVerifyRoundTrip(t *testing.T) {
	key := testKeys().hmac
	tests := []struct {
		name string
		c    MintClaims
		o    JWTOptions
		want Principal
	}{
		{
			name: "both scopes",
			c:    MintClaims{Issuer: testIssuer, Audience: testAudience, Tenant: "default", Subject: "dev", Scopes: []string{ScopeRead, ScopeWrite}, TTL: time.Hour},
			want: Principal{Tenant: "default", Subject: "dev", Scopes: []string{ScopeRead, ScopeWrite}},
		},
		{
			name: "read only, duplicate dropped",
			c:    MintClaims{Issuer: testIssuer, Audience: testAudience, Tenant: "t1", Scopes: []string{ScopeRead, ScopeRead}, TTL: time.Minute},
			want: Principal{Tenant: "t1", Scopes: []string{ScopeRead}},
		},
		{
			name: "custom tenant claim",
			c:    MintClaims{Issuer: testIssuer, Audience: testAudience, Tenant: "org-9", TenantClaim: "org", Scopes: []string{ScopeWrite}, TTL: time.Minute},
			o:    JWTOptions{TenantClaim: "org"},
			want: Principal{Tenant: "org-9", Scopes: []string{ScopeWrite}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, err := Mint(key, tt.c)
			if err != nil {
				t.Fatalf("Mint: %v", err)
			}
			o := tt.o
			o.Algorithms, o.HMACSecret = []string{"HS256"}, key
			got, err := newJWT(t, o).Verify(context.Background(), token)
			if err != nil {
				t.Fatalf("Verify(Mint(...)): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMintTimes(t *testing.T) {
	key := testKeys().hmac
	j := newJWT(t, JWTOptions{Algorithms: []string{"HS256"}, HMACSecret: key})
	base := MintClaims{Issuer: testIssuer, Audience: testAudience, Tenant: "acme", Scopes: []string{ScopeRead}, TTL: time.Hour}

	past := base
	past.Now = time.Now().Add(-2 * time.Hour)
	token, err := Mint(key, past)
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Verify(context.Background(), token)
	checkUnauthenticated(t, err, "expired", token)

	future := base
	future.Now = time.Now().Add(time.Hour)
	token, err = Mint(key, future)
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Verify(context.Background(), token)
	checkUnauthenticated(t, err, "not_yet_valid", token)
}

func TestMintRefuses(t *testing.T) {
	key := testKeys().hmac
	ok := MintClaims{Audience: testAudience, Tenant: "acme", Scopes: []string{ScopeRead}, TTL: time.Hour}
	tests := []struct {
		name string
		key  []byte
		mod  func(*MintClaims)
		want string
	}{
		{name: "tenant ACME", mod: func(c *MintClaims) { c.Tenant = "ACME" }, want: "tenant"},
		{name: "tenant with slash", mod: func(c *MintClaims) { c.Tenant = "a/b" }, want: "tenant"},
		{name: "empty tenant", mod: func(c *MintClaims) { c.Tenant = "" }, want: "tenant"},
		{name: "unknown scope", mod: func(c *MintClaims) { c.Scopes = []string{ScopeRead, "admin"} }, want: `scopes: "admin"`},
		{name: "space-joined scope", mod: func(c *MintClaims) { c.Scopes = []string{"resources:read resources:write"} }, want: "scopes:"},
		{name: "no scopes", mod: func(c *MintClaims) { c.Scopes = nil }, want: "scopes: at least one"},
		{name: "zero ttl", mod: func(c *MintClaims) { c.TTL = 0 }, want: "ttl: must be positive"},
		{name: "negative ttl", mod: func(c *MintClaims) { c.TTL = -time.Hour }, want: "ttl: must be positive"},
		{name: "no audience", mod: func(c *MintClaims) { c.Audience = "" }, want: "audience: required"},
		{name: "registered tenant claim", mod: func(c *MintClaims) { c.TenantClaim = "exp" }, want: "tenantClaim"},
		{name: "short key", key: []byte("short"), want: "key: must be at least 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			if tt.mod != nil {
				tt.mod(&c)
			}
			k := key
			if tt.key != nil {
				k = tt.key
			}
			token, err := Mint(k, c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Mint(%s) = %q, %v; want error containing %q", tt.name, token, err, tt.want)
			}
		})
	}
}
