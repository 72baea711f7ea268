package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/resourced/resourced/grammar"
)

// Defaults and limits for JWTOptions.
const (
	DefaultLeeway             = 30 * time.Second
	DefaultTenantClaim        = "tenant"
	DefaultJWKSRefresh        = 5 * time.Minute
	DefaultJWKSUnknownKIDWait = 2 * time.Second
	DefaultMaxTokenBytes      = 8192

	// MinHMACKeyBytes is the shortest HMAC secret accepted for signing or
	// verifying.
	MinHMACKeyBytes = 32

	maxLeeway             = 5 * time.Minute
	minJWKSRefresh        = 10 * time.Second
	maxJWKSRefresh        = 24 * time.Hour
	maxJWKSUnknownKIDWait = 30 * time.Second
	jwksFetchTimeout      = 10 * time.Second
)

// registeredClaims may not be used as the tenant claim.
var registeredClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "scope", "scp"}

// JWTOptions configures NewJWT. Zero values mean the documented defaults.
type JWTOptions struct {
	// Issuer, when set, must equal the token's "iss".
	Issuer string
	// Audiences: a token is accepted when its "aud" contains any of them.
	// Required.
	Audiences []string
	// Algorithms is the allow-list of JWS algorithms, e.g. ["HS256"] or
	// ["RS256", "ES256", "EdDSA"]. Required. HS* may not be combined with
	// PublicKeys or JWKSURL (algorithm confusion).
	Algorithms []string
	// Leeway for exp and nbf clock skew. Default 30s, at most 5m.
	Leeway time.Duration
	// TenantClaim names the claim carrying the tenant. Default "tenant".
	TenantClaim string

	// HMACSecret verifies HS* tokens; at least 32 bytes.
	HMACSecret []byte
	// PublicKeys verify RS*/PS* (*rsa.PublicKey), ES* (*ecdsa.PublicKey) and
	// EdDSA (ed25519.PublicKey) tokens, chosen by key type; a token's kid is
	// ignored. See LoadPublicKeys.
	PublicKeys []crypto.PublicKey
	// JWKSURL is a JSON Web Key Set, fetched at start and every JWKSRefresh;
	// a token is verified with the key named by its kid. https, or http on
	// a loopback host. Not together with PublicKeys.
	JWKSURL string
	// JWKSRefresh is the background refresh interval. Default 5m, between
	// 10s and 24h.
	JWKSRefresh time.Duration
	// JWKSUnknownKIDWait bounds how long a token whose kid is not cached
	// may wait for a JWKS fetch. Concurrent lookups share one fetch, and
	// such fetches start at most once per half of this. Default 2s, at
	// most 30s.
	JWKSUnknownKIDWait time.Duration
	// HTTPClient fetches the JWKS. Default: a client with a 10s timeout.
	HTTPClient *http.Client
	// MaxTokenBytes: longer tokens are rejected without parsing.
	// Default 8192.
	MaxTokenBytes int
	// Logger receives JWKS fetch failures and recoveries; nil means silent.
	Logger *slog.Logger
	// TokenCache is how long the principal of a token that verified is
	// remembered, never beyond the token's exp (cache.go says what that
	// changes). Default DefaultTokenCache, at most 10m; negative: off.
	TokenCache time.Duration
	// Now is the clock of exp, nbf and iat checks and of the token cache;
	// nil means time.Now.
	Now func() time.Time
}

// JWT verifies bearer JWTs. It is safe for concurrent use.
type JWT struct {
	parser        *jwt.Parser
	issuer        string
	audiences     []string
	algorithms    []string
	tenantClaim   string
	maxTokenBytes int
	hmacSecret    []byte
	publicKeys    []crypto.PublicKey
	jwks          *jwksSource
	now           func() time.Time
	cache         *tokenCache // nil: off
}

var _ Authenticator = (*JWT)(nil)

