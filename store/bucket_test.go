package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
)

// plainDriver hides every optional capability of the driver it wraps.
type plainDriver struct{ store.Driver }

// TestNewCapabilities: the Backend that New returns is an EncodedViewer
// or a Streamer exactly when its driver has the capability, so the
// server's type assertions tell the truth.
func TestNewCapabilities(t *testing.T) {
	bolt, err := boltstore.OpenDriver(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		d            store.Driver
		view, stream bool
	}{
		{"memstore", memstore.NewDriver(), true, false},
		{"boltstore", bolt, true, true},
		{"plain", plainDriver{memstore.NewDriver()}, false, false},
	}
	for _, tc := range tests {
		b := store.New(tc.d, store.Options{})
		_, view := b.(store.EncodedViewer)
		_, stream := b.(store.Streamer)
		if view != tc.view || stream != tc.stream {
			t.Errorf("%s: New is EncodedViewer %v, Streamer %v; want %v, %v", tc.name, view, stream, tc.view, tc.stream)
		}
		if err := b.Close(); err != nil {
			t.Errorf("%s: Close = %v", tc.name, err)
		}
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
	b := store.New(memstore.NewDriver(), store.Options{})
	k := store.MustKey("t1", "report", "missing")
	_, err := b.Get(t.Context(), k)
	if !errors.Is(err, store.ErrNotFound) || err.Error() != "store: get report://t1/missing: not found" {
		t.Errorf("Get = %v, want store: get report://t1/missing: not found", err)
	}
}
