// Package store defines the storage contract of resourced and its portable
// layer: a Backend keeps resource bodies with their metadata, keyed by
// tenant, scheme and path.
//
// The package owns the contract and the one implementation of what is the
// same for every storage: Bucket, a Backend over a small Driver (in the
// manner of gocloud.dev/blob's Bucket over driver.Bucket). The Bucket
// validates input, hashes a body the caller did not hash, normalises times
// to milliseconds in UTC, judges expiry with its one clock and wraps driver
// errors; Driver (driver.go) says what is left to a driver. Drivers live in
// sub-packages (memstore, boltstore, s3store), each of which returns a
// Bucket over its driver, and every driver passes the one conformance
// suite in storetest, run against a Bucket over it. Nothing here knows
// about MCP, URIs as text or tokens.
//
// Error contract, for every method of every Backend:
//   - a missing or expired object is reported with an error for which
//     errors.Is(err, ErrNotFound) holds, and whose text names the key;
//   - a failed precondition (create-only on an existing key, IfMatch on a
//     different or missing body) gives ErrPreconditionFailed;
//   - a canceled or expired context gives an error wrapping ctx.Err();
//   - a write whose effect the backend cannot know (an attempt may have
//     landed and been replaced since, as when a retried S3 request fails
//     its condition against another caller's write) gives
//     ErrUnknownOutcome: not a precondition failure, and not "nothing
//     was changed";
//   - anything else is a backend failure the caller may retry.
//
// A Bucket builds every error of a keyed call as "store: <op> <key>: "
// followed by the driver's error or the sentinel, so the key is named once
// whatever the driver.
//
// Bodies are []byte: resourced returns them inline in resources/read, so the
// largest body is bounded by configuration (16 MiB by default). PutStream
// and Open store and serve a body without holding it in memory whole on
// the drivers that stream (boltstore and s3store); the Bucket falls back
// to Put and Get for the others, so every Backend has every method and no
// caller asks what a backend can do.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/resourced/resourced/grammar"
)

// Sentinel errors; a Bucket wraps them with the key they concern.
var (
	// ErrNotFound: the object does not exist, or has expired.
	ErrNotFound = errors.New("not found")
	// ErrPreconditionFailed: a Put or Delete condition did not hold.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrInvalidKey: a key, tenant or scheme failed validation.
	ErrInvalidKey = errors.New("invalid key")
	// ErrQuotaExceeded: a Put would leave its tenant over Cond.Quota.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrQuotaUnsupported: the backend cannot enforce a quota atomically
	// (a Put with a non-zero Cond.Quota fails with it, writing nothing).
	ErrQuotaUnsupported = errors.New("quotas are not supported by this backend")
	// ErrUnknownOutcome: a Put or Delete may or may not have taken effect
	// (and may have been superseded since); the caller may retry it, or
	// read the object to find out.
	ErrUnknownOutcome = errors.New("the outcome of the write is unknown")
	// ErrContended: an unconditional Delete lost every round to writers of
	// the same key (a driver that decides by read-then-write, S3); nothing
	// was changed and the caller may try again.
	ErrContended = errors.New("the object changed during every attempt; nothing was changed")
	// ErrSlowListing: a List or ListPublic page was refused because the
	// backend's listing of its prefix took longer than its call deadline
	// (a service that reads a directory per listing, not an index); nothing
	// changed, and the caller may retry later.
	ErrSlowListing = errors.New("the storage backend's listing is the bound")
)

// Limits on key parts: those of the grammar package, which owns the rules
// that NewKey applies.
const (
	MaxTenantLen = grammar.MaxTenantLen
	MaxSchemeLen = grammar.MaxSchemeLen
	MaxPathLen   = grammar.MaxPathLen
)

// Key names one object: the tenant that owns it, the scheme and the path
// below the tenant. The zero Key is invalid; only NewKey builds valid keys.
type Key struct {
	tenant, scheme, path string
}

// NewKey validates and returns a key: tenant, scheme and path must follow
// the grammar package's rules (ValidTenant, ValidScheme, ValidPath).
func NewKey(tenant, scheme, path string) (Key, error) {
	if err := ValidTenant(tenant); err != nil {
		return Key{}, err
	}
	if err := ValidScheme(scheme); err != nil {
		return Key{}, err
	}
	if err := ValidPath(path); err != nil {
		return Key{}, err
	}
	return Key{tenant: tenant, scheme: scheme, path: path}, nil
}

// MustKey is NewKey for tests and constants; it panics on an invalid key.
func MustKey(tenant, scheme, path string) Key {
	k, err := NewKey(tenant, scheme, path)
	if err != nil {
		panic(err)
	}
	return k
}

// Tenant returns the owning tenant.
func (k Key) Tenant() string { return k.tenant }

