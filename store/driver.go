package store

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Driver is what a storage backend implements: the few operations that
// differ from one storage to the next. A Bucket (NewBucket) makes a
// Backend of it, and only the Bucket is handed to callers; the Bucket does
// what is the same for every backend, so a driver does not:
//   - it validates every input before the driver sees it: keys are not
//     zero, conditions are known (Delete's is Always or IfMatch with a
//     hash), list queries are well-formed, limits are positive, tenants
//     follow the grammar, and a Put's Size and SHA256 describe its Body;
//   - it hashes and sizes a Put's body when the caller did not;
//   - it normalises the times of what is written to milliseconds in UTC;
//   - it owns the one clock: it passes now to every driver call that
//     decides on expiry, and hides expired objects from point reads (Read,
//     View, Stat, Open return what is stored, expired or not);
//   - it fails calls after Close, and wraps every driver error with the
//     operation and key, keeping the sentinel errors the driver wrapped.
//
// A driver decides atomically with its own writes what only it can: the
// precondition (with CheckCond, against the object live at now()), the
// quota (with CheckQuota) and Created kept from a live object it replaces.
// It reports a missing object with an error wrapping ErrNotFound, a failed
// condition with ErrPreconditionFailed, a canceled context with one
// wrapping ctx.Err(); its errors need not name the key.
//
// Public listing is required: resources/list shows the public resources
// of every tenant through it, so a backend without it would pass
// conformance and still break listing. The optional capabilities are
// ViewDriver and StreamDriver; a Bucket exposes them only when its driver
// has them (New).
//
// Implementations are safe for concurrent use.
type Driver interface {
	// Put stores obj at obj.Key if cond holds against the object live at
	// now() (and cond.Quota against the usage after the write), keeping
	// Created of a live object it replaces. It returns the stored metadata
	// and whether a live object was replaced. obj is already valid.
	Put(ctx context.Context, obj *Object, cond Cond, now func() time.Time) (Meta, bool, error)

	// Read calls fn once with the metadata and body stored at k, expired
	// or not, or returns ErrNotFound when nothing is. body is valid only
	// while fn runs; Read returns fn's error as it is.
	Read(ctx context.Context, k Key, fn func(m *Meta, body []byte) error) error

	// Stat returns the metadata stored at k, expired or not.
	Stat(ctx context.Context, k Key) (Meta, error)

	// List is Backend.List, with objects expired at now() left out.
	List(ctx context.Context, q ListQuery, now func() time.Time) (Page, error)

	// ListPublic is Backend.ListPublic, with objects expired at now()
	// left out.
	ListPublic(ctx context.Context, after PublicPosition, limit int, now func() time.Time) (PublicPage, error)

	// Delete removes the object live at now() at k if cond holds.
	Delete(ctx context.Context, k Key, cond Cond, now func() time.Time) error

	// DeleteExpired is Backend.DeleteExpired, expiry judged at now().
	DeleteExpired(ctx context.Context, limit int, now func() time.Time) (int, error)

	// Usage is Backend.Usage for a valid tenant.
	Usage(ctx context.Context, tenant string) (Usage, error)

	// Ping reports whether the storage is reachable.
	Ping(ctx context.Context) error

	// Close releases resources; the Bucket calls it once.
	Close() error
}

// ViewDriver is the optional capability behind Backend.View's encoded form: a driver
// that keeps Object.Encoded with the body.
type ViewDriver interface {
	// View is Read with the encoded form of the last Put (nil when it had
	// none, and after a PutStream). encoded and body are valid only while
	// fn runs.
	View(ctx context.Context, k Key, fn func(m *Meta, encoded, body []byte) error) error
}

// GateDriver is the optional capability of a driver whose Read fetches
// the body from elsewhere (s3store): it decodes the metadata first and
// fetches the body only when gate accepts it. A driver without it has its
// Read's fn gated instead, which costs nothing when the body is already in
// memory (bbolt, memory).
type GateDriver interface {
	// ReadGated is Read, with gate called on the metadata before the body
	// is fetched; when gate returns an error, ReadGated returns it as it
	// is, without calling fn and without fetching the rest of the body.
	ReadGated(ctx context.Context, k Key, gate func(m *Meta) error, fn func(m *Meta, body []byte) error) error
}

// StreamDriver is the optional capability behind streaming PutStream and Open.
type StreamDriver interface {
	// PutStream is Backend.PutStream with cond and cond.Quota judged at
	// now() once the body is read; meta is already valid.
	PutStream(ctx context.Context, meta *Meta, r io.Reader, cond Cond, now func() time.Time) (Meta, bool, error)

	// Open is Backend.Open of the object stored at k, expired or not.
	Open(ctx context.Context, k Key) (Meta, io.ReadSeekCloser, error)
}

// CheckQuota is the quota rule drivers apply inside their write: after is
// the tenant's usage once the write is done. It returns a wrapped
// ErrQuotaExceeded when after is over q.
func CheckQuota(after Usage, q Quota) error {
	if q.IsZero() || !after.Exceeds(q) {
		return nil
	}
	return fmt.Errorf("%w (usage after the write %d bytes in %d objects, quota %d bytes, %d objects)",
		ErrQuotaExceeded, after.Bytes, after.Objects, q.Bytes, q.Objects)
}