// NewJWT validates o and returns a verifier. Configuration errors name the
// option ("auth.algorithms: required") and are joined.
//
// With a JWKSURL, NewJWT fetches the set once (bounded by ctx and a 10s
// timeout) and then refreshes it in the background until ctx is done or
// Close is called. An unreachable JWKS is not an error here: tokens are
// answered with ErrUnavailable until a fetch succeeds.
func NewJWT(ctx context.Context, o JWTOptions) (*JWT, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	j := &JWT{
		issuer:        o.Issuer,
		audiences:     slices.Clone(o.Audiences),
		algorithms:    slices.Clone(o.Algorithms),
		tenantClaim:   o.TenantClaim,
		maxTokenBytes: o.MaxTokenBytes,
		hmacSecret:    slices.Clone(o.HMACSecret),
		publicKeys:    slices.Clone(o.PublicKeys),
		now:           o.Now,
	}
	if o.TokenCache > 0 {
		j.cache = newTokenCache(o.TokenCache, tokenCacheEntries)
	}
	opts := []jwt.ParserOption{
		jwt.WithTimeFunc(o.Now),
		jwt.WithValidMethods(j.algorithms),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(o.Leeway),
		jwt.WithAudience(o.Audiences...),
		jwt.WithStrictDecoding(),
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	j.parser = jwt.NewParser(opts...)

	if o.JWKSURL != "" {
		src, err := newJWKSSource(ctx, o)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			src.close()
			return nil, fmt.Errorf("auth: fetching auth.jwksURL: %w", err)
		}
		j.jwks = src
		if j.cache != nil {
			src.mu.Lock()
			src.onChange = j.cache.clear
			src.mu.Unlock()
		}
	}
	return j, nil
}

// Settings are the options of a verifier that a configuration file sets,
// with the key sources named but not loaded. Settings.Validate applies the
// rules NewJWT applies to them, so a configuration can be refused before
// any key file is read; NewJWT checks its JWTOptions with the same code.
// Zero values mean the defaults of JWTOptions.
type Settings struct {
	Audiences   []string
	Algorithms  []string
	Leeway      time.Duration
	TenantClaim string
	// HMAC says an HMAC secret will be given (JWTOptions.HMACSecret).
	HMAC bool
	// PublicKeys is how many public keys will be given (JWTOptions.PublicKeys).
	PublicKeys  int
	JWKSURL     string
	JWKSRefresh time.Duration
	// TokenCache as in JWTOptions: 0 is DefaultTokenCache, negative is off.
	TokenCache time.Duration
}

