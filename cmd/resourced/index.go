package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/bleveindex"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/index/pgindex"
)

// commandIndexWait is how long fsck and reindex wait for a bleve index
// another process holds open before they say a server is running.
const commandIndexWait = time.Second

// pendingWait is how long a server waits for the pending record another
// process holds (a second server on the same data directory).
const pendingWait = 10 * time.Second

// openIndex is the one place that knows every index backend; nil when
// index.backend is off. The server's bleve and postgres indexes come with
// their pending record, <dataDir>/index-pending.db (index.Pending): the
// updates a killed process owed are brought in line when the service
// starts.
func openIndex(ctx context.Context, cfg *config.Config) (*index.Index, error) {
	var pending *index.Pending
	if b := cfg.IndexBackend(); b == "bleve" || b == "postgres" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, err
		}
		p, err := index.OpenPending(pendingPath(cfg), pendingWait)
		if err != nil {
			return nil, err
		}
		pending = p
	}
	x, err := openIndexWait(ctx, cfg, 0, pending)
	if err != nil && pending != nil {
		pending.Close()
	}
	return x, err
}

// pendingPath is where the server keeps its index's pending record.
func pendingPath(cfg *config.Config) string {
	return filepath.Join(cfg.DataDir, "index-pending.db")
}

// openCommandIndex is openIndex for fsck and reindex: a bleve index a
// running server holds is reported (bleveindex.ErrInUse, saying to stop
// it), not waited for.
func openCommandIndex(ctx context.Context, cfg *config.Config) (*index.Index, error) {
	x, err := openIndexWait(ctx, cfg, commandIndexWait, nil)
	if errors.Is(err, bleveindex.ErrInUse) {
		return nil, fmt.Errorf("%w: a server is running with this index; stop it first", err)
	}
	return x, err
}

// indexOpenError is err of a search index that did not open, saying what
// to do about a bleve index that is there but does not open (damaged, as
// by a crash while it was first created): reindex rebuilds it from the
// store once it is gone.
func indexOpenError(cfg *config.Config, err error) error {
	if cfg.IndexBackend() == "bleve" && !errors.Is(err, bleveindex.ErrInUse) {
		return fmt.Errorf("opening the bleve search index: %w; if it is damaged, remove %s and run resourced reindex, which rebuilds it from the store", err, cfg.IndexPath())
	}
	return fmt.Errorf("opening the %s search index: %w", cfg.IndexBackend(), err)
}

// openIndexWait is openIndex waiting at most lockWait (0: as long as it
// takes) for a bleve index another process holds.
func openIndexWait(ctx context.Context, cfg *config.Config, lockWait time.Duration, pending *index.Pending) (*index.Index, error) {
	opts := index.Options{MaxTextBytes: cfg.MaxIndexBytes(), Pending: pending}
	switch b := cfg.IndexBackend(); b {
	case "off":
		return nil, nil
	case "memory":
		return index.New(memindex.New(), opts), nil
	case "bleve":
		d, err := bleveindex.OpenWait(cfg.IndexPath(), lockWait)
		if err != nil {
			return nil, err
		}
		return index.New(d, opts), nil
	case "postgres":
		url := os.Getenv("RESOURCED_INDEX_POSTGRES_URL")
		if url == "" {
			b, err := os.ReadFile(cfg.Index.Postgres.URLFile)
			if err != nil {
				return nil, fmt.Errorf("index.postgres.urlFile: %w", err)
			}
			url = strings.TrimSpace(string(b))
		}
		d, err := pgindex.Open(ctx, pgindex.Options{URL: url, Table: cfg.Index.Postgres.Table})
		if err != nil {
			return nil, err
		}
		opts.Shared = true
		return index.New(d, opts), nil
	default:
		return nil, fmt.Errorf("index.backend: unknown backend %q", b)
	}
}

// indexNote is what /readyz says of the index: on S3, whose store several
// instances share, a local index (bleve, memory) is this instance's only.
func indexNote(cfg *config.Config) string {
	if b := cfg.IndexBackend(); cfg.Store.Backend == "s3" && (b == "bleve" || b == "memory") {
		return "search index: " + b + " is local to this instance; other instances of this S3 store neither see " +
			"its entries nor update it (use index.backend: postgres to share one)"
	}
	return ""
}
