package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// Index bounds of the service.
const (
	// indexTimeout bounds one index update after a store commit.
	indexTimeout = 10 * time.Second
	// maxPendingIndex bounds the keys whose index update waits for a
	// retry; past it a failure is only counted, and fsck or reindex
	// repairs the index.
	maxPendingIndex = 100000
	// searchSlots and searchTenantSlots bound concurrent searches, as
	// querySlots do query_resource's evaluations.
	searchSlots, searchTenantSlots = 8, 2
	// maxExpiredRounds bounds the expired entries one sweep removes, in
	// rounds of index.MaxExpired; the next sweep goes on.
	maxExpiredRounds = 100
	// recoverWorkers and recoverTimeout bound recoverIndex at start.
	recoverWorkers, recoverTimeout = 16, 2 * time.Minute
)

// indexer keeps the search index in step with the store: every change
// the service commits is read back from the store and put into (or
// removed from) the index, after the commit, never before. A failed
// update is remembered and retried (MaintainIndex), and counted.
type indexer struct {
	x      *index.Index
	onFail func() // counts a failed update
	slots  *tenantSlots
	mu     sync.Mutex
	// pending are the keys whose update failed, each with how many Ends
	// of the index's pending record (index.Pending) its success owes.
	pending map[store.Key]int
	failed  atomic.Int64
	stripes [64]sync.Mutex // indexKey's and indexBatch's, by key hash (stripe)

	// The background indexer's queue (searchindex_queue.go), under qmu:
	// owed are the queued keys, queue the same in the order of their
	// first sequence number; seq is the last number given, flight the
	// first of the batch being written (0: none); moved is closed and
	// replaced when the queue or the batch moves on.
	qmu     sync.Mutex
	owed    map[store.Key]*owedKey
	queue   []*owedKey
	seq     uint64
	flight  uint64
	running bool
	moved   chan struct{}
	maxOwed int
}

func newIndexer(x *index.Index, onFail func()) *indexer {
	if onFail == nil {
		onFail = func() {}
	}
	return &indexer{x: x, onFail: onFail, slots: newTenantSlots(searchSlots, searchTenantSlots), pending: map[store.Key]int{},
		owed: map[store.Key]*owedKey{}, moved: make(chan struct{}), maxOwed: maxOwed}
}

// Searchable reports whether the service has a search index.
func (s *Service) Searchable() bool { return s.idx != nil }

// IndexFailures is how many index updates have failed since start.
func (s *Service) IndexFailures() int64 {
	if s.idx == nil {
		return 0
	}
	return s.idx.failed.Load()
}

// Document is the index document of the stored object m with body.
func Document(m *store.Meta, body []byte, maxText int) *index.Document {
	text, _ := index.Extract(m.MIMEType, body, maxText)
	d := &index.Document{
		Ref:    index.Ref{Tenant: m.Key.Tenant(), Scheme: m.Key.Scheme(), Path: m.Key.Path()},
		Shared: m.Visibility == store.Public && m.Listed, MediaType: m.MIMEType,
		Title: m.Title, Created: m.Created, Expires: m.Expires, Size: m.Size, SHA256: m.SHA256, Text: text,
	}
	if m.Description != "" {
		d.Labels = []string{m.Description}
	}
	return d
}

// indexKey brings the index entry of k in line with the store. Updates
// of one key are serialized (a stripe lock), so the entry ends as the
// store was when the last of them read it: two changes of a key in
// flight never leave the index with the older one, or without the key.
func (s *Service) indexKey(ctx context.Context, k store.Key) error {
	mu := &s.idx.stripes[stripe(k, len(s.idx.stripes))]
	mu.Lock()
	defer mu.Unlock()
	return syncEntry(ctx, s.store, s.idx.x, k)
}

