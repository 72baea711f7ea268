// Package boltstore owns the bbolt store.Backend, the default storage of
// resourced: one file, fsync on every commit, one bucket tree per tenant.
//
// Layout of the file:
//
//	"v1"                          root bucket; the name is the layout version
//	└── <tenant>                  one bucket per tenant ("t1" and "t10" are siblings)
//	    └── <scheme>              one bucket per scheme, e.g. "report"
//	        └── <path> = record   key: the path bytes, e.g. "2026/q1/summary"
//	"v1-public"                   index of public listed objects, for ListPublic
//	└── <tenant> 0x00 <scheme> 0x00 <path> = ""
//	                              e.g. "t1\x00report\x002026/q1/summary"
//
// The index holds one empty value per object whose metadata says Listed and
// Public, expired or not: Put adds or removes the entry in the same
// transaction that writes the object (also when it replaces an expired
// one), Delete removes it with the object. No key part contains 0x00, which
// sorts below every byte they may contain, so the byte order of index keys
// is (tenant, scheme, path) order ("t1" < "t1-x" < "t10"). ListPublic seeks
// the index and reads each entry's metadata from the tree above, skipping
// expired objects. A file written before the index existed gets it built
// from the tree when Open first creates the bucket.
//
// A record is one value:
//
//	+---------+------------------+------------------+--------------+
//	| version | uvarint metaLen  | metadata         | body         |
//	| 1 byte  | 1..10 bytes      | metaLen bytes    | the rest     |
//	+---------+------------------+------------------+--------------+
//
// Version 1 metadata is: a flags byte (bit 0: Listed); varints Size,
// Created, Modified and Expires (times as Unix milliseconds, the zero time as
// its own UnixMilli); then uvarint-length strings MIMEType, SHA256, Title,
// Description and Visibility. The key is not stored: it is where the record
// is. Stat and List decode the metadata only and never copy the body.
//
// Times are kept to the millisecond, in UTC. Put returns the metadata as it
// will read back.
//
// Durability: bbolt fsyncs every commit (NoSync is never set). Put and Delete
// go through DB.Batch, so concurrent writers share commits; a batch function
// may run more than once and is written to be idempotent. Reads use View and
// copy values out before the transaction ends.
//
// Deleting the last object of a scheme or tenant removes that bucket too.
// An expired object stays in the file, invisible to every method, until a
// Put over it replaces it.
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
)

// DefaultTimeout is how long Open waits for the file lock by default.
const DefaultTimeout = 5 * time.Second

// rootBucket is the top-level bucket; its name versions the layout.
const rootBucket = "v1"

// publicBucket is the top-level bucket of the index of public listed
// objects, a sibling of rootBucket.
const publicBucket = "v1-public"

// Options configures Open. The zero value is ready to use.
type Options struct {
	// Now is the clock used for expiry; nil means time.Now.
	Now func() time.Time
	// Timeout is how long Open waits for another process's lock on the
	// file; zero or negative means DefaultTimeout. bbolt's "wait forever"
	// is never used.
	Timeout time.Duration
}

// Store is a store.Backend in one bbolt file, safe for concurrent use.
type Store struct {
	db  *bolt.DB
	now func() time.Time
}

var (
	_ store.Backend      = (*Store)(nil)
	_ store.PublicLister = (*Store)(nil)
)

// Open opens or creates the database at path, creating its directory with
// mode 0700 and the file with mode 0600. It fails after opts.Timeout if
// another Store, in this or another process, holds the file.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("boltstore: open: empty path")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore: open: %w", err)
	}
	bo := *bolt.DefaultOptions
	bo.Timeout = timeout
	db, err := bolt.Open(path, 0o600, &bo)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		r, err := tx.CreateBucketIfNotExists([]byte(rootBucket))
		if err != nil {
			return err
		}
		if tx.Bucket([]byte(publicBucket)) != nil {
			return nil
		}
		idx, err := tx.CreateBucket([]byte(publicBucket))
		if err != nil {
			return err
		}
		return buildIndex(r, idx)
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &Store{db: db, now: now}, nil
}