// Validate reports every problem of s, each naming its option
// ("leeway: must be between 0 and 5m0s, got 1h0m0s"), joined. Callers add
// the path of their configuration ("auth.leeway: ...").
func (s Settings) Validate() error {
	var errs []error
	s.applyDefaults()
	s.check(func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

func (s *Settings) applyDefaults() {
	if s.Leeway == 0 {
		s.Leeway = DefaultLeeway
	}
	if s.TenantClaim == "" {
		s.TenantClaim = DefaultTenantClaim
	}
	if s.JWKSRefresh == 0 {
		s.JWKSRefresh = DefaultJWKSRefresh
	}
	if s.TokenCache == 0 {
		s.TokenCache = DefaultTokenCache
	}
}

// check reports the problems of s (after applyDefaults) to bad, keyed by
// option name.
func (s *Settings) check(bad func(key, format string, args ...any)) {
	hmacAlgs, asymAlgs := splitAlgorithms(s.Algorithms)
	if len(s.Algorithms) == 0 {
		bad("algorithms", "required")
	}
	for _, a := range s.Algorithms {
		if !knownAlgorithms[a] {
			bad("algorithms", "unsupported algorithm %q", a)
		}
	}
	hasAsymSource := s.PublicKeys > 0 || s.JWKSURL != ""
	if s.HMAC && hasAsymSource {
		bad("hmacSecret", "an HMAC key cannot be combined with publicKeys or jwksURL (algorithm confusion)")
	}
	if len(hmacAlgs) > 0 && hasAsymSource {
		bad("algorithms", "%s may not be allowed together with auth.publicKeys or auth.jwksURL (algorithm confusion)", strings.Join(hmacAlgs, ", "))
	}
	if len(hmacAlgs) > 0 && !s.HMAC {
		bad("hmacSecret", "required for %s", strings.Join(hmacAlgs, ", "))
	}
	if s.HMAC && len(hmacAlgs) == 0 {
		bad("hmacSecret", "set but auth.algorithms allows no HS* algorithm")
	}
	if len(asymAlgs) > 0 && !hasAsymSource {
		bad("publicKeys", "auth.publicKeys or auth.jwksURL required for %s", strings.Join(asymAlgs, ", "))
	}
	if s.PublicKeys > 0 && s.JWKSURL != "" {
		bad("jwksURL", "may not be combined with auth.publicKeys")
	}
	if s.PublicKeys > 0 && len(asymAlgs) == 0 {
		bad("publicKeys", "set but auth.algorithms allows no RS*, PS*, ES* or EdDSA algorithm")
	}
	if len(s.Audiences) == 0 {
		bad("audiences", "required")
	}
	for i, a := range s.Audiences {
		if a == "" {
			bad(fmt.Sprintf("audiences[%d]", i), "empty")
		}
	}
	if s.Leeway < 0 || s.Leeway > maxLeeway {
		bad("leeway", "must be between 0 and %s, got %s", maxLeeway, s.Leeway)
	}
	if slices.Contains(registeredClaims, s.TenantClaim) {
		bad("tenantClaim", "%q is a registered claim", s.TenantClaim)
	}
	if s.TokenCache > maxTokenCache {
		bad("tokenCache", "must be at most %s, got %s", maxTokenCache, s.TokenCache)
	}
	if s.JWKSURL != "" {
		if err := checkJWKSURL(s.JWKSURL); err != nil {
			bad("jwksURL", "%v", err)
		}
	}
	if s.JWKSRefresh < minJWKSRefresh || s.JWKSRefresh > maxJWKSRefresh {
		bad("jwksRefresh", "must be between %s and %s, got %s", minJWKSRefresh, maxJWKSRefresh, s.JWKSRefresh)
	}
}

// splitAlgorithms returns the known HS* and the known asymmetric
// algorithms of algs.
func splitAlgorithms(algs []string) (hmacAlgs, asymAlgs []string) {
	for _, a := range algs {
		switch {
		case !knownAlgorithms[a]:
		case isHMAC(a):
			hmacAlgs = append(hmacAlgs, a)
		default:
			asymAlgs = append(asymAlgs, a)
		}
	}
	return hmacAlgs, asymAlgs
}

// settings returns the Settings part of o.
func (o *JWTOptions) settings() Settings {
	return Settings{
		Audiences: o.Audiences, Algorithms: o.Algorithms, Leeway: o.Leeway, TenantClaim: o.TenantClaim,
		HMAC: len(o.HMACSecret) > 0, PublicKeys: len(o.PublicKeys), JWKSURL: o.JWKSURL, JWKSRefresh: o.JWKSRefresh,
		TokenCache: o.TokenCache,
	}
}

// setDefaults fills in defaults and checks every option, returning all
// problems joined, each named "auth.<option>".
func (o *JWTOptions) setDefaults() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("auth.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	st := o.settings()
	st.applyDefaults()
	o.Leeway, o.TenantClaim, o.JWKSRefresh, o.TokenCache = st.Leeway, st.TenantClaim, st.JWKSRefresh, st.TokenCache
	if o.JWKSUnknownKIDWait == 0 {
		o.JWKSUnknownKIDWait = DefaultJWKSUnknownKIDWait
	}
	if o.MaxTokenBytes == 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	st.check(bad)

	// The key material, which Settings only names.
	if len(o.HMACSecret) > 0 && len(o.HMACSecret) < MinHMACKeyBytes {
		bad("hmacSecret", "must be at least %d bytes, got %d", MinHMACKeyBytes, len(o.HMACSecret))
	}
	_, asymAlgs := splitAlgorithms(o.Algorithms)
	for i, k := range o.PublicKeys {
		switch k := k.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		default:
			bad(fmt.Sprintf("publicKeys[%d]", i), "unsupported key type %T", k)
			continue
		}
		if len(asymAlgs) > 0 && !slices.ContainsFunc(asymAlgs, func(a string) bool { return keyFits(a, k) }) {
			bad(fmt.Sprintf("publicKeys[%d]", i), "%s fits none of the allowed algorithms %s (RSA keys need %d bits)",
				keyKind(k), strings.Join(asymAlgs, ", "), minRSABits)
		}
	}
	if o.MaxTokenBytes < 0 {
		bad("maxTokenBytes", "must not be negative")
	}
	if o.JWKSURL != "" && (o.JWKSUnknownKIDWait < 0 || o.JWKSUnknownKIDWait > maxJWKSUnknownKIDWait) {
		bad("jwksUnknownKIDWait", "must be between 0 and %s, got %s", maxJWKSUnknownKIDWait, o.JWKSUnknownKIDWait)
	}
	return errors.Join(errs...)
}

func keyKind(k crypto.PublicKey) string {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return "empty RSA key"
		}
		return fmt.Sprintf("RSA-%d key", k.N.BitLen())
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return "ECDSA key without curve"
		}
		return "ECDSA " + k.Curve.Params().Name + " key"
	case ed25519.PublicKey:
		return "Ed25519 key"
	}
	return fmt.Sprintf("%T", k)
}