// syncEntry puts the live object at k into x, or removes k from x when
// the store has no live object there.
func syncEntry(ctx context.Context, st store.Backend, x *index.Index, k store.Key) error {
	var doc *index.Document
	err := st.View(ctx, k, func(m *store.Meta, _, body []byte) error {
		doc = Document(m, body, x.MaxTextBytes())
		return nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return x.Delete(ctx, refOf(k))
	case err != nil:
		return err
	}
	return x.Put(ctx, doc)
}

func refOf(k store.Key) index.Ref {
	return index.Ref{Tenant: k.Tenant(), Scheme: k.Scheme(), Path: k.Path()}
}

// intend is called before a store write of k (Put, PutStream, Delete):
// the index's pending record (index.Pending) holds k, on disk, until the
// update that follows the write ends (indexed) or the write fails
// (unintend), so a process killed in between leaves k for the next start
// (recoverIndex). A record that cannot be written refuses the write: it
// could be acknowledged and never found.
func (s *Service) intend(ctx context.Context, k store.Key) *Failure {
	if s.idx == nil {
		return nil
	}
	if err := s.idx.x.Begin(refOf(k)); err != nil {
		return s.Unavailable(ctx, "search index pending record", err)
	}
	return nil
}

// unintend ends intend for a write that failed.
func (s *Service) unintend(k store.Key) {
	if s.idx != nil {
		s.idx.x.End(refOf(k))
	}
}

// indexOwed brings k's entry in line and then ends owed intends of it.
func (s *Service) indexOwed(ctx context.Context, k store.Key, owed int) {
	if s.idx == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), indexTimeout)
	defer cancel()
	if err := s.indexKey(ctx, k); err != nil {
		s.indexFailed(k, owed, err)
		return
	}
	for range owed {
		s.idx.x.End(refOf(k))
	}
}

// indexFailed keeps k for a retry that ends its owed intends; past
// maxPendingIndex the pending record keeps it for the next start.
func (s *Service) indexFailed(k store.Key, owed int, err error) {
	s.idx.failed.Add(1)
	s.idx.onFail()
	s.log.Warn("search index update failed; will retry", "uri", k.String(), "err", err)
	s.idx.mu.Lock()
	defer s.idx.mu.Unlock()
	if n, ok := s.idx.pending[k]; ok || len(s.idx.pending) < maxPendingIndex {
		s.idx.pending[k] = n + owed
	}
}

// recoverIndex brings in line, at start, the entries an earlier process
// owed when it ended (killed between a store write and its index
// update): each is read from the store and put or removed, recoverWorkers
// at once, within recoverTimeout; what fails is kept for MaintainIndex's
// retries, and stays in the pending record until one succeeds.
func (s *Service) recoverIndex() {
	if s.idx == nil {
		return
	}
	refs, err := s.idx.x.Owed()
	if err != nil {
		s.log.Error("reading the search index's pending updates failed; run resourced fsck", "err", err)
		return
	}
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range min(recoverWorkers, len(refs)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(refs)) {
					return
				}
				k, err := store.NewKey(refs[i].Tenant, refs[i].Scheme, refs[i].Path)
				if err != nil {
					continue // Owed checked it
				}
				if err := s.indexKey(ctx, k); err != nil {
					failed.Add(1)
					s.indexFailed(k, 1, err)
					continue
				}
				s.idx.x.End(refs[i])
			}
		})
	}
	wg.Wait()
	s.log.Info("search index: brought the updates a previous process owed in line with the store",
		"owed", len(refs), "failed", failed.Load())
}