// buildIndex adds an index entry for every public listed object of the tree
// under r; Open runs it when a file has no index yet.
func buildIndex(r, idx *bolt.Bucket) error {
	return r.ForEachBucket(func(tenant []byte) error {
		tb := r.Bucket(tenant)
		return tb.ForEachBucket(func(scheme []byte) error {
			return tb.Bucket(scheme).ForEach(func(p, v []byte) error {
				if v == nil {
					return nil
				}
				m, err := decodeMeta(v)
				if err != nil {
					return fmt.Errorf("building the public index: %s://%s/%s: %w", scheme, tenant, p, err)
				}
				if !indexed(&m) {
					return nil
				}
				return idx.Put(indexKey(string(tenant), string(scheme), string(p)), nil)
			})
		})
	})
}

// indexed reports whether an object with metadata m has an index entry.
func indexed(m *store.Meta) bool {
	return m.Listed && m.Visibility == store.Public
}

// indexKey returns the index key of an object: tenant, scheme and path
// joined by 0x00.
func indexKey(tenant, scheme, path string) []byte {
	b := make([]byte, 0, len(tenant)+len(scheme)+len(path)+2)
	b = append(b, tenant...)
	b = append(b, 0)
	b = append(b, scheme...)
	b = append(b, 0)
	return append(b, path...)
}

// parseIndexKey returns the key of an index entry.
func parseIndexKey(ik []byte) (store.Key, error) {
	parts := bytes.SplitN(ik, []byte{0}, 3)
	if len(parts) != 3 {
		return store.Key{}, fmt.Errorf("boltstore: corrupt public index entry %q", ik)
	}
	k, err := store.NewKey(string(parts[0]), string(parts[1]), string(parts[2]))
	if err != nil {
		return store.Key{}, fmt.Errorf("boltstore: corrupt public index entry %q: %w", ik, err)
	}
	return k, nil
}

// seekKey returns where ListPublic starts in the index: at or before the
// entry of every object after after. It is after's index key, cut before
// the first 0x00 inside one of its parts (no stored key has one there), as
// a cut key sorts below every longer key it starts.
func seekKey(after store.PublicPosition) []byte {
	var b []byte
	for i, part := range []string{after.Tenant, after.Scheme, after.Path} {
		if i > 0 {
			b = append(b, 0)
		}
		if j := strings.IndexByte(part, 0); j >= 0 {
			return append(b, part[:j]...)
		}
		b = append(b, part...)
	}
	return b
}

func index(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket([]byte(publicBucket))
	if b == nil {
		return nil, fmt.Errorf("boltstore: index bucket %q missing", publicBucket)
	}
	return b, nil
}

func checkKey(op string, k store.Key) error {
	if k.IsZero() {
		return fmt.Errorf("boltstore: %s: %w: zero key", op, store.ErrInvalidKey)
	}
	return nil
}

func root(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket([]byte(rootBucket))
	if b == nil {
		return nil, fmt.Errorf("boltstore: root bucket %q missing", rootBucket)
	}
	return b, nil
}

// schemeBucket returns the bucket of k's tenant and scheme, or nil.
func schemeBucket(tx *bolt.Tx, k store.Key) (*bolt.Bucket, error) {
	r, err := root(tx)
	if err != nil {
		return nil, err
	}
	tb := r.Bucket([]byte(k.Tenant()))
	if tb == nil {
		return nil, nil
	}
	return tb.Bucket([]byte(k.Scheme())), nil
}

// liveMeta returns the metadata of the live object at k in sb (nil when
// missing or expired) and the raw record.
func (s *Store) liveMeta(sb *bolt.Bucket, k store.Key) (*store.Meta, []byte, error) {
	if sb == nil {
		return nil, nil, nil
	}
	v := sb.Get([]byte(k.Path()))
	if v == nil {
		return nil, nil, nil
	}
	m, err := decodeMeta(v)
	if err != nil {
		return nil, nil, fmt.Errorf("boltstore: %s: %w", k, err)
	}
	if m.Expired(s.now()) {
		return nil, nil, nil
	}
	m.Key = k
	return &m, v, nil
}

