// Package memstore owns the in-memory reference store.Backend: a map behind
// one mutex, for tests and for `store.backend: memory`. It keeps nothing
// across restarts. It is the simplest implementation of the contract, so it
// is the one the conformance suite in storetest is checked against first.
//
// Bodies are copied in on Put and out on Get; times are kept at full
// precision, in UTC.
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
	"fmt"
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

// Store is an in-memory store.Backend, safe for concurrent use.
type Store struct {
	now func() time.Time

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
	_ store.Backend       = (*Store)(nil)
	_ store.PublicLister  = (*Store)(nil)
	_ store.EncodedViewer = (*Store)(nil)
)

// New returns an empty Store.
func New(opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:     now,
		tenants: make(map[string]map[store.Position]*entry),
		usage:   make(map[string]store.Usage),
	}
}

func posOf(k store.Key) store.Position {
	return store.Position{Scheme: k.Scheme(), Path: k.Path()}
}

func checkKey(op string, k store.Key) error {
	if k.IsZero() {
		return fmt.Errorf("memstore: %s: %w: zero key", op, store.ErrInvalidKey)
	}
	return nil
}

// live returns the unexpired entry at k, or nil. The caller holds s.mu.
func (s *Store) live(k store.Key) *entry {
	e := s.tenants[k.Tenant()][posOf(k)]
	if e == nil || e.meta.Expired(s.now()) {
		return nil
	}
	return e
}

