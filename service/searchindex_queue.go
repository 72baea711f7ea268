package service

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/store"
)

// Bounds of the background indexer (issue 27).
const (
	// maxOwed bounds the keys whose index update is queued: past it a
	// save waits for the indexer to take some (back-pressure), so memory
	// holds at most maxOwed queued keys and one batch in flight.
	maxOwed = 10000
	// indexBatch and indexBatchBytes bound one batch of the indexer: the
	// keys it takes, and the text it reads from the store for them (the
	// bleve driver cuts a batch by the same bounds).
	indexBatch, indexBatchBytes = 1000, 4 << 20
	// readWorkers is how many store reads of a batch run at once.
	readWorkers = 16
	// batchTimeout bounds the index write of one batch.
	batchTimeout = time.Minute
)

// owedKey is a key whose index update is owed: first is the sequence
// number of the oldest change not yet in the index, ends how many
// intends (index.Pending) its update ends.
type owedKey struct {
	k     store.Key
	first uint64
	ends  int
}

// indexed is called after a committed change of k (and its intend): k
// is queued for the background indexer (indexLoop), coalesced with a
// queued update of k, and the caller's answer goes out without waiting
// for the index. A search waits for what was queued before it started
// (caughtUp), so the save is searchable when its answer arrives. Past
// maxOwed queued keys it waits for room, whatever ctx: the change is
// committed and its update must be queued.
//
// A shared index (index.Index.Shared: PostgreSQL, searched by every
// instance) is the exception: another instance's search cannot wait for
// this instance's queue, so the caller waits (with ctx, at most
// batchTimeout) until its update is applied, in the batch it shares with
// concurrent saves. Past that the answer goes out and the update stays
// queued, then pending.
func (s *Service) indexed(ctx context.Context, k store.Key) {
	if s.idx == nil {
		return
	}
	s.enqueueIndex(k)
	if s.idx.x.Shared() {
		if err := s.waitIndexed(ctx, batchTimeout); err != nil && ctx.Err() == nil {
			s.log.Warn("the shared search index is behind; a save was answered before its update", "err", err)
		}
	}
}

// enqueueIndex queues k's update for indexLoop (indexed's first half).
func (s *Service) enqueueIndex(k store.Key) {
	ix := s.idx
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	for {
		if e := ix.owed[k]; e != nil {
			e.ends++ // the update still to come reads the store after this change
			return
		}
		if len(ix.owed) < ix.maxOwed {
			break
		}
		ch := ix.moved
		ix.qmu.Unlock()
		<-ch // the indexer runs: the queue is not empty
		ix.qmu.Lock()
	}
	ix.seq++
	e := &owedKey{k: k, first: ix.seq, ends: 1}
	ix.owed[k] = e
	ix.queue = append(ix.queue, e)
	if !ix.running {
		ix.running = true
		go s.indexLoop()
	}
}

// advance wakes who waits for the queue; qmu is held.
func (ix *indexer) advance() {
	close(ix.moved)
	ix.moved = make(chan struct{})
}

// caughtUp reports whether every update queued up to seq is in the
// index (or failed, and kept for a retry); qmu is held.
func (ix *indexer) caughtUp(seq uint64) bool {
	return (ix.flight == 0 || ix.flight > seq) && (len(ix.queue) == 0 || ix.queue[0].first > seq)
}

// WaitIndexed waits, at most wait, until every index update queued
// when it is called has been applied (or has failed, and is kept for
// MaintainIndex); nil without an index.
func (s *Service) WaitIndexed(ctx context.Context, wait time.Duration) error {
	if s.idx == nil {
		return nil
	}
	return s.waitIndexed(ctx, wait)
}

// drainIndex is run by the index's Close (index.Index.BeforeClose): what
// is queued is written before the index closes, within batchTimeout;
// what is left then stays in the pending record for the next start.
func (s *Service) drainIndex() {
	if err := s.waitIndexed(context.Background(), batchTimeout); err != nil {
		s.log.Warn("the search index closed with updates still queued; the next start applies them", "err", err)
	}
}

// waitIndexed waits until every index update queued when it is called
// has been applied: read-your-writes for a search. It gives up with
// ctx, or after wait.
func (s *Service) waitIndexed(ctx context.Context, wait time.Duration) error {
	ix := s.idx
	ix.qmu.Lock()
	seq := ix.seq
	if ix.caughtUp(seq) {
		ix.qmu.Unlock()
		return nil
	}
	ix.qmu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		ix.qmu.Lock()
		if ix.caughtUp(seq) {
			ix.qmu.Unlock()
			return nil
		}
		ch := ix.moved
		ix.qmu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return context.DeadlineExceeded
		}
	}
}

