package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// command runs the binary with args on in's config and data directory
// and returns its combined output and whether it exited 0.
func (in *instance) command(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--config", in.config, "--data-dir", in.dataDir)...)
	cmd.Env = append(append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_DATA_DIR="), in.extraEnv...)
	out, err := cmd.CombinedOutput()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("resourced %v: %v", args, err)
	}
	return string(out), err == nil
}

func (in *instance) saveText(t *testing.T, path, text string, extra ...any) {
	t.Helper()
	args := map[string]any{"path": path, "mimeType": "text/plain", "text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	if r := in.call(v2025, "save_report", args); r.IsError {
		t.Fatalf("save_report %s: %s", path, r.raw)
	}
}

// TestReindexAndFsck: fsck over the real binary finds what a restored old
// index lacks and holds (an object missing from the index, an entry whose
// object is gone) and says to run reindex, which repairs it; a deleted
// index directory is reported (not created), and reindex rebuilds it; a
// running server's index is not touched.
func TestReindexAndFsck(t *testing.T) {
	in := startServer(t, "")
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	beta := in.as(in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))
	acme.saveText(t, "a", "alphaword in acme's report")
	acme.saveText(t, "b", "bravoword in acme's report")
	beta.saveText(t, "c", "charlieword in beta's report")
	if out, ok := in.command(t, "reindex"); ok || !strings.Contains(out, "stop it first") {
		t.Errorf("reindex of a running server: ok %v\n%s", ok, out)
	}
	in.stop()
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (3 entries for 3 live objects)") {
		t.Fatalf("fsck of a clean stop: ok %v\n%s", ok, out)
	}

	// An index restored from before a delete and a save.
	idx := filepath.Join(in.dataDir, "index.bleve")
	old := filepath.Join(t.TempDir(), "index.bleve")
	if err := os.CopyFS(old, os.DirFS(idx)); err != nil {
		t.Fatal(err)
	}
	in.start()
	if r := in.as(acme.Token).call(v2025, "delete_resource", map[string]any{"uri": "report://acme/a"}); r.IsError {
		t.Fatalf("delete_resource: %s", r.raw)
	}
	in.as(acme.Token).saveText(t, "d", "deltaword, saved after the copy")
	in.stop()
	restore := func() {
		t.Helper()
		if err := os.RemoveAll(idx); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(idx, os.DirFS(old)); err != nil {
			t.Fatal(err)
		}
	}
	restore()
	out, ok := in.command(t, "fsck")
	for _, want := range []string{"1 objects missing from the index (report://acme/d)", "1 entries whose object is gone (report://acme/a)", "run resourced reindex"} {
		if ok || !strings.Contains(out, want) {
			t.Errorf("fsck of a stale index: ok %v, want %q in\n%s", ok, want, out)
		}
	}
	if out, ok := in.command(t, "reindex"); !ok || !strings.Contains(out, "indexed 3 objects, removed 1 stale entries") {
		t.Fatalf("reindex: ok %v\n%s", ok, out)
	}
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (3 entries for 3 live objects)") {
		t.Fatalf("fsck after reindex: ok %v\n%s", ok, out)
	}

	// A deleted index directory.
	if err := os.RemoveAll(idx); err != nil {
		t.Fatal(err)
	}
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "none, not checked") || !strings.Contains(out, "run resourced reindex") {
		t.Errorf("fsck without an index: ok %v\n%s", ok, out)
	}
	if _, err := os.Stat(idx); !os.IsNotExist(err) {
		t.Errorf("fsck created the index directory")
	}
	if out, ok := in.command(t, "reindex"); !ok || !strings.Contains(out, "indexed 3 objects") {
		t.Fatalf("reindex into a deleted directory: ok %v\n%s", ok, out)
	}
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (3 entries") {
		t.Fatalf("fsck after the rebuild: ok %v\n%s", ok, out)
	}

	// The server serves the rebuilt index.
	in.start()
	a := in.as(acme.Token)
	for q, want := range map[string][]string{"deltaword": {"report://acme/d"}, "alphaword": nil, "charlieword": nil, "bravoword": {"report://acme/b"}} {
		if got := a.searchHits(t, map[string]any{"query": q}); !slices.Equal(got, want) {
			t.Errorf("acme searching %s after reindex = %v, want %v", q, got, want)
		}
	}
	if got := in.as(beta.Token).searchHits(t, map[string]any{"query": "charlieword"}); !slices.Equal(got, []string{"report://beta/c"}) {
		t.Errorf("beta searching charlieword = %v", got)
	}
}

var indexSweptRE = regexp.MustCompile(`(?m)^resourced_index_swept_total (\d+)`)

// TestSweepRemovesIndexEntries: a resource removed by the sweep leaves no
// entry in the search index (fsck of the stopped server finds none whose
// object is gone), and a resource saved again after it expired keeps its
// new entry.
func TestSweepRemovesIndexEntries(t *testing.T) {
	in := startServer(t, "sweep:\n  interval: 1s\n")
	for i := range 3 {
		in.saveText(t, fmt.Sprintf("short/%d", i), "shortlived words", "retention", "PT1S")
	}
	in.saveText(t, "again", "first life", "retention", "PT1S")
	in.saveText(t, "kept", "kept words")
	time.Sleep(1100 * time.Millisecond) // past the retention, not a wait for the server
	in.saveText(t, "again", "second life", "retention", "PT1H")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, m := getText(t, in.URL+"/metrics")
		if s := indexSweptRE.FindStringSubmatch(m); s != nil {
			if n, _ := strconv.Atoi(s[1]); n >= 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweep removed fewer than 3 index entries in 20s:\n%s", grepLines(m, "swept"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	in.stop()
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (2 entries for 2 live objects)") {
		t.Fatalf("fsck after the sweep: ok %v\n%s", ok, out)
	}
	in.start()
	if got := in.searchHits(t, map[string]any{"query": "life"}); !slices.Equal(got, []string{"report://default/again"}) {
		t.Errorf("search for the resource saved again = %v", got)
	}
}
