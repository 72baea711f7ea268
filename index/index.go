// Package index owns the full-text search contract of resourced: a
// Document is what is searchable of one stored resource (its metadata and
// the text extracted from its body, extract.go), and Index is the one
// portable type over a small Driver (bleveindex embedded, pgindex shared),
// in the manner of store.Bucket over store.Driver. The Index validates
// documents and queries, parses the query text once (query.go), bounds
// the cost of a search (time, page size, depth), builds and checks the
// cursor, and cuts the snippet and the matching line numbers from the
// text a driver returns (snippet.go), so every driver agrees on all of
// that and a driver only stores, matches and ranks.
//
// Tenant partitioning is part of the contract: Search for tenant A
// returns only A's documents and the documents other tenants made public
// and listed (Document.Shared). Nothing a caller passes can widen that:
// the tenant is an argument of its own, never a filter of the Query.
//
// Error contract, for every method:
//   - an invalid document or query gives an error for which
//     errors.Is(err, ErrInvalid) holds, and whose text says what is wrong
//     in words a caller can act on;
//   - a query the index will not answer within its bounds (too many
//     terms, too deep a page) gives ErrTooCostly, with the bound;
//   - a search that runs past Options.Timeout, or a canceled context,
//     gives an error wrapping context.DeadlineExceeded or ctx.Err();
//   - after Close every method fails with ErrClosed;
//   - anything else is a driver failure the caller may retry.
//
// The index is derived data: the store is the truth, an update is made
// after the store's commit, and Walk lets fsck and reindex compare the
// two (the service owns that, service/searchindex.go).
package index

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/grammar"
)

// Sentinel errors; the Index wraps them with what went wrong.
var (
	// ErrInvalid: a document or query failed validation.
	ErrInvalid = errors.New("invalid")
	// ErrTooCostly: the query is outside the bounds the index answers.
	ErrTooCostly = errors.New("too costly")
	// ErrClosed: the index was closed.
	ErrClosed = errors.New("index closed")
)

// QueryError is a Query refused for one of its fields; errors.As finds
// it in Search's error. Field names the field as a caller passes it
// ("query" for Text, "scheme", "prefix", "mediaType", "labels" or
// "labels[1]", "createdAfter", "expiresAfter", "limit", "cursor"), Kind
// is ErrInvalid or ErrTooCostly, and Reason says what is wrong without
// naming the field again, so a caller can put the field in front once.
// Its text is "field: kind: reason".
type QueryError struct {
	Field  string
	Kind   error
	Reason string
	cause  error // a finer sentinel (errNoWord), or nil
}

func (e *QueryError) Error() string { return e.Field + ": " + e.Kind.Error() + ": " + e.Reason }

// Unwrap is Kind, and the finer cause when there is one.
func (e *QueryError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Kind, e.cause}
	}
	return []error{e.Kind}
}

// queryErr is a QueryError of field.
func queryErr(field string, kind error, format string, a ...any) *QueryError {
	return &QueryError{Field: field, Kind: kind, Reason: fmt.Sprintf(format, a...)}
}

// Bounds of a search.
const (
	// DefaultLimit is the page size of a Query without a Limit.
	DefaultLimit = 10
	// MaxLimit is the largest page.
	MaxLimit = 50
	// MaxDepth bounds how far paging goes: offset + limit. Ranking the
	// hits past it costs more than a caller narrowing the query.
	MaxDepth = 1000
	// DefaultTimeout bounds one Search when Options.Timeout is zero.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxTextBytes is how much of a body's text is indexed when
	// Options.MaxTextBytes is zero.
	DefaultMaxTextBytes = 1 << 20
	// MaxTotal is the most hits a driver counts exactly; past it Total
	// is MaxTotal and Estimate is true.
	MaxTotal = 10000
	// MaxTitleBytes and MaxLabelBytes bound what Put keeps of a
	// document's title and of its labels together: with MaxTextBytes,
	// the bound on what one document brings to the index
	// (docs/decisions.md, "Index bytes").
	MaxTitleBytes, MaxLabelBytes = 4096, 4096
)

// Ref names one indexed resource: the store key's parts.
type Ref struct {
	Tenant, Scheme, Path string
}

