package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/internal/telemetry"
)

// Options configures a Bucket. The zero value is ready to use.
type Options struct {
	// Now is the one clock of the Bucket and its driver, for expiry; nil
	// means time.Now.
	Now func() time.Time
}

// Bucket is the portable store: the one Backend, over a Driver. It owns
// what is the same for every backend (see Driver for the list), so that
// every backend rejects the same inputs, hides expiry the same way and
// reports errors in one form. It has every method of Backend whatever its
// driver: View, PutStream and Open use the driver's capability
// (ViewDriver, StreamDriver) when it has one and fall back to Read and Put
// otherwise. Every call recovers a panic of the driver (Guard). It is safe
// for concurrent use.
type Bucket struct {
	d      Driver
	now    func() time.Time
	closed atomic.Bool
	view   ViewDriver   // nil: the driver keeps no encoded form
	stream StreamDriver // nil: the driver does not stream
	guard  atomic.Pointer[Guard]
	// failedAt is the UnixNano of the last recovered driver panic; 0: none
	// since the last good Ping.
	failedAt atomic.Int64
}

var _ Backend = (*Bucket)(nil)

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
	b.view, _ = d.(ViewDriver)
	b.stream, _ = d.(StreamDriver)
	b.guard.Store(&Guard{})
	return b
}

// KeepsEncoded implements Backend: true when the driver is a ViewDriver.
func (b *Bucket) KeepsEncoded() bool { return b.view != nil }

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

// span starts the tracing span of one call on k (internal/telemetry): its
// tenant and scheme, never its path. Nothing when tracing is off.
func span(ctx context.Context, op string, k Key) (context.Context, telemetry.Span) {
	if !telemetry.On() {
		return ctx, telemetry.Span{}
	}
	return telemetry.StartStore(ctx, op, k.Tenant(), k.Scheme())
}

// end ends sp, failed with the class of *err when there is one.
func end(sp telemetry.Span, err *error) {
	if *err != nil && sp.Recording() {
		sp.Fail(errClass(*err))
	}
	sp.End()
}

