package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/storetest"
)

// The conformance suite with every record in the version 3 layout, a body
// bucket for each (empty bodies included).
func TestConformanceBodyBuckets(t *testing.T) {
	boltstore.SetLargeMin(t, 0)
	storetest.Run(t, conformanceDriver)
}

// largeBody returns n bytes that differ with seed.
func largeBody(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// wantLayout fails t unless the record at k has version and the file has
// bodies body buckets, and the file passes Check.
func wantLayout(t *testing.T, s *boltstore.Store, k store.Key, version byte, bodies int) {
	t.Helper()
	v, n, err := s.Layout(k)
	if err != nil || v != version || n != bodies {
		t.Errorf("%s: record version %d, %d body buckets (%v); want version %d, %d", k, v, n, err, version, bodies)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// wantStored fails t unless k reads back as body and encoded, through
// View, Get and Open.
func wantStored(t *testing.T, s *boltstore.Store, k store.Key, body, encoded []byte) {
	t.Helper()
	ctx := t.Context()
	err := s.View(ctx, k, func(m *store.Meta, e, b []byte) error {
		if !bytes.Equal(b, body) || !bytes.Equal(e, encoded) || m.Size != int64(len(body)) {
			t.Errorf("View %s: body of %d bytes (equal %t), encoded of %d (equal %t), size %d; want %d and %d",
				k, len(b), bytes.Equal(b, body), len(e), bytes.Equal(e, encoded), m.Size, len(body), len(encoded))
		}
		return nil
	})
	if err != nil {
		t.Errorf("View %s = %v", k, err)
	}
	if o, err := s.Get(ctx, k); err != nil || !bytes.Equal(o.Body, body) {
		t.Errorf("Get %s = %v", k, err)
	}
	_, r, err := s.Open(ctx, k)
	if err != nil {
		t.Fatalf("Open %s = %v", k, err)
	}
	defer r.Close()
	if len(body) > 10 {
		if _, err := r.Seek(int64(len(body)-10), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, body[len(body)-10:]) {
			t.Errorf("Open %s: the last 10 bytes read %q, %v", k, got, err)
		}
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, body) {
		t.Errorf("Open %s: read %d bytes (equal %t), %v", k, len(got), bytes.Equal(got, body), err)
	}
}

func wantUsage(t *testing.T, s *boltstore.Store, tenant string, want store.Usage) {
	t.Helper()
	if u, err := s.Usage(t.Context(), tenant); err != nil || u != want {
		t.Errorf("Usage(%s) = %+v, %v; want %+v", tenant, u, err, want)
	}
}

// Issue 24: a large body lives in a body bucket of its own, through every
// write that replaces or removes it.
func TestLargeBodies(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := boltstore.Open(path, boltstore.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	large := boltstore.LargeMin()
	a, b, c := store.MustKey("t1", "report", "a"), store.MustKey("t1", "report", "b"), store.MustKey("t1", "report", "c")
	put := func(k store.Key, body, encoded []byte) store.Meta {
		t.Helper()
		o := object(k, "", now)
		o.Body, o.Size, o.SHA256, o.Encoded = body, int64(len(body)), store.Sum(body), encoded
		m, _, err := s.Put(ctx, o, store.Cond{})
		if err != nil {
			t.Fatalf("Put %s = %v", k, err)
		}
		return m
	}

	bodyA := largeBody(large, 1) // exactly the threshold
	put(a, bodyA, nil)
	wantLayout(t, s, a, 3, 1)
	wantStored(t, s, a, bodyA, nil)

	// The body and the encoded form together reach it.
	bodyB, encB := largeBody(large/2, 2), largeBody(large/2, 3)
	put(b, bodyB, encB)
	wantLayout(t, s, b, 3, 2)
	wantStored(t, s, b, bodyB, encB)
	// A small body with a large encoded form; one byte under the
	// threshold is a record of its own.
	put(c, []byte("x"), largeBody(large, 4))
	wantLayout(t, s, c, 3, 3)
	wantStored(t, s, c, []byte("x"), largeBody(large, 4))
	put(c, largeBody(large-2, 5), []byte("E"))
	wantLayout(t, s, c, 2, 2)
	wantStored(t, s, c, largeBody(large-2, 5), []byte("E"))
	wantUsage(t, s, "t1", store.Usage{Bytes: int64(2*large - 2 + large/2), Objects: 3})

	// Replaced: large by small, small by large, large by large.
	put(a, []byte("small"), nil)
	wantLayout(t, s, a, 1, 1)
	wantStored(t, s, a, []byte("small"), nil)
	bodyA = largeBody(3*large, 6)
	put(a, bodyA, nil)
	wantLayout(t, s, a, 3, 2)
	bodyA = largeBody(2*large, 7)
	put(a, bodyA, nil)
	wantLayout(t, s, a, 3, 2)
	wantStored(t, s, a, bodyA, nil)

	// Streamed.
	bodyS := largeBody(5*large+3, 8)
	in := object(a, "", now)
	if _, _, err := s.PutStream(ctx, &in.Meta, bytes.NewReader(bodyS), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, a, 3, 2)
	wantStored(t, s, a, bodyS, nil)
	wantUsage(t, s, "t1", store.Usage{Bytes: int64(5*large + 3 + large/2 + large - 2), Objects: 3})

	// A quota counts the body, never the encoded form; a refused write
	// leaves the old body bucket and adds none.
	o := object(b, "", now)
	o.Body, o.Size, o.SHA256 = largeBody(8*large, 9), int64(8*large), store.Sum(largeBody(8*large, 9))
	if _, _, err := s.Put(ctx, o, store.Cond{Quota: store.Quota{Bytes: int64(8 * large)}}); !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("Put over the quota = %v, want %v", err, store.ErrQuotaExceeded)
	}
	wantLayout(t, s, b, 3, 2)
	wantStored(t, s, b, bodyB, encB)

	// Deleted.
	if err := s.Delete(ctx, b, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, b, 0, 1)

	// Expired and swept.
	exp := object(b, "", now)
	exp.Body, exp.Size, exp.SHA256 = largeBody(large, 10), int64(large), store.Sum(largeBody(large, 10))
	exp.Expires = now.Add(time.Minute)
	if _, _, err := s.Put(ctx, exp, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, b, 3, 2)
	now = now.Add(2 * time.Minute)
	if n, err := s.DeleteExpired(ctx, 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	wantLayout(t, s, b, 0, 1)
	wantUsage(t, s, "t1", store.Usage{Bytes: int64(5*large + 3 + large - 2), Objects: 2})

	// A backup holds the bodies; so does the file after a reopen (with
	// its quick check).
	backup := filepath.Join(t.TempDir(), "backup.db")
	backupTo(t, s, backup)
	s.Close()
	for _, p := range []string{backup, path} {
		s, err = boltstore.Open(p, boltstore.Options{Now: clock})
		if err != nil {
			t.Fatalf("Open %s = %v", p, err)
		}
		wantLayout(t, s, a, 3, 1)
		wantStored(t, s, a, bodyS, nil)
		wantStored(t, s, c, largeBody(large-2, 5), []byte("E"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err = boltstore.Open(path, boltstore.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	// The last object removes its scheme and tenant, and the body bucket.
	for _, k := range []store.Key{a, c} {
		if err := s.Delete(ctx, k, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	wantLayout(t, s, a, 0, 0)
	wantUsage(t, s, "t1", store.Usage{})
}

// A file written before version 3 (large bodies in records of versions 1
// and 2, and no "v1-bodies" bucket) opens without a migration, reads, and
// its records are replaced and deleted.
func TestOldLayoutLargeRecords(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "resourced.db")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	large := boltstore.LargeMin()
	boltstore.SetLargeMin(t, math.MaxInt) // what resourced wrote before
	s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := store.MustKey("t1", "report", "a"), store.MustKey("t1", "report", "b"), store.MustKey("t1", "report", "c")
	bodyA, bodyB, encB, bodyC := largeBody(2*large, 1), largeBody(3*large, 2), largeBody(3*large, 3), largeBody(4*large, 4)
	for _, w := range []struct {
		k             store.Key
		body, encoded []byte
	}{{a, bodyA, nil}, {b, bodyB, encB}} {
		o := object(w.k, "", now)
		o.Body, o.Size, o.SHA256, o.Encoded = w.body, int64(len(w.body)), store.Sum(w.body), w.encoded
		if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	in := object(c, "", now)
	if _, _, err := s.PutStream(ctx, &in.Meta, bytes.NewReader(bodyC), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("v1-bodies")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	boltstore.SetLargeMin(t, large)
	s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	wantLayout(t, s, a, 1, 0)
	wantLayout(t, s, b, 2, 0)
	wantLayout(t, s, c, 1, 0)
	wantStored(t, s, a, bodyA, nil)
	wantStored(t, s, b, bodyB, encB)
	wantStored(t, s, c, bodyC, nil)

	bodyA = largeBody(2*large, 5)
	o := object(a, "", now)
	o.Body, o.Size, o.SHA256 = bodyA, int64(len(bodyA)), store.Sum(bodyA)
	if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, a, 3, 1)
	wantStored(t, s, a, bodyA, nil)
	if _, _, err := s.Put(ctx, object(b, "small", now), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, b, 1, 1)
	if err := s.Delete(ctx, c, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantLayout(t, s, c, 0, 1)
	wantUsage(t, s, "t1", store.Usage{Bytes: int64(len(bodyA) + len("small")), Objects: 2})
}

// Check finds a damaged body bucket; a read of its object fails with an
// error, and deleting the object still works.
func TestCheckFindsBodyDamage(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := store.MustKey("t1", "report", "a"), store.MustKey("t1", "report", "b")
	large := boltstore.LargeMin()
	id := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	for _, tc := range []struct {
		name, want string
		damage     func(tx *bolt.Tx) error
		readFails  bool
	}{
		{"missing", "body bucket 0000000000000001 is missing", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("v1-bodies")).DeleteBucket(id(1))
		}, true},
		{"orphan", "body bucket 0000000000000063: no record names it", func(tx *bolt.Tx) error {
			nb, err := tx.Bucket([]byte("v1-bodies")).CreateBucket(id(99))
			if err != nil {
				return err
			}
			return nb.Put([]byte("b"), largeBody(large, 0))
		}, false},
		{"short body", "size", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("v1-bodies")).Bucket(id(1)).Put([]byte("b"), largeBody(large-1, 1))
		}, true},
		{"other body", "does not match its sha256", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("v1-bodies")).Bucket(id(1)).Put([]byte("b"), largeBody(large, 9))
		}, false},
		{"unknown key", `unexpected key "x"`, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("v1-bodies")).Bucket(id(1)).Put([]byte("x"), nil)
		}, true},
		{"shared", "named by another record too", func(tx *bolt.Tx) error {
			sb := tx.Bucket([]byte("v1")).Bucket([]byte("t1")).Bucket([]byte("report"))
			return sb.Put([]byte("b"), bytes.Clone(sb.Get([]byte("a"))))
		}, false},
		{"bad id", "body id of 7 bytes", func(tx *bolt.Tx) error {
			sb := tx.Bucket([]byte("v1")).Bucket([]byte("t1")).Bucket([]byte("report"))
			v := sb.Get([]byte("a"))
			return sb.Put([]byte("a"), bytes.Clone(v[:len(v)-1]))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "resourced.db")
			s, err := boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range []store.Key{a, b} {
				o := object(k, "", now)
				body := largeBody(large, byte(i+1))
				o.Body, o.Size, o.SHA256 = body, int64(len(body)), store.Sum(body)
				if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check before the damage = %v", err)
			}
			s.Close()
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an error with %q", err, tc.want)
			}
			_, err = s.Get(ctx, a)
			if tc.readFails != (err != nil) {
				t.Errorf("Get = %v, want an error: %t", err, tc.readFails)
			}
			if tc.name == "missing" {
				// The record that names a missing body bucket can go.
				if err := s.Delete(ctx, a, store.Cond{}); err != nil {
					t.Fatalf("Delete = %v", err)
				}
				if err := s.Check(); err != nil {
					t.Errorf("Check after the delete = %v", err)
				}
			}
		})
	}
}

// pattern is an io.Reader of n bytes that are never all in memory.
type pattern struct{ n, i int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.i >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.i)]
	for j := range b {
		b[j] = byte((p.i + int64(j)) % 251)
	}
	p.i += int64(len(b))
	return len(b), nil
}

