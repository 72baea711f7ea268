// Package storetest owns the conformance suite that every store.Driver
// must pass, run against the portable store.Bucket over it (store.New),
// which is what resourced serves from. Each backend's own test file calls
// Run with a driver constructor; the suite gives every subtest a fresh,
// empty driver and a fake clock it controls (the Bucket's one clock), so
// expiry is tested without sleeping. Public listing is part of the
// contract and never skipped.
//
// What the suite requires beyond the store package's doc comments:
//   - times come back in UTC and within one millisecond of what was stored
//     (backends may truncate to millisecond precision, not coarser);
//   - metadata returned by Put, Get, Stat and List for one object is
//     identical, so a backend normalizes once, when it stores;
//   - Page.More is false when the page ends exactly at the last object;
//   - a closed backend fails every method without panicking, and a second
//     Close does not panic (Run closes each backend when its subtest ends);
//   - a backend whose Usage returns store.ErrQuotaUnsupported skips the
//     quota subtests, but must then refuse every Put with a quota with
//     that error, storing nothing;
//   - DeleteExpired may examine a bounded part of the store per call, but
//     repeated calls remove every expired object;
//   - every backend passes the Stream subtests, through its driver's
//     streaming or the Bucket's fallback: PutStream computes Size and
//     SHA256 itself and writes nothing when its reader fails, and an Open
//     reader never returns bytes of a body that replaced the one it opened;
//   - a backend whose KeepsEncoded is true passes the Encoded subtests: View shows the encoded form of the last Put with its body
//     (nil after a Put without one and after PutStream), never a mix of
//     two writes, and passes fn's error through.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// NewFunc makes a fresh, empty driver for one subtest. The suite runs
// against the portable store over it (store.New), with a fake clock it
// controls, exactly as resourced runs a backend.
type NewFunc func(t *testing.T) store.Driver

// Run runs the conformance suite against a store.Bucket over drivers made
// by newDriver, one fresh driver per subtest. Nothing in it is optional
// but the Stream and Encoded subtests (for drivers that are not a
// store.StreamDriver or a store.ViewDriver) and the quota subtests (for a
// driver whose Usage returns store.ErrQuotaUnsupported).
func Run(t *testing.T, newDriver NewFunc) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"MissingKey", testMissingKey},
		{"InvalidKey", testInvalidKey},
		{"RoundTrip", testRoundTrip},
		{"GetIf", testGetIf},
		{"PutRejectsMismatch", testPutRejectsMismatch},
		{"PutComputesDigest", testPutComputesDigest},
		{"CreateOnly", testCreateOnly},
		{"IfMatch", testIfMatch},
		{"Always", testAlways},
		{"Delete", testDelete},
		{"Expiry", testExpiry},
		{"ListOrder", testListOrder},
		{"ListSchemeFilter", testListSchemeFilter},
		{"ListPrefix", testListPrefix},
		{"ListListedOnly", testListListedOnly},
		{"ListPaging", testListPaging},
		{"ListPagingAcrossSchemes", testListPagingAcrossSchemes},
		{"ListDeletesBetweenPages", testListDeletesBetweenPages},
		{"TenantIsolation", testTenantIsolation},
		{"CanceledContext", testCanceledContext},
		{"BodyOwnership", testBodyOwnership},
		{"ConcurrentPutGetList", testConcurrentPutGetList},
		{"ConcurrentCreateOnly", testConcurrentCreateOnly},
		{"NothingLeftBehind", testNothingLeftBehind},
		{"ListPublic", testListPublic},
		{"ListPublicChanges", testListPublicChanges},
		{"ListPublicExpiry", testListPublicExpiry},
		{"ListPublicConcurrent", testListPublicConcurrent},
		{"DeleteExpired", testDeleteExpired},
		{"Quota", testQuota},
		{"QuotaConcurrent", testQuotaConcurrent},
		{"StreamRoundTrip", testStreamRoundTrip},
		{"StreamPreconditions", testStreamPreconditions},
		{"StreamReadError", testStreamReadError},
		{"StreamOpen", testStreamOpen},
		{"StreamChanged", testStreamChanged},
		{"StreamQuota", testStreamQuota},
		{"EncodedRoundTrip", testEncodedRoundTrip},
		{"EncodedOwnership", testEncodedOwnership},
		{"EncodedMissing", testEncodedMissing},
		{"EncodedFnError", testEncodedFnError},
		{"EncodedStream", testEncodedStream},
		{"EncodedConcurrent", testEncodedConcurrent},
		{"Ping", testPing},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newHarness(t, newDriver))
		})
	}
}

// epoch is where every fake clock starts. It is a whole second, so that
// boundary tests do not depend on a backend's sub-millisecond precision.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a fake clock safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type harness struct {
	b     store.Backend
	clock *clock
	ctx   context.Context
}

func newHarness(t *testing.T, newDriver NewFunc) *harness {
	t.Helper()
	c := &clock{now: epoch}
	// Registered first so that it runs last: the constructor's own
	// cleanups (consistency checks, say) see the backend still open.
	var b store.Backend
	t.Cleanup(func() {
		if b != nil {
			_ = b.Close()
		}
	})
	d := newDriver(t)
	if d == nil {
		t.Fatal("NewFunc returned a nil Driver")
	}
	b = store.NewBucket(d, store.Options{Now: c.Now})
	return &harness{b: b, clock: c, ctx: t.Context()}
}

// obj builds an object at k with body, Size and SHA256 filled and both
// Created and Modified at the clock's now.
func (h *harness) obj(k store.Key, body string) *store.Object {
	return newObj(k, []byte(body), h.clock.Now())
}

func newObj(k store.Key, body []byte, now time.Time) *store.Object {
	return &store.Object{
		Meta: store.Meta{
			Key:        k,
			MIMEType:   "text/plain",
			Size:       int64(len(body)),
			SHA256:     store.Sum(body),
			Created:    now,
			Modified:   now,
			Listed:     true,
			Visibility: store.Private,
		},
		Body: bytes.Clone(body),
	}
}

func (h *harness) put(t *testing.T, obj *store.Object, cond store.Cond) (store.Meta, bool) {
	t.Helper()
	m, replaced, err := h.b.Put(h.ctx, obj, cond)
	if err != nil {
		t.Fatalf("Put(%s, %+v) = %v, want nil", obj.Key, cond, err)
	}
	return m, replaced
}

