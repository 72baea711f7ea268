package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

// The subtests of PutStream and Open, which every Backend has: a driver's
// streaming, or the Bucket's fallback to Put and Get.

func (h *harness) streamer(t *testing.T) store.Backend {
	t.Helper()
	return h.b
}

// streamMeta is the metadata of a PutStream at k, with a Size and SHA256
// that PutStream must ignore.
func (h *harness) streamMeta(k store.Key) *store.Meta {
	now := h.clock.Now()
	return &store.Meta{
		Key: k, MIMEType: "application/octet-stream", Size: 12345, SHA256: strings.Repeat("0", 64),
		Created: now, Modified: now, Listed: true, Visibility: store.Private, Title: "streamed",
	}
}

func randomBody(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// smallReads hands out at most n bytes per Read, to exercise short reads.
type smallReads struct {
	r io.Reader
	n int
}

func (s smallReads) Read(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	return s.r.Read(p)
}

// readAllFrom opens k and reads it whole.
func (h *harness) readAllFrom(t *testing.T, st store.Backend, k store.Key) (store.Meta, []byte) {
	t.Helper()
	m, rc, err := st.Open(h.ctx, k)
	if err != nil {
		t.Fatalf("Open(%s) = %v, want nil", k, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Open(%s) = %v, want nil", k, err)
	}
	return m, b
}

func testStreamRoundTrip(t *testing.T, h *harness) {
	st := h.streamer(t)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", []byte{}},
		{"text", []byte("hello, streamed world\n")},
		{"binary", binaryBody()},
		{"3MiB", randomBody(3<<20 + 17)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := store.MustKey("t1", "report", "stream/"+tc.name)
			m, replaced, err := st.PutStream(h.ctx, h.streamMeta(k), smallReads{bytes.NewReader(tc.body), 100_000}, store.CreateOnly())
			if err != nil {
				t.Fatalf("PutStream(%s) = %v, want nil", k, err)
			}
			if replaced {
				t.Errorf("PutStream(%s) of a new key: replaced = true", k)
			}
			if m.Size != int64(len(tc.body)) || m.SHA256 != store.Sum(tc.body) {
				t.Errorf("PutStream(%s) = Size %d, SHA256 %s; want %d, %s (computed, not the caller's)", k, m.Size, m.SHA256, len(tc.body), store.Sum(tc.body))
			}
			checkSame(t, fmt.Sprintf("PutStream(%s)", k), m, h.stat(t, k))
			h.wantBody(t, k, tc.body)
			om, got := h.readAllFrom(t, st, k)
			checkSame(t, fmt.Sprintf("Open(%s)", k), om, m)
			if !bytes.Equal(got, tc.body) {
				t.Errorf("Open(%s) read %d bytes, want the %d stored", k, len(got), len(tc.body))
			}
		})
	}
	// A Put body reads back through Open, and vice versa (above).
	k := store.MustKey("t1", "report", "stream/put")
	h.put(t, h.obj(k, "put with Put"), store.CreateOnly())
	if _, got := h.readAllFrom(t, st, k); string(got) != "put with Put" {
		t.Errorf("Open(%s) of a Put body = %q", k, got)
	}
}

func testStreamPreconditions(t *testing.T, h *harness) {
	st := h.streamer(t)
	k := store.MustKey("t1", "report", "cond")
	put := func(body string, cond store.Cond) (store.Meta, bool, error) {
		return st.PutStream(h.ctx, h.streamMeta(k), strings.NewReader(body), cond)
	}
	first, _, err := put("v1", store.CreateOnly())
	if err != nil {
		t.Fatalf("PutStream(%s, create) = %v", k, err)
	}
	h.clock.Advance(time.Second)
	_, replaced, err := put("v2", store.CreateOnly())
	wantErr(t, "PutStream over an existing key, create-only", err, store.ErrPreconditionFailed)
	if replaced {
		t.Error("a failed PutStream reports replaced")
	}
	_, _, err = put("v2", store.Matching(store.Sum([]byte("other"))))
	wantErr(t, "PutStream with a wrong IfMatch", err, store.ErrPreconditionFailed)
	h.wantBody(t, k, []byte("v1"))

	m, replaced, err := put("v2", store.Matching(store.Sum([]byte("v1"))))
	if err != nil || !replaced {
		t.Fatalf("PutStream with the right IfMatch = %v, replaced %v; want nil, true", err, replaced)
	}
	if !m.Created.Equal(first.Created) || !m.Modified.After(first.Modified) {
		t.Errorf("replace: Created %v Modified %v, want Created kept (%v) and Modified later", m.Created, m.Modified, first.Created)
	}
	h.wantBody(t, k, []byte("v2"))
	if _, replaced, err = put("v3", store.Cond{Kind: store.Always}); err != nil || !replaced {
		t.Errorf("PutStream Always over a live object = %v, replaced %v", err, replaced)
	}
	_, _, err = put("x", store.Matching(store.Sum([]byte("v3"))))
	if err != nil {
		t.Errorf("PutStream IfMatch v3 = %v", err)
	}
	missing := store.MustKey("t1", "report", "cond-missing")
	_, _, err = st.PutStream(h.ctx, h.streamMeta(missing), strings.NewReader("x"), store.Matching(store.Sum([]byte("x"))))
	wantErr(t, "PutStream IfMatch on a missing key", err, store.ErrPreconditionFailed)
	h.wantAbsent(t, missing)
	_, _, err = st.PutStream(h.ctx, h.streamMeta(missing), strings.NewReader("x"), store.Cond{Kind: store.IfMatch})
	if err == nil {
		t.Error("PutStream with IfMatch and no hash = nil, want an error")
	}
	_, _, err = st.PutStream(h.ctx, &store.Meta{}, strings.NewReader("x"), store.CreateOnly())
	wantErr(t, "PutStream with a zero key", err, store.ErrInvalidKey)
}