// URI is the resource's URI, scheme://tenant/path.
func (r Ref) URI() string { return r.Scheme + "://" + r.Tenant + "/" + r.Path }

func (r Ref) check() error {
	if err := grammar.Tenant(r.Tenant); err != nil {
		return fmt.Errorf("%w: tenant %q: %v", ErrInvalid, r.Tenant, err)
	}
	if err := grammar.Scheme(r.Scheme); err != nil {
		return fmt.Errorf("%w: scheme %q: %v", ErrInvalid, r.Scheme, err)
	}
	if err := grammar.Path(r.Path); err != nil {
		return fmt.Errorf("%w: path %q: %v", ErrInvalid, r.Path, err)
	}
	return nil
}

// Document is what the index keeps of one resource. Put replaces the
// document at its Ref.
type Document struct {
	Ref
	// Shared: the resource is public and listed, so every tenant's search
	// may find it. A public unlisted resource is readable by whoever has
	// its URI, but only its owner's search finds it (search is a listing).
	Shared    bool
	MediaType string
	// Title and Labels are the resource's names (in resourced: its title
	// and description); they rank above the body and Query.Labels
	// matches them alone.
	Title   string
	Labels  []string
	Created time.Time
	Expires time.Time // zero: never
	Size    int64     // bytes of the body
	SHA256  string    // of the body: what fsck compares with the store
	// Text is the searchable text of the body (Extract); Put keeps at
	// most Options.MaxTextBytes of it.
	Text string
}

// Entry is what Walk reports of one document.
type Entry struct {
	Ref
	SHA256 string
}

// Hit is one search result: the document without its text, and where
// the query matched.
type Hit struct {
	Document // Text empty
	Score    float64
	// Snippet is a short part of the text (or of the title when the text
	// has no match) with each match between HighlightStart and
	// HighlightEnd.
	Snippet string
	// Lines are the 1-based numbers of the text's lines that hold a match
	// (at most MaxLines, in order), for grep_resource or read_resource.
	Lines []int
}

// Page is one page of results.
type Page struct {
	Hits []Hit
	// Total is how many documents match; when Estimate is true it is a
	// lower bound (the driver stopped counting at MaxTotal).
	Total    int
	Estimate bool
	// Next is the cursor of the next page; "" on the last.
	Next string

	tenant string // what NextAt's cursors are bound to
	q      Query
	offset int
}

// NextAt is the cursor of a page that goes on at Hits[i]: for a caller
// that shows only the first i hits (a page cut to a byte budget). i ==
// len(Hits) is Next; i is at least 1 (a page shows a hit).
func (p *Page) NextAt(i int) string {
	if i >= len(p.Hits) {
		return p.Next
	}
	return encodeCursor(p.tenant, p.q, p.offset+i)
}

// Query selects and ranks documents. Every set field must hold.
type Query struct {
	// Text is in web-search syntax (query.go): words all must match, in
	// the text, title or labels; "a phrase"; `or` between alternatives;
	// -word excludes. Empty (or white space): every document the filters
	// keep, newest first; text with no word (only `or`, `-`, `""` or
	// punctuation) is invalid. Words match whole and case-insensitively
	// (no stemming).
	Text string
	// Scheme keeps one scheme; Prefix a path prefix (needs no Scheme).
	Scheme, Prefix string
	// MediaType keeps one media type ("text/markdown") or one top-level
	// type ("text/*"); parameters are ignored.
	MediaType string
	// Labels must each match the document's title or labels (same syntax
	// as Text, one term or phrase each).
	Labels []string
	// Created and expiry ranges; a zero bound is open. CreatedBefore and
	// ExpiresBefore are exclusive. A document that never expires is
	// outside any range with ExpiresBefore set.
	CreatedAfter, CreatedBefore time.Time
	ExpiresAfter, ExpiresBefore time.Time
	// Now hides documents expired at Now (the store's rule); zero: the
	// Index's clock.
	Now time.Time
	// Limit is the page size (0: DefaultLimit, at most MaxLimit).
	Limit int
	// Cursor is a previous Page.Next of the same tenant and query.
	Cursor string
}