// checkJWKSURL accepts https URLs, and http URLs on loopback hosts.
func checkJWKSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("%q: http is allowed only on a loopback host; use https", s)
	}
	return fmt.Errorf("%q: want an https URL", s)
}

// Close stops the background JWKS refresh. It is safe to call more than
// once and on a JWT without a JWKS.
func (j *JWT) Close() {
	if j.jwks != nil {
		j.jwks.close()
	}
}

// Authenticate implements Authenticator: it reads "Authorization: Bearer
// <token>" (scheme case-insensitive, exactly one token) and verifies the
// token with Verify.
func (j *JWT) Authenticate(r *http.Request) (Principal, error) {
	p, err := j.authenticate(r)
	return p, j.describe(err, nil)
}

func (j *JWT) authenticate(r *http.Request) (Principal, error) {
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0 || (len(vals) == 1 && strings.TrimSpace(vals[0]) == ""):
		return Principal{}, unauthenticated(reasonMissing, "no Authorization header")
	case len(vals) > 1:
		return Principal{}, unauthenticatedSaying(reasonMalformed, "the request has more than one Authorization header: send one", "%d Authorization headers", len(vals))
	}
	h := vals[0]
	// Room for the scheme and spaces; longer values cannot hold an
	// acceptable token and are not split.
	if len(h) > j.maxTokenBytes+64 {
		return Principal{}, unauthenticated(reasonTooLarge, "Authorization header of %d bytes", len(h))
	}
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && plainToken(tok) {
		return j.Verify(r.Context(), tok) // what every client sends, without splitting it
	}
	f := strings.Fields(h)
	if !strings.EqualFold(f[0], "Bearer") {
		return Principal{}, unauthenticated(reasonMissing, "Authorization scheme is not Bearer")
	}
	switch len(f) {
	case 1:
		return Principal{}, unauthenticatedSaying(reasonMalformed, "the Authorization header says Bearer but carries no token", "Bearer credential without a token")
	case 2:
	default:
		return Principal{}, unauthenticatedSaying(reasonMalformed, "the Authorization header carries more than one token after Bearer: send one", "Bearer credential with %d tokens, want 1", len(f)-1)
	}
	return j.Verify(r.Context(), f[1])
}