func (h *harness) get(t *testing.T, k store.Key) *store.Object {
	t.Helper()
	o, err := h.b.Get(h.ctx, k)
	if err != nil {
		t.Fatalf("Get(%s) = %v, want nil", k, err)
	}
	if o == nil {
		t.Fatalf("Get(%s) = nil object and nil error", k)
	}
	return o
}

func (h *harness) stat(t *testing.T, k store.Key) store.Meta {
	t.Helper()
	m, err := h.b.Stat(h.ctx, k)
	if err != nil {
		t.Fatalf("Stat(%s) = %v, want nil", k, err)
	}
	return m
}

func (h *harness) list(t *testing.T, q store.ListQuery) store.Page {
	t.Helper()
	p, err := h.b.List(h.ctx, q)
	if err != nil {
		t.Fatalf("List(%+v) = %v, want nil", q, err)
	}
	if len(p.Items) > q.Limit {
		t.Fatalf("List(%+v) returned %d items, more than Limit", q, len(p.Items))
	}
	for _, m := range p.Items {
		if m.Key.Tenant() != q.Tenant {
			t.Errorf("List(%+v) returned %s of another tenant", q, m.Key)
		}
		if q.Scheme != "" && m.Key.Scheme() != q.Scheme {
			t.Errorf("List(%+v) returned %s of another scheme", q, m.Key)
		}
	}
	return p
}

// listAll pages through q with q.Limit per page and returns the keys in
// order, failing on duplicates, disorder or a listing that does not end.
func (h *harness) listAll(t *testing.T, q store.ListQuery) []string {
	t.Helper()
	var (
		keys []string
		last store.Position
	)
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatalf("List(%+v): no end after %d pages", q, i)
		}
		p := h.list(t, q)
		for _, m := range p.Items {
			pos := posOf(m.Key)
			if len(keys) > 0 && !last.Less(pos) {
				t.Fatalf("List(%+v) returned %s after %v: not strictly increasing", q, m.Key, last)
			}
			if q.After.Scheme != "" || q.After.Path != "" {
				if !q.After.Less(pos) {
					t.Fatalf("List(%+v) returned %s, not after %v", q, m.Key, q.After)
				}
			}
			last = pos
			keys = append(keys, m.Key.String())
		}
		if !p.More {
			return keys
		}
		q.After = p.Next
	}
}

func posOf(k store.Key) store.Position {
	return store.Position{Scheme: k.Scheme(), Path: k.Path()}
}

func keyStrings(ks []store.Key) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return out
}

func sortKeys(ks []store.Key) {
	slices.SortFunc(ks, func(a, b store.Key) int {
		if c := strings.Compare(a.Scheme(), b.Scheme()); c != 0 {
			return c
		}
		return strings.Compare(a.Path(), b.Path())
	})
}

// keyAsString lets cmp compare and print keys, whose fields are unexported.
var keyAsString = cmp.Transformer("Key", func(k store.Key) string { return k.String() })

// withinMillisecond accepts times at most one millisecond apart: backends
// may keep only millisecond precision.
var withinMillisecond = cmp.Comparer(func(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
})

// checkStored compares metadata a backend returned with what was stored,
// allowing millisecond precision, and requires UTC times.
func checkStored(t *testing.T, op string, got, want store.Meta) {
	t.Helper()
	if diff := cmp.Diff(want, got, keyAsString, withinMillisecond); diff != "" {
		t.Errorf("%s meta mismatch (-want +got):\n%s", op, diff)
	}
	checkUTC(t, op, got)
}

func checkUTC(t *testing.T, op string, m store.Meta) {
	t.Helper()
	for _, f := range []struct {
		name string
		v    time.Time
	}{{"Created", m.Created}, {"Modified", m.Modified}, {"Expires", m.Expires}} {
		if f.v.Location() != time.UTC {
			t.Errorf("%s: %s = %v in %v, want UTC", op, f.name, f.v, f.v.Location())
		}
	}
}

// checkSame requires two results of the backend for one object to be
// identical.
func checkSame(t *testing.T, op string, got, want store.Meta) {
	t.Helper()
	if diff := cmp.Diff(want, got, keyAsString); diff != "" {
		t.Errorf("%s meta differs from Stat (-want +got):\n%s", op, diff)
	}
}

func wantErr(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s = %v, want an error wrapping %q", op, err, target)
	}
}

func wantNotFound(t *testing.T, op string, k store.Key, err error) {
	t.Helper()
	wantErr(t, op, err, store.ErrNotFound)
	if err != nil && !strings.Contains(err.Error(), k.String()) {
		t.Errorf("%s = %q, want the error text to name %s", op, err, k)
	}
}

func (h *harness) wantAbsent(t *testing.T, k store.Key) {
	t.Helper()
	o, err := h.b.Get(h.ctx, k)
	wantNotFound(t, fmt.Sprintf("Get(%s)", k), k, err)
	if err == nil && o != nil {
		t.Errorf("Get(%s) returned body %q, want none", k, o.Body)
	}
	_, err = h.b.Stat(h.ctx, k)
	wantNotFound(t, fmt.Sprintf("Stat(%s)", k), k, err)
}

func (h *harness) wantBody(t *testing.T, k store.Key, want []byte) *store.Object {
	t.Helper()
	o := h.get(t, k)
	if !bytes.Equal(o.Body, want) {
		t.Errorf("Get(%s).Body = %q, want %q", k, o.Body, want)
	}
	if o.Size != int64(len(o.Body)) || o.SHA256 != store.Sum(o.Body) {
		t.Errorf("Get(%s): Size %d, SHA256 %s do not describe the body", k, o.Size, o.SHA256)
	}
	return o
}

func testMissingKey(t *testing.T, h *harness) {
	neighbour := store.MustKey("t1", "report", "present")
	h.put(t, h.obj(neighbour, "here"), store.Cond{})
	for _, k := range []store.Key{
		store.MustKey("t1", "report", "missing"),     // scheme bucket exists
		store.MustKey("t1", "other", "missing"),      // scheme never used
		store.MustKey("t2", "report", "present"),     // tenant never used
		store.MustKey("t1", "report", "present/sub"), // below an object
	} {
		h.wantAbsent(t, k)
		wantNotFound(t, fmt.Sprintf("Delete(%s)", k), k, h.b.Delete(h.ctx, k, store.Cond{}))
		wantNotFound(t, fmt.Sprintf("Delete(%s, IfMatch)", k), k,
			h.b.Delete(h.ctx, k, store.Matching(store.Sum([]byte("here")))))
	}
	h.wantBody(t, neighbour, []byte("here"))
}

