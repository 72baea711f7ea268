package index_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/index"
)

func refs(uris ...string) []index.Ref {
	var out []index.Ref
	for _, u := range uris {
		r, ok := index.ParseURI(u)
		if !ok {
			panic(u)
		}
		out = append(out, r)
	}
	return out
}

func owed(t *testing.T, path string) []index.Ref {
	t.Helper()
	p, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Owed()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPendingSurvivesWithoutEnd: what was begun and not ended is owed to
// the next process (a kill: the file is only closed, nothing ended);
// what ended is not, and a key begun twice stays until both end.
func TestPendingSurvivesWithoutEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.db")
	p, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := refs("report://acme/a", "report://acme/b", "search://beta/c")[0], refs("report://acme/b")[0], refs("search://beta/c")[0]
	for _, r := range []index.Ref{a, b, b, c} {
		if err := p.Begin(r); err != nil {
			t.Fatal(err)
		}
	}
	p.End(a)
	p.End(b) // b is still in flight once
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := owed(t, path), refs("report://acme/b", "search://beta/c"); !slices.Equal(got, want) {
		t.Fatalf("owed after a stop with b and c in flight = %v, want %v", got, want)
	}

	// The next process brings them in line and ends them; nothing is owed
	// after it.
	p, err = index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Owed()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		p.End(r)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := owed(t, path); len(got) != 0 {
		t.Fatalf("owed after every End = %v", got)
	}
}

// TestPendingConcurrent: many writers begin and end at once; the ended
// ones leave the disk with later transactions and nothing in flight is
// lost.
func TestPendingConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.db")
	p, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				r := refs(fmt.Sprintf("report://t%d/p/%d", w, i%5))[0]
				if err := p.Begin(r); err != nil {
					t.Error(err)
					return
				}
				if i < 45 {
					p.End(r)
				}
			}
		})
	}
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	got := owed(t, path)
	if len(got) != 8*5 {
		t.Fatalf("owed %d keys, want the 40 left in flight: %v", len(got), got)
	}
}

// TestPendingRefuses: Begin after Close is ErrClosed; a record held open
// by another process is waited for, then an error; a record with a key
// that is no URI is reported, not skipped.
func TestPendingRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.db")
	p, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := index.OpenPending(path, 50*time.Millisecond); !errors.Is(err, index.ErrInUse) {
		t.Fatalf("a second OpenPending of a held record = %v, want ErrInUse", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Begin(refs("report://acme/a")[0]); !errors.Is(err, index.ErrClosed) {
		t.Fatalf("Begin after Close = %v, want ErrClosed", err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("pending")).Put([]byte("not a uri"), nil) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	p, err = index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Owed(); err == nil {
		t.Fatal("Owed of a record with a key that is no URI succeeded")
	}
}

// TestPendingDamaged: a file that is no record is refused with what to
// do, not taken for one in use.
func TestPendingDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.db")
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := index.OpenPending(path, time.Second)
	if err == nil || errors.Is(err, index.ErrInUse) || !strings.Contains(err.Error(), "remove the file") {
		t.Fatalf("OpenPending of a damaged file = %v", err)
	}
}