// Driver is what an index backend implements. The Index calls it with
// validated input only; drivers need not check it again.
type Driver interface {
	// Put stores doc at doc.Ref, replacing what is there, durably.
	Put(ctx context.Context, doc *Document) error
	// Delete removes the document at r; a missing one is not an error.
	Delete(ctx context.Context, r Ref) error
	// Search returns the hits of p in rank order, p.Offset hits skipped,
	// at most p.Limit, each with its Text; and the total (exact up to
	// MaxTotal, else MaxTotal and true). Rank order is score descending
	// with a Match, Created descending without; ties in URI byte order.
	Search(ctx context.Context, p *Plan) (hits []Hit, total int, estimate bool, err error)
	// Walk calls fn for every document, in no particular order, until fn
	// returns an error, which Walk returns.
	Walk(ctx context.Context, fn func(Entry) error) error
	// Count returns how many documents tenant has ("" : all tenants).
	Count(ctx context.Context, tenant string) (int64, error)
	// Expired returns up to limit (> 0) documents of every tenant whose
	// Expires is set and at or before now, in no particular order.
	Expired(ctx context.Context, now time.Time, limit int) ([]Ref, error)
	// Close releases the driver.
	Close() error
}

// Plan is a validated query as a driver sees it.
type Plan struct {
	Tenant string
	// Match is the parsed Text (nil: match all); Labels the parsed labels.
	Match          *Expr
	Labels         []*Expr
	Scheme, Prefix string
	// MediaType is exact, or MediaPrefix ("text/") when it ends in "/*".
	MediaType, MediaPrefix      string
	CreatedAfter, CreatedBefore time.Time
	ExpiresAfter, ExpiresBefore time.Time
	Now                         time.Time
	Offset, Limit               int
}

// Options configure an Index; the zero value takes the defaults.
type Options struct {
	// Timeout bounds one Search (0: DefaultTimeout).
	Timeout time.Duration
	// MaxTextBytes bounds the text kept per document (0:
	// DefaultMaxTextBytes).
	MaxTextBytes int
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Pending is the durable record of owed updates (Begin, End, Owed);
	// nil: none, and Begin does nothing. Close closes it.
	Pending *Pending
	// Shared says other instances search this index too (PostgreSQL):
	// they cannot wait for this instance's queue of updates, so a writer
	// must not answer before its own update is applied (Index.Shared).
	Shared bool
}

// Index is the portable index over a Driver; safe for concurrent use.
type Index struct {
	d    Driver
	opts Options

	mu     sync.RWMutex
	closed bool

	hmu     sync.Mutex
	before  []func() // BeforeClose's
	closing bool
}

// BeforeClose registers fn to run when Close is first called, before
// the index closes (it still serves then): the service's background
// indexer writes what it has queued (service/searchindex_queue.go), so
// a server that stops leaves no acknowledged save out of the index.
func (x *Index) BeforeClose(fn func()) {
	x.hmu.Lock()
	defer x.hmu.Unlock()
	x.before = append(x.before, fn)
}

// New returns an Index over d.
func New(d Driver, opts Options) *Index {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Index{d: d, opts: opts}
}

// MaxTextBytes is the bound on one document's text.
func (x *Index) MaxTextBytes() int { return x.opts.MaxTextBytes }

// Shared reports Options.Shared: other instances search this index.
func (x *Index) Shared() bool { return x.opts.Shared }

