package index

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Pending is the durable record of the index updates a process may owe:
// the resources whose store write has begun and whose index update has
// not ended. The service adds a resource before it writes the store
// (Begin, on disk when it returns) and ends it after the index update
// that follows the commit (End); a process killed between the two leaves
// the resource here, and the next start brings its entry in line with
// the store (Owed) before it serves, so no acknowledged save, and no save
// committed but never acknowledged, stays out of the index.
//
// The record is a small bbolt file of its own. Begins of concurrent
// writes share one transaction (one writer goroutine takes what is
// queued, as bleveindex's does), and Ends are not synced on their own:
// each is removed in the next Begin's transaction (or Close's), so a
// save costs one shared fsync. A crash may leave resources that were
// indexed already; bringing them in line again changes nothing.
//
// Two writes of one resource in flight are counted: the record stays
// until the last of them has ended.
type Pending struct {
	db *bolt.DB

	mu       sync.Mutex
	inflight map[string]int // resources begun and not ended, by URI
	ended    []string       // ended, not removed from disk yet
	queue    []*begin
	busy     bool
	closed   bool
	writers  sync.WaitGroup
}

// ErrInUse: another process holds the pending record open.
var ErrInUse = errors.New("in use by another process")

type begin struct {
	uri  string
	done chan error
}

var pendingBucket = []byte("pending")

// OpenPending opens (or creates) the record at path; a process holding it
// open is waited for at most wait.
func OpenPending(path string, wait time.Duration) (*Pending, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: wait})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("index: pending updates %s: %w (waited %s; is a server running on this data directory?)", path, ErrInUse, wait)
	}
	if err != nil {
		return nil, fmt.Errorf("index: pending updates %s: %w; remove the file and run resourced fsck before the server starts "+
			"(it finds what a crash left out of the index; resourced reindex repairs it)", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(pendingBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("index: pending updates %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("index: pending updates: %w", err)
	}
	return &Pending{db: db, inflight: map[string]int{}}, nil
}

// Owed returns the resources a previous process began and did not end,
// in URI order.
func (p *Pending) Owed() ([]Ref, error) {
	var refs []Ref
	err := p.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(pendingBucket).ForEach(func(k, _ []byte) error {
			r, ok := ParseURI(string(k))
			if !ok {
				return fmt.Errorf("index: pending updates: %q is not a resource URI", k)
			}
			refs = append(refs, r)
			return nil
		})
	})
	return refs, err
}

// Begin records r as owed, on disk when it returns nil. Every Begin must
// be followed by an End of the same r, whatever the write's outcome.
func (p *Pending) Begin(r Ref) error {
	uri := r.URI()
	b := &begin{uri: uri, done: make(chan error, 1)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.inflight[uri]++
	p.queue = append(p.queue, b)
	if !p.busy {
		p.busy = true
		p.writers.Go(p.writer)
	}
	p.mu.Unlock()
	err := <-b.done
	if err != nil {
		p.End(r)
	}
	return err
}

// End records that the update of r that Begin announced is no longer
// owed: the index follows the store, or the write did not happen. It
// reaches the disk with the next transaction.
func (p *Pending) End(r Ref) {
	uri := r.URI()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch n := p.inflight[uri]; {
	case n > 1:
		p.inflight[uri] = n - 1
	case n == 1:
		delete(p.inflight, uri)
		p.ended = append(p.ended, uri)
	default:
		// Owed by an earlier process and brought in line: only on disk.
		p.ended = append(p.ended, uri)
	}
}

// maxBeginBatch bounds the Begins of one transaction.
const maxBeginBatch = 1000

// writer writes the queued Begins, and the Ends so far, in one
// transaction at a time until the queue is empty.
func (p *Pending) writer() {
	for {
		p.mu.Lock()
		n := min(len(p.queue), maxBeginBatch)
		if n == 0 {
			p.busy = false
			p.mu.Unlock()
			return
		}
		batch := p.queue[:n:n]
		p.queue = p.queue[n:]
		ended := p.removable()
		p.mu.Unlock()
		err := p.db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(pendingBucket)
			if err := deleteURIs(bk, ended); err != nil {
				return err
			}
			for _, b := range batch {
				if err := bk.Put([]byte(b.uri), nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			p.mu.Lock()
			p.ended = append(p.ended, ended...) // removed with a later one
			p.mu.Unlock()
			err = fmt.Errorf("index: recording a pending update: %w", err)
		}
		for _, b := range batch {
			b.done <- err
		}
	}
}

// deleteURIs removes uris from bk, the record's bucket.
func deleteURIs(bk *bolt.Bucket, uris []string) error {
	for _, uri := range uris {
		if err := bk.Delete([]byte(uri)); err != nil {
			return err
		}
	}
	return nil
}

// removable takes the ended resources no write has begun again since;
// p.mu is held.
func (p *Pending) removable() []string {
	out := make([]string, 0, len(p.ended))
	for _, uri := range p.ended {
		if p.inflight[uri] == 0 {
			out = append(out, uri)
		}
	}
	p.ended = p.ended[:0]
	return out
}

// Close removes the ended resources from the disk and closes the file;
// resources still in flight stay owed. Begins after Close fail with
// ErrClosed.
func (p *Pending) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.writers.Wait() // Begins queued before Close are answered
	p.mu.Lock()
	ended := p.removable()
	p.mu.Unlock()
	err := p.db.Update(func(tx *bolt.Tx) error {
		return deleteURIs(tx.Bucket(pendingBucket), ended)
	})
	return errors.Join(err, p.db.Close())
}

// ParseURI is the Ref of scheme://tenant/path, checked as Put checks it.
func ParseURI(u string) (Ref, bool) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return Ref{}, false
	}
	tenant, path, ok := strings.Cut(rest, "/")
	r := Ref{Tenant: tenant, Scheme: scheme, Path: path}
	return r, ok && r.check() == nil
}
