package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// lockedBuffer is a bytes.Buffer safe for the progressbar's spinner
// goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// signalWriter is a buffer that signals each write, so that a test sees
// a tick's line written before it moves on.
type signalWriter struct {
	lockedBuffer
	wrote chan struct{}
}

func (s *signalWriter) Write(p []byte) (int, error) {
	n, err := s.lockedBuffer.Write(p)
	s.wrote <- struct{}{}
	return n, err
}

// manualTicker makes progress's plain lines come when the test sends on
// the returned channel.
func manualTicker(t *testing.T) chan time.Time {
	t.Helper()
	tick := make(chan time.Time)
	old := progressTicker
	progressTicker = func() (<-chan time.Time, func()) { return tick, func() {} }
	t.Cleanup(func() { progressTicker = old })
	return tick
}

// TestProgressPlainLines: when stderr is not a terminal, each tick writes
// one plain line of the current step (count, total and percentage when
// known, rate, time), and finish one summary line, nothing else.
func TestProgressPlainLines(t *testing.T) {
	tick := manualTicker(t)
	w := &signalWriter{wrote: make(chan struct{}, 1)}
	p := startProgress(w, false, "backup")
	p.begin("copying", unitBytes, 2048)
	if _, err := p.writer(io.Discard).Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	tick <- time.Now()
	<-w.wrote
	p.begin("indexing", unitObjects, -1)
	p.add(3)
	tick <- time.Now()
	<-w.wrote
	p.begin("checking", "", -1)
	tick <- time.Now()
	<-w.wrote
	p.begin("removing", unitObjects, 0)
	tick <- time.Now()
	<-w.wrote
	p.finish(true, "wrote", 3, 1024)

	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^backup: copying: 1\.0 KiB of 2\.0 KiB \(50%\), [0-9.]+ [KMG]?i?B/s, 0s$`),
		regexp.MustCompile(`^backup: indexing: 3 objects, [0-9]+ objects/s, 0s$`),
		regexp.MustCompile(`^backup: checking: running, 0s$`),
		regexp.MustCompile(`^backup: removing: 0 of 0 objects, 0 objects/s, 0s$`),
		regexp.MustCompile(`^backup: wrote 3 objects, 1\.0 KiB in [0-9.]+[µnm]?s$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("progress wrote %d lines, want %d:\n%s", len(lines), len(want), w.String())
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d = %q, want it to match %s", i, lines[i], re)
		}
	}
}

// TestProgressQuiet: --quiet (a nil *progress) writes nothing, and its
// writer is the one it was given.
func TestProgressQuiet(t *testing.T) {
	manualTicker(t)
	var w bytes.Buffer
	p := startProgress(&w, true, "fsck")
	p.begin("checking", unitObjects, 10)
	p.add(5)
	var out bytes.Buffer
	if got := p.writer(&out); got != io.Writer(&out) {
		t.Errorf("quiet writer = %T, want the writer given", got)
	}
	p.finish(true, "checked", 5, -1)
	if w.Len() != 0 {
		t.Errorf("quiet progress wrote %q", w.String())
	}
}

// TestProgressTerminal: on a terminal, the progressbar draws the step
// with its count against the total, and finish ends it with the summary
// line.
func TestProgressTerminal(t *testing.T) {
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	defer func() { isTerminal = old }()
	var w lockedBuffer
	p := startProgress(&w, false, "reindex")
	p.begin("indexing", unitObjects, 4)
	for range 4 {
		p.add(1)
	}
	p.begin("removing", unitObjects, 0) // nothing to do: no error from the library, no division by 0
	p.finish(true, "indexed", 4, -1)
	out := w.String()
	for _, want := range []string{"reindex: indexing", "100%", "(4/4, ", "objects/s", "\nreindex: indexed 4 objects in "} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal progress lacks %q:\n%q", want, out)
		}
	}
}