// Scheme returns the URI scheme (e.g. "report").
func (k Key) Scheme() string { return k.scheme }

// Path returns the path below the tenant, without a leading '/'.
func (k Key) Path() string { return k.path }

// IsZero reports whether k is the zero (invalid) key.
func (k Key) IsZero() bool { return k.tenant == "" }

// String returns the key in URI form, scheme://tenant/path.
func (k Key) String() string { return k.scheme + "://" + k.tenant + "/" + k.path }

// ValidTenant checks a tenant name against the one tenant grammar
// (grammar.Tenant: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?). The error wraps
// ErrInvalidKey and quotes t.
func ValidTenant(t string) error { return invalidKey("tenant", t, grammar.Tenant(t)) }

// ValidScheme checks a scheme name against the one scheme grammar
// (grammar.Scheme: [a-z][a-z0-9+.-]*, at most 32 bytes). The error wraps
// ErrInvalidKey and quotes s.
func ValidScheme(s string) error { return invalidKey("scheme", s, grammar.Scheme(s)) }

// ValidPath checks a path below a tenant against the one path grammar
// (grammar.Path: "/"-separated segments of [A-Za-z0-9._~-], none empty,
// "." or "..", at most 1024 bytes). The error wraps ErrInvalidKey and
// quotes p.
func ValidPath(p string) error { return invalidKey("path", p, grammar.Path(p)) }

// invalidKey wraps a grammar error in ErrInvalidKey with the part it
// concerns; nil stays nil.
func invalidKey(part, in string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %s %q: %v", ErrInvalidKey, part, in, err)
}

// Visibility says who may read an object besides its tenant.
type Visibility string

const (
	// Private objects are readable by their tenant only.
	Private Visibility = "private"
	// Public objects are readable by any authenticated caller.
	Public Visibility = "public"
)

// Meta is everything known about an object except its body.
type Meta struct {
	Key         Key
	MIMEType    string
	Size        int64     // body length in bytes
	SHA256      string    // lower-case hex of the body's SHA-256
	Created     time.Time // first creation; kept across replaces
	Modified    time.Time // last create or replace
	Expires     time.Time // zero: never
	Title       string
	Description string
	Listed      bool // shown by resources/list
	Visibility  Visibility
}

// Expired reports whether m has an expiry at or before now.
func (m *Meta) Expired(now time.Time) bool {
	return !m.Expires.IsZero() && !m.Expires.After(now)
}

// Object is a body with its metadata.
type Object struct {
	Meta
	Body []byte
	// Encoded is an optional second form of Body, opaque to the store,
	// that the caller wants kept with it (resourced keeps the body as it
	// appears inside a JSON-RPC response, so that a read copies it instead
	// of encoding it again). Backends whose KeepsEncoded is true store it
	// with the body and replace or delete it with the body, atomically;
	// the others ignore it. Get never returns it. It does not count in
	// Meta.Size, Usage or quotas.
	Encoded []byte
}

