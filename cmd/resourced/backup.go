package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// The admin socket: a Unix socket in the data directory, mode 0600, served
// while the server runs with the bbolt backend. Whoever may open it may
// read the database file anyway, so the file mode is its authentication.
// It serves GET /backup, an online backup from one read transaction, and
// GET /baseurl, the canonical URL, token issuer and audience the running
// server verifies (adminVerifier), which `resourced token` mints for.

const adminSocketName = "resourced.sock"

func adminSocketPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, adminSocketName) }

// backuper is a store that can write an online backup of itself.
type backuper interface {
	Backup(w io.Writer) (int64, error)
}

// adminVerifier is the answer of GET /baseurl.
type adminVerifier struct {
	BaseURL  string `json:"baseURL"`
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
}

// adminServer is a running admin socket. A nil *adminServer (no socket)
// ignores every call.
type adminServer struct {
	hs       *http.Server
	path     string
	verifier atomic.Pointer[adminVerifier]
}

// setVerifier publishes what GET /baseurl answers, once the server knows
// its canonical URL (after it listens: port 0 is chosen then). Until then
// GET /baseurl is 503.
func (a *adminServer) setVerifier(issuer, audience, baseURL string) {
	if a != nil {
		a.verifier.Store(&adminVerifier{BaseURL: baseURL, Issuer: issuer, Audience: audience})
	}
}

func (a *adminServer) stop() {
	if a != nil {
		a.hs.Close()
		os.Remove(a.path)
	}
}

