package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/resourced/resourced/grammar"
)

// MintClaims describes a token for Mint.
type MintClaims struct {
	Issuer      string        // "iss"; omitted when empty
	Audience    string        // "aud"; required
	Tenant      string        // must be a valid tenant name
	TenantClaim string        // default "tenant"
	Subject     string        // "sub"; omitted when empty
	Scopes      []string      // at least one of ScopeRead, ScopeWrite; nothing else
	TTL         time.Duration // > 0
	Now         time.Time     // issue time; zero means time.Now()
}

// Mint returns an HS256 token signed with key carrying iss, aud, sub, the
// tenant claim, scope (space-separated), iat, nbf and exp = Now + TTL. It is
// for local use and tests: a development key from LoadOrCreateHMACKey and
// `resourced token`. Problems with c are joined in the error.
func Mint(key []byte, c MintClaims) (string, error) {
	var errs []error
	if len(key) < MinHMACKeyBytes {
		errs = append(errs, fmt.Errorf("key: must be at least %d bytes, got %d", MinHMACKeyBytes, len(key)))
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("audience: required"))
	}
	if err := grammar.Tenant(c.Tenant); err != nil {
		errs = append(errs, fmt.Errorf("tenant: %q: %w", c.Tenant, err))
	}
	if c.TenantClaim == "" {
		c.TenantClaim = DefaultTenantClaim
	}
	if slices.Contains(registeredClaims, c.TenantClaim) {
		errs = append(errs, fmt.Errorf("tenantClaim: %q is a registered claim", c.TenantClaim))
	}
	var scopes []string
	for _, s := range c.Scopes {
		switch {
		case s != ScopeRead && s != ScopeWrite:
			errs = append(errs, fmt.Errorf("scopes: %q is not %s or %s", s, ScopeRead, ScopeWrite))
		case !slices.Contains(scopes, s):
			scopes = append(scopes, s)
		}
	}
	if len(c.Scopes) == 0 {
		errs = append(errs, fmt.Errorf("scopes: at least one of %s, %s required", ScopeRead, ScopeWrite))
	}
	if c.TTL <= 0 {
		errs = append(errs, fmt.Errorf("ttl: must be positive, got %s", c.TTL))
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("auth: mint: %w", err)
	}

	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	claims := jwt.MapClaims{
		"aud":         c.Audience,
		c.TenantClaim: c.Tenant,
		"scope":       strings.Join(scopes, " "),
		"iat":         jwt.NewNumericDate(now),
		"nbf":         jwt.NewNumericDate(now),
		"exp":         jwt.NewNumericDate(now.Add(c.TTL)),
	}
	if c.Issuer != "" {
		claims["iss"] = c.Issuer
	}
	if c.Subject != "" {
		claims["sub"] = c.Subject
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("auth: mint: %w", err)
	}
	return s, nil
}