// indexLoop is the background indexer: it takes queued keys in order,
// oldest first, reads each from the store (what it holds now, or that
// it is gone: a later change of a key is queued anew and applied by a
// later batch, so the index never goes back to an older state), and
// writes them to the index in one Apply, then ends their intends. A
// batch that fails is applied again key by key; what fails then is kept
// for MaintainIndex's retries and counted (indexFailed). It ends when
// the queue is empty; indexed starts it again.
func (s *Service) indexLoop() {
	ix := s.idx
	for {
		ix.qmu.Lock()
		if len(ix.queue) == 0 {
			ix.running = false
			ix.flight = 0
			ix.advance()
			ix.qmu.Unlock()
			return
		}
		ix.qmu.Unlock()
		s.indexBatch()
	}
}

// indexBatch takes, reads and writes one batch.
func (s *Service) indexBatch() {
	ix := s.idx
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	// The stripes of the batch's keys are held from the read to the
	// write, as indexKey holds one: an indexKey of a key in the batch
	// (a search's repair, a retry) cannot write a newer state that the
	// batch then overwrites with its older one.
	var held [len(ix.stripes)]bool
	defer func() {
		for i, h := range held {
			if h {
				ix.stripes[i].Unlock()
			}
		}
	}()
	var (
		batch []*owedKey
		cs    []index.Change
		bytes int
	)
	for len(batch) < indexBatch && bytes < indexBatchBytes {
		chunk := ix.take(min(readWorkers, indexBatch-len(batch)), len(batch) == 0)
		if len(chunk) == 0 {
			break
		}
		for _, e := range chunk {
			if i := stripe(e.k, len(ix.stripes)); !held[i] {
				ix.stripes[i].Lock()
				held[i] = true
			}
		}
		// Read at once: a store on S3 answers each read in tens of ms.
		docs := make([]*index.Document, len(chunk))
		errs := make([]error, len(chunk))
		var wg sync.WaitGroup
		for i, e := range chunk {
			wg.Go(func() {
				errs[i] = s.store.View(ctx, e.k, func(m *store.Meta, _, body []byte) error {
					docs[i] = Document(m, body, ix.x.MaxTextBytes())
					return nil
				})
			})
		}
		wg.Wait()
		for i, e := range chunk {
			switch err := errs[i]; {
			case errors.Is(err, store.ErrNotFound):
				cs = append(cs, index.Change{Ref: refOf(e.k)})
			case err != nil:
				s.indexFailed(e.k, e.ends, err)
				continue
			default:
				cs = append(cs, index.Change{Doc: docs[i]})
				bytes += len(docs[i].Text)
			}
			batch = append(batch, e)
		}
	}
	err := ix.x.Apply(ctx, cs)
	for _, e := range batch {
		if err != nil {
			// Key by key, to keep what fails, and only that, for a retry.
			kctx, kcancel := context.WithTimeout(context.Background(), indexTimeout)
			kerr := syncEntry(kctx, s.store, ix.x, e.k)
			kcancel()
			if kerr != nil {
				s.indexFailed(e.k, e.ends, kerr)
				continue
			}
		}
		for range e.ends {
			ix.x.End(refOf(e.k))
		}
	}
	ix.qmu.Lock()
	ix.flight = 0
	ix.advance()
	ix.qmu.Unlock()
}

// take removes up to n keys from the head of the queue for a batch;
// first: they begin it (flight).
func (ix *indexer) take(n int, first bool) []*owedKey {
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	n = min(n, len(ix.queue))
	if n == 0 {
		return nil
	}
	out := make([]*owedKey, n)
	copy(out, ix.queue)
	clear(ix.queue[:n])
	ix.queue = ix.queue[n:]
	for _, e := range out {
		delete(ix.owed, e.k)
	}
	if first {
		ix.flight = out[0].first
	}
	ix.advance() // room for a waiting save
	return out
}

// stripe is k's stripe of n.
func stripe(k store.Key, n int) int {
	h := fnv.New32a()
	h.Write([]byte(k.String()))
	return int(h.Sum32() % uint32(n))
}
