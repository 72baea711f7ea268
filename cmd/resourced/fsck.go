package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// fsckLockWait is how long fsck waits for the database's file lock.
const fsckLockWait = 200 * time.Millisecond

// fsck verifies the bbolt file of a stopped server: bbolt's own
// consistency check, every record's size and sha256 against its body, its
// indexes and usage, and every stored encoded form against its body; then
// the search index against the store (fsckIndex). On the s3 backend there
// is no database file: it checks the search index against the bucket
// (fsckS3). It never creates a database or an index: a path with none is
// an error. Progress goes to stderr (progress), with --quiet nothing does.
//
//	resourced fsck [--quiet] [--config FILE] [--data-dir DIR]
func fsck(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, quiet, err := storeCommand{name: "fsck", synopsis: "resourced fsck [--quiet] [--config FILE] [--data-dir DIR]",
		about: "Checks the bbolt database of a stopped server: bbolt's consistency check, every record's size and\n" +
			"sha256 against its body, its indexes and usage, and each stored JSON form against its body; then the\n" +
			"search index against the store (entries whose object is gone, objects missing from the index).\n" +
			"On the s3 backend, the search index against every object of the bucket's prefix.",
		backends: []string{"bbolt", "s3"}, dataDir: true}.load(args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	if cfg.Store.Backend == "s3" {
		return fsckS3(cfg, quiet, stdout, stderr)
	}
	st, err := openStopped(cfg, "fsck checks a stopped server's database; stop it, or check an online copy: "+
		"resourced backup --out DIR/resourced.db, then resourced fsck --data-dir DIR")
	if err != nil {
		return err
	}
	defer st.Close()
	file := cfg.BboltPath()
	size := int64(-1)
	if fi, err := os.Stat(file); err == nil {
		size = fi.Size()
	}
	p := startProgress(stderr, quiet, "fsck")
	// CheckEncoded reports nothing until it is done: a spinner and the time.
	p.begin("checking "+file, "", -1)
	if err := st.CheckEncoded(func(m *store.Meta, encoded, body []byte) error { return jsonwire.VerifyForm(m.MIMEType, encoded, body) }); err != nil {
		p.finish(false, "found a problem in", -1, size)
		return fmt.Errorf("%s is damaged: %w", file, err)
	}
	fmt.Fprintf(stdout, "%s: consistent\n", file)
	objects, err := fsckIndex(context.Background(), cfg, st, stdout, p)
	if err != nil {
		p.finish(false, "found a problem in", objects, size)
		return err
	}
	p.finish(true, "checked", objects, size)
	return nil
}

// fsckS3 is fsck on the s3 backend: the bucket has no database file (S3
// checks its own objects, and resourced s3 check probes the service), so
// it checks the search index against every object of the prefix, read
// through s3store's Walk. Servers may run meanwhile: a save made during
// the check may show as a difference that a second fsck does not find.
func fsckS3(cfg *config.Config, quiet bool, stdout, stderr io.Writer) error {
	if cfg.IndexBackend() == "off" {
		return errors.New("fsck on the s3 backend checks the search index against the bucket, and index.backend is off: " +
			"there is nothing to check (resourced s3 check probes the S3 service, resourced reconcile recounts usage)")
	}
	ctx := context.Background()
	st, err := openWalked(ctx, cfg, "")
	if err != nil {
		return err
	}
	defer st.Close()
	p := startProgress(stderr, quiet, "fsck")
	objects, err := fsckIndex(ctx, cfg, st, stdout, p)
	if err != nil {
		p.finish(false, "found a problem in", objects, -1)
		return err
	}
	p.finish(true, "checked", objects, -1)
	return nil
}

// storeCommand is what the operator commands on a store (fsck, reindex,
// reconcile) share: the flags --config, --quiet and (dataDir) --data-dir,
// the configuration loaded with the RESOURCED_* environment, and the
// backend they work on.
type storeCommand struct {
	name, synopsis, about string
	// backends are the store.backends the command works on; why, when
	// not "", says why in the refusal of another.
	backends []string
	why      string
	dataDir  bool
	// flags adds the command's own flags; nil: none.
	flags func(*flag.FlagSet)
}

// load parses args and loads the configuration, refusing another backend.
func (c storeCommand) load(args []string, getenv func(string) string, stdout, stderr io.Writer) (cfg *config.Config, quiet bool, err error) {
	fs := newFlagSet(c.name, c.synopsis, c.about)
	var path, dataDir string
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	if c.dataDir {
		fs.StringVar(&dataDir, "data-dir", "", "data directory (default ./data)")
	}
	fs.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	if c.flags != nil {
		c.flags(fs)
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return nil, false, err
	}
	if cfg, err = loadFile(path, getenv); err != nil {
		return nil, false, invalidConfig(err)
	}
	cfg.Apply(config.Overrides{DataDir: dataDir})
	if !slices.Contains(c.backends, cfg.Store.Backend) {
		return nil, false, fmt.Errorf("%s works on the %s backend%s; store.backend is %q", c.name, strings.Join(c.backends, " or "), c.why, cfg.Store.Backend)
	}
	return cfg, quiet, nil
}

// openStopped opens the bbolt file of a stopped server, never creating
// one; advice is what to tell when a server is running on it (its admin
// socket answers).
func openStopped(cfg *config.Config, advice string) (*boltstore.Store, error) {
	file := cfg.BboltPath()
	if err := requireDatabase(cfg); err != nil {
		return nil, err
	}
	// A running server answers on its admin socket: say so at once rather
	// than after waiting for its file lock.
	if c, err := net.DialTimeout("unix", adminSocketPath(cfg), time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a server is running on %s (its admin socket answers): %s", cfg.DataDir, advice)
	}
	// No socket (a server that could not open one): a short wait for the
	// lock, not the server's openTimeout.
	st, err := boltstore.Open(file, boltstore.Options{Timeout: fsckLockWait})
	if errors.Is(err, boltstore.ErrDamaged) {
		// Open's own quick check found it; say what, not "run fsck".
		problem := err
		if u, ok := err.(interface{ Unwrap() []error }); ok && len(u.Unwrap()) == 2 {
			problem = u.Unwrap()[1]
		}
		return nil, fmt.Errorf("%s is damaged: %v; restore it from a backup (README, \"Backup and restore\")", file, problem)
	}
	if err != nil {
		// A lock held by another process says so itself (boltstore);
		// any other error (permission denied, not a file) is not that.
		return nil, err
	}
	return st, nil
}
