package boltstore_test

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

func benchStore(b *testing.B) *boltstore.Store {
	b.Helper()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchObject(k store.Key, body []byte) *store.Object {
	now := time.Now()
	return &store.Object{
		Meta: store.Meta{
			Key: k, MIMEType: "application/octet-stream", Size: int64(len(body)), SHA256: store.Sum(body),
			Created: now, Modified: now, Listed: true, Visibility: store.Private,
		},
		Body: body,
	}
}

// BenchmarkGet reads one 1 KiB object.
func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	k := store.MustKey("t1", "report", "bench/get")
	body := bytes.Repeat([]byte{'x'}, 1024)
	if _, _, err := s.Put(ctx, benchObject(k, body), store.Cond{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutParallel writes distinct 1 KiB objects from GOMAXPROCS
// goroutines; concurrent Puts share fsyncs through the writer (commit.go).
func BenchmarkPutParallel(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	body := bytes.Repeat([]byte{'x'}, 1024)
	sum := store.Sum(body)
	var n atomic.Int64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := store.MustKey("t1", "report", fmt.Sprintf("bench/%d", n.Add(1)))
			o := benchObject(k, body)
			o.SHA256 = sum
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLargeBody reads and writes 256 KiB bodies (over the threshold
// of body buckets) in the layout of version 3 and, for comparison in the
// same run, the one before (largeMin raised over every body). Put
// replaces one of 8 objects of one scheme, so a record layout rewrites
// the leaf it shares with its neighbours.
func BenchmarkLargeBody(b *testing.B) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 256<<10/16)
	for _, layout := range []struct {
		name string
		min  int
	}{{"records", math.MaxInt}, {"bodyBuckets", boltstore.LargeMin()}} {
		b.Run("layout="+layout.name, func(b *testing.B) {
			boltstore.SetLargeMin(b, layout.min)
			s := benchStore(b)
			ctx := b.Context()
			keys := make([]store.Key, 8)
			for i := range keys {
				keys[i] = store.MustKey("t1", "report", fmt.Sprintf("bench/%d", i))
				if _, _, err := s.Put(ctx, benchObject(keys[i], body), store.Cond{}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("op=Get", func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.Get(ctx, keys[i%len(keys)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("op=Put", func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, _, err := s.Put(ctx, benchObject(keys[i%len(keys)], body), store.Cond{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