// testGetIf checks Backend.GetIf: the gate sees the stored metadata, a
// refused, missing or expired object is ErrNotFound alike, an accepted one
// is Get's object, owned by the caller, and a replaced object is gated on
// its new metadata.
func testGetIf(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "gated")
	stored, _ := h.put(t, h.obj(k, "gated body"), store.Cond{})
	var seen []store.Meta
	allow := func(ok bool) func(*store.Meta) bool {
		return func(m *store.Meta) bool {
			seen = append(seen, *m)
			return ok
		}
	}
	o, err := store.GetIf(h.ctx, h.b, k, allow(true))
	if err != nil {
		t.Fatalf("GetIf(%s, allow) = %v, want nil", k, err)
	}
	if string(o.Body) != "gated body" || o.Key != k || o.SHA256 != stored.SHA256 {
		t.Fatalf("GetIf(%s, allow) = %s %q %x, want %s %q %x", k, o.Key, o.Body, o.SHA256, k, "gated body", stored.SHA256)
	}
	if len(seen) != 1 || seen[0].Key != k || seen[0].SHA256 != stored.SHA256 || seen[0].Visibility != store.Private {
		t.Fatalf("GetIf's gate saw %+v, want one call with the stored metadata of %s", seen, k)
	}
	o.Body[0] = 'X' // the caller owns the body
	h.wantBody(t, k, []byte("gated body"))

	seen = nil
	_, err = store.GetIf(h.ctx, h.b, k, allow(false))
	wantNotFound(t, fmt.Sprintf("GetIf(%s, refuse)", k), k, err)
	if len(seen) != 1 {
		t.Fatalf("GetIf(%s, refuse) called its gate %d times, want 1", k, len(seen))
	}

	missing := store.MustKey("t1", "report", "absent")
	seen = nil
	_, err = store.GetIf(h.ctx, h.b, missing, allow(true))
	wantNotFound(t, fmt.Sprintf("GetIf(%s) of a missing object", missing), missing, err)
	if len(seen) != 0 {
		t.Fatalf("GetIf of a missing object called its gate with %+v", seen)
	}

	pub := h.obj(k, "now public")
	pub.Visibility = store.Public
	h.put(t, pub, store.Cond{})
	seen = nil
	if o, err = store.GetIf(h.ctx, h.b, k, func(m *store.Meta) bool { return m.Visibility == store.Public }); err != nil || string(o.Body) != "now public" {
		t.Fatalf("GetIf(%s, public only) after a replace = %v, %v; want the new body", k, o, err)
	}

	exp := store.MustKey("t1", "report", "expiring")
	eo := h.obj(exp, "soon gone")
	eo.Expires = epoch.Add(time.Minute)
	h.put(t, eo, store.Cond{})
	h.clock.Set(eo.Expires)
	seen = nil
	_, err = store.GetIf(h.ctx, h.b, exp, allow(true))
	wantNotFound(t, fmt.Sprintf("GetIf(%s) of an expired object", exp), exp, err)
	if len(seen) != 0 {
		t.Fatalf("GetIf of an expired object called its gate with %+v", seen)
	}
	_, err = store.GetIf(h.ctx, h.b, store.Key{}, allow(true))
	wantErr(t, "GetIf(zero key)", err, store.ErrInvalidKey)
}

func testInvalidKey(t *testing.T, h *harness) {
	var zero store.Key
	_, _, err := h.b.Put(h.ctx, &store.Object{}, store.Cond{})
	wantErr(t, "Put(zero key)", err, store.ErrInvalidKey)
	_, err = h.b.Get(h.ctx, zero)
	wantErr(t, "Get(zero key)", err, store.ErrInvalidKey)
	_, err = h.b.Stat(h.ctx, zero)
	wantErr(t, "Stat(zero key)", err, store.ErrInvalidKey)
	wantErr(t, "Delete(zero key)", h.b.Delete(h.ctx, zero, store.Cond{}), store.ErrInvalidKey)
	for _, q := range []store.ListQuery{
		{Tenant: "", Limit: 10},
		{Tenant: "T1", Limit: 10},
		{Tenant: "t1/x", Limit: 10},
		{Tenant: "t1", Scheme: "Bad", Limit: 10},
	} {
		_, err := h.b.List(h.ctx, q)
		wantErr(t, fmt.Sprintf("List(%+v)", q), err, store.ErrInvalidKey)
	}

	// Delete takes Always or IfMatch only.
	k := store.MustKey("t1", "report", "x")
	h.put(t, h.obj(k, "x"), store.Cond{})
	if err := h.b.Delete(h.ctx, k, store.CreateOnly()); err == nil {
		t.Errorf("Delete(%s, IfNone) = nil, want an error", k)
	}
	h.wantBody(t, k, []byte("x"))
}

func binaryBody() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func testRoundTrip(t *testing.T, h *harness) {
	// Times off the millisecond grid and outside UTC: backends must return
	// them in UTC, within a millisecond.
	zone := time.FixedZone("UTC+5", 5*3600)
	created := epoch.Add(-48*time.Hour + 123_456_789).In(zone)
	modified := epoch.Add(-time.Hour + 987_654_321).In(zone)
	expires := epoch.Add(24*time.Hour + 555_555_555).In(zone)

	tests := []struct {
		name string
		body []byte
		meta store.Meta
	}{
		{"empty", []byte{}, store.Meta{
			MIMEType: "application/octet-stream", Visibility: store.Private,
		}},
		{"text", []byte("hello, world\nline two — ünïcödé\n"), store.Meta{
			MIMEType: "text/markdown; charset=utf-8", Title: "Quarterly report — été ✓",
			Description: "A description\nwith a newline and \"quotes\".",
			Listed:      true, Visibility: store.Public, Expires: expires,
		}},
		{"binary", binaryBody(), store.Meta{
			MIMEType: "application/octet-stream", Title: "bytes", Listed: true,
			Visibility: store.Private, Expires: expires,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := store.MustKey("t1", "report", "round/"+tc.name)
			want := tc.meta
			want.Key = k
			want.Size = int64(len(tc.body))
			want.SHA256 = store.Sum(tc.body)
			want.Created = created
			want.Modified = modified

			obj := &store.Object{Meta: want, Body: bytes.Clone(tc.body)}
			put, replaced := h.put(t, obj, store.CreateOnly())
			if replaced {
				t.Errorf("Put(%s) replaced = true, want false", k)
			}
			checkStored(t, fmt.Sprintf("Put(%s)", k), put, want)

			got := h.wantBody(t, k, tc.body)
			checkStored(t, fmt.Sprintf("Get(%s)", k), got.Meta, want)

			st := h.stat(t, k)
			checkStored(t, fmt.Sprintf("Stat(%s)", k), st, want)
			checkSame(t, fmt.Sprintf("Put(%s)", k), put, st)
			checkSame(t, fmt.Sprintf("Get(%s)", k), got.Meta, st)

			p := h.list(t, store.ListQuery{Tenant: "t1", Scheme: "report", Prefix: "round/" + tc.name, Limit: 10})
			if len(p.Items) != 1 {
				t.Fatalf("List(prefix %q) = %d items, want 1", "round/"+tc.name, len(p.Items))
			}
			checkSame(t, fmt.Sprintf("List(%s)", k), p.Items[0], st)
		})
	}
}

