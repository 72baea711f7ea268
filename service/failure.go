package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/resourced/resourced/store"
)

// Failure kinds (CONTRACT §4): what went wrong, as every transport names
// it. The HTTP API turns each into a status (server/upload.go).
const (
	KindValidation  = "validation_error"
	KindNotFound    = "not_found"
	KindConflict    = "conflict"
	KindTooLarge    = "too_large"
	KindQuota       = "quota_exceeded"
	KindUnavailable = "unavailable"
)

// FieldError names one bad input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Failure is a refused or failed call: the structuredContent of a failed
// tool call and the body of a failed upload. Its message stands on its
// own: it says what happened and what the caller can do.
type Failure struct {
	Status      string       `json:"status"` // always "failed"
	ErrorKind   string       `json:"errorKind"`
	Message     string       `json:"message"`
	RetrySafe   bool         `json:"retrySafe"`
	FieldErrors []FieldError `json:"fieldErrors,omitempty"`
	// cause is the backend error behind an unavailable failure, for
	// errors.Is (a canceled context); never shown to the caller.
	cause error
}

func (e *Failure) Error() string { return e.ErrorKind + ": " + e.Message }

// Unwrap returns the backend error behind an unavailable failure.
func (e *Failure) Unwrap() error { return e.cause }

// Fail returns a failure of kind; only unavailable ones are safe to retry.
func Fail(kind, msg string, fields ...FieldError) *Failure {
	return &Failure{Status: "failed", ErrorKind: kind, Message: msg, RetrySafe: kind == KindUnavailable, FieldErrors: fields}
}

// InvalidField is a validation failure of one field.
func InvalidField(field, msg string) *Failure {
	return Fail(KindValidation, field+": "+msg, FieldError{Field: field, Message: msg})
}

// Unavailable maps an unexpected backend error to an unavailable failure,
// logging the cause once (what names the operation).
func (s *Service) Unavailable(ctx context.Context, what string, err error) *Failure {
	s.log.ErrorContext(ctx, what, "err", err)
	if errors.Is(err, store.ErrUnknownOutcome) {
		// The backend cannot say whether the write happened (a retried S3
		// request whose first attempt may have landed): "nothing was
		// changed" would be a lie.
		f := Fail(KindUnavailable, "The storage backend could not confirm whether this write took effect; another write may have replaced it since. Read the resource (stat_resource) to find out, or retry the same call.")
		f.cause = err
		return f
	}
	if errors.Is(err, store.ErrSlowListing) {
		// A directory-reading listing (docs/large-reports.md, "Listing"):
		// the page failed at once rather than wait the deadline again.
		f := Fail(KindUnavailable, "This list page was not served: the storage backend's listing is the bound here (listing these resources took longer than the backend's call deadline, so pages of it fail at once for a while instead of each waiting). Nothing was changed; retry the same call later, or list a narrower scheme or prefix with list_resources.")
		f.cause = err
		return f
	}
	f := Fail(KindUnavailable, "The storage backend is unavailable; nothing was changed. Retry the same call later.")
	f.cause = err
	return f
}

// Retry says, in one transport's terms, how a caller retries a write whose
// precondition failed. It is the only part of a conflict's message that
// depends on the transport.
type Retry struct {
	// Current tells how to learn the current sha256 and send it.
	Current string
	// Replace tells how to replace an existing resource, after "To replace it ".
	Replace string
	// AnyTag ends the message of an If-Match with several (or weak) tags.
	AnyTag string
}

var (
	// ToolRetry is how an MCP tool call retries (ifMatch, overwrite).
	ToolRetry = Retry{
		Current: "Call stat_resource for the current sha256.",
		Replace: "pass ifMatch with its current sha256 (see stat_resource), or overwrite: true.",
	}
	// HTTPRetry is how an upload retries (If-Match, ?overwrite=true).
	HTTPRetry = Retry{
		Current: "Send If-Match with its current sha256 (the ETag of a download, or stat_resource).",
		Replace: `send If-Match: "<its sha256>", or add ?overwrite=true.`,
		AnyTag:  `none of the If-Match entity-tags (uploads compare strongly: a weak W/"…" tag never matches)`,
	}
)

// Conflict is the failure of a write to k whose precondition cond failed.
// A cond of IfMatch without a hash stands for an If-Match whose tags
// matched nothing.
func Conflict(k store.Key, cond store.Cond, how Retry) *Failure {
	switch {
	case cond.Kind == store.IfMatch && cond.SHA256 == "":
		return Fail(KindConflict, fmt.Sprintf("%s was not replaced: it does not exist or its sha256 is %s. %s", k, how.AnyTag, how.Current))
	case cond.Kind == store.IfMatch:
		return Fail(KindConflict, fmt.Sprintf("%s was not replaced: it does not exist or its sha256 is not %s. %s", k, cond.SHA256, how.Current))
	}
	return Fail(KindConflict, fmt.Sprintf("%s already exists and was not changed. To replace it %s", k, how.Replace))
}

// errTooLongKey is the failure of a key the backend cannot hold.
func errTooLongKey() *Failure {
	return InvalidField("path", "is too long for this server's storage backend; use a shorter path (S3 keys are at most 1024 bytes, and one segment at most 255)")
}

// writeFailure is the one mapping of a failed store write to a Failure.
func (s *Service) writeFailure(ctx context.Context, k store.Key, cond store.Cond, how Retry, what string, err error) *Failure {
	switch {
	case errors.Is(err, store.ErrQuotaExceeded), errors.Is(err, store.ErrQuotaUnsupported):
		return s.quotaFailure(ctx, k.Tenant(), err)
	case errors.Is(err, store.ErrInvalidKey):
		return errTooLongKey()
	case errors.Is(err, store.ErrPreconditionFailed):
		return Conflict(k, cond, how)
	}
	return s.Unavailable(ctx, what, err)
}

// quotaFailure explains a refused save: the limits and the tenant's usage.
func (s *Service) quotaFailure(ctx context.Context, tenant string, err error) *Failure {
	if errors.Is(err, store.ErrQuotaUnsupported) {
		return s.Unavailable(ctx, "quota on a backend without quotas", err)
	}
	msg := "the save would take your tenant over its quota"
	if u, uerr := s.store.Usage(ctx, tenant); uerr == nil {
		msg += fmt.Sprintf(" (you store %d resources, %d bytes", u.Objects, u.Bytes)
		if s.quota.Objects > 0 {
			msg += fmt.Sprintf("; at most %d resources", s.quota.Objects)
		}
		if s.quota.Bytes > 0 {
			msg += fmt.Sprintf("; at most %d bytes", s.quota.Bytes)
		}
		msg += ")"
	}
	return Fail(KindQuota, msg+". Nothing was stored. Delete resources you no longer need (list_resources, delete_resource) and save again.")
}

// IsNotFound reports whether err is a store miss.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