// Put implements store.Backend.
func (s *Store) Put(ctx context.Context, obj *store.Object, cond store.Cond) (store.Meta, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Meta{}, false, fmt.Errorf("memstore: put: %w", err)
	}
	if err := store.CheckPut(obj, cond); err != nil {
		return store.Meta{}, false, fmt.Errorf("memstore: %w", err)
	}
	k := obj.Key
	m := obj.Meta
	m.Created = m.Created.UTC()
	m.Modified = m.Modified.UTC()
	m.Expires = m.Expires.UTC()
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
	cur := s.live(k)
	var curMeta *store.Meta
	if cur != nil {
		curMeta = &cur.meta
	}
	if err := store.CheckCond(k, curMeta, cond); err != nil {
		return store.Meta{}, false, fmt.Errorf("memstore: put: %w", err)
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
	if !cond.Quota.IsZero() && u.Exceeds(cond.Quota) {
		return store.Meta{}, false, fmt.Errorf("memstore: put %s: %w (usage after the write %d bytes in %d objects, quota %d bytes, %d objects)",
			k, store.ErrQuotaExceeded, u.Bytes, u.Objects, cond.Quota.Bytes, cond.Quota.Objects)
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

// Get implements store.Backend.
func (s *Store) Get(ctx context.Context, k store.Key) (*store.Object, error) {
	var obj *store.Object
	err := s.view(ctx, "get", k, func(m *store.Meta, _, body []byte) error {
		obj = &store.Object{Meta: *m, Body: bytes.Clone(body)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// View implements store.EncodedViewer. fn runs under the read lock: it
// sees the entry's own slices, which no Put modifies (a Put replaces the
// entry).
func (s *Store) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	return s.view(ctx, "view", k, fn)
}

// view calls fn with the live entry at k under the read lock; op names
// the caller in errors.
func (s *Store) view(ctx context.Context, op string, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %s %s: %w", op, k, err)
	}
	if err := checkKey(op, k); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	e := s.live(k)
	if e == nil {
		return fmt.Errorf("memstore: %s %s: %w", op, k, store.ErrNotFound)
	}
	m := e.meta
	return fn(&m, e.encoded, e.body)
}

// Stat implements store.Backend.
func (s *Store) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	if err := ctx.Err(); err != nil {
		return store.Meta{}, fmt.Errorf("memstore: stat %s: %w", k, err)
	}
	if err := checkKey("stat", k); err != nil {
		return store.Meta{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Meta{}, errClosed
	}
	e := s.live(k)
	if e == nil {
		return store.Meta{}, fmt.Errorf("memstore: stat %s: %w", k, store.ErrNotFound)
	}
	return e.meta, nil
}

// List implements store.Backend. It sorts the tenant's keys on every call,
// which is fine for a reference implementation.
func (s *Store) List(ctx context.Context, q store.ListQuery) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, fmt.Errorf("memstore: list: %w", err)
	}
	if err := checkQuery(q); err != nil {
		return store.Page{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Page{}, errClosed
	}
	now := s.now()
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

func checkQuery(q store.ListQuery) error {
	if err := store.ValidTenant(q.Tenant); err != nil {
		return fmt.Errorf("memstore: list: %w", err)
	}
	if q.Scheme != "" {
		if err := store.ValidScheme(q.Scheme); err != nil {
			return fmt.Errorf("memstore: list: %w", err)
		}
	} else if q.Prefix != "" {
		return fmt.Errorf("memstore: list: prefix %q without a scheme", q.Prefix)
	}
	if q.Limit <= 0 {
		return fmt.Errorf("memstore: list: limit %d, want > 0", q.Limit)
	}
	return nil
}

// ListPublic implements store.PublicLister. It filters and sorts every
// object on each call: O(all objects), which is fine for the reference
// implementation (the index the interface asks for is an optimisation the
// results do not show).
func (s *Store) ListPublic(ctx context.Context, after store.PublicPosition, limit int) (store.PublicPage, error) {
	if err := ctx.Err(); err != nil {
		return store.PublicPage{}, fmt.Errorf("memstore: list public: %w", err)
	}
	if limit <= 0 {
		return store.PublicPage{}, fmt.Errorf("memstore: list public: limit %d, want > 0", limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.PublicPage{}, errClosed
	}
	now := s.now()
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

// Delete implements store.Backend.
func (s *Store) Delete(ctx context.Context, k store.Key, cond store.Cond) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: delete %s: %w", k, err)
	}
	if err := checkKey("delete", k); err != nil {
		return err
	}
	if err := checkDeleteCond(k, cond); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	e := s.live(k)
	if e == nil {
		return fmt.Errorf("memstore: delete %s: %w", k, store.ErrNotFound)
	}
	if err := store.CheckCond(k, &e.meta, cond); err != nil {
		return fmt.Errorf("memstore: delete: %w", err)
	}
	s.remove(k, e)
	return nil
}

// remove deletes the entry e at k and its usage. The caller holds s.mu.
func (s *Store) remove(k store.Key, e *entry) {
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

// DeleteExpired implements store.Backend. It scans the map under the
// write lock until it has removed limit objects: O(objects scanned), which
// is fine for the reference implementation. Holding the lock throughout,
// it cannot race with a Put.
func (s *Store) DeleteExpired(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memstore: delete expired: %w", err)
	}
	if limit <= 0 {
		return 0, fmt.Errorf("memstore: delete expired: limit %d, want > 0", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	now := s.now()
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

// Usage implements store.Backend.
func (s *Store) Usage(ctx context.Context, tenant string) (store.Usage, error) {
	if err := ctx.Err(); err != nil {
		return store.Usage{}, fmt.Errorf("memstore: usage: %w", err)
	}
	if err := store.ValidTenant(tenant); err != nil {
		return store.Usage{}, fmt.Errorf("memstore: usage: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Usage{}, errClosed
	}
	return s.usage[tenant], nil
}

func checkDeleteCond(k store.Key, cond store.Cond) error {
	switch {
	case cond.Kind == store.Always:
		return nil
	case cond.Kind == store.IfMatch && cond.SHA256 != "":
		return nil
	}
	return fmt.Errorf("memstore: delete %s: invalid condition %+v (want Always or IfMatch with a hash)", k, cond)
}

// Ping implements store.Backend.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: ping: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Close drops every object. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tenants = nil
	s.usage = nil
	return nil
}