func testPutRejectsMismatch(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "bad")
	tests := []struct {
		name string
		edit func(o *store.Object)
	}{
		{"size too small", func(o *store.Object) { o.Size-- }},
		{"size too large", func(o *store.Object) { o.Size++ }},
		{"wrong sha256", func(o *store.Object) { o.SHA256 = store.Sum([]byte("other")) }},
		{"upper-case sha256", func(o *store.Object) { o.SHA256 = strings.ToUpper(o.SHA256) }},
		{"empty sha256", func(o *store.Object) { o.SHA256 = "" }},
	}
	for _, tc := range tests {
		o := h.obj(k, "body")
		tc.edit(o)
		if _, _, err := h.b.Put(h.ctx, o, store.Cond{}); err == nil {
			t.Errorf("Put(%s) with %s = nil error, want an error", k, tc.name)
		}
	}
	h.wantAbsent(t, k)

	// A rejected replace leaves the stored object alone.
	h.put(t, h.obj(k, "good"), store.Cond{})
	o := h.obj(k, "evil")
	o.SHA256 = store.Sum([]byte("good"))
	if _, _, err := h.b.Put(h.ctx, o, store.Cond{}); err == nil {
		t.Errorf("Put(%s) with a foreign sha256 = nil error, want an error", k)
	}
	h.wantBody(t, k, []byte("good"))
}

// testPutComputesDigest: a Put with neither Size nor SHA256 is hashed by
// the store, once, and reads back with both.
func testPutComputesDigest(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "unhashed")
	o := h.obj(k, "body")
	o.Size, o.SHA256 = 0, ""
	m, _ := h.put(t, o, store.Cond{})
	if m.Size != 4 || m.SHA256 != store.Sum([]byte("body")) {
		t.Errorf("Put(%s) without a digest = size %d, sha256 %q; want 4, the body's", k, m.Size, m.SHA256)
	}
	if st, err := h.b.Stat(h.ctx, k); err != nil || st.SHA256 != m.SHA256 || st.Size != 4 {
		t.Errorf("Stat(%s) = %+v, %v; want the computed digest", k, st, err)
	}
	h.wantBody(t, k, []byte("body"))
}

func testCreateOnly(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "once")
	first, replaced := h.put(t, h.obj(k, "first"), store.CreateOnly())
	if replaced {
		t.Errorf("Put(%s, IfNone) replaced = true, want false", k)
	}
	h.clock.Advance(time.Minute)
	second := h.obj(k, "second")
	second.Title = "changed"
	_, replaced, err := h.b.Put(h.ctx, second, store.CreateOnly())
	wantErr(t, fmt.Sprintf("Put(%s, IfNone) over an existing object", k), err, store.ErrPreconditionFailed)
	if replaced {
		t.Errorf("Put(%s, IfNone) failing: replaced = true, want false", k)
	}
	got := h.wantBody(t, k, []byte("first"))
	checkSame(t, fmt.Sprintf("Get(%s) after a failed create", k), got.Meta, first)
}

func testIfMatch(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "m")
	v1 := h.obj(k, "v1")
	v1.Created = epoch.Add(-time.Hour)
	v1.Modified = v1.Created
	m1, _ := h.put(t, v1, store.CreateOnly())

	v2 := h.obj(k, "v2")
	v2.Created = epoch.Add(time.Hour) // must be ignored: Created is kept
	v2.Modified = epoch.Add(time.Hour + 250*time.Millisecond)
	v2.Title = "second"
	m2, replaced := h.put(t, v2, store.Matching(m1.SHA256))
	if !replaced {
		t.Errorf("Put(%s, IfMatch right hash) replaced = false, want true", k)
	}
	want := v2.Meta
	want.Created = m1.Created
	checkStored(t, fmt.Sprintf("Put(%s, IfMatch)", k), m2, want)
	got := h.wantBody(t, k, []byte("v2"))
	checkSame(t, fmt.Sprintf("Get(%s)", k), got.Meta, m2)

	// A stale hash fails and changes nothing.
	v3 := h.obj(k, "v3")
	_, replaced, err := h.b.Put(h.ctx, v3, store.Matching(m1.SHA256))
	wantErr(t, fmt.Sprintf("Put(%s, IfMatch stale hash)", k), err, store.ErrPreconditionFailed)
	if replaced {
		t.Errorf("Put(%s, IfMatch stale hash) replaced = true, want false", k)
	}
	got = h.wantBody(t, k, []byte("v2"))
	checkSame(t, fmt.Sprintf("Get(%s) after a failed IfMatch", k), got.Meta, m2)

	// IfMatch never creates.
	missing := store.MustKey("t1", "report", "never")
	_, _, err = h.b.Put(h.ctx, h.obj(missing, "x"), store.Matching(store.Sum([]byte("x"))))
	wantErr(t, fmt.Sprintf("Put(%s, IfMatch) on a missing key", missing), err, store.ErrPreconditionFailed)
	h.wantAbsent(t, missing)
}

func testAlways(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "always")
	a := h.obj(k, "a")
	a.Created = epoch.Add(-time.Hour)
	m1, replaced := h.put(t, a, store.Cond{})
	if replaced {
		t.Errorf("Put(%s, Always) on a missing key: replaced = true, want false", k)
	}
	checkStored(t, fmt.Sprintf("Put(%s, Always)", k), m1, a.Meta)

	h.clock.Advance(time.Second)
	b := h.obj(k, "b")
	m2, replaced := h.put(t, b, store.Cond{})
	if !replaced {
		t.Errorf("Put(%s, Always) on an existing key: replaced = false, want true", k)
	}
	want := b.Meta
	want.Created = m1.Created
	checkStored(t, fmt.Sprintf("Put(%s, Always) replacing", k), m2, want)
	h.wantBody(t, k, []byte("b"))
}

