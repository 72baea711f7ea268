// Package memstore owns the in-memory reference store driver: a map behind
// one mutex, for tests and for `store.backend: memory`. It keeps nothing
// across restarts. It is the simplest implementation of store.Driver, so it
// is the one the conformance suite in storetest is checked against first.
// New returns the portable store.Bucket over it; the Bucket validates,
// hashes, normalises times and judges expiry, so the driver only keeps
// what it is given.
//
// Bodies are copied in on Put and out on Get (by the Bucket); times are
// kept as the Bucket gives them, to the millisecond, in UTC.
//
// Expired objects stay in the map, invisible, until a Put replaces them or
// DeleteExpired removes them; they count in Usage until then. Usage is
// kept per tenant beside the map and changed under the same lock as the
// objects, so quota checks are exact.
package memstore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resourced/resourced/store"
)

// errClosed is returned by every method after Close.
var errClosed = errors.New("memstore: closed")

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// Now is the clock used for expiry; nil means time.Now.
	Now func() time.Time
}

// New returns an empty store: a store.Bucket over a new Driver.
func New(opts Options) *store.Bucket {
	return store.NewBucket(NewDriver(), store.Options{Now: opts.Now})
}

// Driver is the in-memory store.Driver and store.ViewDriver, safe for
// concurrent use.
type Driver struct {
	mu      sync.RWMutex
	closed  bool
	tenants map[string]map[store.Position]*entry
	usage   map[string]store.Usage // every stored object, expired or not
}

type entry struct {
	meta    store.Meta
	body    []byte
	encoded []byte // Object.Encoded; nil when none
}

var (
	_ store.Driver     = (*Driver)(nil)
	_ store.ViewDriver = (*Driver)(nil)
)

// NewDriver returns an empty Driver.
func NewDriver() *Driver {
	return &Driver{
		tenants: make(map[string]map[store.Position]*entry),
		usage:   make(map[string]store.Usage),
	}
}

func posOf(k store.Key) store.Position {
	return store.Position{Scheme: k.Scheme(), Path: k.Path()}
}

// live returns the entry at k unexpired at now, or nil. The caller holds
// s.mu.
func (s *Driver) live(k store.Key, now time.Time) *entry {
	e := s.tenants[k.Tenant()][posOf(k)]
	if e == nil || e.meta.Expired(now) {
		return nil
	}
	return e
}

// Put implements store.Driver.
func (s *Driver) Put(ctx context.Context, obj *store.Object, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	k := obj.Key
	m := obj.Meta
	body := bytes.Clone(obj.Body)
	if body == nil {
		body = []byte{}
	}
	var encoded []byte
	if len(obj.Encoded) > 0 {
		encoded = bytes.Clone(obj.Encoded)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Meta{}, false, errClosed
	}
	cur := s.live(k, now())
	var curMeta *store.Meta
	if cur != nil {
		curMeta = &cur.meta
	}
	if err := store.CheckCond(curMeta, cond); err != nil {
		return store.Meta{}, false, err
	}
	// The usage after the write: a replaced object, live or expired,
	// gives back its size and keeps its slot.
	u := s.usage[k.Tenant()]
	u.Bytes += m.Size
	if old := s.tenants[k.Tenant()][posOf(k)]; old != nil {
		u.Bytes -= old.meta.Size
	} else {
		u.Objects++
	}
	if err := store.CheckQuota(u, cond.Quota); err != nil {
		return store.Meta{}, false, err
	}
	if cur != nil {
		m.Created = cur.meta.Created
	}
	t := s.tenants[k.Tenant()]
	if t == nil {
		t = make(map[store.Position]*entry)
		s.tenants[k.Tenant()] = t
	}
	t[posOf(k)] = &entry{meta: m, body: body, encoded: encoded}
	s.usage[k.Tenant()] = u
	return m, cur != nil, nil
}

// Read implements store.Driver.
func (s *Driver) Read(ctx context.Context, k store.Key, fn func(m *store.Meta, body []byte) error) error {
	return s.View(ctx, k, func(m *store.Meta, _, body []byte) error { return fn(m, body) })
}

// View implements store.ViewDriver. fn runs under the read lock: it sees
// the entry's own slices, which no Put modifies (a Put replaces the
// entry).
func (s *Driver) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	e := s.tenants[k.Tenant()][posOf(k)]
	if e == nil {
		return store.ErrNotFound
	}
	m := e.meta
	return fn(&m, e.encoded, e.body)
}

