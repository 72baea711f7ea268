package auth

import (
	"errors"
	"fmt"
)

// Error classes. Every error returned by Authenticate or Verify wraps exactly
// one of them, so the server can choose a status with errors.Is and a metric
// label with Reason. Error texts are for logs: they never contain the token.
var (
	// ErrUnauthenticated means the caller did not present a valid token:
	// missing, malformed, expired, badly signed, or with claims that do not
	// match the configuration. The server answers 401.
	ErrUnauthenticated = errors.New("unauthenticated")

	// ErrUnavailable means the token could not be checked because the key
	// source cannot be reached (a JWKS outage with no cached key for the
	// token's kid). The server answers 503 and the caller may retry.
	ErrUnavailable = errors.New("key source unavailable")
)

// Reasons returned by Reason. They are stable labels for metrics and logs.
const (
	reasonMissing      = "missing"       // no Authorization header or not a Bearer credential
	reasonMalformed    = "malformed"     // not a well-formed JWS compact token
	reasonTooLarge     = "too_large"     // longer than MaxTokenBytes; not parsed
	reasonBadAlgorithm = "bad_algorithm" // alg not allowed, or does not fit the key
	reasonBadSignature = "bad_signature" // signature does not verify
	reasonUnknownKID   = "unknown_kid"   // kid not in a freshly fetched JWK set
	reasonExpired      = "expired"       // exp is in the past (beyond leeway)
	reasonNotYetValid  = "not_yet_valid" // nbf is in the future (beyond leeway)
	reasonMissingExp   = "missing_exp"   // no exp claim
	reasonBadAudience  = "bad_audience"  // aud missing or none of the accepted audiences
	reasonBadIssuer    = "bad_issuer"    // iss missing or not the configured issuer
	reasonBadTenant    = "bad_tenant"    // tenant claim missing or not a valid tenant name
	reasonBadClaims    = "bad_claims"    // a claim has the wrong type (sub, scope, exp, ...)
	reasonUnavailable  = "unavailable"   // key source unreachable
)

// descriptions are what a client is told for each reason when the
// verifier has nothing more precise (JWT.describe): the cause and what to
// do, never the token or a key. RFC 6750 error_description values: no
// double quote or backslash.
var descriptions = map[string]string{
	reasonMissing:      "this server needs a bearer token: send Authorization: Bearer <token>",
	reasonMalformed:    "the bearer token is not a JWT: want three base64url segments, a JSON header and JSON claims",
	reasonTooLarge:     "the bearer token is too long",
	reasonBadAlgorithm: "the token is signed with an algorithm or key type this server does not accept",
	reasonBadSignature: "the token's signature does not verify with this server's keys: it was signed with another key",
	reasonUnknownKID:   "the token's key id (kid) is not in the issuer's key set: the key is unknown or was rotated out",
	reasonExpired:      "the token has expired: get a new one",
	reasonNotYetValid:  "the token is not valid yet (nbf is in the future): check the clocks",
	reasonMissingExp:   "the token has no exp claim: this server accepts only tokens that expire",
	reasonBadAudience:  "the token's audience (aud) is not this server",
	reasonBadIssuer:    "the token's issuer (iss) is not the one this server trusts",
	reasonBadTenant:    "the token's tenant claim is missing or not a tenant name (lower-case letters, digits and inner hyphens, at most 63)",
	reasonBadClaims:    "a claim of the token has the wrong type: sub is a string, scope a string or an array of strings, exp and nbf numbers",
	reasonUnavailable:  "the token cannot be checked now: the server cannot fetch its verification keys; retry shortly",
}

// authError is the one error type returned by Authenticate and Verify.
type authError struct {
	class  error // ErrUnauthenticated or ErrUnavailable
	reason string
	detail string // for logs
	public string // for the client; "" means descriptions[reason]
}

func (e *authError) Error() string {
	if e.detail == "" {
		return "auth: " + e.reason
	}
	return "auth: " + e.reason + ": " + e.detail
}

// Unwrap returns the class only: underlying library errors are flattened into
// the text so that errors.Is never matches more than one class.
func (e *authError) Unwrap() error { return e.class }

func unauthenticated(reason, format string, args ...any) error {
	return &authError{class: ErrUnauthenticated, reason: reason, detail: fmt.Sprintf(format, args...)}
}

// unauthenticatedSaying is unauthenticated with the text the client is told
// (Description) when the reason's own does not fit.
func unauthenticatedSaying(reason, public, format string, args ...any) error {
	return &authError{class: ErrUnauthenticated, reason: reason, public: public, detail: fmt.Sprintf(format, args...)}
}

func unavailable(format string, args ...any) error {
	return &authError{class: ErrUnavailable, reason: reasonUnavailable, detail: fmt.Sprintf(format, args...)}
}

// Description returns what the client that sent the refused token may be
// told about err, for an RFC 6750 error_description: the cause and what to
// do about it ("the token expired at 2026-11-03T10:00:00Z: get a new one",
// "the token's audience (aud) is not this server: it must contain
// http://127.0.0.1:28815"), naming only the token's own claims and the
// server's public identity (its URL, issuer, algorithms), never the token,
// a key or a claim the client did not send. The text holds no double
// quote or backslash. It returns "" for a nil error.
func Description(err error) string {
	if err == nil {
		return ""
	}
	var e *authError
	if errors.As(err, &e) {
		if e.public != "" {
			return e.public
		}
		if d, ok := descriptions[e.reason]; ok {
			return d
		}
	}
	if errors.Is(err, ErrUnavailable) {
		return descriptions[reasonUnavailable]
	}
	return "the bearer token is not valid"
}

// Reason returns a short stable label for err, for metrics and logs:
// "missing", "malformed", "too_large", "bad_algorithm", "bad_signature",
// "unknown_kid", "expired", "not_yet_valid", "missing_exp", "bad_audience",
// "bad_issuer", "bad_tenant", "bad_claims" (all ErrUnauthenticated) or
// "unavailable" (ErrUnavailable). It returns "" for a nil error and
// "unauthenticated", "unavailable" or "unknown" for errors that did not come
// from this package.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var e *authError
	if errors.As(err, &e) {
		return e.reason
	}
	switch {
	case errors.Is(err, ErrUnavailable):
		return reasonUnavailable
	case errors.Is(err, ErrUnauthenticated):
		return "unauthenticated"
	}
	return "unknown"
}