// TestOperatorCommandsProgress: backup, reindex and fsck, with stderr
// not a terminal, end with a summary line on stderr, print on stdout what
// they print with --quiet (which writes nothing on stderr), and nothing
// else.
func TestOperatorCommandsProgress(t *testing.T) {
	manualTicker(t) // no plain line but the summary: the commands are quick
	dir := boltWithObjects(t, 3)
	out := t.TempDir()
	for _, c := range []struct {
		args    []string
		summary string // the summary line, a regexp
	}{
		{[]string{"reindex", "--data-dir", dir}, `^reindex: indexed 3 objects in [0-9.]+[µnm]?s\n$`},
		{[]string{"fsck", "--data-dir", dir}, `^fsck: checked 3 objects, [0-9.]+ [KM]iB in [0-9.]+[µnm]?s\n$`},
		{[]string{"backup", "--data-dir", dir, "--out", filepath.Join(out, "b.db")}, `^backup: wrote [0-9.]+ [KM]iB in [0-9.]+[µnm]?s\n$`},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			code, stdout, stderr := runCmd(t, c.args...)
			if code != 0 || !regexp.MustCompile(c.summary).MatchString(stderr) {
				t.Errorf("%v: exit %d, stderr %q; want 0 and a summary matching %s", c.args, code, stderr, c.summary)
			}
			args := append(c.args, "--quiet")
			if c.args[0] == "backup" {
				args = append(args, "--force")
			}
			qcode, qstdout, qstderr := runCmd(t, args...)
			if qcode != 0 || qstderr != "" {
				t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, qcode, qstderr)
			}
			if stdout == "" || stdout != qstdout {
				t.Errorf("stdout with progress %q, with --quiet %q; want the same, not empty", stdout, qstdout)
			}
		})
	}
}

// TestReconcileProgress: reconcile, with stderr not a terminal, ends with
// a summary line of tenants, objects and bytes on stderr and prints on
// stdout what it prints with --quiet. It needs the S3-compatible server
// of scripts/versitygw.sh (integration.s3Target's variables), or skips.
func TestReconcileProgress(t *testing.T) {
	endpoint, bucket := os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if endpoint == "" || bucket == "" {
		t.Skip(`needs an S3-compatible server: eval "$(scripts/versitygw.sh start)" in the repository root, then rerun`)
	}
	manualTicker(t)
	cfg := filepath.Join(t.TempDir(), "s3.yaml")
	yaml := fmt.Sprintf("store:\n  backend: s3\n  s3: {bucket: %s, prefix: progress-%d, endpoint: %q, pathStyle: true, region: us-east-1, callTimeout: 3s}\n",
		bucket, time.Now().UnixNano(), endpoint)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "reconcile", "--config", cfg, "--tenant", "alice")
	if want := regexp.MustCompile(`^reconcile: recounted 1 of 1 tenants: 0 objects, 0 B in [0-9.]+[µnm]?s\n$`); code != 0 || !want.MatchString(stderr) {
		t.Errorf("reconcile: exit %d, stderr %q; want 0 and a summary matching %s", code, stderr, want)
	}
	qcode, qstdout, qstderr := runCmd(t, "reconcile", "--config", cfg, "--tenant", "alice", "--quiet")
	if qcode != 0 || qstderr != "" || stdout != qstdout || stdout == "" {
		t.Errorf("reconcile --quiet: exit %d, stderr %q, stdout %q; want 0, nothing, and stdout %q", qcode, qstderr, qstdout, stdout)
	}
}

// TestReindexProgressOnTerminal: with stderr a terminal (a pseudo-terminal
// here), reindex draws the progressbar, redrawn in place, to its end and
// then the summary line; stdout is what it prints when piped.
func TestReindexProgressOnTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once tty is closed
		read <- string(b)
	}()
	dir := boltWithObjects(t, 3)
	var stdout bytes.Buffer
	runErr := run(context.Background(), []string{"reindex", "--data-dir", dir}, noEnv, &stdout, tty)
	tty.Close()
	out := <-read
	if runErr != nil {
		t.Fatalf("reindex on a terminal: %v\n%s", runErr, out)
	}
	for _, want := range []string{"\rreindex: indexing", "100%", "(3/3, ", "reindex: indexed 3 objects in "} {
		if !strings.Contains(out, want) {
			t.Errorf("reindex's terminal output lacks %q:\n%q", want, out)
		}
	}
	if want := "indexed 3 objects, removed 0 stale entries\n"; !strings.HasSuffix(stdout.String(), want) {
		t.Errorf("reindex's stdout = %q, want it to end %q", stdout.String(), want)
	}
}

// boltWithObjects is a data directory whose bbolt database holds n
// objects (and no search index).
func boltWithObjects(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		obj := &store.Object{Meta: store.Meta{Key: store.MustKey("alice", "notes", fmt.Sprintf("n%d", i)), MIMEType: "text/plain", Listed: true}, Body: []byte("hello")}
		if _, _, err := st.Put(context.Background(), obj, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