// errClass is a store error's error.type: its sentinel, never its text
// (which names the key).
func errClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{{ErrNotFound, "not_found"}, {ErrPreconditionFailed, "precondition_failed"}, {ErrQuotaExceeded, "quota_exceeded"},
		{ErrInvalidKey, "invalid_key"}, {ErrUnknownOutcome, "unknown_outcome"}, {ErrPanic, "panic"}, {ErrCallbackPanic, "callback_panic"},
		{context.Canceled, "canceled"}, {context.DeadlineExceeded, "timeout"}} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "error"
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
func (b *Bucket) Put(ctx context.Context, obj *Object, cond Cond) (_ Meta, _ bool, err error) {
	defer b.catch(ctx, "put", &err)
	if obj == nil {
		return Meta{}, false, fmt.Errorf("store: put: %w: zero key", ErrInvalidKey)
	}
	k := obj.Key
	if err := b.begin(ctx, "put", k); err != nil {
		return Meta{}, false, err
	}
	ctx, sp := span(ctx, "put", k)
	defer end(sp, &err)
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
		ferr = b.callback(ctx, op, func() error { return fn(m, encoded, body) })
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
func (b *Bucket) Get(ctx context.Context, k Key) (_ *Object, err error) {
	defer b.catch(ctx, "get", &err)
	var obj *Object
	err = b.read(ctx, "get", k, nil, func(m *Meta, _, body []byte) error {
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

// ReadIf implements Backend: through the driver's View when it keeps
// encoded forms (the body is in memory there, so the gate costs nothing),
// its ReadGated when it has one, else its Read with the gate in fn.
func (b *Bucket) ReadIf(ctx context.Context, k Key, allow func(*Meta) bool, fn func(m *Meta, encoded, body []byte) error) (err error) {
	defer b.catch(ctx, "get", &err)
	ctx, sp := span(ctx, "view", k)
	defer end(sp, &err)
	if b.view != nil {
		err = b.read(ctx, "get", k, b.view, func(m *Meta, encoded, body []byte) error {
			if !allow(m) {
				return errRefused
			}
			return fn(m, encoded, body)
		})
		if errors.Is(err, errRefused) {
			return notFound("get", k)
		}
		return err
	}
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
		ferr = b.callback(ctx, "get", func() error { return fn(m, nil, body) })
		return ferr
	}
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
func (b *Bucket) Stat(ctx context.Context, k Key) (_ Meta, err error) {
	defer b.catch(ctx, "stat", &err)
	if err := b.begin(ctx, "stat", k); err != nil {
		return Meta{}, err
	}
	ctx, sp := span(ctx, "stat", k)
	defer end(sp, &err)
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
func (b *Bucket) List(ctx context.Context, q ListQuery) (_ Page, err error) {
	defer b.catch(ctx, "list", &err)
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
	if telemetry.On() {
		var sp telemetry.Span
		ctx, sp = telemetry.StartStore(ctx, "list", q.Tenant, q.Scheme)
		defer end(sp, &err)
	}
	p, err := b.d.List(ctx, q, b.now)
	if err != nil {
		return Page{}, fail("list "+q.Tenant, err)
	}
	return p, nil
}

// ListPublic implements PublicLister, which every Backend is.
func (b *Bucket) ListPublic(ctx context.Context, after PublicPosition, limit int) (_ PublicPage, err error) {
	defer b.catch(ctx, "list public", &err)
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
func (b *Bucket) Delete(ctx context.Context, k Key, cond Cond) (err error) {
	defer b.catch(ctx, "delete", &err)
	if err := b.begin(ctx, "delete", k); err != nil {
		return err
	}
	ctx, sp := span(ctx, "delete", k)
	defer end(sp, &err)
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
func (b *Bucket) DeleteExpired(ctx context.Context, limit int) (_ int, err error) {
	defer b.catch(ctx, "delete expired", &err)
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
func (b *Bucket) Usage(ctx context.Context, tenant string) (_ Usage, err error) {
	defer b.catch(ctx, "usage", &err)
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

// Ping implements Backend. It fails while a driver panic is more recent
// than the guard's Hold; after it, a successful ping of the driver clears
// the mark.
func (b *Bucket) Ping(ctx context.Context) (err error) {
	defer b.catch(ctx, "ping", &err)
	if err := b.start(ctx, "ping"); err != nil {
		return err
	}
	at := b.failedAt.Load()
	if at != 0 {
		if since := b.now().Sub(time.Unix(0, at)); since < b.guard.Load().hold() {
			return fmt.Errorf("store: a storage operation panicked %s ago; not ready for %s after the last such panic", since.Round(time.Millisecond), b.guard.Load().hold())
		}
	}
	if err := b.d.Ping(ctx); err != nil {
		return fail("ping", err)
	}
	b.failedAt.CompareAndSwap(at, 0)
	return nil
}

// Close implements Backend: it closes the driver once. Later calls fail,
// but a second Close does nothing.
func (b *Bucket) Close() (err error) {
	defer b.catch(context.Background(), "close", &err)
	if b.closed.Swap(true) {
		return nil
	}
	if err := b.d.Close(); err != nil {
		return fail("close", err)
	}
	return nil
}

// View implements Backend: the driver's View, or its Read with no
// encoded form.
func (b *Bucket) View(ctx context.Context, k Key, fn func(m *Meta, encoded, body []byte) error) (err error) {
	defer b.catch(ctx, "view", &err)
	ctx, sp := span(ctx, "view", k)
	defer end(sp, &err)
	return b.read(ctx, "view", k, b.view, fn)
}

// PutStream implements Backend: the driver's PutStream, or the body read
// whole and Put.
func (b *Bucket) PutStream(ctx context.Context, meta *Meta, r io.Reader, cond Cond) (_ Meta, _ bool, err error) {
	defer b.catch(ctx, "put stream", &err)
	if meta == nil {
		return Meta{}, false, fmt.Errorf("store: put: %w: zero key", ErrInvalidKey)
	}
	k := meta.Key
	if err := b.begin(ctx, "put", k); err != nil {
		return Meta{}, false, err
	}
	if b.stream != nil { // without, Put below has the span
		var sp telemetry.Span
		ctx, sp = span(ctx, "put", k)
		defer end(sp, &err)
	}
	what := "put " + k.String()
	if err := checkCond(what, cond, false); err != nil {
		return Meta{}, false, err
	}
	m := normalize(*meta)
	m.Size, m.SHA256 = 0, ""
	if b.stream == nil {
		body, err := io.ReadAll(&ctxReader{ctx: ctx, r: r})
		if err != nil {
			return Meta{}, false, fmt.Errorf("store: %s: reading the body: %w", what, err)
		}
		return b.Put(ctx, &Object{Meta: m, Body: body}, cond)
	}
	got, replaced, err := b.stream.PutStream(ctx, &m, r, cond, b.now)
	if err != nil {
		return Meta{}, false, fail(what, err)
	}
	return got, replaced, nil
}

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Open implements Backend: the driver's Open, or the body read whole.
func (b *Bucket) Open(ctx context.Context, k Key) (Meta, io.ReadSeekCloser, error) {
	return b.OpenIf(ctx, k, nil)
}

// OpenIf implements Backend: Open of an object allow accepts (nil: any),
// decided on its metadata before a body byte is read or copied.
func (b *Bucket) OpenIf(ctx context.Context, k Key, allow func(*Meta) bool) (_ Meta, _ io.ReadSeekCloser, err error) {
	defer b.catch(ctx, "open", &err)
	ctx, sp := span(ctx, "open", k)
	defer end(sp, &err)
	if allow == nil {
		allow = func(*Meta) bool { return true }
	}
	if b.stream == nil {
		obj, err := GetIf(ctx, b, k, allow)
		if err != nil {
			return Meta{}, nil, err
		}
		return obj.Meta, &heldBody{b: b, ctx: ctx, m: obj.Meta, r: bytes.NewReader(obj.Body)}, nil
	}
	if err := b.begin(ctx, "open", k); err != nil {
		return Meta{}, nil, err
	}
	m, r, err := b.stream.Open(ctx, k)
	if err != nil {
		return Meta{}, nil, fail("open "+k.String(), err)
	}
	if m.Expired(b.now()) || !allow(&m) {
		r.Close()
		return Meta{}, nil, notFound("open", k)
	}
	return m, &guardedReader{b: b, r: r}, nil
}

// heldBody is Open's reader on a driver that does not stream: the body
// read whole, served only while the object is still the one opened (each
// Read checks its metadata), as a streaming reader would.
type heldBody struct {
	b      *Bucket
	ctx    context.Context
	m      Meta
	r      *bytes.Reader
	closed bool
}

var errReplaced = errors.New("the object was replaced or deleted while it was read")

func (h *heldBody) Read(p []byte) (int, error) {
	if h.closed {
		return 0, errors.New("store: read after close")
	}
	m, err := h.b.Stat(h.ctx, h.m.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, fmt.Errorf("store: read %s: %w", h.m.Key, errReplaced)
	case err != nil:
		return 0, err
	case m.SHA256 != h.m.SHA256 || !m.Modified.Equal(h.m.Modified):
		return 0, fmt.Errorf("store: read %s: %w", h.m.Key, errReplaced)
	}
	return h.r.Read(p)
}

func (h *heldBody) Seek(off int64, whence int) (int64, error) {
	if h.closed {
		return 0, errors.New("store: seek after close")
	}
	return h.r.Seek(off, whence)
}

func (h *heldBody) Close() error { h.closed = true; return nil }