// Put implements store.Backend.
func (s *Store) Put(ctx context.Context, obj *store.Object, cond store.Cond) (store.Meta, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Meta{}, false, fmt.Errorf("boltstore: put: %w", err)
	}
	if err := store.CheckPut(obj, cond); err != nil {
		return store.Meta{}, false, fmt.Errorf("boltstore: %w", err)
	}
	k := obj.Key
	want := normalize(obj.Meta)
	body := obj.Body
	var (
		stored   store.Meta
		replaced bool
	)
	// The function may run more than once (bbolt re-runs a batch when one
	// of its functions fails): it only assigns its results.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		r, err := root(tx)
		if err != nil {
			return err
		}
		idx, err := index(tx)
		if err != nil {
			return err
		}
		tb, err := r.CreateBucketIfNotExists([]byte(k.Tenant()))
		if err != nil {
			return fmt.Errorf("boltstore: put %s: %w", k, err)
		}
		sb, err := tb.CreateBucketIfNotExists([]byte(k.Scheme()))
		if err != nil {
			return fmt.Errorf("boltstore: put %s: %w", k, err)
		}
		cur, _, err := s.liveMeta(sb, k)
		if err != nil {
			return err
		}
		if err := store.CheckCond(k, cur, cond); err != nil {
			return fmt.Errorf("boltstore: put: %w", err)
		}
		m := want
		if cur != nil {
			m.Created = cur.Created
		}
		if err := sb.Put([]byte(k.Path()), encodeRecord(&m, body)); err != nil {
			return fmt.Errorf("boltstore: put %s: %w", k, err)
		}
		// The entry follows the new object, whatever the old one was
		// (live, expired or absent).
		ik := indexKey(k.Tenant(), k.Scheme(), k.Path())
		if indexed(&m) {
			err = idx.Put(ik, nil)
		} else {
			err = idx.Delete(ik)
		}
		if err != nil {
			return fmt.Errorf("boltstore: put %s: public index: %w", k, err)
		}
		stored, replaced = m, cur != nil
		return nil
	})
	if err != nil {
		return store.Meta{}, false, err
	}
	return stored, replaced, nil
}

// Get implements store.Backend.
func (s *Store) Get(ctx context.Context, k store.Key) (*store.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boltstore: get %s: %w", k, err)
	}
	if err := checkKey("get", k); err != nil {
		return nil, err
	}
	var obj *store.Object
	err := s.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, k)
		if err != nil {
			return err
		}
		m, v, err := s.liveMeta(sb, k)
		if err != nil {
			return err
		}
		if m == nil {
			return fmt.Errorf("boltstore: get %s: %w", k, store.ErrNotFound)
		}
		_, b, err := splitRecord(v)
		if err != nil {
			return fmt.Errorf("boltstore: get %s: %w", k, err)
		}
		obj = &store.Object{Meta: *m, Body: bytes.Clone(b)}
		if obj.Body == nil {
			obj.Body = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Stat implements store.Backend.
func (s *Store) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	if err := ctx.Err(); err != nil {
		return store.Meta{}, fmt.Errorf("boltstore: stat %s: %w", k, err)
	}
	if err := checkKey("stat", k); err != nil {
		return store.Meta{}, err
	}
	var meta store.Meta
	err := s.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, k)
		if err != nil {
			return err
		}
		m, _, err := s.liveMeta(sb, k)
		if err != nil {
			return err
		}
		if m == nil {
			return fmt.Errorf("boltstore: stat %s: %w", k, store.ErrNotFound)
		}
		meta = *m
		return nil
	})
	if err != nil {
		return store.Meta{}, err
	}
	return meta, nil
}

func checkQuery(q store.ListQuery) error {
	if err := store.ValidTenant(q.Tenant); err != nil {
		return fmt.Errorf("boltstore: list: %w", err)
	}
	if q.Scheme != "" {
		if err := store.ValidScheme(q.Scheme); err != nil {
			return fmt.Errorf("boltstore: list: %w", err)
		}
	} else if q.Prefix != "" {
		return fmt.Errorf("boltstore: list: prefix %q without a scheme", q.Prefix)
	}
	if q.Limit <= 0 {
		return fmt.Errorf("boltstore: list: limit %d, want > 0", q.Limit)
	}
	return nil
}

