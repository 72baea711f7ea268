package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
)

// plainDriver hides every optional capability of the driver it wraps.
type plainDriver struct{ store.Driver }

// TestBucketCapabilities: KeepsEncoded tells the truth, and View,
// PutStream and Open work on every driver, through its capability or the
// Bucket's fallback.
func TestBucketCapabilities(t *testing.T) {
	bolt, err := boltstore.OpenDriver(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		d    store.Driver
		view bool
	}{
		{"memstore", memstore.NewDriver(), true},
		{"boltstore", bolt, true},
		{"plain", plainDriver{memstore.NewDriver()}, false},
	}
	for _, tc := range tests {
		b := store.NewBucket(tc.d, store.Options{})
		if b.KeepsEncoded() != tc.view {
			t.Errorf("%s: KeepsEncoded %v, want %v", tc.name, b.KeepsEncoded(), tc.view)
		}
		k := store.MustKey("t1", "report", "a")
		m, _, err := b.PutStream(t.Context(), &store.Meta{Key: k, MIMEType: "text/plain"}, strings.NewReader("streamed"), store.CreateOnly())
		if err != nil || m.Size != 8 || m.SHA256 != store.Sum([]byte("streamed")) {
			t.Fatalf("%s: PutStream = %+v, %v", tc.name, m, err)
		}
		_, r, err := b.Open(t.Context(), k)
		if err != nil {
			t.Fatalf("%s: Open = %v", tc.name, err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != "streamed" {
			t.Errorf("%s: Open read %q", tc.name, got)
		}
		if err := b.View(t.Context(), k, func(_ *store.Meta, enc, body []byte) error {
			if string(body) != "streamed" || enc != nil {
				t.Errorf("%s: View saw %q, encoded %q", tc.name, body, enc)
			}
			return nil
		}); err != nil {
			t.Errorf("%s: View = %v", tc.name, err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("%s: Close = %v", tc.name, err)
		}
	}
}

// panicDriver panics in Stat while armed.
type panicDriver struct {
	store.Driver
	armed bool
}

func (d *panicDriver) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	if d.armed {
		panic("damaged page")
	}
	return d.Driver.Stat(ctx, k)
}

// TestBucketGuard: a driver panic fails the call with ErrPanic, is
// reported and keeps Ping failing for the hold; a panic of the caller's
// View function fails that call with ErrCallbackPanic, is reported as the
// caller's, and does not mark the store.
func TestBucketGuard(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := &panicDriver{Driver: memstore.NewDriver()}
	b := store.NewBucket(d, store.Options{Now: func() time.Time { return now }})
	var reports []string
	b.Guard(store.Guard{Hold: time.Minute, Report: func(_ context.Context, op string, v any, callback bool) {
		reports = append(reports, fmt.Sprint(op, " ", v, " ", callback))
	}})
	k := store.MustKey("t1", "report", "a")
	if _, _, err := b.Put(t.Context(), &store.Object{Meta: store.Meta{Key: k}, Body: []byte("x")}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	err := b.View(t.Context(), k, func(*store.Meta, []byte, []byte) error { panic("caller bug") })
	if !errors.Is(err, store.ErrCallbackPanic) || b.Ping(t.Context()) != nil {
		t.Fatalf("callback panic: %v; ping %v", err, b.Ping(t.Context()))
	}
	d.armed = true
	if _, err := b.Stat(t.Context(), k); !errors.Is(err, store.ErrPanic) {
		t.Fatalf("Stat = %v, want ErrPanic", err)
	}
	d.armed = false
	if err := b.Ping(t.Context()); err == nil {
		t.Fatal("Ping right after a panic succeeded")
	}
	now = now.Add(2 * time.Minute)
	if err := b.Ping(t.Context()); err != nil {
		t.Fatalf("Ping after the hold = %v", err)
	}
	want := []string{"view callback caller bug true", "stat damaged page false"}
	if fmt.Sprint(reports) != fmt.Sprint(want) {
		t.Errorf("reports %q, want %q", reports, want)
	}
}

// recordingDriver records the objects the Bucket hands to Put.
type recordingDriver struct {
	store.Driver
	puts []store.Object
}

func (d *recordingDriver) Put(ctx context.Context, obj *store.Object, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	d.puts = append(d.puts, *obj)
	return d.Driver.Put(ctx, obj, cond, now)
}

// TestBucketPutNormalises: the driver sees a validated object with Size
// and SHA256 filled in and its times at millisecond precision in UTC; the
// caller's object is not modified.
func TestBucketPutNormalises(t *testing.T) {
	d := &recordingDriver{Driver: memstore.NewDriver()}
	b := store.NewBucket(d, store.Options{})
	k := store.MustKey("t1", "report", "a")
	at := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))
	obj := &store.Object{Meta: store.Meta{Key: k, Created: at, Modified: at, Expires: at.Add(time.Hour)}, Body: []byte("body")}
	m, _, err := b.Put(t.Context(), obj, store.Cond{})
	if err != nil {
		t.Fatalf("Put = %v", err)
	}
	if obj.SHA256 != "" || obj.Size != 0 || !obj.Created.Equal(at) || obj.Created.Location() != at.Location() {
		t.Errorf("Put modified the caller's object: %+v", obj.Meta)
	}
	if len(d.puts) != 1 {
		t.Fatalf("driver saw %d puts, want 1", len(d.puts))
	}
	got := d.puts[0]
	wantT := time.Date(2030, 1, 2, 2, 4, 5, 678000000, time.UTC)
	if got.SHA256 != store.Sum([]byte("body")) || got.Size != 4 {
		t.Errorf("driver saw size %d, sha256 %q; want 4, the body's", got.Size, got.SHA256)
	}
	if got.Created != wantT || got.Modified != wantT || got.Expires != wantT.Add(time.Hour) {
		t.Errorf("driver saw times %v, %v, %v; want %v in UTC", got.Created, got.Modified, got.Expires, wantT)
	}
	if m.SHA256 != got.SHA256 || m.Size != 4 {
		t.Errorf("Put returned %+v, want the computed size and hash", m)
	}
	// Half a digest is a caller's bug, not something to complete.
	bad := &store.Object{Meta: store.Meta{Key: k, Size: 4}, Body: []byte("body")}
	if _, _, err := b.Put(t.Context(), bad, store.Cond{}); err == nil {
		t.Error("Put with a size but no sha256 = nil error")
	}
	if len(d.puts) != 1 {
		t.Errorf("a rejected Put reached the driver")
	}
}

// TestBucketErrorNamesKeyOnce: a missing object's error wraps ErrNotFound
// and names the key once, whatever the driver said.
func TestBucketErrorNamesKeyOnce(t *testing.T) {
	b := store.NewBucket(memstore.NewDriver(), store.Options{})
	k := store.MustKey("t1", "report", "missing")
	_, err := b.Get(t.Context(), k)
	if !errors.Is(err, store.ErrNotFound) || err.Error() != "store: get report://t1/missing: not found" {
		t.Errorf("Get = %v, want store: get report://t1/missing: not found", err)
	}
}

// TestOpenIfDecidesBeforeTheBody: on a driver that does not stream (the
// Bucket's fallback reads the body whole), an object allow refuses is
// not found and its body is never copied: ten refusals of a 4 MiB body
// allocate far less than one copy.
func TestOpenIfDecidesBeforeTheBody(t *testing.T) {
	b := store.NewBucket(memstore.NewDriver(), store.Options{})
	k := store.MustKey("t1", "report", "big")
	if _, _, err := b.Put(t.Context(), &store.Object{Meta: store.Meta{Key: k}, Body: make([]byte, 4<<20)}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	refuse := func(*store.Meta) bool { return false }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, _, err := b.OpenIf(t.Context(), k, refuse); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("OpenIf refused = %v, want ErrNotFound", err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("ten refused opens allocated %d bytes: the body was copied before the decision", n)
	}
	_, r, err := b.OpenIf(t.Context(), k, func(*store.Meta) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
