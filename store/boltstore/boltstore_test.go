package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Backend {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "resourced.db"), boltstore.Options{Now: now})
		if err != nil {
			t.Fatalf("Open = %v", err)
		}
		t.Cleanup(func() {
			// Every subtest leaves a file that passes the consistency
			// check (the Close subtest has closed it already).
			if err := s.Check(); err != nil && !errors.Is(err, bolt.ErrDatabaseNotOpen) {
				t.Errorf("Check = %v, want nil", err)
			}
		})
		return s
	})
}

func object(k store.Key, body string, now time.Time) *store.Object {
	return &store.Object{
		Meta: store.Meta{
			Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
			Created: now, Modified: now, Title: "t " + body, Listed: true, Visibility: store.Public,
		},
		Body: []byte(body),
	}
}

func TestReopen(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data", "sub")
	path := filepath.Join(dir, "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

	s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	want := map[store.Key]store.Meta{}
	for i := range 20 {
		k := store.MustKey(fmt.Sprintf("t%d", i%3), "report", fmt.Sprintf("r/%02d", i))
		m, _, err := s.Put(ctx, object(k, fmt.Sprintf("body %02d", i), now), store.CreateOnly())
		if err != nil {
			t.Fatalf("Put(%s) = %v", k, err)
		}
		want[k] = m
	}
	gone := store.MustKey("t0", "report", "r/00")
	if err := s.Delete(ctx, gone, store.Cond{}); err != nil {
		t.Fatalf("Delete(%s) = %v", gone, err)
	}
	delete(want, gone)
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}

	for p, perm := range map[string]os.FileMode{path: 0o600, dir: 0o700, filepath.Dir(dir): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&^perm != 0 {
			t.Errorf("mode of %s = %v, want at most %v", p, got, perm)
		}
	}

	s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Errorf("Check after reopen = %v", err)
	}
	for k, m := range want {
		o, err := s.Get(ctx, k)
		if err != nil {
			t.Errorf("Get(%s) after reopen = %v, want nil", k, err)
			continue
		}
		if o.Meta != m {
			t.Errorf("Get(%s) after reopen: meta %+v, want %+v", k, o.Meta, m)
		}
		if want := fmt.Sprintf("body %s", k.Path()[2:]); !bytes.Equal(o.Body, []byte(want)) {
			t.Errorf("Get(%s).Body after reopen = %q, want %q", k, o.Body, want)
		}
	}
	if _, err := s.Get(ctx, gone); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%s) after reopen = %v, want %v", gone, err, store.ErrNotFound)
	}
}

func TestOpenLockedTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resourced.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer s.Close()

	type result struct {
		s   *boltstore.Store
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		s2, err := boltstore.Open(path, boltstore.Options{Timeout: 200 * time.Millisecond})
		done <- result{s2, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			r.s.Close()
			t.Fatalf("Open of a locked file = nil error, want a timeout")
		}
		if !errors.Is(r.err, bolt.ErrTimeout) {
			t.Errorf("Open of a locked file = %v, want %v", r.err, bolt.ErrTimeout)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Open of a locked file took %v, want about 200ms", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a locked file hangs")
	}
}

// TestMoreIsExact checks that More is false when only expired or unlisted
// objects follow the last item of a page.
func TestMoreIsExact(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(scheme, path string, edit func(*store.Object)) {
		t.Helper()
		o := object(store.MustKey("t1", scheme, path), path, now.Add(-time.Hour))
		edit(o)
		if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1", func(*store.Object) {})
	put("a", "2", func(*store.Object) {})
	put("a", "3", func(o *store.Object) { o.Expires = now })
	put("b", "1", func(o *store.Object) { o.Listed = false })
	put("b", "2", func(o *store.Object) { o.Expires = now.Add(-time.Second) })

	tests := []struct {
		q        store.ListQuery
		n        int
		wantMore bool
	}{
		{store.ListQuery{Tenant: "t1", Limit: 2, ListedOnly: true}, 2, false},
		{store.ListQuery{Tenant: "t1", Limit: 2}, 2, true},
		{store.ListQuery{Tenant: "t1", Limit: 3}, 3, false},
		{store.ListQuery{Tenant: "t1", Scheme: "a", Limit: 2}, 2, false},
		{store.ListQuery{Tenant: "t1", Scheme: "a", Limit: 1}, 1, true},
	}
	for _, tc := range tests {
		p, err := s.List(ctx, tc.q)
		if err != nil {
			t.Fatalf("List(%+v) = %v", tc.q, err)
		}
		if len(p.Items) != tc.n || p.More != tc.wantMore {
			t.Errorf("List(%+v) = %d items, More %v; want %d, %v", tc.q, len(p.Items), p.More, tc.n, tc.wantMore)
		}
	}
}

func TestListRejectsBadQueries(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []store.ListQuery{
		{Tenant: "t1", Limit: 0},
		{Tenant: "t1", Limit: -1},
		{Tenant: "t1", Prefix: "a/", Limit: 1},
	} {
		if _, err := s.List(context.Background(), q); err == nil {
			t.Errorf("List(%+v) = nil error, want an error", q)
		}
	}
}
