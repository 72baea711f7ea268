package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// The admin socket: a Unix socket in the data directory, mode 0600, served
// while the server runs with the bbolt backend. Whoever may open it may
// read the database file anyway, so the file mode is its authentication.
// It serves GET /backup: an online backup from one read transaction.

const adminSocketName = "resourced.sock"

func adminSocketPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, adminSocketName) }

// backuper is a store that can write an online backup of itself.
type backuper interface {
	Backup(w io.Writer) (int64, error)
}

// serveAdmin starts the admin socket when the store supports backups; the
// returned func stops it.
func serveAdmin(cfg *config.Config, st store.Backend, log *slog.Logger) (func(), error) {
	b, ok := st.(backuper)
	if !ok {
		return func() {}, nil
	}
	path := adminSocketPath(cfg)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another server is serving %s", path)
	}
	_ = os.Remove(path) // a stale socket of a process that died
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if adminListened != nil {
		adminListened(path)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		n, err := b.Backup(w)
		if err != nil {
			log.Error("backup failed", "err", err, "bytes", n)
			return
		}
		log.Info("backup written", "bytes", n)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return func() { hs.Close(); os.Remove(path) }, nil
}

// adminListened, when set (by tests), is called as soon as the admin
// socket is at its path.
var adminListened func(path string)

// listenPrivate listens on a Unix socket at path whose mode is 0600 from
// the moment it appears there. It binds in a fresh directory of mode 0700
// next to path, sets the socket's mode inside it, and renames the socket
// into place: no process-wide umask change (which would race with every
// other file the process creates), and no window in which a socket at path
// is open to the group or others, as a chmod after Listen had. The
// temporary name is no longer than path's, so it fits wherever path does.
func listenPrivate(path string) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".a") // mode 0700
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	// The socket file moves: closing must not unlink the old name (stop
	// removes path).
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// backup writes an online backup of the bbolt file to --out: through the
// running server's admin socket, or, when no server runs, from the file.
//
//	resourced backup --out FILE [--config FILE] [--data-dir DIR]
func backup(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var path, dataDir, out string
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&dataDir, "data-dir", "", "data directory (default ./data)")
	fs.StringVar(&out, "out", "", "file to write the backup to (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if out == "" {
		return errors.New("--out FILE is required")
	}
	cfg, err := loadFile(path, getenv)
	if err != nil {
		return err
	}
	cfg.Apply(config.Overrides{DataDir: dataDir})
	if cfg.Store.Backend != "bbolt" {
		return fmt.Errorf("backup works on the bbolt backend; store.backend is %q (back up the bucket with your S3 tools)", cfg.Store.Backend)
	}
	tmp := out + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	n, how, err := writeBackup(cfg, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d bytes to %s (%s)\n", n, out, how)
	return nil
}

func writeBackup(cfg *config.Config, w io.Writer) (int64, string, error) {
	sock := adminSocketPath(cfg)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Get("http://resourced/backup")
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, "", fmt.Errorf("the running server answered %s", resp.Status)
		}
		n, err := io.Copy(w, resp.Body)
		return n, "online, from the running server", err
	}
	// No server runs on this data directory: read the file itself.
	st, oerr := boltstore.Open(cfg.BboltPath(), boltstore.Options{Timeout: time.Second})
	if oerr != nil {
		return 0, "", fmt.Errorf("no running server answered on %s (%v), and the file cannot be opened: %w", sock, err, oerr)
	}
	defer st.Close()
	n, err := st.Backup(w)
	return n, "offline, from the file", err
}
