package resourced

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Sentinels for errors.Is. Every error the client returns for an answer of
// resourced is one of the typed errors below (*ToolError, *RPCError,
// *HTTPError), and each matches the sentinels that describe it, so callers
// never need to look at message text.
var (
	// ErrNotFound: the resource does not exist, has expired, was deleted or
	// belongs to another tenant (resourced does not tell these apart). A
	// read gives an *RPCError (-32602 "Resource not found"); Stat and
	// Delete give a *ToolError of kind not_found.
	ErrNotFound = errors.New("resourced: not found")
	// ErrInvalidURI: a URI of a configured scheme that breaks the URI
	// grammar; RPCError.Reason says why.
	ErrInvalidURI = errors.New("resourced: invalid resource URI")
	// ErrValidation: a tool refused its input (kind validation_error);
	// ToolError.FieldErrors name the fields.
	ErrValidation = errors.New("resourced: validation error")
	// ErrConflict: a create-only save found the path taken, or an ifMatch
	// did not match the current sha256.
	ErrConflict = errors.New("resourced: conflict")
	// ErrTooLarge: a body, or a snapshot's hits, exceed a limit.
	ErrTooLarge = errors.New("resourced: too large")
	// ErrQuotaExceeded: the tenant's quota would be exceeded.
	ErrQuotaExceeded = errors.New("resourced: quota exceeded")
	// ErrUnavailable: resourced or its storage cannot serve now; nothing
	// was changed. The client has already retried within its RetryPolicy.
	ErrUnavailable = errors.New("resourced: unavailable")
	// ErrUnauthorized: the token was missing, malformed, expired or not
	// accepted (HTTP 401).
	ErrUnauthorized = errors.New("resourced: unauthorized")
	// ErrForbidden: the token lacks a scope the call needs (HTTP 403);
	// HTTPError.Scope names it.
	ErrForbidden = errors.New("resourced: forbidden")
)

// ErrorKind is the errorKind of a failed tool call (CONTRACT §4).
type ErrorKind string

// The error kinds resourced's tools return.
const (
	KindValidation    ErrorKind = "validation_error"
	KindNotFound      ErrorKind = "not_found"
	KindConflict      ErrorKind = "conflict"
	KindTooLarge      ErrorKind = "too_large"
	KindQuotaExceeded ErrorKind = "quota_exceeded"
	KindUnavailable   ErrorKind = "unavailable"
)

// FieldError names one bad input field of a tool call.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ToolError is a tool call that resourced answered with isError: true. Its
// fields are the call's structuredContent {status:"failed", errorKind,
// message, retrySafe, fieldErrors}.
type ToolError struct {
	// Tool is the tool that failed, e.g. "save_report".
	Tool string
	// Kind is the errorKind; a kind this client does not know is kept as
	// sent.
	Kind ErrorKind
	// Message explains the failure for a person or a model.
	Message string
	// RetrySafe is true when nothing was changed and the same call may be
	// sent again (kind unavailable). The client retries such calls itself
	// before returning them.
	RetrySafe bool
	// FieldErrors name the fields of a validation error.
	FieldErrors []FieldError
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("resourced: %s: %s: %s", e.Tool, e.Kind, e.Message)
}

// Is matches the sentinel of the error kind.
func (e *ToolError) Is(target error) bool {
	switch target {
	case ErrValidation:
		return e.Kind == KindValidation
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrConflict:
		return e.Kind == KindConflict
	case ErrTooLarge:
		return e.Kind == KindTooLarge
	case ErrQuotaExceeded:
		return e.Kind == KindQuotaExceeded
	case ErrUnavailable:
		return e.Kind == KindUnavailable
	}
	return false
}

// RPCError is a JSON-RPC error answer, e.g. the -32602 of resources/read
// for a URI the caller cannot read. Wire is the error exactly as received
// (errors.As with a *jsonrpc.Error finds it too), so a proxy can pass it on
// unchanged.
type RPCError struct {
	// Method is the MCP method that failed, e.g. "resources/read".
	Method string
	// Wire is the JSON-RPC error as received: code, message, data.
	Wire *jsonrpc.Error
	// URI and Reason are decoded from data {"uri", "reason"} when present.
	URI    string
	Reason string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("resourced: %s: JSON-RPC error %d: %s", e.Method, e.Wire.Code, e.Wire.Message)
}

// Unwrap returns the wire error.
func (e *RPCError) Unwrap() error { return e.Wire }

// Is matches ErrNotFound for resourced's not-found answer (-32602 with data
// {uri}) and ErrInvalidURI for a malformed URI (-32602 with data {uri,
// reason}); ErrUnavailable for an internal error of a read.
func (e *RPCError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Wire.Code == jsonrpc.CodeInvalidParams && e.URI != "" && e.Reason == ""
	case ErrInvalidURI:
		return e.Wire.Code == jsonrpc.CodeInvalidParams && e.Reason != ""
	case ErrUnavailable:
		return e.Wire.Code == jsonrpc.CodeInternalError
	}
	return false
}

func newRPCError(method string, w *jsonrpc.Error) *RPCError {
	e := &RPCError{Method: method, Wire: w}
	if len(w.Data) > 0 {
		var d struct {
			URI    string `json:"uri"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(w.Data, &d) == nil {
			e.URI, e.Reason = d.URI, d.Reason
		}
	}
	return e
}

// HTTPError is a refusal at the HTTP level, before MCP: 401 (bad token),
// 403 (missing scope, refused Origin or Host), 413 (body too large),
// 429/502/503/504 (overloaded or unavailable).
type HTTPError struct {
	// Method is the MCP method of the refused request.
	Method     string
	StatusCode int
	// Scope is the scope a 403 insufficient_scope asks for.
	Scope string
	// Description is the RFC 6750 error_description of a 401 or 403: why
	// the token was refused (expired at, the audience it must name, the
	// scope it lacks), never the token itself.
	Description string
	// RetryAfter is the server's Retry-After, if it sent one.
	RetryAfter time.Duration
	// Err is the transport's error.
	Err error
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("resourced: %s: HTTP %d %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Scope != "" {
		s += " (needs scope " + e.Scope + ")"
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Unwrap returns the transport's error.
func (e *HTTPError) Unwrap() error { return e.Err }

// Is matches ErrUnauthorized (401), ErrForbidden (403), ErrTooLarge (413)
// and ErrUnavailable (429, 502, 503, 504).
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrTooLarge:
		return e.StatusCode == http.StatusRequestEntityTooLarge
	case ErrUnavailable:
		switch e.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}

// retryAfter parses a Retry-After of delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var secs int
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
