package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// The subtests of the encoded form; each skips when the backend keeps
// none (KeepsEncoded is false).

func (h *harness) viewer(t *testing.T) store.Backend {
	t.Helper()
	if !h.b.KeepsEncoded() {
		t.Skip("the backend keeps no encoded form")
	}
	return h.b
}

// view returns copies of what View shows at k.
func (h *harness) view(t *testing.T, v store.Backend, k store.Key) (store.Meta, []byte, []byte) {
	t.Helper()
	var (
		meta          store.Meta
		encoded, body []byte
		calls         int
	)
	err := v.View(h.ctx, k, func(m *store.Meta, e, b []byte) error {
		calls++
		meta, encoded, body = *m, bytes.Clone(e), bytes.Clone(b)
		return nil
	})
	if err != nil {
		t.Fatalf("View(%s) = %v, want nil", k, err)
	}
	if calls != 1 {
		t.Fatalf("View(%s) called fn %d times, want 1", k, calls)
	}
	return meta, encoded, body
}

func withEncoded(o *store.Object, encoded string) *store.Object {
	o.Encoded = []byte(encoded)
	return o
}

func testEncodedRoundTrip(t *testing.T, h *harness) {
	v := h.viewer(t)
	k := store.MustKey("t1", "report", "enc")
	enc := `"text":"line\n\u003c"` + "\x00\xff"
	m, _ := h.put(t, withEncoded(h.obj(k, "line\n<"), enc), store.Cond{})

	got, encoded, body := h.view(t, v, k)
	if diff := cmp.Diff(m, got, keyAsString); diff != "" {
		t.Errorf("View metadata differs from Put's (-put +view):\n%s", diff)
	}
	if string(encoded) != enc || string(body) != "line\n<" {
		t.Errorf("View = encoded %q, body %q; want %q, %q", encoded, body, enc, "line\n<")
	}
	if o := h.get(t, k); o.Encoded != nil || string(o.Body) != "line\n<" {
		t.Errorf("Get = body %q, encoded %q; want the body and no encoded form", o.Body, o.Encoded)
	}

	// A Put without an encoded form leaves none behind.
	h.put(t, h.obj(k, "plain"), store.Cond{})
	if _, encoded, body := h.view(t, v, k); encoded != nil || string(body) != "plain" {
		t.Errorf("after a Put without one, View = encoded %q, body %q; want nil, %q", encoded, body, "plain")
	}
	// A replace carries its own.
	h.put(t, withEncoded(h.obj(k, "new"), "E2"), store.Cond{})
	if _, encoded, body := h.view(t, v, k); string(encoded) != "E2" || string(body) != "new" {
		t.Errorf("after a replace, View = encoded %q, body %q; want %q, %q", encoded, body, "E2", "new")
	}
	// An empty body with an encoded form.
	k2 := store.MustKey("t1", "report", "enc-empty")
	h.put(t, withEncoded(h.obj(k2, ""), `"text":""`), store.Cond{})
	if _, encoded, body := h.view(t, v, k2); string(encoded) != `"text":""` || len(body) != 0 {
		t.Errorf("empty body: View = encoded %q, body %q", encoded, body)
	}
}

func testEncodedOwnership(t *testing.T, h *harness) {
	v := h.viewer(t)
	k := store.MustKey("t1", "report", "enc-own")
	o := withEncoded(h.obj(k, "body"), "ENC")
	h.put(t, o, store.Cond{})
	o.Encoded[0] = 'X' // the caller's slice is the caller's
	if _, encoded, _ := h.view(t, v, k); string(encoded) != "ENC" {
		t.Errorf("View after the caller changed its slice = %q, want %q", encoded, "ENC")
	}
}

func testEncodedMissing(t *testing.T, h *harness) {
	v := h.viewer(t)
	called := false
	fn := func(*store.Meta, []byte, []byte) error { called = true; return nil }

	err := v.View(h.ctx, store.MustKey("t1", "report", "none"), fn)
	wantErr(t, "View(missing)", err, store.ErrNotFound)
	if err != nil && !strings.Contains(err.Error(), "report://t1/none") {
		t.Errorf("View(missing) = %q, want the key in the error", err)
	}

	k := store.MustKey("t1", "report", "exp")
	o := withEncoded(h.obj(k, "soon gone"), "E")
	o.Expires = h.clock.Now().Add(time.Minute)
	h.put(t, o, store.Cond{})
	h.clock.Advance(time.Minute)
	wantErr(t, "View(expired)", v.View(h.ctx, k, fn), store.ErrNotFound)

	// Another tenant's key is another key.
	k3 := store.MustKey("t1", "report", "mine")
	h.put(t, withEncoded(h.obj(k3, "x"), "E"), store.Cond{})
	wantErr(t, "View(other tenant)", v.View(h.ctx, store.MustKey("t2", "report", "mine"), fn), store.ErrNotFound)

	h.put(t, withEncoded(h.obj(k3, "x"), "E"), store.Cond{})
	if err := h.b.Delete(h.ctx, k3, store.Cond{}); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	wantErr(t, "View(deleted)", v.View(h.ctx, k3, fn), store.ErrNotFound)

	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	wantErr(t, "View(canceled)", v.View(ctx, k3, fn), context.Canceled)
	if called {
		t.Error("View called fn for an object it did not find")
	}
}

func testEncodedFnError(t *testing.T, h *harness) {
	v := h.viewer(t)
	k := store.MustKey("t1", "report", "fnerr")
	h.put(t, withEncoded(h.obj(k, "kept"), "E"), store.Cond{})
	boom := errors.New("boom")
	if err := v.View(h.ctx, k, func(*store.Meta, []byte, []byte) error { return boom }); err != boom {
		t.Errorf("View with a failing fn = %v, want fn's error as it is", err)
	}
	h.wantBody(t, k, []byte("kept"))
}

func testEncodedStream(t *testing.T, h *harness) {
	v := h.viewer(t)
	st := h.streamer(t)
	k := store.MustKey("t1", "report", "enc-stream")
	h.put(t, withEncoded(h.obj(k, "before"), "E"), store.Cond{})
	if _, _, err := st.PutStream(h.ctx, h.streamMeta(k), strings.NewReader("streamed"), store.Cond{}); err != nil {
		t.Fatalf("PutStream = %v", err)
	}
	if _, encoded, body := h.view(t, v, k); encoded != nil || string(body) != "streamed" {
		t.Errorf("View after PutStream = encoded %q, body %q; want nil, %q", encoded, body, "streamed")
	}
}

// testEncodedConcurrent replaces an object while others view it: every
// view sees an encoded form and a body written by the same Put.
func testEncodedConcurrent(t *testing.T, h *harness) {
	v := h.viewer(t)
	k := store.MustKey("t1", "report", "enc-race")
	h.put(t, withEncoded(h.obj(k, "body-0"), "enc-0"), store.Cond{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := v.View(h.ctx, k, func(m *store.Meta, e, b []byte) error {
					if strings.TrimPrefix(string(e), "enc-") != strings.TrimPrefix(string(b), "body-") || m.Size != int64(len(b)) {
						t.Errorf("View saw encoded %q with body %q (size %d)", e, b, m.Size)
					}
					return nil
				})
				if err != nil {
					t.Errorf("View = %v", err)
					return
				}
			}
		})
	}
	for i := range 50 {
		s := strings.Repeat("x", i)
		h.put(t, withEncoded(h.obj(k, "body-"+s), "enc-"+s), store.Cond{})
	}
	close(stop)
	wg.Wait()
}