// plainToken reports whether tok is one non-empty token as strings.Fields
// would find it: no white space inside or around it (anything else takes
// the general split, with its answers).
func plainToken(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return false // white space, or a byte strings.Fields might read as Unicode space
		}
	}
	return true
}

// Verify checks token and returns its principal. Every error wraps
// ErrUnauthenticated or ErrUnavailable; Reason labels it and Description
// says what the client may be told.
func (j *JWT) Verify(ctx context.Context, token string) (Principal, error) {
	claims := jwt.MapClaims{}
	p, err := j.verify(ctx, token, claims)
	return p, j.describe(err, claims)
}

func (j *JWT) verify(ctx context.Context, token string, claims jwt.MapClaims) (Principal, error) {
	if token == "" {
		return Principal{}, unauthenticated(reasonMissing, "empty token")
	}
	if len(token) > j.maxTokenBytes {
		return Principal{}, unauthenticated(reasonTooLarge, "token of %d bytes exceeds %d", len(token), j.maxTokenBytes)
	}
	now := j.now()
	var gen uint64
	if j.cache != nil {
		if p, ok := j.cache.get(token, now); ok {
			return p, nil
		}
		gen = j.cache.generation()
	}
	if err := j.checkHeader(token); err != nil {
		return Principal{}, err
	}
	_, err := j.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) { return j.key(ctx, t) })
	if err != nil {
		return Principal{}, classify(err, claims)
	}
	p, err := j.principal(claims)
	if err == nil && j.cache != nil {
		if exp, _ := claims.GetExpirationTime(); exp != nil {
			j.cache.put(token, p, now, exp.Time, gen)
		}
	}
	return p, err
}

// checkHeader rejects tokens that are not three segments or whose alg is
// not allowed, before any key lookup.
func (j *JWT) checkHeader(token string) error {
	if strings.Count(token, ".") != 2 {
		return unauthenticated(reasonMalformed, "token has %d segments, want 3", strings.Count(token, ".")+1)
	}
	seg, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return unauthenticated(reasonMalformed, "header is not base64url")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return unauthenticated(reasonMalformed, "header is not a JSON object with a string alg")
	}
	if !slices.Contains(j.algorithms, h.Alg) {
		return unauthenticated(reasonBadAlgorithm, "alg %.16q not allowed", h.Alg)
	}
	return nil
}

// key is the jwt.Keyfunc: it returns the key(s) that may verify t.
func (j *JWT) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if !slices.Contains(j.algorithms, alg) { // checked by the parser too
		return nil, unauthenticated(reasonBadAlgorithm, "alg %q not allowed", alg)
	}
	if isHMAC(alg) {
		return j.hmacSecret, nil
	}
	if j.jwks != nil {
		return j.jwks.key(ctx, t)
	}
	var keys []jwt.VerificationKey
	for _, k := range j.publicKeys {
		if keyFits(alg, k) {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return nil, unauthenticated(reasonBadAlgorithm, "no configured public key fits alg %s", alg)
	case 1:
		return keys[0], nil
	}
	return jwt.VerificationKeySet{Keys: keys}, nil
}

