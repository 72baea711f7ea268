// Package memindex is the in-memory index.Driver: the reference the
// conformance suite runs first, and the index of the memory store. It
// scans every document of the tenant and the shared ones per search, so
// it is for tests and small data only.
package memindex

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resourced/resourced/index"
)

// Driver keeps documents in a map; safe for concurrent use.
type Driver struct {
	mu   sync.RWMutex
	docs map[string]*entry // by URI
}

type entry struct {
	doc          index.Document
	text, labels []string // tokens
}

var _ index.Driver = (*Driver)(nil)

// New returns an empty driver.
func New() *Driver { return &Driver{docs: map[string]*entry{}} }

// Put implements index.Driver.
func (d *Driver) Put(_ context.Context, doc *index.Document) error {
	e := &entry{doc: *doc, text: index.Tokens(doc.Text)}
	e.labels = index.Tokens(strings.Join(append([]string{doc.Title}, doc.Labels...), "\n"))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[doc.URI()] = e
	return nil
}

// Delete implements index.Driver.
func (d *Driver) Delete(_ context.Context, r index.Ref) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.docs, r.URI())
	return nil
}

// count is how often phrase p occurs in toks.
func count(toks []string, p index.Phrase) int {
	n := 0
	for i := 0; i+len(p) <= len(toks); i++ {
		if slices.Equal(toks[i:i+len(p)], p) {
			n++
		}
	}
	return n
}

// score is e's score for x, 0 when it does not match; a label
// occurrence weighs 4 body occurrences, normalised by length.
func score(e *entry, x *index.Expr, labelsOnly bool) float64 {
	if x == nil {
		return 1
	}
	for _, p := range x.Not {
		if count(e.labels, p) > 0 || !labelsOnly && count(e.text, p) > 0 {
			return 0
		}
	}
	total := 0.0
	for _, g := range x.All {
		best := 0.0
		for _, p := range g {
			s := 4 * float64(count(e.labels, p)) / math.Sqrt(float64(len(e.labels)+1))
			if !labelsOnly {
				s += float64(count(e.text, p)) / math.Sqrt(float64(len(e.text)+1))
			}
			best = max(best, s)
		}
		if best == 0 {
			return 0
		}
		total += best
	}
	return total
}

// Search implements index.Driver.
func (d *Driver) Search(ctx context.Context, p *index.Plan) ([]index.Hit, int, bool, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var hits []index.Hit
	for _, e := range d.docs {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		m := &e.doc
		if m.Tenant != p.Tenant && !m.Shared ||
			!m.Expires.IsZero() && !m.Expires.After(p.Now) ||
			p.Scheme != "" && m.Scheme != p.Scheme ||
			!strings.HasPrefix(m.Path, p.Prefix) ||
			p.MediaType != "" && index.MediaBase(m.MediaType) != p.MediaType ||
			!strings.HasPrefix(index.MediaBase(m.MediaType), p.MediaPrefix) ||
			!p.CreatedAfter.IsZero() && m.Created.Before(p.CreatedAfter) ||
			!p.CreatedBefore.IsZero() && !m.Created.Before(p.CreatedBefore) ||
			!p.ExpiresAfter.IsZero() && !m.Expires.IsZero() && m.Expires.Before(p.ExpiresAfter) ||
			!p.ExpiresBefore.IsZero() && (m.Expires.IsZero() || !m.Expires.Before(p.ExpiresBefore)) {
			continue
		}
		s := score(e, p.Match, false)
		for _, l := range p.Labels {
			if score(e, l, true) == 0 {
				s = 0
			}
		}
		if s > 0 {
			hits = append(hits, index.Hit{Document: *m, Score: s})
		}
	}
	slices.SortFunc(hits, func(a, b index.Hit) int {
		if p.Match != nil && a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if p.Match == nil && !a.Created.Equal(b.Created) {
			return b.Created.Compare(a.Created)
		}
		return strings.Compare(a.URI(), b.URI())
	})
	total := len(hits)
	hits = hits[min(p.Offset, len(hits)):]
	hits = hits[:min(p.Limit, len(hits))]
	if total > index.MaxTotal {
		return hits, index.MaxTotal, true, nil
	}
	return hits, total, false, nil
}

// Walk implements index.Driver.
func (d *Driver) Walk(ctx context.Context, fn func(index.Entry) error) error {
	d.mu.RLock()
	entries := make([]index.Entry, 0, len(d.docs))
	for _, e := range d.docs {
		entries = append(entries, index.Entry{Ref: e.doc.Ref, SHA256: e.doc.SHA256})
	}
	d.mu.RUnlock()
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Count implements index.Driver.
func (d *Driver) Count(_ context.Context, tenant string) (int64, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var n int64
	for _, e := range d.docs {
		if tenant == "" || e.doc.Tenant == tenant {
			n++
		}
	}
	return n, nil
}

// Expired implements index.Driver.
func (d *Driver) Expired(ctx context.Context, now time.Time, limit int) ([]index.Ref, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []index.Ref
	for _, e := range d.docs {
		if len(out) == limit {
			break
		}
		if !e.doc.Expires.IsZero() && !e.doc.Expires.After(now) {
			out = append(out, e.doc.Ref)
		}
	}
	return out, ctx.Err()
}

// Close implements index.Driver.
func (d *Driver) Close() error { return nil }
