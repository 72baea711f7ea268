package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// TestPrepareBolt: -prepare-bbolt stores the reports a server would, each
// with its search words for -op search, into a data directory's bbolt
// file (continuing at -prepare-from), and refuses what it cannot do.
func TestPrepareBolt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, from := range []string{"0", "3"} {
		var out bytes.Buffer
		args := []string{"-op", "search", "-prepare", "5", "-prepare-from", from, "-prepare-bbolt", dir, "-prepare-c", "2",
			"-size", "256B", "-d", "0", "-tenant", "acme"}
		if code, err := run(args, &out, &out); code != 0 || err != nil {
			t.Fatalf("run %v: exit %d, %v\n%s", args, code, err, &out)
		}
	}
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	if err := st.Walk(context.Background(), func(m *store.Meta) error {
		n++
		if m.Key.Tenant() != "acme" || m.Key.Scheme() != "report" || !strings.HasPrefix(m.Key.Path(), "bench/scale/") || m.MIMEType != "text/markdown" {
			t.Errorf("prepared %s (%s)", m.Key, m.MIMEType)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("prepared %d objects, want 5", n)
	}
	o, err := st.Get(context.Background(), store.MustKey("acme", "report", "bench/scale/4"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(o.Body, searchWords(4)) || len(o.Body) != len(searchWords(4))+256 {
		t.Errorf("report 4 starts %q, %d bytes", o.Body[:20], len(o.Body))
	}

	for _, args := range [][]string{
		{"-op", "search", "-prepare-bbolt", dir},
		{"-op", "read", "-prepare", "5", "-prepare-bbolt", dir, "-prepare-s3", "http://127.0.0.1:1", "-s3-bucket", "b"},
	} {
		var out bytes.Buffer
		if code, err := run(args, &out, &out); code == 0 || err == nil || !strings.Contains(err.Error(), "-prepare-bbolt needs -prepare") {
			t.Errorf("run %v: exit %d, %v", args, code, err)
		}
	}
	// A database a server holds open is refused, not waited for.
	var out bytes.Buffer
	code, err := run([]string{"-op", "search", "-prepare", "1", "-prepare-bbolt", dir, "-d", "0"}, &out, &out)
	if code == 0 || err == nil || !strings.Contains(err.Error(), "is a server running") {
		t.Errorf("prepare into a database held open: exit %d, %v", code, err)
	}
}
