// Package bleveindex is the embedded index.Driver, on bleve v2 (scorch),
// kept in a directory beside the bbolt data. One bleve index holds every
// tenant; each document carries its tenant and whether it is shared as
// keyword fields, and every search is filtered to the caller's tenant or
// shared documents before any other clause is scored.
//
// Fields (all but raw and sha unstored):
//
//	tenant, scheme, path, media, shared   keyword
//	text      index.TokenText of the body's text (phrase positions kept)
//	labels    index.TokenText of the title and labels
//	created, expires   milliseconds since 1970 (never: 2^53)
//	sha       keyword, stored (Walk)
//	raw       the Document as JSON, stored, not indexed (hits)
//
// Words are cut by index.Tokens before bleve sees them; bleve's analyzer
// only splits the result at spaces, so bleve and the other drivers agree
// on what a word is. A bleve index is local to one process: on S3 with
// several instances, use pgindex.
//
// Durability: scorch's Batch returns once the segment is persisted
// (unsafe_batch is off), so an acknowledged Put survives kill -9.
//
// Group commit: Puts and Deletes are queued and one writer goroutine,
// started when the queue fills and ending when it is empty, writes what
// is queued (up to maxBatch writes and maxBatchBytes of text) in one
// bleve Batch, answers them, and
// takes the next at once: one persisted segment per batch, not per
// document, with no timer. Of two writes of one document in a batch the
// later wins (the service serializes them anyway). Apply (index.Batcher)
// queues many writes at once, so the service's background indexer fills
// whole batches instead of one per handful of concurrent saves.
package bleveindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	zapx "github.com/blevesearch/zapx/v17"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/resourced/resourced/index"
)

// layout versions the mapping; an index of another layout is refused
// (rebuild it with resourced reindex).
const layout = "resourced-index-1"

var layoutKey = []byte("resourced-layout")

// never is the expiry of a document that does not expire.
const never = float64(1 << 53)

// maxBatch and maxBatchBytes bound the writes of one bleve Batch, and
// the text they carry: scorch analyzes a whole batch in memory at once,
// at tens of bytes of heap per byte of text (bench/README.md).
const (
	maxBatch      = 1000
	maxBatchBytes = 4 << 20
)

// zapx sizes a new segment's buffer up front from the last one, per
// document, times the batch's documents plus 100: after one document of
// 1 MiB of text, the next batch of one reserved about 100 MiB (and a
// batch of 1000 small ones about 1 GiB) that it never filled (issue 24:
// twice 98 MiB for each large part a gateway offloaded). With both
// factors 0 the buffer grows with what is written, as any bytes.Buffer.
func init() {
	zapx.NewSegmentBufferNumResultsFactor = 0
	zapx.NewSegmentBufferAvgBytesPerDocFactor = 0
}

// Driver is a bleve index; safe for concurrent use.
type Driver struct {
	bi bleve.Index

	mu    sync.Mutex
	queue []*write
	busy  bool // a writer goroutine runs
}

// write is one queued Put (fields) or Delete (fields nil).
type write struct {
	id     string
	fields map[string]any
	size   int        // bytes of text in fields
	done   chan error // buffered
}

