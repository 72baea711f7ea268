// Package auth turns an HTTP request into a verified Principal: the tenant
// that owns what the caller reads and writes, who the caller is, and which
// scopes it holds. It knows nothing of storage or MCP.
//
// Two Authenticators exist. JWT verifies "Authorization: Bearer <token>"
// with golang-jwt: an allow-listed algorithm, a key from an HMAC secret, PEM
// public keys or a JWKS URL, exp required, iss and aud checked, the tenant
// from a configurable claim and scopes from "scope" (or "scp"). Its errors
// wrap ErrUnauthenticated (answer 401) or ErrUnavailable (key source down,
// answer 503), and Reason labels them. None, for tests and loopback use,
// makes every caller tenant "default" with both scopes.
//
// LoadOrCreateHMACKey, LoadHMACKey and LoadPublicKeys read key files; Mint
// signs development tokens with an HMAC key.
package auth

import (
	"context"
	"net/http"
	"slices"
)

// Scopes a token may carry.
const (
	ScopeRead  = "resources:read"
	ScopeWrite = "resources:write"
)

// DefaultTenant is the tenant of every caller in None mode.
const DefaultTenant = "default"

// Principal is a verified caller.
type Principal struct {
	Tenant  string
	Subject string
	Scopes  []string
}

// Has reports whether p holds scope.
func (p Principal) Has(scope string) bool { return slices.Contains(p.Scopes, scope) }

// Authenticator verifies a request. An error means the caller is not
// authenticated; its text is for logs, never for the response.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// None authenticates every request as tenant "default" with both scopes.
type None struct{}

// Authenticate implements Authenticator.
func (None) Authenticate(*http.Request) (Principal, error) {
	return Principal{Tenant: DefaultTenant, Subject: "anonymous", Scopes: []string{ScopeRead, ScopeWrite}}, nil
}

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// IsPrincipalKey reports whether key is the one FromContext looks up: a
// context type of its own, carrying all a request's values in one place,
// answers it with the Principal from its Value method instead of adding a
// WithPrincipal.
func IsPrincipalKey(key any) bool {
	_, ok := key.(principalKey)
	return ok
}

// FromContext returns the principal stored by WithPrincipal.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
