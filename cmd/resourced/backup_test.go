package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

// TestAdminSocketPrivateFromTheStart: the admin socket has mode 0600 the
// moment it is at its path, whatever the umask (here the usual 022, in a
// data directory others may enter), and it serves from there; nothing else
// is left in the data directory. (With a chmod after Listen, the hook saw
// mode 0755.)
func TestAdminSocketPrivateFromTheStart(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var seen os.FileMode
	var statErr error
	adminListened = func(path string) {
		var fi os.FileInfo
		if fi, statErr = os.Lstat(path); statErr == nil {
			seen = fi.Mode()
		}
	}
	defer func() { adminListened = nil }()
	cfg := &config.Config{DataDir: dir}
	admin, err := serveAdmin(cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("serveAdmin = %v", err)
	}
	if statErr != nil {
		t.Fatalf("admin socket right after it was made: %v", statErr)
	}
	if seen&os.ModeSocket == 0 || seen.Perm() != 0o600 {
		t.Errorf("admin socket right after it was made: mode %v, want a socket of mode 0600", seen)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != adminSocketName {
		t.Errorf("data directory holds %v, want only %s", entries, adminSocketName)
	}

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", adminSocketPath(cfg))
	}}}
	resp, err := client.Get("http://resourced/backup")
	if err != nil {
		t.Fatalf("GET /backup over the socket: %v", err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n == 0 {
		t.Errorf("GET /backup: %s, %d bytes", resp.Status, n)
	}
	client.CloseIdleConnections()

	admin.stop()
	if _, err := os.Lstat(adminSocketPath(cfg)); !os.IsNotExist(err) {
		t.Errorf("admin socket after stop: %v, want it removed", err)
	}
}

// failingBackup is a bbolt store whose backup fails after writing part of
// the copy, as a read error in the middle of the file would.
type failingBackup struct {
	*boltstore.Store
	written int
}

func (f failingBackup) Backup(w io.Writer) (int64, error) {
	n, err := w.Write(make([]byte, f.written))
	if err != nil {
		return int64(n), err
	}
	return int64(n), errors.New("read error")
}

// TestBackupOnlineFailureIsNotSuccess: when the running server's backup
// fails after it has sent part of the copy, resourced backup fails and
// leaves no --out; before the fix the server ended the response as if it
// were complete, and backup reported "wrote N bytes" of a cut copy with
// exit 0. A failure before any byte is sent is an error too.
func TestBackupOnlineFailureIsNotSuccess(t *testing.T) {
	for _, written := range []int{0, 256 << 10} {
		dir := t.TempDir()
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "resourced.db"), boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{DataDir: dir}
		admin, err := serveAdmin(cfg, failingBackup{st, written}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "b.db")
		code, stdout, stderr := runCmd(t, "backup", "--quiet", "--data-dir", dir, "--out", out)
		if code != 1 || stdout != "" {
			t.Errorf("backup of a server whose backup fails after %d bytes: exit %d, stdout %q, stderr %q; want 1 and nothing on stdout", written, code, stdout, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("after %d bytes: --out %s is there (%v), want none", written, out, err)
		}
		admin.stop()
		st.Close()
	}
}

// TestBackupOutNotAFile: an --out that is a directory, or in a directory
// that does not exist, is exit 2 naming --out and what is wrong, with or
// without --force. A directory was said to exist "pass --force to replace
// it", and --force then failed renaming the temporary file onto it; a
// missing directory was reported as the temporary file's name.
func TestBackupOutNotAFile(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	other := t.TempDir()
	for _, c := range []struct{ out, want string }{
		{other, "is a directory"},
		{filepath.Join(other, "nodir", "b.db"), "there is no directory " + filepath.Join(other, "nodir")},
	} {
		for _, force := range []bool{false, true} {
			args := []string{"backup", "--quiet", "--data-dir", dir, "--out", c.out}
			if force {
				args = append(args, "--force")
			}
			code, stdout, stderr := runCmd(t, args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Contains(stderr, ".partial") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, stdout, stderr, c.want)
			}
		}
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("%s holds %v, want nothing", other, ents)
	}
}

// TestBackupLockedFileNoGoRequestText: a backup of a database another
// process holds, with no server's admin socket, says that no server runs
// and that the file is held, without net/http's request text
// (`Get "http://resourced/backup": dial unix ...`, a URL the operator
// never typed).
func TestBackupLockedFileNoGoRequestText(t *testing.T) {
	dir := t.TempDir()
	b, err := bolt.Open(filepath.Join(dir, "resourced.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := filepath.Join(t.TempDir(), "b.db")
	code, stdout, stderr := runCmd(t, "backup", "--quiet", "--data-dir", dir, "--out", out)
	if code != 1 || stdout != "" || strings.Contains(stderr, "http://") ||
		!strings.Contains(stderr, "no server is running on "+dir) || !strings.Contains(stderr, "another process holds the database") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, no server running and the lock named, no request text", code, stdout, stderr)
	}
}