// List implements store.Backend. It walks the tenant's scheme buckets in
// order, seeking each to the cursor or the prefix, and peeks past the last
// item so that More is exact.
func (s *Store) List(ctx context.Context, q store.ListQuery) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, fmt.Errorf("boltstore: list: %w", err)
	}
	if err := checkQuery(q); err != nil {
		return store.Page{}, err
	}
	var page store.Page
	err := s.db.View(func(tx *bolt.Tx) error {
		r, err := root(tx)
		if err != nil {
			return err
		}
		tb := r.Bucket([]byte(q.Tenant))
		if tb == nil {
			return nil
		}
		l := lister{q: q, now: s.now(), prefix: []byte(q.Prefix)}
		if q.Scheme != "" {
			if q.Scheme < q.After.Scheme {
				return nil
			}
			if sb := tb.Bucket([]byte(q.Scheme)); sb != nil {
				_, err = l.scheme(q.Scheme, sb)
			}
			page = l.page
			return err
		}
		c := tb.Cursor()
		for name, v := c.Seek([]byte(q.After.Scheme)); name != nil; name, v = c.Next() {
			if v != nil {
				continue // not a bucket
			}
			done, err := l.scheme(string(name), tb.Bucket(name))
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
		page = l.page
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	return page, nil
}

// lister collects one page inside a View transaction.
type lister struct {
	q      store.ListQuery
	now    time.Time
	prefix []byte
	page   store.Page
}

// scheme adds the matching objects of one scheme bucket; done reports that
// the page is full and More is known.
func (l *lister) scheme(scheme string, sb *bolt.Bucket) (done bool, err error) {
	start := l.prefix
	after := l.q.After.Scheme == scheme
	if after && l.q.After.Path > l.q.Prefix {
		start = []byte(l.q.After.Path)
	}
	c := sb.Cursor()
	for p, v := c.Seek(start); p != nil; p, v = c.Next() {
		if !bytes.HasPrefix(p, l.prefix) {
			break
		}
		if v == nil || after && string(p) <= l.q.After.Path {
			continue
		}
		m, err := decodeMeta(v)
		if err != nil {
			return false, fmt.Errorf("boltstore: list %s://%s/%s: %w", scheme, l.q.Tenant, p, err)
		}
		if m.Expired(l.now) || l.q.ListedOnly && !m.Listed {
			continue
		}
		if len(l.page.Items) == l.q.Limit {
			l.page.More = true
			return true, nil
		}
		k, err := store.NewKey(l.q.Tenant, scheme, string(p))
		if err != nil {
			return false, fmt.Errorf("boltstore: list: stored key: %w", err)
		}
		m.Key = k
		l.page.Items = append(l.page.Items, m)
		l.page.Next = store.Position{Scheme: scheme, Path: k.Path()}
	}
	return false, nil
}

// ListPublic implements store.PublicLister. It seeks the index to after,
// reads the metadata of each entry's object and skips expired ones, and
// peeks past the last item so that More is exact. It costs one index entry
// and one metadata decode per item or skipped (expired) object.
func (s *Store) ListPublic(ctx context.Context, after store.PublicPosition, limit int) (store.PublicPage, error) {
	if err := ctx.Err(); err != nil {
		return store.PublicPage{}, fmt.Errorf("boltstore: list public: %w", err)
	}
	if limit <= 0 {
		return store.PublicPage{}, fmt.Errorf("boltstore: list public: limit %d, want > 0", limit)
	}
	var page store.PublicPage
	err := s.db.View(func(tx *bolt.Tx) error {
		r, err := root(tx)
		if err != nil {
			return err
		}
		idx, err := index(tx)
		if err != nil {
			return err
		}
		c := idx.Cursor()
		n := 0
		for ik, _ := c.Seek(seekKey(after)); ik != nil; ik, _ = c.Next() {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("boltstore: list public: %w", err)
				}
			}
			k, err := parseIndexKey(ik)
			if err != nil {
				return err
			}
			pos := store.PublicPosition{Tenant: k.Tenant(), Scheme: k.Scheme(), Path: k.Path()}
			if !after.Less(pos) {
				continue
			}
			var sb *bolt.Bucket
			if tb := r.Bucket([]byte(k.Tenant())); tb != nil {
				sb = tb.Bucket([]byte(k.Scheme()))
			}
			m, _, err := s.liveMeta(sb, k)
			if err != nil {
				return err
			}
			if m == nil || !indexed(m) {
				continue // expired (or, in a damaged file, a stale entry)
			}
			if len(page.Items) == limit {
				page.More = true
				return nil
			}
			page.Items = append(page.Items, *m)
			page.Next = pos
		}
		return nil
	})
	if err != nil {
		return store.PublicPage{}, err
	}
	return page, nil
}