// commit queues ws and waits for the batches that write them; it
// returns the first error.
func (d *Driver) commit(ws ...*write) error {
	for _, w := range ws {
		w.done = make(chan error, 1)
	}
	d.mu.Lock()
	d.queue = append(d.queue, ws...)
	if !d.busy {
		d.busy = true
		go d.writer()
	}
	d.mu.Unlock()
	var first error
	for _, w := range ws {
		if err := <-w.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// batchLen is how many writes at the head of q the next batch takes: at
// least one, at most maxBatch, and no more than maxBatchBytes of text
// unless the first alone is larger.
func batchLen(q []*write) int {
	n, size := 0, 0
	for n < min(len(q), maxBatch) && (n == 0 || size+q[n].size <= maxBatchBytes) {
		size += q[n].size
		n++
	}
	return n
}

// writer writes the queue in batches until it is empty.
func (d *Driver) writer() {
	for {
		d.mu.Lock()
		n := batchLen(d.queue)
		if n == 0 {
			d.busy = false
			d.mu.Unlock()
			return
		}
		batch := d.queue[:n:n]
		d.queue = d.queue[n:]
		d.mu.Unlock()
		b := d.bi.NewBatch()
		var failed []*write
		for _, w := range batch {
			if w.fields == nil {
				b.Delete(w.id)
			} else if err := b.Index(w.id, w.fields); err != nil {
				w.done <- err
				failed = append(failed, w)
			}
		}
		err := d.bi.Batch(b)
		for _, w := range batch {
			if !slices.Contains(failed, w) {
				w.done <- err
			}
		}
	}
}

var _ index.Driver = (*Driver)(nil)

// ErrInUse: another process holds the index open (a running server).
var ErrInUse = errors.New("the index is in use by another process")

// Open opens the index in dir, creating it when dir does not exist. An
// index another process holds open is waited for.
func Open(dir string) (*Driver, error) { return OpenWait(dir, 0) }

// OpenWait is Open that waits at most wait (> 0) for an index another
// process holds open, then fails with ErrInUse; 0 waits as long as it
// takes. Operator commands use it, so a running server is reported.
func OpenWait(dir string, wait time.Duration) (*Driver, error) {
	var bi bleve.Index
	var err error
	if wait > 0 {
		bi, err = bleve.OpenUsing(dir, map[string]any{"bolt_timeout": wait.String()})
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("bleveindex: open %s: %w (waited %s)", dir, ErrInUse, wait)
		}
	} else {
		bi, err = bleve.Open(dir)
	}
	switch {
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		m, merr := newMapping()
		if merr != nil {
			return nil, fmt.Errorf("bleveindex: mapping: %w", merr)
		}
		if bi, err = bleve.New(dir, m); err != nil {
			return nil, fmt.Errorf("bleveindex: create %s: %w", dir, err)
		}
		if err := bi.SetInternal(layoutKey, []byte(layout)); err != nil {
			bi.Close()
			return nil, fmt.Errorf("bleveindex: create %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			bi.Close()
			return nil, fmt.Errorf("bleveindex: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("bleveindex: open %s: %w", dir, err)
	default:
		got, err := bi.GetInternal(layoutKey)
		if err != nil || string(got) != layout {
			bi.Close()
			return nil, fmt.Errorf("bleveindex: %s holds layout %q, this version needs %q: remove it and run resourced reindex", dir, got, layout)
		}
	}
	return &Driver{bi: bi}, nil
}

func newMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer("words", map[string]any{"type": custom.Name, "tokenizer": whitespace.Name}); err != nil {
		return nil, err
	}
	im.DefaultAnalyzer = "words"
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	kw := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Analyzer, f.Store, f.IncludeInAll, f.IncludeTermVectors = keyword.Name, store, false, false
		return f
	}
	for _, name := range []string{"tenant", "scheme", "path", "media", "shared"} {
		dm.AddFieldMappingsAt(name, kw(false))
	}
	dm.AddFieldMappingsAt("sha", kw(true))
	for _, name := range []string{"text", "labels"} {
		f := bleve.NewTextFieldMapping()
		f.Analyzer, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = "words", false, false, true, false
		dm.AddFieldMappingsAt(name, f)
	}
	for _, name := range []string{"created", "expires"} {
		f := bleve.NewNumericFieldMapping()
		f.Store, f.IncludeInAll = false, false
		dm.AddFieldMappingsAt(name, f)
	}
	raw := bleve.NewTextFieldMapping()
	raw.Index, raw.Store, raw.IncludeInAll, raw.IncludeTermVectors, raw.DocValues = false, true, false, false, false
	dm.AddFieldMappingsAt("raw", raw)
	// No composite _all field: every query names its fields, and scorch
	// would still build the (empty) field for each document.
	dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	im.DefaultMapping = dm
	return im, im.Validate()
}

// Put implements index.Driver.
func (d *Driver) Put(ctx context.Context, doc *index.Document) error {
	w, err := d.putWrite(doc)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.commit(w)
}

// putWrite is the queued write of doc.
func (d *Driver) putWrite(doc *index.Document) (*write, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	expires := never
	if !doc.Expires.IsZero() {
		expires = float64(doc.Expires.UnixMilli())
	}
	shared := "0"
	if doc.Shared {
		shared = "1"
	}
	fields := map[string]any{
		"tenant": doc.Tenant, "scheme": doc.Scheme, "path": doc.Path, "media": index.MediaBase(doc.MediaType),
		"shared": shared, "sha": doc.SHA256,
		"text":    index.TokenText(doc.Text),
		"labels":  index.TokenText(strings.Join(append([]string{doc.Title}, doc.Labels...), "\n")),
		"created": float64(doc.Created.UnixMilli()), "expires": expires,
		"raw": string(raw),
	}
	return &write{id: doc.URI(), fields: fields, size: len(doc.Text) + len(raw)}, nil
}

// Apply implements index.Batcher: every change is queued at once, so
// the writer takes them in batches as large as maxBatch and
// maxBatchBytes allow, and Apply returns when all are written.
func (d *Driver) Apply(ctx context.Context, puts []*index.Document, deletes []index.Ref) error {
	ws := make([]*write, 0, len(puts)+len(deletes))
	for _, doc := range puts {
		w, err := d.putWrite(doc)
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	for _, r := range deletes {
		ws = append(ws, &write{id: r.URI()})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.commit(ws...)
}

// Delete implements index.Driver.
func (d *Driver) Delete(ctx context.Context, r index.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.commit(&write{id: r.URI()})
}

func term(field, t string) query.Query {
	q := bleve.NewTermQuery(t)
	q.SetField(field)
	return q
}

// phrase matches p in one field.
func phrase(field string, p index.Phrase, boost float64) query.Query {
	var q interface {
		query.Query
		SetBoost(float64)
	}
	if len(p) == 1 {
		tq := bleve.NewTermQuery(p[0])
		tq.SetField(field)
		q = tq
	} else {
		q = bleve.NewPhraseQuery(p, field)
	}
	q.SetBoost(boost)
	return q
}

// expr turns e into a query over the labels, and the text unless
// labelsOnly; a label match weighs four text matches.
func expr(e *index.Expr, labelsOnly bool) query.Query {
	one := func(p index.Phrase) query.Query {
		if labelsOnly {
			return phrase("labels", p, 1)
		}
		return bleve.NewDisjunctionQuery(phrase("text", p, 1), phrase("labels", p, 4))
	}
	b := bleve.NewBooleanQuery()
	groups := make([]query.Query, 0, len(e.All))
	for _, g := range e.All {
		alts := make([]query.Query, 0, len(g))
		for _, p := range g {
			alts = append(alts, one(p))
		}
		groups = append(groups, bleve.NewDisjunctionQuery(alts...))
	}
	b.AddMust(groups...)
	for _, p := range e.Not {
		b.AddMustNot(one(p))
	}
	return b
}

// numeric keeps documents whose field is in [lo, hi) (a zero bound is
// open), or in (lo, ∞) when loExclusive.
func numeric(field string, lo, hi time.Time, loExclusive bool) query.Query {
	var min, max *float64
	if !lo.IsZero() {
		v := float64(lo.UnixMilli())
		min = &v
	}
	if !hi.IsZero() {
		v := float64(hi.UnixMilli())
		max = &v
	}
	minIncl, maxIncl := !loExclusive, false
	q := bleve.NewNumericRangeInclusiveQuery(min, max, &minIncl, &maxIncl)
	q.SetField(field)
	return q
}

// filter is what p keeps, unscored: the tenant's or shared documents,
// live at p.Now, and the filters.
func filter(p *index.Plan) query.Query {
	fs := []query.Query{
		bleve.NewDisjunctionQuery(term("tenant", p.Tenant), term("shared", "1")),
		numeric("expires", p.Now, time.Time{}, true),
	}
	if p.Scheme != "" {
		fs = append(fs, term("scheme", p.Scheme))
	}
	if p.MediaType != "" {
		fs = append(fs, term("media", p.MediaType))
	}
	prefix := func(f, v string) {
		if v != "" {
			q := bleve.NewPrefixQuery(v)
			q.SetField(f)
			fs = append(fs, q)
		}
	}
	prefix("path", p.Prefix)
	prefix("media", p.MediaPrefix)
	if !p.CreatedAfter.IsZero() || !p.CreatedBefore.IsZero() {
		fs = append(fs, numeric("created", p.CreatedAfter, p.CreatedBefore, false))
	}
	if !p.ExpiresAfter.IsZero() || !p.ExpiresBefore.IsZero() {
		fs = append(fs, numeric("expires", p.ExpiresAfter, p.ExpiresBefore, false))
	}
	return bleve.NewConjunctionQuery(fs...)
}

// Search implements index.Driver.
func (d *Driver) Search(ctx context.Context, p *index.Plan) ([]index.Hit, int, bool, error) {
	b := bleve.NewBooleanQuery()
	if p.Match != nil {
		b.AddMust(expr(p.Match, false))
	}
	for _, l := range p.Labels {
		b.AddMust(expr(l, true))
	}
	if p.Match == nil && len(p.Labels) == 0 {
		b.AddMust(bleve.NewMatchAllQuery())
	}
	b.AddFilter(filter(p))
	req := bleve.NewSearchRequestOptions(b, p.Limit, p.Offset, false)
	req.Fields = []string{"raw"}
	if p.Match != nil {
		req.SortBy([]string{"-_score", "_id"})
	} else {
		req.SortBy([]string{"-created", "_id"})
	}
	res, err := d.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, false, err
	}
	hits := make([]index.Hit, 0, len(res.Hits))
	for _, m := range res.Hits {
		raw, _ := m.Fields["raw"].(string)
		var h index.Hit
		if err := json.Unmarshal([]byte(raw), &h.Document); err != nil {
			return nil, 0, false, fmt.Errorf("bleveindex: stored document %s: %w", m.ID, err)
		}
		h.Score = m.Score
		if p.Match == nil {
			h.Score = 1
		}
		hits = append(hits, h)
	}
	if res.Total > index.MaxTotal {
		return hits, index.MaxTotal, true, nil
	}
	return hits, int(res.Total), false, nil
}

// Walk implements index.Driver: every document in _id order, by pages.
func (d *Driver) Walk(ctx context.Context, fn func(index.Entry) error) error {
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1000, 0, false)
		req.Fields = []string{"sha"}
		req.SortBy([]string{"_id"})
		if after != nil {
			req.SetSearchAfter(after)
		}
		res, err := d.bi.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("bleveindex: walk: %w", err)
		}
		for _, m := range res.Hits {
			ref, ok := parseURI(m.ID)
			if !ok {
				return fmt.Errorf("bleveindex: walk: a document id %q that is no URI", m.ID)
			}
			sha, _ := m.Fields["sha"].(string)
			if err := fn(index.Entry{Ref: ref, SHA256: sha}); err != nil {
				return err
			}
		}
		if len(res.Hits) < 1000 {
			return nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// parseURI splits scheme://tenant/path.
func parseURI(u string) (index.Ref, bool) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return index.Ref{}, false
	}
	tenant, path, ok := strings.Cut(rest, "/")
	return index.Ref{Tenant: tenant, Scheme: scheme, Path: path}, ok
}

// Count implements index.Driver.
func (d *Driver) Count(ctx context.Context, tenant string) (int64, error) {
	if tenant == "" {
		n, err := d.bi.DocCount()
		return int64(n), err
	}
	req := bleve.NewSearchRequestOptions(term("tenant", tenant), 0, 0, false)
	res, err := d.bi.SearchInContext(ctx, req)
	if err != nil {
		return 0, err
	}
	return int64(res.Total), nil
}

// Expired implements index.Driver: a range on expires (never is 2^53,
// past any now).
func (d *Driver) Expired(ctx context.Context, now time.Time, limit int) ([]index.Ref, error) {
	req := bleve.NewSearchRequestOptions(numeric("expires", time.Time{}, now.Add(time.Millisecond), false), limit, 0, false)
	req.SortBy([]string{"_id"})
	res, err := d.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("bleveindex: expired: %w", err)
	}
	out := make([]index.Ref, 0, len(res.Hits))
	for _, m := range res.Hits {
		ref, ok := parseURI(m.ID)
		if !ok {
			return nil, fmt.Errorf("bleveindex: expired: a document id %q that is no URI", m.ID)
		}
		out = append(out, ref)
	}
	return out, nil
}

// Close implements index.Driver.
func (d *Driver) Close() error { return d.bi.Close() }
