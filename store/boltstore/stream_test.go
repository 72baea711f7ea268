package boltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// TestIdleReaderDoesNotBlockGrowth: a reader opened with Open and idle
// between two Reads (a slow client) holds no read transaction, so saves
// that grow the file far past the mapping (a remap, which waits for every
// open read transaction) complete; the reader then reads on. A reader that
// held a transaction would block the saves until the deadline.
func TestIdleReaderDoesNotBlockGrowth(t *testing.T) {
	const mmap = 1 << 20
	path := filepath.Join(t.TempDir(), "resourced.db")
	s, err := boltstore.Open(path, boltstore.Options{MmapSize: mmap})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	body := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	k := store.MustKey("acme", "report", "slow")
	if _, _, err := s.Put(t.Context(), object(k, string(body), now), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, r, err := s.Open(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, 100)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		big := bytes.Repeat([]byte("x"), 256<<10)
		for i := range 32 { // 8 MiB: several remaps past 1 MiB
			o := object(store.MustKey("acme", "report", fmt.Sprintf("grow/%d", i)), string(big), now)
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("saves while the reader was idle: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("saves that grow the file did not complete in 20s while a reader was idle: the reader holds a read transaction")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() <= 4*mmap {
		t.Fatalf("file after the saves: %v, size %d, want well past the %d-byte mapping", err, fi.Size(), mmap)
	}

	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading on after the file grew: %v", err)
	}
	if got = append(got, rest...); !bytes.Equal(got, body) {
		t.Errorf("the reader read %d bytes that differ from the %d-byte body", len(got), len(body))
	}
}

// Issue 24: PutStream of a large body holds one copy of it on the heap
// (bbolt's pages at commit), not two: the spool file is mapped, not read
// into a buffer (Linux).
func TestPutStreamMapsItsSpool(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the spool is mapped on Linux only")
	}
	s := openTemp(t)
	const size = 16<<20 + 5
	body := bytes.Repeat([]byte("0123456789abcdeф"), size/17+1)[:size]
	k := store.MustKey("acme", "report", "big")
	meta := object(k, "", time.Now())
	m, before, after := measuredPutStream(t, s, &meta.Meta, bytes.NewReader(body))
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size*3/2 {
		t.Errorf("PutStream of %d bytes allocated %d", size, alloc)
	}
	_, r, err := s.Open(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, body) || m.Size != size {
		t.Fatalf("read back %d bytes (equal %t), size %d, %v", len(got), bytes.Equal(got, body), m.Size, err)
	}
}