// MaintainIndex is the index's part of the sweep: it removes the entries
// of expired resources (each checked against the store, so one saved
// again meanwhile is indexed anew, not lost) and retries the updates that
// failed. It returns how many expired entries it brought in line with
// the store (removed, or indexed anew), and how many updates are still
// pending. It waits first for the updates queued when it starts.
func (s *Service) MaintainIndex(ctx context.Context) (swept, pending int) {
	if s.idx == nil {
		return 0, 0
	}
	// What the background indexer holds first: what fails there is
	// retried below.
	if err := s.waitIndexed(ctx, batchTimeout); err != nil && ctx.Err() == nil {
		s.log.Warn("the search index's queue did not drain before the sweep", "err", err)
	}
	for range maxExpiredRounds {
		refs, err := s.idx.x.Expired(ctx, s.now(), index.MaxExpired)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("listing the search index's expired entries failed; the next sweep retries", "err", err)
			}
			break
		}
		done := 0
		for _, r := range refs {
			k, err := store.NewKey(r.Tenant, r.Scheme, r.Path)
			if err != nil {
				continue // Index.Put validated it; nothing else writes the index
			}
			if err := s.indexKey(ctx, k); err != nil {
				s.indexFailed(k, 0, err)
				continue
			}
			done++
		}
		swept += done
		if len(refs) < index.MaxExpired || done == 0 || ctx.Err() != nil {
			break
		}
	}
	return swept, s.retryIndex(ctx)
}

// retryIndex retries the index updates that failed and returns how many
// are still pending.
func (s *Service) retryIndex(ctx context.Context) int {
	s.idx.mu.Lock()
	keys := make([]store.Key, 0, len(s.idx.pending))
	for k := range s.idx.pending {
		keys = append(keys, k)
	}
	s.idx.mu.Unlock()
	left := 0
	for _, k := range keys {
		if ctx.Err() != nil {
			return len(keys)
		}
		if err := s.indexKey(ctx, k); err != nil {
			left++
			continue
		}
		s.idx.mu.Lock()
		owed := s.idx.pending[k]
		delete(s.idx.pending, k)
		s.idx.mu.Unlock()
		for range owed {
			s.idx.x.End(refOf(k))
		}
	}
	return left
}

// SearchPage is one page of search_resources: its value, the metadata of
// each hit (for its resource_link), and where a shorter page goes on.
type SearchPage struct {
	Value *toolapi.SearchResourcesResult
	Items []*store.Meta // Items[i] is Value.Hits[i]'s
	page  index.Page
	at    []int // at[i]: the position of Value.Hits[i] in page.Hits
}

// NextAt is the nextCursor of this page cut to its first n (at least 1)
// hits: it goes on at the first hit left out.
func (p *SearchPage) NextAt(n int) string {
	if n < 1 || n >= len(p.Value.Hits) {
		return p.Value.NextCursor
	}
	return p.page.NextAt(p.at[n])
}

// Cut keeps the first n (at least 1) hits and makes the next page go on
// at the first hit left out (NextAt): what a renderer does to fit a byte
// budget.
func (p *SearchPage) Cut(n int) {
	if n < 1 || n >= len(p.Value.Hits) {
		return
	}
	p.Value.NextCursor = p.NextAt(n)
	p.Value.Hits, p.Items, p.at = p.Value.Hits[:n], p.Items[:n], p.at[:n]
}

