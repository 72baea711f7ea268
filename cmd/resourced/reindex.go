package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/index/bleveindex"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

// reindex rebuilds the search index from the store: every live object is
// read and indexed again, and every entry whose object is gone is removed.
// A missing bleve directory is created. On bbolt the server must be
// stopped (the file is its); on s3 every object of the prefix is walked
// (s3store's Walk), and servers sharing a postgres index may run
// meanwhile, while a bleve index is one stopped server's. Progress goes
// to stderr (progress), with --quiet nothing does.
//
//	resourced reindex [--quiet] [--config FILE] [--data-dir DIR]
func reindex(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var workers int
	cfg, quiet, err := storeCommand{name: "reindex", synopsis: "resourced reindex [--quiet] [--workers N] [--config FILE] [--data-dir DIR]",
		about: "Rebuilds the search index (index.backend) from the store: a stopped server's bbolt database, or every\n" +
			"object of the s3 bucket's prefix. Indexes every live object again and removes the entries of objects\n" +
			"that are gone. Safe to run again.",
		backends: []string{"bbolt", "s3"}, dataDir: true,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&workers, "workers", 16, fmt.Sprintf("objects indexed at once (1 to %d): more makes larger bleve batches and a faster rebuild, "+
				"and holds up to that many documents' text in memory", service.MaxRepairWorkers))
		}}.load(args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	if workers < 1 || workers > service.MaxRepairWorkers {
		return usageError(fmt.Errorf("--workers %d: want 1 to %d", workers, service.MaxRepairWorkers))
	}
	if cfg.IndexBackend() == "off" {
		return errors.New("index.backend is off: there is no search index to rebuild")
	}
	st, err := openWalked(ctx, cfg, "reindex rebuilds the search index of a stopped server; stop it first")
	if err != nil {
		return err
	}
	defer st.Close()
	x, err := openCommandIndex(ctx, cfg)
	if err != nil {
		return indexOpenError(cfg, err)
	}
	defer x.Close()
	// CheckIndex walks the store before it indexes anything, so its walk is
	// the count up front, at no extra cost: a count while it scans, then a
	// bar against that count while it indexes (an upper bound: expired
	// objects not swept yet are walked but not indexed).
	p := startProgress(stderr, quiet, "reindex")
	p.begin("scanning the store", unitObjects, -1)
	var walked int64
	r, err := service.CheckIndex(ctx, &indexingProgress{Backend: st, walked: &walked, p: p}, x, countWalk(st.Walk, &walked, p), service.CheckIndexOptions{Rebuild: true, Workers: workers})
	if r != nil {
		fmt.Fprintf(stdout, "%s: indexed %d objects, removed %d stale entries\n", indexName(cfg), r.Indexed, r.Removed)
	}
	if err != nil {
		var indexed int64
		if r != nil {
			indexed = int64(r.Indexed)
		}
		p.finish(false, "stopped after indexing", indexed, -1)
		return fmt.Errorf("reindex stopped: %w (run it again: it starts over and is safe to repeat)", err)
	}
	p.finish(true, "indexed", int64(r.Indexed), -1)
	return nil
}

// indexingProgress is the store CheckIndex reads each object from before
// it indexes it (View, once an object): the first read starts the
// "indexing" step against the objects walked, and each read counts one.
type indexingProgress struct {
	store.Backend
	walked  *int64
	p       *progress
	mu      sync.Mutex // CheckIndex reads from several goroutines
	started bool
}

func (s *indexingProgress) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	s.mu.Lock()
	if !s.started {
		s.started = true
		s.p.begin("indexing", unitObjects, *s.walked)
	}
	s.mu.Unlock()
	err := s.Backend.View(ctx, k, fn)
	s.mu.Lock()
	s.p.add(1)
	s.mu.Unlock()
	return err
}

// fsckIndex checks the search index against the store st: entries whose
// object is gone, objects missing from the index, and entries of another
// version. Any difference is an error that says to run resourced reindex.
// It never creates an index: a missing bleve directory is reported and
// not checked (a copy made with resourced backup has none). objects is the
// number of stored objects it walked, -1 when it did not check.
func fsckIndex(ctx context.Context, cfg *config.Config, st walkStore, stdout io.Writer, p *progress) (objects int64, _ error) {
	objects = -1
	if cfg.IndexBackend() == "off" {
		return objects, nil
	}
	name := indexName(cfg)
	if cfg.IndexBackend() == "bleve" {
		if _, err := os.Stat(cfg.IndexPath()); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stdout, "%s: none, not checked (a backup copy has none); in a server's data directory, "+
				"run resourced reindex before it starts, or nothing stored so far is found by search\n", name)
			return objects, nil
		}
	}
	x, err := openCommandIndex(ctx, cfg)
	if errors.Is(err, bleveindex.ErrInUse) {
		return objects, fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return objects, fmt.Errorf("%s: %w; remove it and run resourced reindex", name, err)
	}
	defer x.Close()
	// The walk is the whole of this check, so counting first would double
	// it: a count and a rate, no percentage.
	p.begin("checking "+name, unitObjects, -1)
	var walked int64
	r, err := service.CheckIndex(ctx, st, x, countWalk(st.Walk, &walked, p), service.CheckIndexOptions{})
	objects = walked
	if err != nil {
		return objects, fmt.Errorf("%s: %w", name, err)
	}
	if r.Consistent() {
		fmt.Fprintf(stdout, "%s: consistent (%d entries for %d live objects)\n", name, r.Entries, r.Objects)
		return objects, nil
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
	return objects, fmt.Errorf("%s differs from the store: %s; run resourced reindex to repair it", name, strings.Join(found, "; "))
}

// walkStore is a store whose every object fsck and reindex can walk:
// boltstore's and s3store's.
type walkStore interface {
	store.Backend
	Walk(ctx context.Context, fn func(m *store.Meta) error) error
}

// openWalked opens the store of cfg for reindex and fsck's index check:
// a stopped server's bbolt file (openStopped, advice says what to do
// about a running one), or the S3 bucket, which running servers share.
func openWalked(ctx context.Context, cfg *config.Config, advice string) (walkStore, error) {
	if cfg.Store.Backend != "s3" {
		return openStopped(cfg, advice)
	}
	client, err := newS3Client(ctx, s3Client(cfg))
	if err != nil {
		return nil, config.Under("store.s3", err)
	}
	st, err := s3store.Open(client, s3Options(cfg))
	if err != nil {
		return nil, err
	}
	if err := st.Ping(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// countWalk is walk, counting each object it reports in *n and as done in p.
func countWalk(walk func(context.Context, func(*store.Meta) error) error, n *int64, p *progress) func(context.Context, func(*store.Meta) error) error {
	return func(ctx context.Context, fn func(*store.Meta) error) error {
		return walk(ctx, func(m *store.Meta) error {
			*n++
			p.add(1)
			return fn(m)
		})
	}
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
