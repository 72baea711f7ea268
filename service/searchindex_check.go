package service

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/store"
)

// The index against the store, for resourced fsck and resourced reindex:
// the store is the truth; an index entry whose object is gone (or
// expired) is stale, a live object without an entry is missing, and one
// whose entry holds another version (another sha256) is changed. An
// expired object that is not swept yet is neither: its entry may be there
// or not until the sweep removes both.

// repairWorkers is how many objects CheckIndex indexes at once by
// default: a driver that commits in groups (bleveindex) writes them in
// one batch. MaxRepairWorkers bounds CheckIndexOptions.Workers: each
// holds one document's text (up to index.maxIndexBytes) while it waits.
const (
	repairWorkers    = 16
	MaxRepairWorkers = 1024
)

// putAll indexes keys from st on workers goroutines and returns how many
// it indexed, stopping at the first failure.
func putAll(ctx context.Context, st store.Backend, x *index.Index, keys []store.Key, workers int) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
	)
	for range min(workers, len(keys)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(keys)) {
					return
				}
				if err := syncEntry(ctx, st, x, keys[i]); err != nil {
					cancel(fmt.Errorf("indexing %s: %w", keys[i], err))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return int(done.Load()), context.Cause(ctx)
}

// maxExamples bounds the URIs an IndexReport names of each kind.
const maxExamples = 10

// IndexReport is what CheckIndex found, and what it repaired.
type IndexReport struct {
	// Objects are the live objects of the store, Entries the index's.
	Objects, Entries int
	// Missing, Stale and Changed count each kind of difference; the
	// Examples name the first few URIs of each.
	Missing, Stale, Changed                         int
	MissingExamples, StaleExamples, ChangedExamples []string
	// Indexed and Removed count the entries put and deleted.
	Indexed, Removed int
}

// Consistent reports whether the index holds exactly the live objects.
func (r *IndexReport) Consistent() bool { return r.Missing+r.Stale+r.Changed == 0 }

// CheckIndexOptions say what CheckIndex does about what it finds.
type CheckIndexOptions struct {
	// Repair puts the missing and changed objects and removes the stale
	// entries; Rebuild also puts every other live object again (reindex:
	// after a change of index.maxIndexBytes, or of the extraction).
	Repair, Rebuild bool
	// Now decides expiry; zero: time.Now.
	Now time.Time
	// Workers is how many objects are indexed at once (0: 16, at most
	// MaxRepairWorkers): more makes larger bleve batches, and holds more
	// documents in memory.
	Workers int
}

// CheckIndex compares x with the objects walk reports of st (every stored
// object, expired or not, as boltstore's Walk does) and, as o says,
// repairs x from st. Each object put is read again from st
// (syncEntry), so a walk's metadata never reaches the index alone; st's
// View is called from several goroutines at once.
func CheckIndex(ctx context.Context, st store.Backend, x *index.Index, walk func(ctx context.Context, fn func(m *store.Meta) error) error, o CheckIndexOptions) (*IndexReport, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	entries := map[index.Ref]string{}
	if err := x.Walk(ctx, func(e index.Entry) error {
		entries[e.Ref] = e.SHA256
		return nil
	}); err != nil {
		return nil, err
	}
	rep := &IndexReport{Entries: len(entries)}
	note := func(n *int, ex *[]string, uri string) {
		*n++
		if len(*ex) < maxExamples {
			*ex = append(*ex, uri)
		}
	}
	var put []store.Key
	err := walk(ctx, func(m *store.Meta) error {
		ref := refOf(m.Key)
		sha, ok := entries[ref]
		delete(entries, ref)
		if !m.Expires.IsZero() && !m.Expires.After(now) {
			// Expired, not swept yet: searches hide it, and the sweep
			// removes the object and its entry alike.
			return nil
		}
		rep.Objects++
		switch {
		case !ok:
			note(&rep.Missing, &rep.MissingExamples, m.Key.String())
		case sha != m.SHA256:
			note(&rep.Changed, &rep.ChangedExamples, m.Key.String())
		case !o.Rebuild:
			return nil
		}
		if o.Repair || o.Rebuild {
			put = append(put, m.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for ref := range entries {
		note(&rep.Stale, &rep.StaleExamples, ref.URI())
	}
	if !o.Repair && !o.Rebuild {
		return rep, nil
	}
	workers := o.Workers
	if workers <= 0 {
		workers = repairWorkers
	}
	n, err := putAll(ctx, st, x, put, min(workers, MaxRepairWorkers))
	rep.Indexed = n
	if err != nil {
		return rep, err
	}
	for ref := range entries {
		if err := x.Delete(ctx, ref); err != nil {
			return rep, fmt.Errorf("removing %s: %w", ref.URI(), err)
		}
		rep.Removed++
	}
	return rep, nil
}