// failingReader returns some bytes, then err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	n := min(len(p), f.n)
	for i := range p[:n] {
		p[i] = 'z'
	}
	f.n -= n
	return n, nil
}

var errBodyBroke = errors.New("the client went away")

func testStreamReadError(t *testing.T, h *harness) {
	st := h.streamer(t)
	k := store.MustKey("t1", "report", "broken")
	_, _, err := st.PutStream(h.ctx, h.streamMeta(k), &failingReader{n: 300_000, err: errBodyBroke}, store.CreateOnly())
	wantErr(t, "PutStream with a failing reader", err, errBodyBroke)
	h.wantAbsent(t, k)

	// Over an existing object, a failing body changes nothing either.
	h.put(t, h.obj(k, "kept"), store.CreateOnly())
	_, _, err = st.PutStream(h.ctx, h.streamMeta(k), &failingReader{n: 10, err: errBodyBroke}, store.Cond{Kind: store.Always})
	wantErr(t, "PutStream Always with a failing reader", err, errBodyBroke)
	h.wantBody(t, k, []byte("kept"))

	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	k2 := store.MustKey("t1", "report", "canceled")
	_, _, err = st.PutStream(ctx, h.streamMeta(k2), strings.NewReader("x"), store.CreateOnly())
	wantErr(t, "PutStream with a canceled context", err, context.Canceled)
	h.wantAbsent(t, k2)
	_, _, err = st.Open(ctx, k)
	wantErr(t, "Open with a canceled context", err, context.Canceled)
}

func testStreamOpen(t *testing.T, h *harness) {
	st := h.streamer(t)
	missing := store.MustKey("t1", "report", "missing")
	_, rc, err := st.Open(h.ctx, missing)
	wantNotFound(t, "Open(missing)", missing, err)
	if rc != nil {
		t.Error("Open(missing) returned a reader")
	}

	body := randomBody(1<<20 + 3)
	k := store.MustKey("t1", "report", "seek")
	h.put(t, newObj(k, body, h.clock.Now()), store.CreateOnly())
	// A look-alike tenant sees nothing.
	other := store.MustKey("t10", "report", "seek")
	_, _, err = st.Open(h.ctx, other)
	wantNotFound(t, "Open of the look-alike tenant's key", other, err)

	m, rc, err := st.Open(h.ctx, k)
	if err != nil {
		t.Fatalf("Open(%s) = %v", k, err)
	}
	checkSame(t, "Open", m, h.stat(t, k))
	if end, err := rc.Seek(0, io.SeekEnd); err != nil || end != int64(len(body)) {
		t.Errorf("Seek(0, End) = %d, %v; want %d", end, err, len(body))
	}
	for _, off := range []int64{500_000, 0, int64(len(body)) - 1, 123} {
		if pos, err := rc.Seek(off, io.SeekStart); err != nil || pos != off {
			t.Fatalf("Seek(%d) = %d, %v", off, pos, err)
		}
		buf := make([]byte, 4096)
		n, err := io.ReadFull(rc, buf)
		want := body[off:min(off+4096, int64(len(body)))]
		if n != len(want) || !bytes.Equal(buf[:n], want) || err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("at %d: read %d bytes (%v), want %d matching", off, n, err, len(want))
		}
	}
	if pos, err := rc.Seek(-10, io.SeekCurrent); err != nil || pos != 123+4096-10 {
		t.Errorf("Seek(-10, Current) = %d, %v", pos, err)
	}
	if _, err := rc.Seek(-1, io.SeekStart); err == nil {
		t.Error("Seek(-1) = nil error")
	}
	rc.Seek(int64(len(body)), io.SeekStart)
	if n, err := rc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("Read at the end = %d, %v; want 0, EOF", n, err)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	rc.Seek(0, io.SeekStart)
	if n, err := rc.Read(make([]byte, 10)); err == nil {
		t.Errorf("Read after Close = %d, nil; want an error", n)
	}

	// Expired objects are not found.
	exp := store.MustKey("t1", "report", "expiring")
	o := h.obj(exp, "soon gone")
	o.Expires = h.clock.Now().Add(time.Minute)
	h.put(t, o, store.CreateOnly())
	h.clock.Advance(time.Minute)
	_, _, err = st.Open(h.ctx, exp)
	wantNotFound(t, "Open(expired)", exp, err)
}