// Stat implements store.Driver.
func (s *Driver) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Meta{}, errClosed
	}
	e := s.tenants[k.Tenant()][posOf(k)]
	if e == nil {
		return store.Meta{}, store.ErrNotFound
	}
	return e.meta, nil
}

// List implements store.Driver. It sorts the tenant's keys on every call,
// which is fine for a reference implementation.
func (s *Driver) List(ctx context.Context, q store.ListQuery, clock func() time.Time) (store.Page, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Page{}, errClosed
	}
	now := clock()
	var match []*entry
	for pos, e := range s.tenants[q.Tenant] {
		switch {
		case !q.After.Less(pos),
			q.Scheme != "" && pos.Scheme != q.Scheme,
			!strings.HasPrefix(pos.Path, q.Prefix),
			q.ListedOnly && !e.meta.Listed,
			e.meta.Expired(now):
			continue
		}
		match = append(match, e)
	}
	slices.SortFunc(match, func(a, b *entry) int {
		if c := strings.Compare(a.meta.Key.Scheme(), b.meta.Key.Scheme()); c != 0 {
			return c
		}
		return strings.Compare(a.meta.Key.Path(), b.meta.Key.Path())
	})
	var p store.Page
	for i, e := range match {
		if i == q.Limit {
			p.More = true
			break
		}
		p.Items = append(p.Items, e.meta)
		p.Next = posOf(e.meta.Key)
	}
	return p, nil
}

// ListPublic implements store.Driver. It filters and sorts every object on
// each call: O(all objects), which is fine for the reference
// implementation (the index store.PublicLister asks for is an
// optimisation the results do not show).
func (s *Driver) ListPublic(ctx context.Context, after store.PublicPosition, limit int, clock func() time.Time) (store.PublicPage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.PublicPage{}, errClosed
	}
	now := clock()
	var match []store.Meta
	for _, t := range s.tenants {
		for _, e := range t {
			m := &e.meta
			if !m.Listed || m.Visibility != store.Public || m.Expired(now) || !after.Less(publicPosOf(m.Key)) {
				continue
			}
			match = append(match, *m)
		}
	}
	slices.SortFunc(match, func(a, b store.Meta) int {
		pa, pb := publicPosOf(a.Key), publicPosOf(b.Key)
		switch {
		case pa.Less(pb):
			return -1
		case pb.Less(pa):
			return 1
		}
		return 0
	})
	var p store.PublicPage
	for i, m := range match {
		if i == limit {
			p.More = true
			break
		}
		p.Items = append(p.Items, m)
		p.Next = publicPosOf(m.Key)
	}
	return p, nil
}

func publicPosOf(k store.Key) store.PublicPosition {
	return store.PublicPosition{Tenant: k.Tenant(), Scheme: k.Scheme(), Path: k.Path()}
}

// Delete implements store.Driver.
func (s *Driver) Delete(ctx context.Context, k store.Key, cond store.Cond, now func() time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	e := s.live(k, now())
	if e == nil {
		return store.ErrNotFound
	}
	if err := store.CheckCond(&e.meta, cond); err != nil {
		return err
	}
	s.remove(k, e)
	return nil
}

// remove deletes the entry e at k and its usage. The caller holds s.mu.
func (s *Driver) remove(k store.Key, e *entry) {
	t := s.tenants[k.Tenant()]
	delete(t, posOf(k))
	if len(t) == 0 {
		delete(s.tenants, k.Tenant())
	}
	u := s.usage[k.Tenant()]
	u.Bytes -= e.meta.Size
	u.Objects--
	if u.Objects == 0 {
		delete(s.usage, k.Tenant())
	} else {
		s.usage[k.Tenant()] = u
	}
}

// DeleteExpired implements store.Driver. It scans the map under the write
// lock until it has removed limit objects: O(objects scanned), which is
// fine for the reference implementation. Holding the lock throughout, it
// cannot race with a Put.
func (s *Driver) DeleteExpired(ctx context.Context, limit int, clock func() time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	now := clock()
	n := 0
	for _, t := range s.tenants {
		for _, e := range t {
			if n == limit {
				return n, nil
			}
			if e.meta.Expired(now) {
				s.remove(e.meta.Key, e) // deleting during range is allowed
				n++
			}
		}
	}
	return n, nil
}

// Usage implements store.Driver.
func (s *Driver) Usage(ctx context.Context, tenant string) (store.Usage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Usage{}, errClosed
	}
	return s.usage[tenant], nil
}

// Ping implements store.Driver.
func (s *Driver) Ping(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Close drops every object. Later calls fail.
func (s *Driver) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tenants = nil
	s.usage = nil
	return nil
}