// classify maps a golang-jwt error to an auth error. Errors from our key
// function are returned as they are.
func classify(err error, claims jwt.MapClaims) error {
	var ae *authError
	if errors.As(err, &ae) {
		return ae
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return unauthenticated(reasonMalformed, "%v", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthenticated(reasonBadSignature, "signature does not verify")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated(reasonExpired, "token is expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return unauthenticated(reasonNotYetValid, "token is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthenticated(reasonBadAudience, "aud does not contain an accepted audience")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthenticated(reasonBadIssuer, "iss is not the configured issuer")
	case errors.Is(err, jwt.ErrInvalidType):
		return unauthenticated(reasonBadClaims, "%v", err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// The signature verified, so the claims are the token's.
		switch {
		case claims["exp"] == nil:
			return unauthenticated(reasonMissingExp, "exp claim is required")
		case claims["aud"] == nil:
			return unauthenticated(reasonBadAudience, "aud claim is required")
		case claims["iss"] == nil:
			return unauthenticated(reasonBadIssuer, "iss claim is required")
		}
		return unauthenticated(reasonBadClaims, "%v", err)
	}
	return unauthenticated(reasonMalformed, "%v", err)
}

// describe gives err, an error of Verify or Authenticate, the text the
// client is told (Description) where this verifier knows more than the
// reason: the token's own exp or nbf, the audiences and issuer it must
// name, the algorithms and size it may use, the tenant claim's name.
// claims are the token's, read only when the signature verified (expired,
// not yet valid).
func (j *JWT) describe(err error, claims jwt.MapClaims) error {
	if err == nil {
		return nil // the common case, without errors.As's allocations
	}
	var e *authError
	if !errors.As(err, &e) || e.public != "" {
		return err
	}
	switch e.reason {
	case reasonExpired:
		if exp, _ := claims.GetExpirationTime(); exp != nil {
			e.public = "the token expired at " + exp.UTC().Format(time.RFC3339) + ": get a new one"
		}
	case reasonNotYetValid:
		if nbf, _ := claims.GetNotBefore(); nbf != nil {
			e.public = "the token is not valid before " + nbf.UTC().Format(time.RFC3339) + " (nbf): check the clocks"
		}
	case reasonBadAudience:
		e.public = descriptions[reasonBadAudience] + ": it must contain " + strings.Join(j.audiences, " or ")
	case reasonBadIssuer:
		if j.issuer != "" {
			e.public = descriptions[reasonBadIssuer] + ": it must be " + j.issuer
		}
	case reasonBadAlgorithm:
		e.public = descriptions[reasonBadAlgorithm] + " (accepted: " + strings.Join(j.algorithms, ", ") + ")"
	case reasonTooLarge:
		e.public = fmt.Sprintf("the bearer token is longer than %d bytes", j.maxTokenBytes)
	case reasonBadTenant:
		e.public = "the token's " + j.tenantClaim + " claim, which names the tenant, is missing or not a tenant name (lower-case letters, digits and inner hyphens, at most 63)"
	}
	return err
}

// principal builds the Principal from verified claims.
func (j *JWT) principal(c jwt.MapClaims) (Principal, error) {
	tenant, ok := c[j.tenantClaim].(string)
	switch {
	case c[j.tenantClaim] == nil:
		return Principal{}, unauthenticated(reasonBadTenant, "no %q claim", j.tenantClaim)
	case !ok:
		return Principal{}, unauthenticated(reasonBadTenant, "%q claim is not a string", j.tenantClaim)
	case !validTenant(tenant):
		return Principal{}, unauthenticated(reasonBadTenant, "%q claim %.70q is not a valid tenant", j.tenantClaim, tenant)
	}
	sub, err := c.GetSubject()
	if err != nil {
		return Principal{}, unauthenticated(reasonBadClaims, "sub claim is not a string")
	}
	scopes, err := claimScopes(c)
	if err != nil {
		return Principal{}, unauthenticated(reasonBadClaims, "%v", err)
	}
	return Principal{Tenant: tenant, Subject: sub, Scopes: scopes}, nil
}

// claimScopes reads "scope" (a space-separated string, or an array of
// strings) or, when absent, "scp" (the same forms). Duplicates are dropped.
func claimScopes(c jwt.MapClaims) ([]string, error) {
	name := "scope"
	v, ok := c[name]
	if !ok {
		name = "scp"
		v, ok = c[name]
	}
	if !ok || v == nil {
		return nil, nil
	}
	var all []string
	switch v := v.(type) {
	case string:
		all = strings.Fields(v)
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s claim has a non-string element", name)
			}
			all = append(all, strings.Fields(s)...)
		}
	default:
		return nil, fmt.Errorf("%s claim is neither a string nor an array of strings", name)
	}
	var out []string
	for _, s := range all {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// validTenant reports whether s is a tenant (grammar.Tenant).
func validTenant(s string) bool { return grammar.Tenant(s) == nil }