// enter starts a call: a canceled ctx or a closed index ends it first.
func (x *Index) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.RLock()
	if x.closed {
		x.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (x *Index) leave() { x.mu.RUnlock() }

// Put indexes doc, replacing the document at its Ref. Text past
// MaxTextBytes, a title past MaxTitleBytes and labels past MaxLabelBytes
// are cut at a character boundary; times are kept to the millisecond in
// UTC.
func (x *Index) Put(ctx context.Context, doc *Document) error {
	if err := doc.Ref.check(); err != nil {
		return fmt.Errorf("index: put: %w", err)
	}
	if doc.Size < 0 {
		return fmt.Errorf("index: put %s: %w: negative size", doc.URI(), ErrInvalid)
	}
	if err := x.enter(ctx); err != nil {
		return fmt.Errorf("index: put %s: %w", doc.URI(), err)
	}
	defer x.leave()
	if err := x.d.Put(ctx, x.normal(doc)); err != nil {
		return fmt.Errorf("index: put %s: %w", doc.URI(), err)
	}
	return nil
}

// normal is doc as Put keeps it.
func (x *Index) normal(doc *Document) *Document {
	d := *doc
	d.Text = cutUTF8(d.Text, x.opts.MaxTextBytes)
	d.Title = cutUTF8(d.Title, MaxTitleBytes)
	d.Labels = cutLabels(d.Labels, MaxLabelBytes)
	d.MediaType = strings.ToLower(d.MediaType)
	d.Created = msUTC(d.Created)
	d.Expires = msUTC(d.Expires)
	return &d
}

// Change is one update of Apply: Doc put at its Ref, or (Doc nil) the
// document at Ref deleted.
type Change struct {
	Ref Ref
	Doc *Document
}

// Batcher is a Driver that writes many changes at once (bleveindex: in
// as few persisted batches as its bounds allow).
type Batcher interface {
	Apply(ctx context.Context, puts []*Document, deletes []Ref) error
}

// applyWorkers is how many Puts and Deletes Apply runs at once on a
// driver that is not a Batcher.
const applyWorkers = 16

// Apply makes every change of cs, as Put and Delete would, in no
// particular order (a Ref appears once); an error says one or more
// failed, and the caller applies them again one by one to learn which.
// It is the background indexer's (service/searchindex.go) way to put
// many saves into the index at the cost of a few.
func (x *Index) Apply(ctx context.Context, cs []Change) error {
	var puts []*Document
	var dels []Ref
	for _, c := range cs {
		if c.Doc != nil {
			c.Ref = c.Doc.Ref
		}
		if err := c.Ref.check(); err != nil {
			return fmt.Errorf("index: apply: %w", err)
		}
		if c.Doc == nil {
			dels = append(dels, c.Ref)
			continue
		}
		if c.Doc.Size < 0 {
			return fmt.Errorf("index: apply %s: %w: negative size", c.Ref.URI(), ErrInvalid)
		}
		puts = append(puts, x.normal(c.Doc))
	}
	if err := x.enter(ctx); err != nil {
		return fmt.Errorf("index: apply: %w", err)
	}
	defer x.leave()
	if b, ok := x.d.(Batcher); ok {
		if err := b.Apply(ctx, puts, dels); err != nil {
			return fmt.Errorf("index: apply: %w", err)
		}
		return nil
	}
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range min(applyWorkers, len(puts)+len(dels)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				var err error
				switch {
				case i < len(puts):
					err = x.d.Put(ctx, puts[i])
				case i < len(puts)+len(dels):
					err = x.d.Delete(ctx, dels[i-len(puts)])
				default:
					return
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("index: apply: %d of %d changes failed: %w", len(errs), len(cs), errs[0])
	}
	return nil
}

// Timeout is the bound on one Search (Options.Timeout).
func (x *Index) Timeout() time.Duration { return x.opts.Timeout }

// Delete removes the document at r; a missing one is not an error.
func (x *Index) Delete(ctx context.Context, r Ref) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("index: delete: %w", err)
	}
	if err := x.enter(ctx); err != nil {
		return fmt.Errorf("index: delete %s: %w", r.URI(), err)
	}
	defer x.leave()
	if err := x.d.Delete(ctx, r); err != nil {
		return fmt.Errorf("index: delete %s: %w", r.URI(), err)
	}
	return nil
}

// Search runs q for tenant: tenant's documents and the shared ones.
func (x *Index) Search(ctx context.Context, tenant string, q Query) (Page, error) {
	p, err := x.plan(tenant, q)
	if err != nil {
		return Page{}, fmt.Errorf("index: search: %w", err)
	}
	if err := x.enter(ctx); err != nil {
		return Page{}, fmt.Errorf("index: search: %w", err)
	}
	defer x.leave()
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	hits, total, estimate, err := x.d.Search(ctx, p)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return Page{}, fmt.Errorf("index: search: %w", err)
	}
	if len(hits) > p.Limit {
		hits = hits[:p.Limit]
	}
	q.Cursor = ""
	page := Page{Hits: hits, Total: total, Estimate: estimate, tenant: tenant, q: q, offset: p.Offset}
	for i := range page.Hits {
		h := &page.Hits[i]
		h.Snippet, h.Lines = Snippet(h.Title, h.Text, p)
		h.Text = ""
	}
	if end := p.Offset + len(hits); len(hits) == p.Limit && (end < total || estimate) && end < MaxDepth {
		page.Next = encodeCursor(tenant, q, end)
	}
	return page, nil
}

