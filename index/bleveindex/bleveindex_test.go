package bleveindex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/bleveindex"
	"github.com/resourced/resourced/index/indextest"
)

func TestConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) index.Driver {
		d, err := bleveindex.Open(filepath.Join(t.TempDir(), "index"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// TestReopen: what was put is there after Close and Open, and a directory
// of another layout is refused with what to do.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "index")
	d, err := bleveindex.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	x := index.New(d, index.Options{})
	doc := &index.Document{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "a"}, MediaType: "text/plain", Created: time.Now(), Text: "kept across restarts"}
	if err := x.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("index directory mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	d, err = bleveindex.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	x = index.New(d, index.Options{})
	defer x.Close()
	p, err := x.Search(ctx, "acme", index.Query{Text: "restarts"})
	if err != nil || len(p.Hits) != 1 {
		t.Errorf("after reopen: %+v, %v", p, err)
	}

	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "index_meta.json"), []byte(`{"storage":"scorch","index_type":"scorch"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bleveindex.Open(other); err == nil {
		t.Errorf("Open of a directory that is no index of ours succeeded")
	}
}

// TestOpenWaitInUse: an index held open elsewhere is ErrInUse after the
// wait, not a hang; once closed it opens.
func TestOpenWaitInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	d, err := bleveindex.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d2, err := bleveindex.OpenWait(dir, 100*time.Millisecond); !errors.Is(err, bleveindex.ErrInUse) {
		if d2 != nil {
			d2.Close()
		}
		t.Fatalf("OpenWait of an index held open = %v, want ErrInUse", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := bleveindex.OpenWait(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
}
