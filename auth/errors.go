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

// authError is the one error type returned by Authenticate and Verify.
type authError struct {
	class  error // ErrUnauthenticated or ErrUnavailable
	reason string
	detail string
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

func unavailable(format string, args ...any) error {
	return &authError{class: ErrUnavailable, reason: reasonUnavailable, detail: fmt.Sprintf(format, args...)}
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