// plan validates q for tenant and turns it into a Plan.
func (x *Index) plan(tenant string, q Query) (*Plan, error) {
	if err := grammar.Tenant(tenant); err != nil {
		return nil, fmt.Errorf("%w: tenant %q: %v", ErrInvalid, tenant, err)
	}
	p := &Plan{Tenant: tenant, Scheme: q.Scheme, Prefix: q.Prefix,
		CreatedAfter: msUTC(q.CreatedAfter), CreatedBefore: msUTC(q.CreatedBefore),
		ExpiresAfter: msUTC(q.ExpiresAfter), ExpiresBefore: msUTC(q.ExpiresBefore), Now: msUTC(q.Now)}
	if p.Now.IsZero() {
		p.Now = msUTC(x.opts.Now())
	}
	if q.Scheme != "" {
		if err := grammar.Scheme(q.Scheme); err != nil {
			return nil, queryErr("scheme", ErrInvalid, "%q: %v", q.Scheme, err)
		}
	}
	if !validPrefix(q.Prefix) {
		return nil, queryErr("prefix", ErrInvalid, "%q: only the characters of a path ([A-Za-z0-9._~/-]), at most %d bytes", q.Prefix, grammar.MaxPathLen)
	}
	if mt := strings.ToLower(strings.TrimSpace(q.MediaType)); mt != "" {
		top, sub, ok := strings.Cut(mt, "/")
		if !ok || top == "" || sub == "" || strings.ContainsAny(mt, " ;,\"") || strings.Contains(sub, "/") || strings.Contains(top, "*") || strings.Contains(sub, "*") && sub != "*" {
			return nil, queryErr("mediaType", ErrInvalid, "%q: want type/subtype or type/*", q.MediaType)
		}
		if sub == "*" {
			p.MediaPrefix = top + "/"
		} else {
			p.MediaType = mt
		}
	}
	if !p.CreatedBefore.IsZero() && !p.CreatedAfter.Before(p.CreatedBefore) {
		return nil, queryErr("createdAfter", ErrInvalid, "must be before createdBefore")
	}
	if !p.ExpiresBefore.IsZero() && !p.ExpiresAfter.Before(p.ExpiresBefore) {
		return nil, queryErr("expiresAfter", ErrInvalid, "must be before expiresBefore")
	}
	var err error
	if p.Match, err = Parse(q.Text); err != nil {
		return nil, err // a QueryError of "query"
	}
	if len(q.Labels) > MaxLabels {
		return nil, queryErr("labels", ErrTooCostly, "%d labels, at most %d", len(q.Labels), MaxLabels)
	}
	terms := p.Match.Terms()
	for i, l := range q.Labels {
		field := fmt.Sprintf("labels[%d]", i)
		e, err := Parse(l)
		if err != nil && !errors.Is(err, errNoWord) {
			var qe *QueryError
			if errors.As(err, &qe) {
				err = &QueryError{Field: field, Kind: qe.Kind, Reason: qe.Reason, cause: qe.cause}
			}
			return nil, err
		}
		if e == nil {
			return nil, queryErr(field, ErrInvalid, "has no word: labels are words of letters and digits")
		}
		terms += e.Terms()
		p.Labels = append(p.Labels, e)
	}
	if terms > MaxTerms {
		return nil, queryErr("query", ErrTooCostly, "%d terms in the query and labels, at most %d", terms, MaxTerms)
	}
	p.Limit = q.Limit
	switch {
	case p.Limit < 0:
		return nil, queryErr("limit", ErrInvalid, "%d: must be positive", q.Limit)
	case p.Limit == 0:
		p.Limit = DefaultLimit
	case p.Limit > MaxLimit:
		p.Limit = MaxLimit
	}
	if q.Cursor != "" {
		if p.Offset, err = decodeCursor(q.Cursor, tenant, q); err != nil {
			return nil, err
		}
	}
	if p.Offset+p.Limit > MaxDepth {
		if p.Offset >= MaxDepth {
			return nil, queryErr("cursor", ErrTooCostly, "results past the first %d are not paged; narrow the query", MaxDepth)
		}
		p.Limit = MaxDepth - p.Offset
	}
	return p, nil
}