// SearchResources is search_resources: the caller's resources (listed or
// not) and the public listed ones of every tenant that match a, ranked.
// Every hit is checked against the store with the one read decision
// (Stat) before it is shown, so an index that lags the store shows no
// resource the caller cannot read; such a hit is dropped and its entry
// repaired.
func (s *Service) SearchResources(ctx context.Context, tenant string, a *toolapi.SearchResourcesArgs) (*SearchPage, *Failure) {
	if s.idx == nil {
		return nil, Fail(KindUnavailable, "search is not configured on this server (index.backend: off)")
	}
	q := index.Query{Text: a.Query, Scheme: a.Scheme, Prefix: a.Prefix, MediaType: a.MIMEType, Labels: a.Labels, Cursor: a.Cursor, Now: s.now()}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > index.MaxLimit {
			return nil, InvalidField("limit", fmt.Sprintf("must be between 1 and %d", index.MaxLimit))
		}
		q.Limit = *a.Limit
	}
	for _, t := range []struct {
		field, v string
		to       *time.Time
	}{{"createdAfter", a.CreatedAfter, &q.CreatedAfter}, {"createdBefore", a.CreatedBefore, &q.CreatedBefore},
		{"expiresAfter", a.ExpiresAfter, &q.ExpiresAfter}, {"expiresBefore", a.ExpiresBefore, &q.ExpiresBefore}} {
		if t.v == "" {
			continue
		}
		// RFC 3339 §5.6 allows a lower-case t and z; Go's layout does not.
		v, err := time.Parse(time.RFC3339Nano, strings.ToUpper(t.v))
		if err != nil {
			return nil, InvalidField(t.field, Quote(t.v)+" is not an RFC 3339 time (e.g. 2026-03-01T00:00:00Z)")
		}
		*t.to = v
	}
	release, err := s.idx.slots.acquire(ctx, tenant)
	if err != nil {
		return nil, s.Unavailable(ctx, "search slot", err)
	}
	defer release()
	// Read-your-writes: every save answered before this search began is
	// in the index before it is searched (CONTRACT §4).
	if err := s.waitIndexed(ctx, s.idx.x.Timeout()); err != nil {
		if ctx.Err() == nil {
			return nil, Fail(KindUnavailable, "the search index is behind the saves made before this search and did not catch up within the search's time limit; retry")
		}
		return nil, s.Unavailable(ctx, "search index catching up", err)
	}
	page, err := s.idx.x.Search(ctx, tenant, q)
	if err != nil {
		return nil, s.searchFailure(ctx, err)
	}
	v := &toolapi.SearchResourcesResult{Status: "ok", Hits: []toolapi.SearchHit{}, Total: page.Total, Estimate: page.Estimate, NextCursor: page.Next}
	out := &SearchPage{Value: v, Items: []*store.Meta{}, page: page}
	for i, h := range page.Hits {
		m, f := s.Stat(ctx, tenant, h.URI())
		if f != nil || m.SHA256 != h.SHA256 {
			if f == nil || f.ErrorKind == KindNotFound {
				if k, err := store.NewKey(h.Tenant, h.Scheme, h.Path); err == nil {
					s.indexOwed(ctx, k, 0) // no intend: nothing owed
				}
			}
			if f != nil {
				continue
			}
		}
		hit := toolapi.SearchHit{URI: h.URI(), Title: m.Title, MIMEType: m.MIMEType, Size: m.Size, Score: h.Score,
			Snippet: h.Snippet, Lines: h.Lines, CreatedAt: jsonwire.FormatTime(m.Created)}
		if !m.Expires.IsZero() {
			hit.ExpiresAt = jsonwire.FormatTime(m.Expires)
		}
		v.Hits = append(v.Hits, hit)
		out.Items = append(out.Items, &m)
		out.at = append(out.at, i)
	}
	if len(v.Hits) > 0 {
		v.HowToRead = "Read a hit with resources/read of its uri, or with read_resource (startLine: one of its lines) or grep_resource for the matching lines."
	}
	return out, nil
}

// searchFailure maps an index error to the failure a caller sees: a
// refused field (index.QueryError) is named once, as the caller passed
// it, in front of what is wrong.
func (s *Service) searchFailure(ctx context.Context, err error) *Failure {
	var qe *index.QueryError
	if errors.As(err, &qe) {
		field := qe.Field
		if field == "mediaType" {
			field = "mimeType"
		}
		if errors.Is(qe.Kind, index.ErrTooCostly) {
			return Fail(KindValidation, "the search is refused as too costly ("+field+": "+qe.Reason+"): use fewer words or filters, or a narrower query", FieldError{Field: field, Message: qe.Reason})
		}
		return InvalidField(field, qe.Reason)
	}
	msg := err.Error()
	if i := strings.Index(msg, "search: "); i >= 0 {
		msg = msg[i+len("search: "):]
	}
	switch {
	case errors.Is(err, index.ErrInvalid), errors.Is(err, index.ErrTooCostly):
		return Fail(KindValidation, msg) // not a field's (the tenant's): no field to name
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return Fail(KindUnavailable, "the search took longer than its time limit: narrow the query (more words, a scheme or prefix)")
	}
	return s.Unavailable(ctx, "search index", err)
}
