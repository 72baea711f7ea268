package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store/boltstore"
)

// reindex rebuilds the search index of a stopped server from its bbolt
// store: every live object is read and indexed again, and every entry
// whose object is gone is removed. A missing bleve directory is created.
//
//	resourced reindex [--config FILE] [--data-dir DIR]
func reindex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reindex", "resourced reindex [--config FILE] [--data-dir DIR]",
		"Rebuilds the search index (index.backend) of a stopped server from its bbolt database: indexes every\n"+
			"live object again and removes the entries of objects that are gone. Safe to run again.")
	var path, dataDir string
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&dataDir, "data-dir", "", "data directory (default ./data)")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg, err := loadFile(path, getenv)
	if err != nil {
		return err
	}
	cfg.Apply(config.Overrides{DataDir: dataDir})
	if cfg.Store.Backend != "bbolt" {
		return fmt.Errorf("reindex works on the bbolt backend; store.backend is %q", cfg.Store.Backend)
	}
	if cfg.IndexBackend() == "off" {
		return errors.New("index.backend is off: there is no search index to rebuild")
	}
	st, err := openStopped(cfg, "reindex rebuilds the search index of a stopped server; stop it first")
	if err != nil {
		return err
	}
	defer st.Close()
	x, err := openIndex(ctx, cfg)
	if err != nil {
		return fmt.Errorf("opening the %s search index: %w", cfg.IndexBackend(), err)
	}
	defer x.Close()
	r, err := service.CheckIndex(ctx, st, x, st.Walk, service.CheckIndexOptions{Rebuild: true})
	if r != nil {
		fmt.Fprintf(stdout, "%s: indexed %d objects, removed %d stale entries\n", indexName(cfg), r.Indexed, r.Removed)
	}
	if err != nil {
		return fmt.Errorf("reindex stopped: %w (run it again: it starts over and is safe to repeat)", err)
	}
	return nil
}

// fsckIndex checks the search index against the store st: entries whose
// object is gone, objects missing from the index, and entries of another
// version. Any difference is an error that says to run resourced reindex.
// It never creates an index: a missing bleve directory is reported and
// not checked (a copy made with resourced backup has none).
func fsckIndex(ctx context.Context, cfg *config.Config, st *boltstore.Store, stdout io.Writer) error {
	if cfg.IndexBackend() == "off" {
		return nil
	}
	name := indexName(cfg)
	if cfg.IndexBackend() == "bleve" {
		if _, err := os.Stat(cfg.IndexPath()); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stdout, "%s: none, not checked (a backup copy has none); in a server's data directory, "+
				"run resourced reindex before it starts, or nothing stored so far is found by search\n", name)
			return nil
		}
	}
	x, err := openIndex(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w; remove it and run resourced reindex", name, err)
	}
	defer x.Close()
	r, err := service.CheckIndex(ctx, st, x, st.Walk, service.CheckIndexOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if r.Consistent() {
		fmt.Fprintf(stdout, "%s: consistent (%d entries for %d live objects)\n", name, r.Entries, r.Objects)
		return nil
	}
	var found []string
	for _, k := range []struct {
		n        int
		what     string
		examples []string
	}{
		{r.Missing, "objects missing from the index", r.MissingExamples},
		{r.Stale, "entries whose object is gone", r.StaleExamples},
		{r.Changed, "entries of another version of their object", r.ChangedExamples},
	} {
		if k.n > 0 {
			found = append(found, fmt.Sprintf("%d %s (%s)", k.n, k.what, strings.Join(k.examples, ", ")))
		}
	}
	return fmt.Errorf("%s differs from the store: %s; run resourced reindex to repair it", name, strings.Join(found, "; "))
}

// indexName names the index of cfg for messages.
func indexName(cfg *config.Config) string {
	switch b := cfg.IndexBackend(); b {
	case "bleve":
		return "search index " + cfg.IndexPath()
	case "postgres":
		return "search index (postgres table " + cfg.Index.Postgres.Table + ")"
	default:
		return "search index (" + b + ")"
	}
}