// Walk calls fn for every document; see Driver.Walk.
func (x *Index) Walk(ctx context.Context, fn func(Entry) error) error {
	if err := x.enter(ctx); err != nil {
		return fmt.Errorf("index: walk: %w", err)
	}
	defer x.leave()
	return x.d.Walk(ctx, fn)
}

// Count returns how many documents tenant has ("": every tenant).
func (x *Index) Count(ctx context.Context, tenant string) (int64, error) {
	if tenant != "" {
		if err := grammar.Tenant(tenant); err != nil {
			return 0, fmt.Errorf("index: count: %w: tenant %q: %v", ErrInvalid, tenant, err)
		}
	}
	if err := x.enter(ctx); err != nil {
		return 0, fmt.Errorf("index: count: %w", err)
	}
	defer x.leave()
	n, err := x.d.Count(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("index: count: %w", err)
	}
	return n, nil
}

// MaxExpired bounds one Expired call.
const MaxExpired = 1000

// Expired returns up to limit (at most MaxExpired) documents of every
// tenant expired at now: what the sweep removes once the store agrees.
func (x *Index) Expired(ctx context.Context, now time.Time, limit int) ([]Ref, error) {
	if limit <= 0 || limit > MaxExpired {
		limit = MaxExpired
	}
	if err := x.enter(ctx); err != nil {
		return nil, fmt.Errorf("index: expired: %w", err)
	}
	defer x.leave()
	refs, err := x.d.Expired(ctx, msUTC(now), limit)
	if err != nil {
		return nil, fmt.Errorf("index: expired: %w", err)
	}
	if len(refs) > limit {
		refs = refs[:limit]
	}
	return refs, nil
}

// Close runs the BeforeClose functions, waits for running calls and
// closes the driver and the pending record; later calls fail with
// ErrClosed, and a second Close returns nil.
func (x *Index) Close() error {
	x.hmu.Lock()
	var before []func()
	if !x.closing {
		x.closing, before = true, x.before
	}
	x.hmu.Unlock()
	for _, fn := range before {
		fn()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	err := x.d.Close()
	if x.opts.Pending != nil {
		err = errors.Join(err, x.opts.Pending.Close())
	}
	return err
}

// Begin records, before a store write of r, that r's entry is owed until
// End (Options.Pending: on disk when it returns nil); without a pending
// record it does nothing.
func (x *Index) Begin(r Ref) error {
	if x.opts.Pending == nil {
		return nil
	}
	return x.opts.Pending.Begin(r)
}

// End records that r's entry follows the store, or that the write Begin
// announced did not happen.
func (x *Index) End(r Ref) {
	if x.opts.Pending != nil {
		x.opts.Pending.End(r)
	}
}

// Owed is what an earlier process began and did not end (Pending.Owed);
// nil without a pending record.
func (x *Index) Owed() ([]Ref, error) {
	if x.opts.Pending == nil {
		return nil, nil
	}
	return x.opts.Pending.Owed()
}

// cutLabels keeps labels in order while their bytes stay within max, the
// last one kept cut at a character boundary.
func cutLabels(labels []string, max int) []string {
	var out []string
	for _, l := range labels {
		if max <= 0 {
			break
		}
		l = cutUTF8(l, max)
		max -= len(l)
		out = append(out, l)
	}
	return out
}

// MediaBase is a media type without its parameters, lower-cased: what
// Query.MediaType is compared with.
func MediaBase(mt string) string {
	mt, _, _ = strings.Cut(mt, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// validPrefix reports whether a path prefix has only the bytes of a path.
func validPrefix(p string) bool {
	if len(p) > grammar.MaxPathLen {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' && !grammar.IsUnreserved(p[i]) {
			return false
		}
	}
	return true
}

func msUTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
