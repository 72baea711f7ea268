package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/storetest"
)

func TestConformance(t *testing.T) { storetest.Run(t, conformanceDriver) }

// conformanceDriver opens the driver of one conformance subtest, which
// must leave a file that passes the consistency check (the Close subtest
// has closed it already).
func conformanceDriver(t *testing.T) store.Driver {
	s, err := boltstore.OpenDriver(filepath.Join(t.TempDir(), "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() {
		if err := s.Check(); err != nil && !errors.Is(err, berrors.ErrDatabaseNotOpen) {
			t.Errorf("Check = %v, want nil", err)
		}
	})
	return s
}

// openTemp opens a store in a new temporary directory, closed when t ends.
func openTemp(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// backupTo writes a backup of s to a new file at path.
func backupTo(t *testing.T, s *boltstore.Store, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// measuredPutStream saves r's bytes at meta.Key with PutStream and
// returns the stored metadata and the memory statistics just before it
// (after a GC) and just after it.
func measuredPutStream(t *testing.T, s *boltstore.Store, meta *store.Meta, r io.Reader) (m store.Meta, before, after runtime.MemStats) {
	t.Helper()
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, _, err := s.PutStream(t.Context(), meta, r, store.Cond{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return m, before, after
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
		if !errors.Is(r.err, berrors.ErrTimeout) || !strings.Contains(r.err.Error(), "another process holds the database") {
			t.Errorf("Open of a locked file = %v, want %v naming the cause", r.err, berrors.ErrTimeout)
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

// TestOpenBuildsPublicIndex: a file written before the public index existed
// opens, and Open builds the index from the objects.
func TestOpenBuildsPublicIndex(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 {
		k := store.MustKey([]string{"t1", "t10", "t1-x"}[i%3], "report", fmt.Sprintf("r/%02d", i))
		o := object(k, fmt.Sprintf("body %02d", i), now)
		o.Listed = i%4 != 1
		if i%2 == 1 {
			o.Visibility = store.Private
		}
		if i == 4 {
			o.Expires = now.Add(-time.Second) // expired: indexed, never listed
		}
		if _, _, err := s.Put(ctx, o, store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
		if o.Listed && o.Visibility == store.Public && i != 4 {
			want = append(want, k.String())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Remove the index, as in a file of an older version.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("v1-public")) }); err != nil {
		t.Fatalf("deleting the index bucket: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Open of a file without an index = %v", err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Errorf("Check after rebuilding the index = %v", err)
	}
	p, err := s.ListPublic(ctx, store.PublicPosition{}, 100)
	if err != nil {
		t.Fatalf("ListPublic = %v", err)
	}
	var got []string
	for _, m := range p.Items {
		got = append(got, m.Key.String())
	}
	slices.SortFunc(want, func(a, b string) int {
		ka, kb := strings.SplitN(a, "/", 4), strings.SplitN(b, "/", 4) // scheme:, "", tenant, path
		if c := strings.Compare(ka[2], kb[2]); c != 0 {
			return c
		}
		return strings.Compare(ka[3], kb[3])
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListPublic after rebuilding the index (-want +got):\n%s", diff)
	}
}

// TestCheckFindsIndexDamage: Check reports a missing or a stale index
// entry.
func TestCheckFindsIndexDamage(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	pub := store.MustKey("t1", "report", "public")
	priv := store.MustKey("t1", "report", "private")
	for _, tc := range []struct {
		name   string
		damage func(idx *bolt.Bucket) error
	}{
		{"missing", func(idx *bolt.Bucket) error { return idx.Delete([]byte("t1\x00report\x00public")) }},
		{"stale", func(idx *bolt.Bucket) error { return idx.Put([]byte("t1\x00report\x00private"), nil) }},
		{"dangling", func(idx *bolt.Bucket) error { return idx.Put([]byte("t2\x00report\x00gone"), nil) }},
		{"corrupt", func(idx *bolt.Bucket) error { return idx.Put([]byte("t1\x00report"), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(path)
			s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			o := object(pub, "pub", now)
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			o = object(priv, "priv", now)
			o.Visibility = store.Private
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check before the damage = %v", err)
			}
			s.Close()
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error { return tc.damage(tx.Bucket([]byte("v1-public"))) }); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Check(); err == nil {
				t.Errorf("Check of a %s index entry = nil, want an error", tc.name)
			}
			// ListPublic never shows a private object, whatever the index says.
			p, err := s.ListPublic(ctx, store.PublicPosition{}, 10)
			if tc.name == "corrupt" {
				if err == nil {
					t.Errorf("ListPublic over a corrupt index entry = nil error, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("ListPublic = %v", err)
			}
			for _, m := range p.Items {
				if m.Key.String() != pub.String() {
					t.Errorf("ListPublic returned %s", m.Key)
				}
			}
		})
	}
}

// expiryEntry returns the expiry index key of report://<tenant>/<p>
// expiring at t.
func expiryEntry(t time.Time, tenant, p string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli())^(1<<63))
	return append(b, tenant+"\x00report\x00"+p...)
}

func usageValue(bytes, objects uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, bytes), objects)
}

// damage closes s, runs fn in a raw bbolt update of the file and reopens
// it.
func damage(t *testing.T, s *boltstore.Store, path string, now time.Time, fn func(tx *bolt.Tx) error) *boltstore.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatalf("damaging the file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	return s
}

// TestExpiryIndexFollowsWrites: every Put and Delete keeps the expiry index
// and the usage exact (Check after each step), without a sweep to tidy up.
func TestExpiryIndexFollowsWrites(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.MustKey("t1", "report", "x")
	steps := []struct {
		name    string
		expires time.Time
		body    string
		del     bool
	}{
		{"create expiring", now.Add(time.Hour), "aaaa", false},
		{"same expiry", now.Add(time.Hour), "bb", false},
		{"later expiry", now.Add(2 * time.Hour), "ccc", false},
		{"no expiry", time.Time{}, "d", false},
		{"expiring again", now.Add(time.Minute), "eeeee", false},
		{"delete", time.Time{}, "", true},
		{"expired create", now.Add(-time.Minute), "ff", false},
		{"create over expired", now.Add(time.Minute), "g", false},
	}
	for _, st := range steps {
		if st.del {
			if err := s.Delete(ctx, k, store.Cond{}); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		} else {
			o := object(k, st.body, now)
			o.Expires = st.expires
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		}
		if err := s.Check(); err != nil {
			t.Errorf("Check after %s = %v", st.name, err)
		}
		want := store.Usage{Bytes: int64(len(st.body)), Objects: 1}
		if st.del {
			want = store.Usage{}
		}
		if u, err := s.Usage(ctx, "t1"); err != nil || u != want {
			t.Errorf("Usage after %s = %+v, %v; want %+v", st.name, u, err, want)
		}
	}
}

// TestDeleteExpiredOrder: the expiry index orders times before 1970 too, so
// a sweep does not stop at a future expiry with older ones behind it.
func TestDeleteExpiredOrder(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, exp := range map[string]time.Time{
		"1960":   time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC),
		"epoch":  time.UnixMilli(0),
		"before": now.Add(-time.Millisecond),
		"now":    now,
		"future": now.Add(time.Millisecond),
		"2100":   time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		o := object(store.MustKey("t1", "report", p), p, now.Add(-time.Hour))
		o.Expires = exp
		if _, _, err := s.Put(ctx, o, store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.DeleteExpired(ctx, 100); n != 4 || err != nil {
		t.Errorf("DeleteExpired = %d, %v; want 4, nil", n, err)
	}
	if n, err := s.DeleteExpired(ctx, 100); n != 0 || err != nil {
		t.Errorf("second DeleteExpired = %d, %v; want 0, nil", n, err)
	}
	if u, err := s.Usage(ctx, "t1"); err != nil || u != (store.Usage{Bytes: int64(len("future2100")), Objects: 2}) {
		t.Errorf("Usage = %+v, %v; want the two future objects", u, err)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestOpenBuildsExpiryAndUsage: a file written before the expiry index and
// the usage bucket existed opens, and Open builds both from the objects.
func TestOpenBuildsExpiryAndUsage(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.Usage{}
	expired := 0
	for i := range 12 {
		tenant := []string{"t1", "t10", "t1-x"}[i%3]
		k := store.MustKey(tenant, []string{"a", "b"}[i%2], fmt.Sprintf("r/%02d", i))
		o := object(k, strings.Repeat("x", i), now)
		switch i % 4 {
		case 1:
			o.Expires = now.Add(-time.Second)
			expired++
		case 2:
			o.Expires = now.Add(time.Hour)
		}
		if _, _, err := s.Put(ctx, o, store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
		u := want[tenant]
		u.Bytes += int64(i)
		u.Objects++
		want[tenant] = u
	}
	s = damage(t, s, path, now, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("v1-expiry")); err != nil {
			return err
		}
		return tx.DeleteBucket([]byte("v1-usage"))
	})
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Errorf("Check after rebuilding = %v", err)
	}
	for tenant, w := range want {
		if u, err := s.Usage(ctx, tenant); err != nil || u != w {
			t.Errorf("Usage(%s) after rebuilding = %+v, %v; want %+v", tenant, u, err, w)
		}
	}
	if n, err := s.DeleteExpired(ctx, 100); n != expired || err != nil {
		t.Errorf("DeleteExpired after rebuilding = %d, %v; want %d, nil", n, err, expired)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check after the sweep = %v", err)
	}
}

// TestCheckFindsExpiryAndUsageDamage: Check reports a missing, stale,
// dangling or corrupt expiry index entry and a wrong, missing or corrupt
// usage entry.
func TestCheckFindsExpiryAndUsageDamage(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := now.Add(time.Hour)
	expiry := func(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket([]byte("v1-expiry")) }
	usage := func(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket([]byte("v1-usage")) }
	for _, tc := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
	}{
		{"missing expiry entry", func(tx *bolt.Tx) error { return expiry(tx).Delete(expiryEntry(exp, "t1", "expiring")) }},
		{"stale expiry entry", func(tx *bolt.Tx) error { return expiry(tx).Put(expiryEntry(exp, "t1", "forever"), nil) }},
		{"wrong expiry", func(tx *bolt.Tx) error { return expiry(tx).Put(expiryEntry(now, "t1", "expiring"), nil) }},
		{"dangling expiry entry", func(tx *bolt.Tx) error { return expiry(tx).Put(expiryEntry(exp, "t2", "gone"), nil) }},
		{"corrupt expiry entry", func(tx *bolt.Tx) error { return expiry(tx).Put([]byte("short"), nil) }},
		{"wrong usage", func(tx *bolt.Tx) error { return usage(tx).Put([]byte("t1"), usageValue(7, 2)) }},
		{"missing usage", func(tx *bolt.Tx) error { return usage(tx).Delete([]byte("t1")) }},
		{"usage of nobody", func(tx *bolt.Tx) error { return usage(tx).Put([]byte("t2"), usageValue(1, 1)) }},
		{"corrupt usage", func(tx *bolt.Tx) error { return usage(tx).Put([]byte("t1"), []byte("short")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(path)
			s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			o := object(store.MustKey("t1", "report", "expiring"), "exp", now)
			o.Expires = exp
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Put(ctx, object(store.MustKey("t1", "report", "forever"), "forever", now), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check before the damage = %v", err)
			}
			s = damage(t, s, path, now, tc.damage)
			defer s.Close()
			if err := s.Check(); err == nil {
				t.Errorf("Check with a %s = nil, want an error", tc.name)
			}
		})
	}
}

// TestDeleteExpiredStaleEntries: in a damaged file, an expiry index entry
// that does not match its object's record never removes the object; the
// sweep drops the entry.
func TestDeleteExpiredStaleEntries(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	live := store.MustKey("t1", "report", "live")
	later := store.MustKey("t1", "report", "later")
	dead := store.MustKey("t1", "report", "dead")
	if _, _, err := s.Put(ctx, object(live, "live", now), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	o := object(later, "later", now)
	o.Expires = now.Add(time.Hour)
	if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	o = object(dead, "dead", now)
	o.Expires = now.Add(-time.Hour)
	if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	s = damage(t, s, path, now, func(tx *bolt.Tx) error {
		e := tx.Bucket([]byte("v1-expiry"))
		for _, ek := range [][]byte{
			expiryEntry(now.Add(-2*time.Hour), "t1", "live"),  // no expiry at all
			expiryEntry(now.Add(-2*time.Hour), "t1", "later"), // another expiry
			expiryEntry(now.Add(-2*time.Hour), "t2", "gone"),  // no object
		} {
			if err := e.Put(ek, nil); err != nil {
				return err
			}
		}
		return nil
	})
	defer s.Close()
	if n, err := s.DeleteExpired(ctx, 10); n != 1 || err != nil {
		t.Errorf("DeleteExpired = %d, %v; want 1 (the expired object), nil", n, err)
	}
	for _, k := range []store.Key{live, later} {
		if _, err := s.Stat(ctx, k); err != nil {
			t.Errorf("Stat(%s) after the sweep = %v, want it kept", k, err)
		}
	}
	if _, err := s.Stat(ctx, dead); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat(%s) after the sweep = %v, want %v", dead, err, store.ErrNotFound)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check after the sweep dropped the stale entries = %v", err)
	}
}

func TestCheckEncoded(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t)
	now := time.Now()
	with := object(store.MustKey("t1", "report", "with"), "body", now)
	with.Encoded = []byte("E-body")
	without := object(store.MustKey("t1", "report", "without"), "plain", now)
	for _, o := range []*store.Object{with, without} {
		if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	verify := func(m *store.Meta, encoded, body []byte) error {
		seen = append(seen, fmt.Sprintf("%s %s %s %d", m.Key, encoded, body, m.Size))
		if string(encoded) != "E-"+string(body) {
			return errors.New("mismatch")
		}
		return nil
	}
	if err := s.CheckEncoded(verify); err != nil {
		t.Fatalf("CheckEncoded = %v", err)
	}
	if want := []string{"report://t1/with E-body body 4"}; !slices.Equal(seen, want) {
		t.Errorf("verify saw %q, want %q (only records with an encoded form)", seen, want)
	}

	with.Encoded = []byte("E-other")
	if _, _, err := s.Put(ctx, with, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	err := s.CheckEncoded(verify)
	if err == nil || !strings.Contains(err.Error(), "report://t1/with") || !strings.Contains(err.Error(), "encoded form: mismatch") {
		t.Errorf("CheckEncoded of a mismatching form = %v, want its key and the verifier's error", err)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check (no verifier) = %v, want nil", err)
	}
}
