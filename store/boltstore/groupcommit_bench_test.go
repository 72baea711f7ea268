package boltstore

// Benchmarks of saves at c=16 (issue 18, item 3): boltstore's Put against
// two floors of bare bbolt (1 KiB values, no records, indexes or usage),
// and against the commit path before group commit, in one run.
//
//	go test -count=3 -run '^$' -bench 'Raw|StorePut' -benchtime=4000x ./store/boltstore/
//
// 2026-12-01, code of commit f9aab38 with this file, linux/amd64, 2 vCPU
// Intel Xeon VM shared with other work (load ~2.5), ext4 on virtio
// (/dev/vda); a serial fsynced 1 KiB Update takes ~0.33 ms there.
// saves/s, three runs each:
//
//	RawBoltBatch        DB.Batch, bbolt defaults         1 408  1 429  1 407
//	StorePutBoltBatch   boltstore on DB.Batch (before)   1 339  1 335  1 350
//	RawGroupCommit      bare bbolt through the writer   19 129 20 089 19 602
//	StorePut            boltstore on the writer (now)   17 947 18 729 17 681
//
// StorePut is 0.92x RawGroupCommit, 12.7x RawBoltBatch and 13.4x
// StorePutBoltBatch (medians). Both DB.Batch rows are paced by its 10 ms
// MaxBatchDelay (16 writers per ~11 ms), not by the disk.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
)

// benchWriters is the concurrency of the save benchmarks: bench/run.sh's
// save scenario runs at c=16.
const benchWriters = 16

// runWriters calls put(i) for i in [0, b.N) from benchWriters goroutines
// and reports the rate as saves/s.
func runWriters(b *testing.B, put func(i int) error) {
	b.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	for range benchWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := put(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "saves/s")
}

// rawDB opens a bare bbolt file with the options OpenDriver uses (the
// default options: fsync on every commit, bbolt's default MaxBatchDelay and
// MaxBatchSize).
func rawDB(b *testing.B) *bolt.DB {
	b.Helper()
	bo := *bolt.DefaultOptions
	bo.InitialMmapSize = DefaultMmapSize
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bo)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("b"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkRawBoltBatch is the floor that boltstore's saves stood on until
// now: 1 KiB values put by benchWriters goroutines into a bare bbolt file
// through DB.Batch with its default options, no records, indexes or usage.
func BenchmarkRawBoltBatch(b *testing.B) {
	db := rawDB(b)
	val := bytes.Repeat([]byte{'x'}, 1024)
	runWriters(b, func(i int) error {
		key := fmt.Appendf(nil, "k%09d", i)
		return db.Batch(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("b")).Put(key, val)
		})
	})
}

// benchPutStore writes distinct 1 KiB objects (a new path each, like the
// save scenario) through the portable store at c=benchWriters.
func benchPutStore(b *testing.B, s *Store) {
	ctx := b.Context()
	body := bytes.Repeat([]byte{'x'}, 1024)
	sum := store.Sum(body)
	now := time.Now()
	runWriters(b, func(i int) error {
		k := store.MustKey("t1", "report", fmt.Sprintf("bench/%09d", i))
		o := &store.Object{
			Meta: store.Meta{
				Key: k, MIMEType: "application/octet-stream", Size: int64(len(body)), SHA256: sum,
				Created: now, Modified: now, Listed: true, Visibility: store.Private,
			},
			Body: body,
		}
		_, _, err := s.Put(ctx, o, store.Cond{Quota: store.Quota{Bytes: 1 << 40, Objects: 1 << 30}})
		return err
	})
}

// BenchmarkStorePut is boltstore's Put of 1 KiB at c=16, with a quota (as
// resourced saves with one by default).
func BenchmarkStorePut(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	benchPutStore(b, s)
}

// BenchmarkRawGroupCommit is the floor of the group commit: the same 1 KiB
// values into a bare bbolt file through boltstore's writer (commit.go),
// without records, indexes, usage or the portable store.
func BenchmarkRawGroupCommit(b *testing.B) {
	db := rawDB(b)
	w := newCommitter(db)
	b.Cleanup(w.close)
	val := bytes.Repeat([]byte{'x'}, 1024)
	runWriters(b, func(i int) error {
		key := fmt.Appendf(nil, "k%09d", i)
		return w.do(func(tx *bolt.Tx) (func() error, error) {
			bk := tx.Bucket([]byte("b"))
			return func() error { return bk.Put(key, val) }, nil
		})
	})
}

// BenchmarkStorePutBoltBatch is BenchmarkStorePut on the commit path
// before group commit (DB.Batch), for a comparison in one run.
func BenchmarkStorePutBoltBatch(b *testing.B) {
	d, err := OpenDriver(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	d.boltBatch = true
	s := newStore(d, Options{})
	b.Cleanup(func() { s.Close() })
	benchPutStore(b, s)
}