func testDelete(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "d")
	m, _ := h.put(t, h.obj(k, "body"), store.Cond{})

	err := h.b.Delete(h.ctx, k, store.Matching(store.Sum([]byte("other"))))
	wantErr(t, fmt.Sprintf("Delete(%s, IfMatch wrong hash)", k), err, store.ErrPreconditionFailed)
	h.wantBody(t, k, []byte("body"))

	if err := h.b.Delete(h.ctx, k, store.Matching(m.SHA256)); err != nil {
		t.Fatalf("Delete(%s, IfMatch right hash) = %v, want nil", k, err)
	}
	h.wantAbsent(t, k)
	wantNotFound(t, fmt.Sprintf("Delete(%s) twice", k), k, h.b.Delete(h.ctx, k, store.Cond{}))

	h.put(t, h.obj(k, "again"), store.CreateOnly())
	if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
		t.Fatalf("Delete(%s, Always) = %v, want nil", k, err)
	}
	h.wantAbsent(t, k)
}

func testExpiry(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "exp")
	other := store.MustKey("t1", "report", "stays")
	h.put(t, h.obj(other, "stays"), store.Cond{})

	o := h.obj(k, "old")
	o.Created = epoch.Add(-time.Hour)
	o.Expires = epoch.Add(time.Minute)
	old, _ := h.put(t, o, store.CreateOnly())

	h.clock.Set(o.Expires.Add(-time.Millisecond))
	h.wantBody(t, k, []byte("old"))
	if got := h.listAll(t, store.ListQuery{Tenant: "t1", Limit: 10}); len(got) != 2 {
		t.Errorf("List before expiry = %v, want 2 items", got)
	}

	h.clock.Set(o.Expires) // Expires == now: expired
	h.wantAbsent(t, k)
	want := []string{other.String()}
	if diff := cmp.Diff(want, h.listAll(t, store.ListQuery{Tenant: "t1", Limit: 10})); diff != "" {
		t.Errorf("List after expiry (-want +got):\n%s", diff)
	}
	if got := h.listAll(t, store.ListQuery{Tenant: "t1", Scheme: "report", Prefix: "exp", Limit: 1}); len(got) != 0 {
		t.Errorf("List(prefix exp) after expiry = %v, want none", got)
	}

	_, _, err := h.b.Put(h.ctx, h.obj(k, "new"), store.Matching(old.SHA256))
	wantErr(t, fmt.Sprintf("Put(%s, IfMatch) over an expired object", k), err, store.ErrPreconditionFailed)
	wantNotFound(t, fmt.Sprintf("Delete(%s) of an expired object", k), k, h.b.Delete(h.ctx, k, store.Cond{}))
	wantNotFound(t, fmt.Sprintf("Delete(%s, IfMatch) of an expired object", k), k, h.b.Delete(h.ctx, k, store.Matching(old.SHA256)))

	h.clock.Advance(time.Second)
	n := h.obj(k, "new")
	m, replaced := h.put(t, n, store.CreateOnly())
	if replaced {
		t.Errorf("Put(%s, IfNone) over an expired object: replaced = true, want false", k)
	}
	checkStored(t, fmt.Sprintf("Put(%s, IfNone) over an expired object", k), m, n.Meta)
	if !m.Created.After(old.Created) {
		t.Errorf("Put(%s) over an expired object kept Created %v, want the new %v", k, m.Created, n.Created)
	}
	h.wantBody(t, k, []byte("new"))

	// Always over an expired object creates too.
	k2 := store.MustKey("t1", "report", "exp2")
	o2 := h.obj(k2, "old")
	o2.Expires = h.clock.Now().Add(time.Second)
	h.put(t, o2, store.Cond{})
	h.clock.Advance(2 * time.Second)
	n2 := h.obj(k2, "new")
	m2, replaced := h.put(t, n2, store.Cond{})
	if replaced {
		t.Errorf("Put(%s, Always) over an expired object: replaced = true, want false", k2)
	}
	checkStored(t, fmt.Sprintf("Put(%s, Always) over an expired object", k2), m2, n2.Meta)
}

// putKeys stores one small object per key, in a shuffled order.
func (h *harness) putKeys(t *testing.T, keys []store.Key) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for _, i := range r.Perm(len(keys)) {
		h.put(t, h.obj(keys[i], "body of "+keys[i].String()), store.Cond{})
	}
}

// orderKeys covers schemes and paths whose byte order differs from a
// segment-wise or case-folded order.
func orderKeys(tenant string) []store.Key {
	var ks []store.Key
	for _, s := range []string{"a", "a+b", "a-b", "a.b", "b"} {
		for _, p := range []string{"A", "Z", "a", "a-b", "a.b", "a/b", "a/b/c", "a_b", "a~", "aa", "b", "b0", "b/0"} {
			ks = append(ks, store.MustKey(tenant, s, p))
		}
	}
	return ks
}

