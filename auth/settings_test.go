package auth

import (
	"crypto"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

func TestSettingsValidate(t *testing.T) {
	ok := Settings{Audiences: []string{"a"}, Algorithms: []string{"HS256"}, HMAC: true}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v, want nil", ok, err)
	}
	if err := (Settings{Audiences: []string{"a"}, Algorithms: []string{"RS256"}, JWKSURL: "https://idp/jwks"}).Validate(); err != nil {
		t.Fatalf("Validate(jwks) = %v, want nil", err)
	}
	tests := []struct {
		name string
		mod  func(*Settings)
		want string
	}{
		{"mixed sources", func(s *Settings) { s.PublicKeys = 1 }, "hmacSecret: an HMAC key cannot be combined with publicKeys or jwksURL"},
		{"jwks not http", func(s *Settings) { s.HMAC, s.Algorithms, s.JWKSURL = false, []string{"RS256"}, "ftp://x" }, "jwksURL: "},
		{"jwks and keys", func(s *Settings) {
			s.HMAC, s.Algorithms, s.JWKSURL, s.PublicKeys = false, []string{"RS256"}, "https://i/j", 1
		}, "jwksURL: may not be combined"},
		{"leeway", func(s *Settings) { s.Leeway = time.Hour }, "leeway: must be between 0 and 5m0s"},
		{"tokenCache", func(s *Settings) { s.TokenCache = time.Hour }, "tokenCache: must be at most 10m0s"},
		{"jwksRefresh", func(s *Settings) { s.JWKSRefresh = time.Millisecond }, "jwksRefresh: must be between 10s and 24h0m0s"},
		{"algorithm", func(s *Settings) { s.Algorithms = []string{"HS256", "none"} }, `algorithms: unsupported algorithm "none"`},
		{"no algorithms", func(s *Settings) { s.Algorithms = nil }, "algorithms: required"},
		{"tenant claim", func(s *Settings) { s.TenantClaim = "exp" }, `tenantClaim: "exp" is a registered claim`},
		{"audiences", func(s *Settings) { s.Audiences = nil }, "audiences: required"},
	}
	for _, tc := range tests {
		s := ok
		tc.mod(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate(%+v) = %v, want %q", tc.name, s, err, tc.want)
		}
		// NewJWT applies the same rules, named auth.<option>.
		o := JWTOptions{Audiences: s.Audiences, Algorithms: s.Algorithms, Leeway: s.Leeway, TenantClaim: s.TenantClaim,
			JWKSURL: s.JWKSURL, JWKSRefresh: s.JWKSRefresh, TokenCache: s.TokenCache}
		if s.HMAC {
			o.HMACSecret = make([]byte, MinHMACKeyBytes)
		}
		if s.PublicKeys > 0 {
			pub, _, err := ed25519.GenerateKey(nil)
			if err != nil {
				t.Fatal(err)
			}
			o.PublicKeys = []crypto.PublicKey{pub}
		}
		if jerr := o.setDefaults(); jerr == nil || !strings.Contains(jerr.Error(), "auth."+tc.want) {
			t.Errorf("%s: NewJWT's check = %v, want %q", tc.name, jerr, "auth."+tc.want)
		}
	}
}
