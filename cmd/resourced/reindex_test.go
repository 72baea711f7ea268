package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store/boltstore"
)

// TestIndexNote: /readyz's note is there exactly for a local index on the
// shared S3 store.
func TestIndexNote(t *testing.T) {
	for _, c := range []struct {
		store, index string
		note         bool
	}{
		{"s3", "bleve", true}, {"s3", "memory", true}, {"s3", "postgres", false}, {"s3", "", false},
		{"bbolt", "", false}, {"bbolt", "bleve", false}, {"memory", "", false},
	} {
		cfg := config.Default()
		cfg.Store.Backend, cfg.Index.Backend = c.store, c.index
		if got := indexNote(cfg); (got != "") != c.note || c.note && !strings.Contains(got, "postgres") {
			t.Errorf("indexNote(store %s, index %q) = %q, want a note: %v", c.store, c.index, got, c.note)
		}
	}
}

// TestIndexCommandsRefuse: fsck and reindex say what they work on and
// why they cannot go on: a memory store, an s3 store without an index, an
// S3 service that does not answer (reindex and fsck's index check need the
// bucket), never a secret.
func TestIndexCommandsRefuse(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string { return writeConfig(t, dir, name, yaml) }
	mem := write("mem.yaml", "store: {backend: memory}\n")
	s3off := write("s3off.yaml", "store:\n  backend: s3\n  s3: {bucket: bkt, endpoint: \"http://127.0.0.1:1\", pathStyle: true, callTimeout: 2s}\nindex: {backend: off}\n")
	s3down := write("s3down.yaml", "store:\n  backend: s3\n  s3: {bucket: bkt, endpoint: \"http://127.0.0.1:1\", pathStyle: true, callTimeout: 2s}\nindex: {backend: memory}\n")
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-never-printed")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fsck", "--config", mem}, `fsck works on the bbolt or s3 backend; store.backend is "memory"`},
		{[]string{"reindex", "--config", mem}, `reindex works on the bbolt or s3 backend; store.backend is "memory"`},
		{[]string{"fsck", "--config", s3off}, "index.backend is off: there is nothing to check"},
		{[]string{"reindex", "--config", s3off}, "index.backend is off: there is no search index to rebuild"},
		{[]string{"fsck", "--config", s3down, "--data-dir", dir}, "127.0.0.1:1"},
		{[]string{"reindex", "--workers", "0", "--config", s3down}, "--workers 0: want 1 to 1024"},
		{[]string{"reindex", "--workers", "1025", "--config", s3down}, "--workers 1025: want 1 to 1024"},
		{[]string{"reindex", "--config", s3down, "--data-dir", dir}, "127.0.0.1:1"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("resourced %q = exit %d, stderr %q; want a failure and %q", tc.args, code, stderr, tc.want)
		}
		if strings.Contains(stdout+stderr, "test-secret-never-printed") {
			t.Errorf("resourced %q printed the secret key", tc.args)
		}
	}
}

// TestDamagedBleveIndexSaysWhatToDo: serve and reindex on a bleve index
// directory that does not open (here empty, as after a crash while it was
// created) say to remove it and run resourced reindex, as fsck does;
// they gave bleve's "metadata missing" alone.
func TestDamagedBleveIndexSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	idx := filepath.Join(dir, "index.bleve")
	if err := os.Mkdir(idx, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"reindex", "--quiet", "--data-dir", dir},
		{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir},
	} {
		code, _, stderr := runCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, "remove "+idx+" and run resourced reindex") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and what to do", args[0], code, stderr)
		}
	}
}