func testListOrder(t *testing.T, h *harness) {
	keys := orderKeys("t1")
	h.putKeys(t, keys)
	sortKeys(keys)
	want := keyStrings(keys)

	p := h.list(t, store.ListQuery{Tenant: "t1", Limit: len(keys) + 10})
	got := make([]string, len(p.Items))
	for i, m := range p.Items {
		got[i] = m.Key.String()
	}
	if p.More {
		// A backend may return fewer; then paging must complete the list.
		got = append(got, h.listAll(t, store.ListQuery{Tenant: "t1", After: p.Next, Limit: len(keys) + 10})...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List order (-want +got):\n%s", diff)
	}

	// Exact limits: More iff something follows.
	if p := h.list(t, store.ListQuery{Tenant: "t1", Limit: len(keys)}); len(p.Items) == len(keys) && p.More {
		t.Errorf("List(Limit %d) of %d objects: More = true, want false", len(keys), len(keys))
	}
	if p := h.list(t, store.ListQuery{Tenant: "t1", Limit: len(keys) - 1}); !p.More {
		t.Errorf("List(Limit %d) of %d objects: More = false, want true", len(keys)-1, len(keys))
	}
	if p := h.list(t, store.ListQuery{Tenant: "t1", After: posOf(keys[len(keys)-1]), Limit: 5}); len(p.Items) != 0 || p.More {
		t.Errorf("List(After the last object) = %d items, More %v; want none", len(p.Items), p.More)
	}
	if p := h.list(t, store.ListQuery{Tenant: "t2", Limit: 5}); len(p.Items) != 0 || p.More {
		t.Errorf("List(empty tenant) = %d items, More %v; want none", len(p.Items), p.More)
	}
}

func testListSchemeFilter(t *testing.T, h *harness) {
	keys := orderKeys("t1")
	h.putKeys(t, keys)
	sortKeys(keys)
	for _, scheme := range []string{"a", "a+b", "b", "c"} {
		var want []string
		for _, k := range keys {
			if k.Scheme() == scheme {
				want = append(want, k.String())
			}
		}
		for _, limit := range []int{1, 4, 100} {
			got := h.listAll(t, store.ListQuery{Tenant: "t1", Scheme: scheme, Limit: limit})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("List(scheme %q, limit %d) (-want +got):\n%s", scheme, limit, diff)
			}
		}
	}

	// After in another scheme.
	tests := []struct {
		scheme string
		after  store.Position
	}{
		{"b", store.Position{Scheme: "a", Path: "zzz"}},
		{"b", store.Position{Scheme: "a.b"}},
		{"a", store.Position{Scheme: "b"}},
		{"a", store.Position{Scheme: "a+b", Path: "A"}},
		{"a-b", store.Position{Scheme: "a-b", Path: "a~"}},
		{"a-b", store.Position{Scheme: "a-b", Path: "a/b"}},
	}
	for _, tc := range tests {
		var want []string
		for _, k := range keys {
			if k.Scheme() == tc.scheme && tc.after.Less(posOf(k)) {
				want = append(want, k.String())
			}
		}
		got := h.listAll(t, store.ListQuery{Tenant: "t1", Scheme: tc.scheme, After: tc.after, Limit: 3})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List(scheme %q, after %+v) (-want +got):\n%s", tc.scheme, tc.after, diff)
		}
	}
}

func testListPrefix(t *testing.T, h *harness) {
	var keys []store.Key
	for _, p := range []string{"a", "a/1", "a/2", "a/2/z", "a-b/1", "a.b", "ab/1", "b/1", "A/1"} {
		keys = append(keys, store.MustKey("t1", "x", p))
	}
	keys = append(keys, store.MustKey("t1", "w", "a/1"), store.MustKey("t1", "y", "a/1"), store.MustKey("t1", "x-y", "a/1"))
	h.putKeys(t, keys)

	tests := []struct {
		prefix string
		after  string
		want   []string
	}{
		{"a/", "", []string{"a/1", "a/2", "a/2/z"}},
		{"a/2", "", []string{"a/2", "a/2/z"}},
		{"a/", "a/1", []string{"a/2", "a/2/z"}},
		{"a/", "a/0", []string{"a/1", "a/2", "a/2/z"}},
		{"a/", "a/2/z", nil},
		{"a/", "b", nil},
		{"a", "", []string{"a", "a-b/1", "a.b", "a/1", "a/2", "a/2/z", "ab/1"}},
		{"ab/", "", []string{"ab/1"}},
		{"c", "", nil},
		{"A", "", []string{"A/1"}},
	}
	for _, tc := range tests {
		var want []string
		for _, p := range tc.want {
			want = append(want, store.MustKey("t1", "x", p).String())
		}
		for _, limit := range []int{1, 2, 100} {
			q := store.ListQuery{Tenant: "t1", Scheme: "x", Prefix: tc.prefix, Limit: limit}
			if tc.after != "" {
				q.After = store.Position{Scheme: "x", Path: tc.after}
			}
			got := h.listAll(t, q)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("List(prefix %q, after %q, limit %d) (-want +got):\n%s", tc.prefix, tc.after, limit, diff)
			}
		}
	}
}

func testListListedOnly(t *testing.T, h *harness) {
	var want, all []string
	for i := range 12 {
		k := store.MustKey("t1", []string{"a", "b"}[i%2], fmt.Sprintf("p%02d", i))
		o := h.obj(k, "x")
		o.Listed = i%3 == 0
		h.put(t, o, store.Cond{})
		all = append(all, k.String())
		if o.Listed {
			want = append(want, k.String())
		}
	}
	// Expected order: scheme a (even i) then scheme b (odd i).
	slices.SortFunc(want, strings.Compare)
	slices.SortFunc(all, strings.Compare)
	for _, limit := range []int{1, 3, 100} {
		got := h.listAll(t, store.ListQuery{Tenant: "t1", ListedOnly: true, Limit: limit})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List(ListedOnly, limit %d) (-want +got):\n%s", limit, diff)
		}
		got = h.listAll(t, store.ListQuery{Tenant: "t1", Limit: limit})
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("List(limit %d) (-want +got):\n%s", limit, diff)
		}
	}
}

func testListPaging(t *testing.T, h *harness) {
	keys := orderKeys("t1")
	h.putKeys(t, keys)
	sortKeys(keys)
	want := keyStrings(keys)
	for _, limit := range []int{1, 2, 3, 7, len(keys) - 1, len(keys), len(keys) + 1} {
		got := h.listAll(t, store.ListQuery{Tenant: "t1", Limit: limit})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List paging with limit %d (-want +got):\n%s", limit, diff)
		}
	}
	// Starting from every position gives the rest.
	for i, k := range keys {
		got := h.listAll(t, store.ListQuery{Tenant: "t1", After: posOf(k), Limit: 5})
		if diff := cmp.Diff(want[i+1:], got, cmpEmpty); diff != "" {
			t.Errorf("List(After %s) (-want +got):\n%s", k, diff)
		}
	}
}

// cmpEmpty treats nil and empty string slices alike.
var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

func testListPagingAcrossSchemes(t *testing.T, h *harness) {
	var keys []store.Key
	for _, s := range []string{"a", "b"} {
		for _, p := range []string{"1", "2", "3"} {
			keys = append(keys, store.MustKey("t1", s, p))
		}
	}
	h.putKeys(t, keys)
	want := keyStrings(keys)
	for _, limit := range []int{1, 2, 3, 4, 6} {
		got := h.listAll(t, store.ListQuery{Tenant: "t1", Limit: limit})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List across schemes with limit %d (-want +got):\n%s", limit, diff)
		}
	}
	tests := []struct {
		after store.Position
		want  []string
	}{
		{store.Position{Scheme: "a"}, want},
		{store.Position{Scheme: "a", Path: "3"}, want[3:]},
		{store.Position{Scheme: "a", Path: "zzz"}, want[3:]},
		{store.Position{Scheme: "a+"}, want[3:]},
		{store.Position{Scheme: "b", Path: "2"}, want[5:]},
		{store.Position{Scheme: "c"}, nil},
	}
	for _, tc := range tests {
		got := h.listAll(t, store.ListQuery{Tenant: "t1", After: tc.after, Limit: 2})
		if diff := cmp.Diff(tc.want, got, cmpEmpty); diff != "" {
			t.Errorf("List(After %+v) (-want +got):\n%s", tc.after, diff)
		}
	}
}