// Delete implements store.Backend. Removing the last object of a scheme or
// tenant removes its bucket.
func (s *Store) Delete(ctx context.Context, k store.Key, cond store.Cond) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: delete %s: %w", k, err)
	}
	if err := checkKey("delete", k); err != nil {
		return err
	}
	switch {
	case cond.Kind == store.Always:
	case cond.Kind == store.IfMatch && cond.SHA256 != "":
	default:
		return fmt.Errorf("boltstore: delete %s: invalid condition %+v (want Always or IfMatch with a hash)", k, cond)
	}
	// Idempotent: it reads everything it decides on from tx.
	return s.db.Batch(func(tx *bolt.Tx) error {
		r, err := root(tx)
		if err != nil {
			return err
		}
		tb := r.Bucket([]byte(k.Tenant()))
		var sb *bolt.Bucket
		if tb != nil {
			sb = tb.Bucket([]byte(k.Scheme()))
		}
		cur, _, err := s.liveMeta(sb, k)
		if err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("boltstore: delete %s: %w", k, store.ErrNotFound)
		}
		if err := store.CheckCond(k, cur, cond); err != nil {
			return fmt.Errorf("boltstore: delete: %w", err)
		}
		if err := sb.Delete([]byte(k.Path())); err != nil {
			return fmt.Errorf("boltstore: delete %s: %w", k, err)
		}
		idx, err := index(tx)
		if err != nil {
			return err
		}
		if err := idx.Delete(indexKey(k.Tenant(), k.Scheme(), k.Path())); err != nil {
			return fmt.Errorf("boltstore: delete %s: public index: %w", k, err)
		}
		if empty(sb) {
			if err := tb.DeleteBucket([]byte(k.Scheme())); err != nil {
				return fmt.Errorf("boltstore: delete %s: %w", k, err)
			}
			if empty(tb) {
				if err := r.DeleteBucket([]byte(k.Tenant())); err != nil {
					return fmt.Errorf("boltstore: delete %s: %w", k, err)
				}
			}
		}
		return nil
	})
}

// hasKey reports whether b has a value (empty or not) at k.
func hasKey(b *bolt.Bucket, k []byte) bool {
	got, v := b.Cursor().Seek(k)
	return v != nil && bytes.Equal(got, k)
}

func empty(b *bolt.Bucket) bool {
	k, _ := b.Cursor().First()
	return k == nil
}

// Ping implements store.Backend with a read transaction.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: ping: %w", err)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		_, err := root(tx)
		return err
	})
}

// Close closes the database file. Later calls fail.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close: %w", err)
	}
	return nil
}

// Check runs bbolt's consistency check of the whole file, then checks that
// every record decodes, that its body matches its size and hash, and that
// the public index holds exactly the public listed objects. It returns the
// first problem found, or nil.
func (s *Store) Check() error {
	return s.db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker blocks on send
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return fmt.Errorf("boltstore: check: %w", first)
		}
		r, err := root(tx)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		idx, err := index(tx)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		// Every index entry names a public listed object...
		err = idx.ForEach(func(ik, v []byte) error {
			k, err := parseIndexKey(ik)
			if err != nil {
				return fmt.Errorf("boltstore: check: %w", err)
			}
			if v == nil || len(v) != 0 {
				return fmt.Errorf("boltstore: check: public index entry %s: not an empty value", k)
			}
			var rec []byte
			if tb := r.Bucket([]byte(k.Tenant())); tb != nil {
				if sb := tb.Bucket([]byte(k.Scheme())); sb != nil {
					rec = sb.Get([]byte(k.Path()))
				}
			}
			if rec == nil {
				return fmt.Errorf("boltstore: check: public index entry %s: no such object", k)
			}
			if m, err := decodeMeta(rec); err == nil && !indexed(&m) {
				return fmt.Errorf("boltstore: check: public index entry %s: the object is not public and listed", k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// ...and every public listed object has one (below).
		return r.ForEachBucket(func(tenant []byte) error {
			tb := r.Bucket(tenant)
			return tb.ForEachBucket(func(scheme []byte) error {
				return tb.Bucket(scheme).ForEach(func(p, v []byte) error {
					if v == nil {
						return fmt.Errorf("boltstore: check %s://%s/%s: unexpected bucket", scheme, tenant, p)
					}
					m, err := decodeMeta(v)
					if err == nil {
						_, body, _ := splitRecord(v)
						if store.Sum(body) != m.SHA256 {
							err = errors.New("body does not match its sha256")
						}
					}
					if err != nil {
						return fmt.Errorf("boltstore: check %s://%s/%s: %w", scheme, tenant, p, err)
					}
					if ik := indexKey(string(tenant), string(scheme), string(p)); indexed(&m) && !hasKey(idx, ik) {
						return fmt.Errorf("boltstore: check %s://%s/%s: public and listed, but not in the public index", scheme, tenant, p)
					}
					return nil
				})
			})
		})
	})
}