// Sum returns the lower-case hex SHA-256 of body, the form Meta.SHA256 uses.
func Sum(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// CondKind selects a write precondition.
type CondKind int

const (
	// Always writes unconditionally (create or replace).
	Always CondKind = iota
	// IfNone writes only if no live object exists at the key.
	IfNone
	// IfMatch writes only if a live object exists whose SHA256 equals Cond.SHA256.
	IfMatch
)

// Cond is a write precondition. The zero value is Always.
type Cond struct {
	Kind   CondKind
	SHA256 string // for IfMatch
	// Quota, when not zero, bounds the tenant's usage after the write; a
	// Put that would exceed it fails with ErrQuotaExceeded and writes
	// nothing. The check and the write are atomic: concurrent Puts racing
	// for the last bytes never overshoot. Usage counts expired objects
	// still stored (see Usage), and a replace counts only its size
	// difference. The bound is on the usage after the write, so a Put
	// that shrinks usage but leaves it over a (since lowered) quota fails
	// too; Delete and DeleteExpired take no quota.
	Quota Quota
}

// Quota limits what one tenant stores; a zero field is unlimited.
type Quota struct {
	Bytes   int64 // sum of body sizes
	Objects int64 // number of objects
}

// IsZero reports whether q limits nothing.
func (q Quota) IsZero() bool { return q.Bytes <= 0 && q.Objects <= 0 }

// Usage is what one tenant stores: every object still in storage,
// including expired ones the sweeper has not removed yet (they occupy
// space until it does).
type Usage struct {
	Bytes   int64
	Objects int64
}

// Exceeds reports whether u is over q.
func (u Usage) Exceeds(q Quota) bool {
	return q.Bytes > 0 && u.Bytes > q.Bytes || q.Objects > 0 && u.Objects > q.Objects
}

// CreateOnly is the precondition of a create that must not replace.
func CreateOnly() Cond { return Cond{Kind: IfNone} }

// Matching is the precondition of a replace bound to the current body hash.
func Matching(sha string) Cond { return Cond{Kind: IfMatch, SHA256: sha} }

// ListQuery selects objects of one tenant, in (scheme, path) byte order.
type ListQuery struct {
	Tenant     string
	Scheme     string // "": every scheme
	Prefix     string // path prefix within Scheme; needs Scheme
	After      Position
	Limit      int  // > 0; backends may return fewer
	ListedOnly bool // only objects with Meta.Listed
}

// Position is a place in the (scheme, path) order of one tenant. The zero
// Position is before everything.
type Position struct {
	Scheme, Path string
}

// Less reports whether p sorts before q.
func (p Position) Less(q Position) bool {
	if p.Scheme != q.Scheme {
		return p.Scheme < q.Scheme
	}
	return p.Path < q.Path
}

// Page is one page of a List.
type Page struct {
	Items []Meta
	// Next is the position to pass as After for the next page; valid only
	// when More is true.
	Next Position
	More bool
}

// Backend stores objects. Implementations are safe for concurrent use.
//
// Expiry is part of the contract: an object whose Meta.Expires is at or
// before the backend's clock is absent for Get, Stat, List and for the
// preconditions of Put and Delete, even if it still occupies storage.
type Backend interface {
	// Put stores obj at obj.Key if cond holds. The backend keeps obj.Created
	// of a live object it replaces and sets Modified to obj.Modified; it
	// returns the stored metadata and whether an existing live object was
	// replaced. The caller may leave both Size and SHA256 unset, and Put
	// computes them (the returned metadata carries them); when either is
	// set, Put rejects an object whose Size or SHA256 disagree with its
	// Body (ErrInvalidKey is not used for that: it is a plain error).
	Put(ctx context.Context, obj *Object, cond Cond) (meta Meta, replaced bool, err error)

	// Get returns the object at k. The returned Body is owned by the caller.
	Get(ctx context.Context, k Key) (*Object, error)

	// Stat returns the metadata of the object at k.
	Stat(ctx context.Context, k Key) (Meta, error)

	// ReadIf calls fn with the object at k if allow accepts it, decided on
	// its metadata before its body is fetched: an object allow refuses is
	// not downloaded, and ReadIf returns ErrNotFound for it as for a
	// missing one. allow sees the metadata of the very version whose body
	// fn gets, so a read decided this way takes one backend access, hit or
	// miss, and cannot pair one version's metadata with another's body.
	// encoded is the stored form when the backend keeps one (View's);
	// encoded and body are valid only while fn runs and must not be
	// modified; ReadIf returns fn's error as it is. GetIf is ReadIf with
	// a copy.
	ReadIf(ctx context.Context, k Key, allow func(*Meta) bool, fn func(m *Meta, encoded, body []byte) error) error

	// List returns live objects matching q in (scheme, path) order, strictly
	// after q.After. Objects deleted between pages are not returned; objects
	// added after the cursor position are.
	List(ctx context.Context, q ListQuery) (Page, error)

	// Delete removes the object at k if cond holds (Always or IfMatch;
	// IfNone is invalid). A missing object gives ErrNotFound.
	Delete(ctx context.Context, k Key, cond Cond) error

	// DeleteExpired removes up to limit (> 0) objects whose Expires is at
	// or before the backend's clock and returns how many it removed. Each
	// call is bounded (no long transaction) and never removes an object
	// that a concurrent Put made live again. Callers loop while it returns
	// limit, and sweep again later: a backend may examine only a bounded
	// number of objects per call (s3store does), so a return below limit
	// does not prove that no expired object remains.
	DeleteExpired(ctx context.Context, limit int) (int, error)

	// Usage returns what tenant stores (see Usage); a tenant with nothing
	// stored has the zero Usage. An invalid tenant name gives
	// ErrInvalidKey. Backends that do not support quotas return
	// ErrQuotaUnsupported.
	Usage(ctx context.Context, tenant string) (Usage, error)

	// ListPublic lists the public listed objects of every tenant; see
	// PublicLister. Every Backend has it: resources/list relies on it.
	ListPublic(ctx context.Context, after PublicPosition, limit int) (PublicPage, error)

	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error

	// Close releases resources. Calls after Close fail.
	Close() error

	// View looks up the live object at k, with Get's errors, and calls fn
	// once with its metadata, the Encoded form its last Put stored (nil
	// when the backend keeps none, when that Put had none, and after a
	// PutStream) and its body. encoded and body are valid only while fn
	// runs: they may be the backend's own memory (bbolt's mmap), so fn
	// copies what it keeps, modifies nothing and does not call the
	// backend. View returns fn's error as it is.
	View(ctx context.Context, k Key, fn func(m *Meta, encoded, body []byte) error) error

	// KeepsEncoded reports whether Put keeps Object.Encoded for View
	// (boltstore and memstore do; s3store does not).
	KeepsEncoded() bool

	// PutStream stores the body read from r, up to io.EOF, at meta.Key if
	// cond holds, with the same semantics as Put (preconditions, quota,
	// Created kept on replace, expiry). meta.Size and meta.SHA256 are
	// ignored: the backend computes both while it reads, and the returned
	// metadata carries them. The whole body is read before cond is
	// evaluated; cond and the write are then atomic exactly as for Put. A
	// read error of r, or a canceled ctx while reading, fails the call with
	// an error wrapping it and writes nothing. r is not bounded by the
	// backend: the caller limits it (e.g. http.MaxBytesReader). An empty
	// body is stored like any other (the server refuses it earlier).
	// Drivers that stream (boltstore, s3store) spool the body to an
	// unlinked temporary file and hold only buffers; for the others the
	// Bucket reads it into memory and calls Put.
	PutStream(ctx context.Context, meta *Meta, r io.Reader, cond Cond) (Meta, bool, error)

	// Open returns the metadata of the live object at k and a reader of its
	// body, positioned at its start, that can seek (io.SeekStart,
	// io.SeekCurrent, io.SeekEnd; a negative position is an error, reads
	// past the end give io.EOF). A missing or expired object gives
	// ErrNotFound. The reader uses ctx for the backend calls its reads
	// make, so ctx must stay valid until Close; the caller must Close it.
	// Reads return bytes of the body whose hash is Meta.SHA256 only: if the
	// object is replaced or deleted while it is read, a later Read fails
	// with an error rather than mixing two bodies. A streaming driver's
	// memory is bounded by the caller's buffers; for the others the Bucket
	// reads the body whole.
	Open(ctx context.Context, k Key) (Meta, io.ReadSeekCloser, error)

	// OpenIf is Open of an object allow accepts, decided on its metadata
	// before a body byte is read or copied (GetIf's rule); an object allow
	// refuses is ErrNotFound, as a missing one.
	OpenIf(ctx context.Context, k Key, allow func(*Meta) bool) (Meta, io.ReadSeekCloser, error)

	// Guard installs the panic guard (see Guard); call it before use.
	Guard(g Guard)
}

// GetIf is b.ReadIf returning a copy of the object, owned by the caller.
func GetIf(ctx context.Context, b Backend, k Key, allow func(*Meta) bool) (*Object, error) {
	var obj *Object
	err := b.ReadIf(ctx, k, allow, func(m *Meta, _, body []byte) error {
		obj = &Object{Meta: *m, Body: bytes.Clone(body)}
		if obj.Body == nil {
			obj.Body = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// CheckCond evaluates cond against the live object cur (nil when absent),
// returning a wrapped ErrPreconditionFailed when it does not hold. Drivers
// call it inside their write (see Driver).
func CheckCond(cur *Meta, cond Cond) error {
	switch cond.Kind {
	case IfNone:
		if cur != nil {
			return fmt.Errorf("an object exists: %w", ErrPreconditionFailed)
		}
	case IfMatch:
		if cur == nil {
			return fmt.Errorf("no object exists: %w", ErrPreconditionFailed)
		}
		if cur.SHA256 != cond.SHA256 {
			return fmt.Errorf("the object has another body: %w", ErrPreconditionFailed)
		}
	}
	return nil
}

// PublicPosition is a place in the (tenant, scheme, path) order of public
// objects. The zero PublicPosition is before everything.
type PublicPosition struct {
	Tenant, Scheme, Path string
}

// Less reports whether p sorts before q.
func (p PublicPosition) Less(q PublicPosition) bool {
	if p.Tenant != q.Tenant {
		return p.Tenant < q.Tenant
	}
	if p.Scheme != q.Scheme {
		return p.Scheme < q.Scheme
	}
	return p.Path < q.Path
}

// PublicPage is one page of ListPublic.
type PublicPage struct {
	Items []Meta
	// Next is the position to pass as after for the next page; valid only
	// when More is true.
	Next PublicPosition
	More bool
}

// PublicLister is part of every Backend (a Driver must implement it): it lists
// the live objects of all tenants that are both Listed and Public, in
// (tenant, scheme, path) byte order, strictly after after, at most limit
// (> 0) of them. It costs O(limit + objects skipped), not O(all objects):
// backends keep an index of public listed objects, updated in the same
// write as the object (or, where a backend cannot do that atomically, with
// the object written first and the index entry checked against it on read,
// so an index entry never shows an object that is not public and listed).
type PublicLister interface {
	ListPublic(ctx context.Context, after PublicPosition, limit int) (PublicPage, error)
}