// Issue 24: saving large parts one after another in one scheme allocates
// about one copy of each (bbolt's pages of it), not the parts saved before
// it too. In the layout before version 3 (5493f53), PutStream of parts of
// 40, 47 and 30 MiB allocated 40, 89 and 121 MiB: each copied the large
// values sharing its leaf. (Forcing the old layout here, SetLargeMin with
// math.MaxInt, fails with 80, 135 and 151 MiB, the spool read into memory.)
func TestLargePutsDoNotCopyTheirNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 117 MiB")
	}
	s := openTemp(t)
	for i, mib := range []int64{40, 47, 30} {
		size := mib << 20
		k := store.MustKey("t1", "report", "part"+string(rune('a'+i)))
		meta := object(k, "", time.Now()).Meta
		_, before, after := measuredPutStream(t, s, &meta, &pattern{n: size})
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("PutStream of the %d MiB part allocated %.1f MiB", mib, float64(alloc)/(1<<20))
		if alloc > size*5/4+4<<20 {
			t.Errorf("PutStream of the %d MiB part allocated %d MiB, want at most %d", mib, alloc>>20, (size*5/4+4<<20)>>20)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// Issue 24: once the save of a large body returned, the heap that bbolt's
// pages of it took is back with the system, so that the next large save
// (the next part of the same answer) does not stack its pages on them.
func TestLargePutReleasesItsPages(t *testing.T) {
	s := openTemp(t)
	const size = 24 << 20
	meta := object(store.MustKey("t1", "report", "big"), "", time.Now()).Meta
	_, before, after := measuredPutStream(t, s, &meta, &pattern{n: size})
	// Retained: what the heap holds from the system, used or not.
	retained := func(m *runtime.MemStats) int64 { return int64(m.HeapSys - m.HeapReleased) }
	if grew := retained(&after) - retained(&before); grew > 8<<20 {
		t.Errorf("the heap retained %.1f MiB more after saving %d MiB, want at most 8", float64(grew)/(1<<20), size>>20)
	}
}
