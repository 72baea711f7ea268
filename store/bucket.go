package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Options configures a Bucket. The zero value is ready to use.
type Options struct {
	// Now is the one clock of the Bucket and its driver, for expiry; nil
	// means time.Now.
	Now func() time.Time
}

// Bucket is the portable store: a Backend over a Driver. It owns what is
// the same for every backend (see Driver for the list), so that every
// backend rejects the same inputs, hides expiry the same way and reports
// errors in one form. It is safe for concurrent use.
//
// A Bucket has the optional methods of EncodedViewer and Streamer only
// through EncodedView and Streaming, which return nil when its driver
// lacks the capability; New returns a Backend whose dynamic type has
// View, PutStream and Open exactly when the driver supports them, so that
// a type assertion tells the truth.
type Bucket struct {
	d      Driver
	now    func() time.Time
	closed atomic.Bool
	view   EncodedViewer // nil: the driver keeps no encoded form
	stream Streamer      // nil: the driver does not stream
}

var (
	_ Backend      = (*Bucket)(nil)
	_ PublicLister = (*Bucket)(nil)
)

// errClosed is returned by every method after Close.
var errClosed = errors.New("store: closed")

// errExpired stops a driver's Read or View at an expired object.
var errExpired = errors.New("expired")

// NewBucket returns the portable store over d.
func NewBucket(d Driver, opts Options) *Bucket {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	b := &Bucket{d: d, now: now}
	if vd, ok := d.(ViewDriver); ok {
		b.view = &bucketView{b: b, d: vd}
	}
	if sd, ok := d.(StreamDriver); ok {
		b.stream = &bucketStream{b: b, d: sd}
	}
	return b
}

// New returns the portable store over d as a Backend whose dynamic type
// also implements EncodedViewer when d is a ViewDriver, and Streamer when
// d is a StreamDriver, and not otherwise.
func New(d Driver, opts Options) Backend {
	b := NewBucket(d, opts)
	switch {
	case b.view != nil && b.stream != nil:
		return &struct {
			*Bucket
			EncodedViewer
			Streamer
		}{b, b.view, b.stream}
	case b.view != nil:
		return &struct {
			*Bucket
			EncodedViewer
		}{b, b.view}
	case b.stream != nil:
		return &struct {
			*Bucket
			Streamer
		}{b, b.stream}
	}
	return b
}

// EncodedView returns b's EncodedViewer, or nil when its driver keeps no
// encoded form.
func (b *Bucket) EncodedView() EncodedViewer { return b.view }

// Streaming returns b's Streamer, or nil when its driver does not stream.
func (b *Bucket) Streaming() Streamer { return b.stream }

// begin runs the checks every keyed call starts with.
func (b *Bucket) begin(ctx context.Context, op string, k Key) error {
	if k.IsZero() {
		return fmt.Errorf("store: %s: %w: zero key", op, ErrInvalidKey)
	}
	return b.start(ctx, op+" "+k.String())
}