// serveAdmin starts the admin socket when the store supports backups (nil,
// nil when it does not).
func serveAdmin(cfg *config.Config, st store.Backend, log *slog.Logger) (*adminServer, error) {
	b, ok := st.(backuper)
	if !ok {
		return nil, nil
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
	a := &adminServer{path: path}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		sent := &sentWriter{w: w}
		n, err := b.Backup(sent)
		if err != nil {
			log.Error("backup failed", "err", err, "bytes", n)
			if !sent.any {
				http.Error(w, "the backup failed; the server's log says why", http.StatusInternalServerError)
				return
			}
			// Part of it is sent: end the response without its last
			// chunk, so the client sees a cut copy, not a complete one.
			panic(http.ErrAbortHandler)
		}
		log.Info("backup written", "bytes", n)
	})
	mux.HandleFunc("GET /baseurl", func(w http.ResponseWriter, r *http.Request) {
		v := a.verifier.Load()
		if v == nil {
			http.Error(w, "the server is starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	a.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go a.hs.Serve(ln)
	return a, nil
}

// sentWriter passes writes on to w and records whether any byte was
// sent; an empty write is not passed on (it would send the headers).
type sentWriter struct {
	w   io.Writer
	any bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.any = true
	return s.w.Write(p)
}

// adminClient is an HTTP client whose every request goes to the admin
// socket of cfg's data directory.
func adminClient(cfg *config.Config, timeout time.Duration) *http.Client {
	sock := adminSocketPath(cfg)
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// runningVerifier asks the server running on cfg's data directory, if
// any, what it verifies; ok is false when none answers.
func runningVerifier(cfg *config.Config) (v adminVerifier, ok bool) {
	c := adminClient(cfg, 5*time.Second)
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://resourced/baseurl")
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, false
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil || v.BaseURL == "" {
		return adminVerifier{}, false
	}
	return v, true
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
// running server's admin socket, or, when no server runs, from the file. It
// never creates a database: with no server answering and no file at the
// path, it fails. It writes a temporary file next to --out and moves it
// into place only when complete; an existing --out is kept unless --force.
//
// Progress goes to stderr (progress), with --quiet nothing does.
//
//	resourced backup --out FILE [--force] [--quiet] [--config FILE] [--data-dir DIR]
func backup(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backup", "resourced backup --out FILE [--force] [--quiet] [--config FILE] [--data-dir DIR]",
		"Writes a consistent copy of the bbolt database: online through the running server's admin\n"+
			"socket (<dataDir>/resourced.sock), or from the file when no server runs on it.")
	var path, dataDir, out string
	var force, quiet bool
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&dataDir, "data-dir", "", "data directory (default ./data)")
	fs.StringVar(&out, "out", "", "file to write the backup to (required)")
	fs.BoolVar(&force, "force", false, "replace --out if it exists")
	fs.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if out == "" {
		return usageError(errors.New("backup: --out FILE is required"))
	}
	cfg, err := loadFile(path, getenv)
	if err != nil {
		return invalidConfig(err)
	}
	cfg.Apply(config.Overrides{DataDir: dataDir})
	if cfg.Store.Backend != "bbolt" {
		return fmt.Errorf("backup works on the bbolt backend; store.backend is %q (back up the bucket with your S3 tools)", cfg.Store.Backend)
	}
	if err := outsideLiveFiles(cfg, out); err != nil {
		return err
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return usageError(fmt.Errorf("backup: --out %s is a directory; name a file, such as %s", out, filepath.Join(out, "resourced.db")))
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return missingError("backup: there is no directory %s to write --out %s in", filepath.Dir(out), out)
	}
	if !force {
		if _, err := os.Lstat(out); err == nil {
			return usageError(fmt.Errorf("backup: %s exists; pass --force to replace it", out))
		}
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*") // mode 0600
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	// The source is opened before the progress starts: when there is
	// nothing to copy (no server answers and no database is there), the
	// error is the whole message, with no "failed after 0 B" before it.
	src, err := openBackupSource(cfg)
	if err != nil {
		f.Close()
		var e *exitError
		if errors.As(err, &e) {
			return err
		}
		return fmt.Errorf("backup: %w", err)
	}
	defer src.close()
	p := startProgress(stderr, quiet, "backup")
	// The total is the file's size: the copy is at most that (bbolt writes
	// up to its last page in use; the file may hold grown, unused space),
	// so the bar may end short of full, and finish fills it.
	total := int64(-1)
	if fi, err := os.Stat(cfg.BboltPath()); err == nil {
		total = fi.Size()
	}
	p.begin("copying "+cfg.BboltPath(), unitBytes, total)
	n, err := src.copy(p.writer(f))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.finish(false, "failed after", -1, n)
		var e *exitError
		if errors.As(err, &e) {
			return err
		}
		return fmt.Errorf("backup: %w", err)
	}
	if err := place(tmp, out, force); err != nil {
		p.finish(false, "failed after", -1, n)
		return err
	}
	p.finish(true, "wrote", -1, n)
	fmt.Fprintf(stdout, "wrote %d bytes to %s (%s)\n", n, out, src.how)
	return nil
}

// outsideLiveFiles refuses an --out that is, or sits beside, the live
// database: renamed over it (--force), it unlinks the file a running
// server keeps writing to, and every later acknowledged save is lost when
// that server stops. The database's directory (the data directory, unless
// store.bbolt.path moves it) also holds the keys and the index, so a
// backup is never written there; another name of the database (a hard
// link) is refused too.
func outsideLiveFiles(cfg *config.Config, out string) error {
	db := cfg.BboltPath()
	if a, b := realDir(filepath.Dir(out)), realDir(filepath.Dir(db)); a != "" && a == b {
		return usageError(fmt.Errorf("backup: --out %s is in %s, the directory of the live database (and its keys and index); write the backup elsewhere", out, b))
	}
	if cfg.DataDir != "" {
		if a, b := realDir(filepath.Dir(out)), realDir(cfg.DataDir); a != "" && a == b {
			return usageError(fmt.Errorf("backup: --out %s is in the data directory %s (its keys and index); write the backup elsewhere", out, b))
		}
	}
	if fo, err := os.Stat(out); err == nil {
		if fd, err := os.Stat(db); err == nil && os.SameFile(fo, fd) {
			return usageError(fmt.Errorf("backup: --out %s is the live database %s; write the backup elsewhere", out, db))
		}
	}
	return nil
}

// realDir is dir made absolute with its symbolic links resolved, or ""
// when it cannot be resolved (a missing directory: then nothing lives in it).
func realDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ""
	}
	return real
}

// place moves the complete file tmp to out: with force by rename (an
// existing out is replaced), else by a hard link, which fails rather than
// replace a file that appeared at out meanwhile.
func place(tmp, out string, force bool) error {
	if force {
		return os.Rename(tmp, out)
	}
	if err := os.Link(tmp, out); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usageError(fmt.Errorf("backup: %s exists; pass --force to replace it", out))
		}
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// backupSource is where a backup's bytes come from, opened: the running
// server's answer on the admin socket, or the database file.
type backupSource struct {
	how   string                           // said on stdout: online or offline
	copy  func(w io.Writer) (int64, error) // writes the backup to w
	close func()
}

// openBackupSource asks the server running on cfg's data directory for a
// backup, or, when none answers, opens the database file, if there is one
// (opening a missing file would create an empty one).
func openBackupSource(cfg *config.Config) (*backupSource, error) {
	sock := adminSocketPath(cfg)
	resp, err := adminClient(cfg, 0).Get("http://resourced/backup")
	if err == nil {
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("the running server answered %s", resp.Status)
		}
		return &backupSource{
			how: "online, from the running server",
			copy: func(w io.Writer) (int64, error) {
				n, err := io.Copy(w, resp.Body)
				if err != nil {
					err = fmt.Errorf("the copy from the running server was cut off (its log says why): %w", err)
				}
				return n, err
			},
			close: func() { resp.Body.Close() },
		}, nil
	}
	file := cfg.BboltPath()
	if err := requireDatabase(cfg); err != nil {
		return nil, err
	}
	st, oerr := boltstore.Open(file, boltstore.Options{Timeout: time.Second})
	if oerr != nil {
		// err is net/http's, naming a URL the operator never typed: say
		// what it means.
		var why error = err
		var ue *url.Error
		if errors.As(err, &ue) {
			why = ue.Err
		}
		if _, serr := os.Lstat(sock); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("no server is running on %s (there is no admin socket %s), and the file cannot be opened: %w", cfg.DataDir, sock, oerr)
		}
		return nil, fmt.Errorf("no running server answered on %s (%v), and the file cannot be opened: %w", sock, why, oerr)
	}
	return &backupSource{
		how:   "offline, from the file",
		copy:  st.Backup,
		close: func() { st.Close() },
	}, nil
}

// requireDatabase is a missingError when cfg's bbolt file does not exist,
// naming what is missing: the data directory, or the database in it.
func requireDatabase(cfg *config.Config) error {
	file := cfg.BboltPath()
	_, err := os.Stat(file)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there is something there; opening it says what is wrong with it
	}
	dir := filepath.Dir(file)
	if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
		return missingError("there is no directory %s, so no database %s: is --data-dir (or store.bbolt.path) right?", dir, file)
	}
	return missingError("there is no database %s: is --data-dir (or store.bbolt.path) right? A server creates it on its first start", file)
}