func testListDeletesBetweenPages(t *testing.T, h *harness) {
	var keys []store.Key
	for i := range 10 {
		keys = append(keys, store.MustKey("t1", []string{"a", "b"}[i/5], fmt.Sprintf("p%d", i)))
	}
	h.putKeys(t, keys)

	q := store.ListQuery{Tenant: "t1", Limit: 3}
	p := h.list(t, q)
	if !p.More || len(p.Items) == 0 {
		t.Fatalf("List(limit 3) of 10 = %d items, More %v; want a first page", len(p.Items), p.More)
	}
	var got []string
	for _, m := range p.Items {
		got = append(got, m.Key.String())
	}
	n := len(p.Items) // keys[:n] were returned
	// Delete the cursor object itself, one already returned, and the two
	// that would come next; add one that sorts after the cursor.
	deleted := map[string]bool{}
	for _, k := range []store.Key{keys[n-1], keys[0], keys[n], keys[n+1]} {
		if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
			t.Fatalf("Delete(%s) = %v, want nil", k, err)
		}
		deleted[k.String()] = true
	}
	added := store.MustKey("t1", "b", "p45")
	h.put(t, h.obj(added, "late"), store.CreateOnly())

	q.After = p.Next
	got = append(got, h.listAll(t, q)...)

	var want []string
	for i, k := range keys {
		if i < n || !deleted[k.String()] {
			want = append(want, k.String())
		}
		if k.String() == store.MustKey("t1", "a", "p4").String() { // b/p45 sorts before b/p5
			want = append(want, added.String())
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List with deletes between pages (-want +got):\n%s", diff)
	}
}

func testTenantIsolation(t *testing.T, h *harness) {
	for _, pair := range [][2]string{{"t1", "t10"}, {"t1", "t1-x"}, {"t10", "t1"}, {"t1-x", "t1"}} {
		t.Run(pair[0]+"_vs_"+pair[1], func(t *testing.T) {
			a, b := pair[0], pair[1]
			shared := "iso/" + a + "-" + b
			ka := store.MustKey(a, "report", shared)
			kb := store.MustKey(b, "report", shared)
			onlyB := store.MustKey(b, "report", "only/"+a+"-"+b)
			h.put(t, h.obj(ka, "of "+a), store.CreateOnly())
			if _, replaced := h.put(t, h.obj(kb, "of "+b), store.CreateOnly()); replaced {
				t.Errorf("Put(%s) replaced the object of another tenant", kb)
			}
			h.put(t, h.obj(onlyB, "only "+b), store.CreateOnly())

			h.wantBody(t, ka, []byte("of "+a))
			h.wantBody(t, kb, []byte("of "+b))
			h.wantAbsent(t, store.MustKey(a, "report", "only/"+a+"-"+b))

			for _, tenant := range []string{a, b} {
				for _, key := range h.listAll(t, store.ListQuery{Tenant: tenant, Limit: 100}) {
					if !strings.Contains(key, "://"+tenant+"/") {
						t.Errorf("List(tenant %s) returned %s", tenant, key)
					}
				}
				for _, key := range h.listAll(t, store.ListQuery{Tenant: tenant, Scheme: "report", Prefix: "only/", Limit: 1}) {
					if !strings.Contains(key, "://"+tenant+"/") {
						t.Errorf("List(tenant %s, prefix only/) returned %s", tenant, key)
					}
				}
			}

			missing := store.MustKey(a, "report", "only/"+a+"-"+b)
			wantNotFound(t, fmt.Sprintf("Delete(%s)", missing), missing, h.b.Delete(h.ctx, missing, store.Cond{}))
			h.wantBody(t, onlyB, []byte("only "+b))

			if err := h.b.Delete(h.ctx, ka, store.Cond{}); err != nil {
				t.Fatalf("Delete(%s) = %v, want nil", ka, err)
			}
			h.wantAbsent(t, ka)
			h.wantBody(t, kb, []byte("of "+b))
		})
	}
}

func testCanceledContext(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "c")
	h.put(t, h.obj(k, "kept"), store.Cond{})
	newKey := store.MustKey("t1", "report", "c-new")

	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	_, _, err := h.b.Put(ctx, h.obj(newKey, "x"), store.Cond{})
	wantErr(t, "Put(canceled)", err, context.Canceled)
	_, _, err = h.b.Put(ctx, h.obj(k, "x"), store.Cond{})
	wantErr(t, "Put(canceled) over an existing object", err, context.Canceled)
	_, err = h.b.Get(ctx, k)
	wantErr(t, "Get(canceled)", err, context.Canceled)
	_, err = h.b.Stat(ctx, k)
	wantErr(t, "Stat(canceled)", err, context.Canceled)
	_, err = h.b.List(ctx, store.ListQuery{Tenant: "t1", Limit: 10})
	wantErr(t, "List(canceled)", err, context.Canceled)
	wantErr(t, "Delete(canceled)", h.b.Delete(ctx, k, store.Cond{}), context.Canceled)
	_, err = h.b.DeleteExpired(ctx, 10)
	wantErr(t, "DeleteExpired(canceled)", err, context.Canceled)
	_, err = h.b.Usage(ctx, "t1")
	wantErr(t, "Usage(canceled)", err, context.Canceled)

	h.wantAbsent(t, newKey)
	h.wantBody(t, k, []byte("kept"))
}

func testBodyOwnership(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "own")
	body := []byte("original body")
	o := &store.Object{Meta: h.obj(k, string(body)).Meta, Body: body}
	h.put(t, o, store.Cond{})
	body[0] = 'X' // the caller reuses its buffer
	got := h.wantBody(t, k, []byte("original body"))
	for i := range got.Body {
		got.Body[i] = 'Y'
	}
	h.wantBody(t, k, []byte("original body"))

	// The same for a replace and for the binary body.
	bin := binaryBody()
	o2 := &store.Object{Meta: newObj(k, bin, h.clock.Now()).Meta, Body: bin}
	h.put(t, o2, store.Cond{})
	clear(bin)
	got = h.wantBody(t, k, binaryBody())
	clear(got.Body)
	h.wantBody(t, k, binaryBody())
}