func testStreamChanged(t *testing.T, h *harness) {
	st := h.streamer(t)
	k := store.MustKey("t1", "report", "changing")
	old := randomBody(256 << 10)
	h.put(t, newObj(k, old, h.clock.Now()), store.CreateOnly())

	_, rc, err := st.Open(h.ctx, k)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer rc.Close()
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(rc, buf); err != nil || !bytes.Equal(buf, old[:1000]) {
		t.Fatalf("first read: %v", err)
	}
	h.put(t, newObj(k, randomBody(256<<10+1), h.clock.Now()), store.Cond{Kind: store.Always})
	// From a fresh position the reader must not serve the new body.
	rc.Seek(0, io.SeekStart)
	got, err := io.ReadAll(rc)
	if err == nil {
		t.Errorf("reading after a replace = %d bytes, nil error; want an error (never the new body)", len(got))
	}
	if !bytes.HasPrefix(old, got) {
		t.Errorf("reading after a replace returned bytes of another body")
	}

	// A replace with the same body ends the read too: it may change who
	// may read the object (a public one made private).
	same := randomBody(64 << 10)
	h.put(t, newObj(k, same, h.clock.Now()), store.Cond{Kind: store.Always})
	_, rc3, err := st.Open(h.ctx, k)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer rc3.Close()
	if _, err := io.ReadFull(rc3, buf); err != nil {
		t.Fatalf("first read: %v", err)
	}
	h.clock.Advance(time.Second)
	priv := newObj(k, same, h.clock.Now())
	priv.Visibility = store.Private
	h.put(t, priv, store.Cond{Kind: store.Always})
	// From a fresh position (a driver may finish a request in flight).
	rc3.Seek(0, io.SeekStart)
	if got, err := io.ReadAll(rc3); err == nil {
		t.Errorf("reading after a replace with the same body = %d bytes, nil error; want an error", len(got))
	}

	_, rc2, err := st.Open(h.ctx, k)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer rc2.Close()
	if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc2); err == nil {
		t.Errorf("reading a deleted object = %d bytes, nil error; want an error", len(got))
	}
}

func testStreamQuota(t *testing.T, h *harness) {
	st := h.streamer(t)
	k := store.MustKey("t1", "report", "quota")
	if !h.quotaSupported(t) {
		_, _, err := st.PutStream(h.ctx, h.streamMeta(k), strings.NewReader("x"), store.Cond{Quota: store.Quota{Bytes: 1 << 40}})
		wantErr(t, "PutStream with a quota on a backend without quotas", err, store.ErrQuotaUnsupported)
		h.wantAbsent(t, k)
		return
	}
	q := store.Quota{Bytes: 100}
	if _, _, err := st.PutStream(h.ctx, h.streamMeta(k), strings.NewReader(strings.Repeat("a", 60)), store.Cond{Kind: store.IfNone, Quota: q}); err != nil {
		t.Fatalf("PutStream within the quota = %v", err)
	}
	k2 := store.MustKey("t1", "report", "quota2")
	_, _, err := st.PutStream(h.ctx, h.streamMeta(k2), strings.NewReader(strings.Repeat("b", 41)), store.Cond{Kind: store.IfNone, Quota: q})
	wantErr(t, "PutStream over the quota", err, store.ErrQuotaExceeded)
	h.wantAbsent(t, k2)
	h.wantUsage(t, "t1", store.Usage{Bytes: 60, Objects: 1})
}