// start runs the checks every call starts with; what names the call.
func (b *Bucket) start(ctx context.Context, what string) error {
	if b.closed.Load() {
		return fmt.Errorf("store: %s: %w", what, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

// fail wraps a driver error; what names the call and its key.
func fail(what string, err error) error {
	return fmt.Errorf("store: %s: %w", what, err)
}

func notFound(op string, k Key) error {
	return fmt.Errorf("store: %s %s: %w", op, k, ErrNotFound)
}

// checkCond validates a write condition; del restricts it to Delete's.
func checkCond(what string, cond Cond, del bool) error {
	switch cond.Kind {
	case Always:
		return nil
	case IfNone:
		if !del {
			return nil
		}
	case IfMatch:
		if cond.SHA256 != "" {
			return nil
		}
		return fmt.Errorf("store: %s: IfMatch without a hash", what)
	default:
		return fmt.Errorf("store: %s: unknown condition %d", what, cond.Kind)
	}
	return fmt.Errorf("store: %s: invalid condition %+v (want Always or IfMatch with a hash)", what, cond)
}

// msUTC returns t at the precision and in the zone every backend keeps.
func msUTC(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// normalize returns m with its times as they read back once stored.
func normalize(m Meta) Meta {
	m.Created, m.Modified, m.Expires = msUTC(m.Created), msUTC(m.Modified), msUTC(m.Expires)
	return m
}

// Put implements Backend. It hashes the body when obj.SHA256 and obj.Size
// are both unset, so a caller that has not hashed the body need not: the
// returned Meta carries both. When the caller set them, Put checks them
// against the body (the size at once, the hash by hashing it again), so a
// caller that has the digest already pays for one more hash; leave both
// unset to hash once.
func (b *Bucket) Put(ctx context.Context, obj *Object, cond Cond) (Meta, bool, error) {
	if obj == nil {
		return Meta{}, false, fmt.Errorf("store: put: %w: zero key", ErrInvalidKey)
	}
	k := obj.Key
	if err := b.begin(ctx, "put", k); err != nil {
		return Meta{}, false, err
	}
	what := "put " + k.String()
	if err := checkCond(what, cond, false); err != nil {
		return Meta{}, false, err
	}
	o := *obj
	o.Meta = normalize(obj.Meta)
	switch n := int64(len(o.Body)); {
	case o.SHA256 == "" && o.Size == 0:
		o.Size, o.SHA256 = n, Sum(o.Body)
	case o.Size != n:
		return Meta{}, false, fmt.Errorf("store: %s: size %d does not match body length %d", what, o.Size, n)
	case Sum(o.Body) != o.SHA256:
		return Meta{}, false, fmt.Errorf("store: %s: sha256 does not match body", what)
	}
	m, replaced, err := b.d.Put(ctx, &o, cond, b.now)
	if err != nil {
		return Meta{}, false, fail(what, err)
	}
	return m, replaced, nil
}

// read calls fn with the live object at k through the driver's Read, or
// View when encoded is set; op names the caller in errors. fn's error is
// returned as it is.
func (b *Bucket) read(ctx context.Context, op string, k Key, view ViewDriver, fn func(m *Meta, encoded, body []byte) error) error {
	if err := b.begin(ctx, op, k); err != nil {
		return err
	}
	var (
		called bool
		ferr   error
	)
	live := func(m *Meta, encoded, body []byte) error {
		if m.Expired(b.now()) {
			return errExpired
		}
		called = true
		ferr = fn(m, encoded, body)
		return ferr
	}
	var err error
	if view != nil {
		err = view.View(ctx, k, live)
	} else {
		err = b.d.Read(ctx, k, func(m *Meta, body []byte) error { return live(m, nil, body) })
	}
	switch {
	case called && err == ferr:
		return err
	case errors.Is(err, errExpired):
		return notFound(op, k)
	case err != nil:
		return fail(op+" "+k.String(), err)
	}
	return nil
}

// Get implements Backend, on the driver's Read: one implementation for
// every backend. The body is copied out of the driver's memory.
func (b *Bucket) Get(ctx context.Context, k Key) (*Object, error) {
	var obj *Object
	err := b.read(ctx, "get", k, nil, func(m *Meta, _, body []byte) error {
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

// errRefused is how Bucket.ReadIf's gate stops a read allow refused.
var errRefused = errors.New("refused")

// ReadIf implements Backend: through the driver's ReadGated when it has
// one, else its Read with the gate in fn.
func (b *Bucket) ReadIf(ctx context.Context, k Key, allow func(*Meta) bool, fn func(m *Meta, body []byte) error) error {
	if err := b.begin(ctx, "get", k); err != nil {
		return err
	}
	gate := func(m *Meta) error {
		switch {
		case m.Expired(b.now()):
			return errExpired
		case !allow(m):
			return errRefused
		}
		return nil
	}
	var (
		called bool
		ferr   error
	)
	call := func(m *Meta, body []byte) error {
		called = true
		ferr = fn(m, body)
		return ferr
	}
	var err error
	if gd, ok := b.d.(GateDriver); ok {
		err = gd.ReadGated(ctx, k, gate, call)
	} else {
		err = b.d.Read(ctx, k, func(m *Meta, body []byte) error {
			if err := gate(m); err != nil {
				return err
			}
			return call(m, body)
		})
	}
	switch {
	case err == nil:
		return nil
	case called && err == ferr:
		return err
	case errors.Is(err, errExpired), errors.Is(err, errRefused):
		return notFound("get", k)
	}
	return fail("get "+k.String(), err)
}

// Stat implements Backend.
func (b *Bucket) Stat(ctx context.Context, k Key) (Meta, error) {
	if err := b.begin(ctx, "stat", k); err != nil {
		return Meta{}, err
	}
	m, err := b.d.Stat(ctx, k)
	if err != nil {
		return Meta{}, fail("stat "+k.String(), err)
	}
	if m.Expired(b.now()) {
		return Meta{}, notFound("stat", k)
	}
	return m, nil
}

// List implements Backend.
func (b *Bucket) List(ctx context.Context, q ListQuery) (Page, error) {
	if err := b.start(ctx, "list"); err != nil {
		return Page{}, err
	}
	if err := ValidTenant(q.Tenant); err != nil {
		return Page{}, fmt.Errorf("store: list: %w", err)
	}
	if q.Scheme != "" {
		if err := ValidScheme(q.Scheme); err != nil {
			return Page{}, fmt.Errorf("store: list: %w", err)
		}
	} else if q.Prefix != "" {
		return Page{}, fmt.Errorf("store: list: prefix %q without a scheme", q.Prefix)
	}
	if q.Limit <= 0 {
		return Page{}, fmt.Errorf("store: list: limit %d, want > 0", q.Limit)
	}
	p, err := b.d.List(ctx, q, b.now)
	if err != nil {
		return Page{}, fail("list "+q.Tenant, err)
	}
	return p, nil
}

// ListPublic implements PublicLister, which every Backend is.
func (b *Bucket) ListPublic(ctx context.Context, after PublicPosition, limit int) (PublicPage, error) {
	if err := b.start(ctx, "list public"); err != nil {
		return PublicPage{}, err
	}
	if limit <= 0 {
		return PublicPage{}, fmt.Errorf("store: list public: limit %d, want > 0", limit)
	}
	p, err := b.d.ListPublic(ctx, after, limit, b.now)
	if err != nil {
		return PublicPage{}, fail("list public", err)
	}
	return p, nil
}

// Delete implements Backend.
func (b *Bucket) Delete(ctx context.Context, k Key, cond Cond) error {
	if err := b.begin(ctx, "delete", k); err != nil {
		return err
	}
	what := "delete " + k.String()
	if err := checkCond(what, cond, true); err != nil {
		return err
	}
	if err := b.d.Delete(ctx, k, cond, b.now); err != nil {
		return fail(what, err)
	}
	return nil
}

// DeleteExpired implements Backend.
func (b *Bucket) DeleteExpired(ctx context.Context, limit int) (int, error) {
	if err := b.start(ctx, "delete expired"); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, fmt.Errorf("store: delete expired: limit %d, want > 0", limit)
	}
	n, err := b.d.DeleteExpired(ctx, limit, b.now)
	if err != nil {
		return n, fail("delete expired", err)
	}
	return n, nil
}

// Usage implements Backend.
func (b *Bucket) Usage(ctx context.Context, tenant string) (Usage, error) {
	if err := b.start(ctx, "usage"); err != nil {
		return Usage{}, err
	}
	if err := ValidTenant(tenant); err != nil {
		return Usage{}, fmt.Errorf("store: usage: %w", err)
	}
	u, err := b.d.Usage(ctx, tenant)
	if err != nil {
		return Usage{}, fail("usage "+tenant, err)
	}
	return u, nil
}

// Ping implements Backend.
func (b *Bucket) Ping(ctx context.Context) error {
	if err := b.start(ctx, "ping"); err != nil {
		return err
	}
	if err := b.d.Ping(ctx); err != nil {
		return fail("ping", err)
	}
	return nil
}

// Close implements Backend: it closes the driver once. Later calls fail,
// but a second Close does nothing.
func (b *Bucket) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	if err := b.d.Close(); err != nil {
		return fail("close", err)
	}
	return nil
}

// bucketView is a Bucket's EncodedViewer.
type bucketView struct {
	b *Bucket
	d ViewDriver
}

// View implements EncodedViewer.
func (v *bucketView) View(ctx context.Context, k Key, fn func(m *Meta, encoded, body []byte) error) error {
	return v.b.read(ctx, "view", k, v.d, fn)
}

// bucketStream is a Bucket's Streamer.
type bucketStream struct {
	b *Bucket
	d StreamDriver
}

// PutStream implements Streamer.
func (s *bucketStream) PutStream(ctx context.Context, meta *Meta, r io.Reader, cond Cond) (Meta, bool, error) {
	if meta == nil {
		return Meta{}, false, fmt.Errorf("store: put: %w: zero key", ErrInvalidKey)
	}
	k := meta.Key
	if err := s.b.begin(ctx, "put", k); err != nil {
		return Meta{}, false, err
	}
	what := "put " + k.String()
	if err := checkCond(what, cond, false); err != nil {
		return Meta{}, false, err
	}
	m := normalize(*meta)
	m.Size, m.SHA256 = 0, ""
	got, replaced, err := s.d.PutStream(ctx, &m, r, cond, s.b.now)
	if err != nil {
		return Meta{}, false, fail(what, err)
	}
	return got, replaced, nil
}

// Open implements Streamer.
func (s *bucketStream) Open(ctx context.Context, k Key) (Meta, io.ReadSeekCloser, error) {
	if err := s.b.begin(ctx, "open", k); err != nil {
		return Meta{}, nil, err
	}
	m, r, err := s.d.Open(ctx, k)
	if err != nil {
		return Meta{}, nil, fail("open "+k.String(), err)
	}
	if m.Expired(s.b.now()) {
		r.Close()
		return Meta{}, nil, notFound("open", k)
	}
	return m, r, nil
}