func testConcurrentPutGetList(t *testing.T, h *harness) {
	const workers, rounds = 8, 10
	shared := store.MustKey("t1", "report", "shared")
	h.put(t, h.obj(shared, "initial"), store.Cond{})
	ctx := h.ctx
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			own := store.MustKey("t1", "report", fmt.Sprintf("w%d", w))
			for r := range rounds {
				body := []byte(fmt.Sprintf("worker %d round %d", w, r))
				if _, _, err := h.b.Put(ctx, newObj(own, body, h.clock.Now()), store.Cond{}); err != nil {
					t.Errorf("Put(%s) = %v", own, err)
					return
				}
				o, err := h.b.Get(ctx, own)
				if err != nil {
					t.Errorf("Get(%s) = %v", own, err)
					return
				}
				if !bytes.Equal(o.Body, body) {
					t.Errorf("Get(%s).Body = %q, want %q", own, o.Body, body)
				}
				if _, _, err := h.b.Put(ctx, newObj(shared, body, h.clock.Now()), store.Cond{}); err != nil {
					t.Errorf("Put(%s) = %v", shared, err)
					return
				}
				o, err = h.b.Get(ctx, shared)
				if err != nil {
					t.Errorf("Get(%s) = %v", shared, err)
					return
				}
				if o.Size != int64(len(o.Body)) || o.SHA256 != store.Sum(o.Body) {
					t.Errorf("Get(%s): metadata of one body, data of another: %q", shared, o.Body)
				}
				if _, err := h.b.Stat(ctx, shared); err != nil {
					t.Errorf("Stat(%s) = %v", shared, err)
				}
				p, err := h.b.List(ctx, store.ListQuery{Tenant: "t1", Limit: 100})
				if err != nil {
					t.Errorf("List = %v", err)
					return
				}
				for i := 1; i < len(p.Items); i++ {
					if !posOf(p.Items[i-1].Key).Less(posOf(p.Items[i].Key)) {
						t.Errorf("List under load: %s before %s", p.Items[i-1].Key, p.Items[i].Key)
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := h.listAll(t, store.ListQuery{Tenant: "t1", Limit: 100}); len(got) != workers+1 {
		t.Errorf("List after the load = %v, want %d objects", got, workers+1)
	}
	for w := range workers {
		own := store.MustKey("t1", "report", fmt.Sprintf("w%d", w))
		h.wantBody(t, own, []byte(fmt.Sprintf("worker %d round %d", w, rounds-1)))
	}
}

func testConcurrentCreateOnly(t *testing.T, h *harness) {
	const workers = 8
	for round := range 3 {
		k := store.MustKey("t1", "report", fmt.Sprintf("race%d", round))
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []int
		)
		start := make(chan struct{})
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body := []byte(fmt.Sprintf("winner %d", w))
				_, replaced, err := h.b.Put(h.ctx, newObj(k, body, h.clock.Now()), store.CreateOnly())
				switch {
				case err == nil:
					if replaced {
						t.Errorf("Put(%s, IfNone) by %d: replaced = true", k, w)
					}
					mu.Lock()
					winners = append(winners, w)
					mu.Unlock()
				case !errors.Is(err, store.ErrPreconditionFailed):
					t.Errorf("Put(%s, IfNone) by %d = %v, want nil or %v", k, w, err, store.ErrPreconditionFailed)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("concurrent Put(%s, IfNone): %d succeeded (%v), want exactly 1", k, len(winners), winners)
		}
		h.wantBody(t, k, []byte(fmt.Sprintf("winner %d", winners[0])))
	}
}

func testNothingLeftBehind(t *testing.T, h *harness) {
	keys := []store.Key{
		store.MustKey("t1", "a", "x"),
		store.MustKey("t1", "a", "x/y"),
		store.MustKey("t1", "b", "x"),
		store.MustKey("t2", "a", "x"),
	}
	h.putKeys(t, keys)
	for _, k := range keys {
		if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
			t.Fatalf("Delete(%s) = %v, want nil", k, err)
		}
	}
	for _, k := range keys {
		h.wantAbsent(t, k)
	}
	for _, q := range []store.ListQuery{
		{Tenant: "t1", Limit: 10},
		{Tenant: "t1", Scheme: "a", Limit: 10},
		{Tenant: "t1", Scheme: "a", Prefix: "x", Limit: 10},
		{Tenant: "t2", Limit: 10},
	} {
		if p := h.list(t, q); len(p.Items) != 0 || p.More {
			t.Errorf("List(%+v) after deleting everything = %d items, More %v; want none", q, len(p.Items), p.More)
		}
	}
	// The emptied namespace is usable again.
	if _, replaced := h.put(t, h.obj(keys[0], "again"), store.CreateOnly()); replaced {
		t.Errorf("Put(%s) after delete: replaced = true, want false", keys[0])
	}
	h.wantBody(t, keys[0], []byte("again"))
}

func testPing(t *testing.T, h *harness) {
	if err := h.b.Ping(h.ctx); err != nil {
		t.Errorf("Ping = %v, want nil", err)
	}
	h.put(t, h.obj(store.MustKey("t1", "report", "p"), "x"), store.Cond{})
	if err := h.b.Ping(h.ctx); err != nil {
		t.Errorf("Ping after a write = %v, want nil", err)
	}
}

func testClose(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "closed")
	h.put(t, h.obj(k, "x"), store.Cond{})
	if err := h.b.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	notNotFound := func(op string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s after Close = nil, want an error", op)
		} else if errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after Close = %v, want a failure, not %v", op, err, store.ErrNotFound)
		}
	}
	_, _, err := h.b.Put(h.ctx, h.obj(k, "y"), store.Cond{})
	notNotFound("Put", err)
	_, err = h.b.Get(h.ctx, k)
	notNotFound("Get", err)
	_, err = h.b.Stat(h.ctx, k)
	notNotFound("Stat", err)
	_, err = h.b.List(h.ctx, store.ListQuery{Tenant: "t1", Limit: 10})
	notNotFound("List", err)
	notNotFound("Delete", h.b.Delete(h.ctx, k, store.Cond{}))
	_, err = h.b.DeleteExpired(h.ctx, 10)
	notNotFound("DeleteExpired", err)
	_, err = h.b.Usage(h.ctx, "t1")
	notNotFound("Usage", err)
	notNotFound("Ping", h.b.Ping(h.ctx))
	_, err = h.b.ListPublic(h.ctx, store.PublicPosition{}, 10)
	notNotFound("ListPublic", err)
	_ = h.b.Close() // a second Close must not panic
}
