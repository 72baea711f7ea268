// Package boltstore owns the bbolt store.Driver, the default storage of
// resourced: one file, fsync on every commit, one bucket tree per tenant.
// Open returns Store, the portable store.Bucket over the Driver (which
// validates input, hashes, normalises times, hides expired objects from
// point reads and passes its clock to every write, list and sweep here)
// with the driver's View, PutStream and Open, and Backup and Check.
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
//	"v1-expiry"                   index of objects that expire, for DeleteExpired
//	└── <expires> <tenant> 0x00 <scheme> 0x00 <path> = ""
//	                              <expires>: 8 bytes, see below
//	"v1-usage"                    what each tenant stores, for quotas
//	└── <tenant> = <bytes> <objects>
//	                              two 8-byte big-endian unsigned integers
//	"v1-bodies"                   the bodies of large objects (version 3 records)
//	└── <id>                      one bucket per body; <id>: 8 bytes, big-endian
//	    ├── "b" = body
//	    └── "e" = encoded form    only when the object has one
//
// The public index holds one empty value per object whose metadata says
// Listed and Public, expired or not: Put adds or removes the entry in the
// same transaction that writes the object (also when it replaces an
// expired one), Delete and DeleteExpired remove it with the object. No
// key part contains 0x00, which sorts below every byte they may contain,
// so the byte order of index keys is (tenant, scheme, path) order ("t1" <
// "t1-x" < "t10"). ListPublic seeks the index and reads each entry's
// metadata from the tree above, skipping expired objects. A file written before the index existed gets it built
// from the tree when Open first creates the bucket.
//
// The expiry index holds one empty value per object with a non-zero
// Expires, expired or not. Its key starts with Expires in Unix
// milliseconds as 8 big-endian bytes with the sign bit flipped (so byte
// order is time order, before 1970 too), followed by the public index's
// key of the object. Put removes the entry of the object it replaces and
// adds the new one, Delete removes it, all in the object's transaction.
// DeleteExpired walks the index from its start while the expiry is at or
// before now.
//
// The usage bucket holds, per tenant with at least one object stored,
// the sum of the body sizes and the number of objects, expired ones
// included; a tenant with none has no entry. Every transaction that
// writes or removes an object updates it, so a Put with a quota checks
// and writes in one transaction. Open builds either bucket from the tree
// when it is missing, like the public index; Check verifies all three. (A
// version of resourced older than a bucket does not maintain it: after
// writing a file with one, Check reports the difference, and deleting the
// bucket makes the next Open build it again.)
//
// A record is one value, in one of three versions (its first byte):
//
//	version 1: an object stored without an encoded form
//	+---------+------------------+------------------+--------------+
//	| 0x01    | uvarint metaLen  | metadata         | body         |
//	| 1 byte  | 1..10 bytes      | metaLen bytes    | the rest     |
//	+---------+------------------+------------------+--------------+
//
//	version 2: an object stored with store.Object.Encoded
//	+---------+-----------------+----------+----------------+---------+------+
//	| 0x02    | uvarint metaLen | metadata | uvarint encLen | encoded | body |
//	| 1 byte  | 1..10 bytes     | metaLen  | 1..10 bytes    | encLen  | rest |
//	+---------+-----------------+----------+----------------+---------+------+
//
//	version 3: a large object, its body (and encoded form) in "v1-bodies"
//	+---------+------------------+------------------+-----------------+
//	| 0x03    | uvarint metaLen  | metadata         | body bucket id  |
//	| 1 byte  | 1..10 bytes      | metaLen bytes    | 8 bytes         |
//	+---------+------------------+------------------+-----------------+
//
// The metadata is the same in both versions: a flags byte (bit 0: Listed);
// varints Size, Created, Modified and Expires (times as Unix milliseconds,
// the zero time as its own UnixMilli); then uvarint-length strings
// MIMEType, SHA256, Title, Description and Visibility
// (store/internal/metacodec). Size is the body's length, which a decode
// checks. The encoded form of a version 2 record is never empty (an empty
// one is written as version 1) and is opaque here: it is Object.Encoded as
// the caller gave it (resourced's server keeps a version byte and then the
// body as a resources/read response carries it, the "text":"…" or
// "blob":"…" JSON member; server/encoded.go), returned by View next to
// the body, never by Get, and replaced or removed with the body in the
// same transaction. It does not count in Size, Usage or quotas.
//
// A write whose body and encoded form together are largeMin (64 KiB) or
// more writes version 3: the body goes into a new bucket of its own under
// "v1-bodies" (its id from that bucket's sequence, never reused), under
// key "b", and a non-empty encoded form next to it under "e". Otherwise
// Put writes version 2 when an encoded form is given and version 1
// otherwise, and PutStream version 1. Why: bbolt rewrites a dirty leaf
// page whole, and puts at least two values on a leaf (it never splits a
// leaf of four or fewer), so a large body kept in a record is copied again
// (read from the mapping, written to new heap pages) by every later write
// to a record of its leaf: PutStream of parts of 40, 47 and 30 MiB in one
// scheme allocated 40, 89 and 121 MiB (issue 24; 40, 47 and 30 now). A body bucket is never inline
// (it holds at least largeMin bytes), so its pages are its own, and a
// write elsewhere never touches them; the records around it stay small.
// bbolt still builds the pages of a new body on the heap for its commit
// (one copy): a write of 16 MiB or more (releaseMin) ends with
// debug.FreeOSMemory, which hands them back to the system once they are
// garbage, so that the next large save (often the next part of the same
// answer) does not stack its pages on them.
// Replacing or removing a version 3 record deletes its body bucket in the
// same transaction (freeing its pages), whatever the version of the new
// record. Records written before version 3 existed, large ones included,
// stay as they are, readable, replaceable and removable: no migration. A
// resourced older than version 2 or 3 reports such records as corrupt. The
// key is not stored: it is where the record is. Stat and List decode the
// metadata only and never copy the body or the encoded form, nor open a
// body bucket.
//
// Times are kept to the millisecond, in UTC (the Bucket hands them over
// so). Put returns the metadata as it will read back.
//
// Durability: bbolt fsyncs every commit (NoSync is never set). Put,
// PutStream and Delete go through one writer goroutine (group commit,
// commit.go): it runs every write queued in one transaction, in order, and
// starts the next as soon as the previous commit returned, so concurrent
// writers share fsyncs and no timer paces them; no write is answered before
// its commit. Each write checks its precondition and quota against the
// state the earlier writes of its batch left, and a refused one writes
// nothing and fails alone. A write function may run more than once and is
// written to be idempotent (it reads what it decides on, usage included,
// from its transaction and only assigns its results). DeleteExpired is one
// Update of bounded size. Reads use View and copy values out before the
// transaction ends.
//
// Streaming (StreamDriver, stream.go): bbolt stores a value only as one
// []byte, which it copies into its pages at commit, so a record cannot be
// streamed into the file. PutStream spools the body to an unlinked
// temporary file (Options.SpoolDir, by default the database's directory)
// while it computes the size and SHA-256. A large body (version 3) is then
// mapped (Unix) and given to bbolt as the body bucket's value, so bbolt
// copies it from the page cache into its pages at commit and the heap
// holds one copy of the body (bbolt's dirty pages) instead of two; where
// it cannot be mapped it is read into memory. A smaller body is read into
// a buffer with room for the header in front: about two copies at the
// peak, however the body arrived. (A commit that
// grows the file past bbolt's mapping remaps it and copies every value of
// the transaction to the heap first, a third copy; Open maps
// Options.MmapSize, 1 GiB of address space by default, so that this happens
// only when the file outgrows it.) Open serves a
// body without copying it whole: each Read is a short View transaction that
// copies from the mmap into the caller's buffer, after checking that the
// record still has the SHA-256 the reader was opened with, so a slow reader
// never holds a transaction (which would block the remapping of a growing
// file) and never mixes two bodies.
//
// Check also verifies that every version 3 record's body bucket exists,
// holds only its body and encoded form, and is named by that record alone,
// and that no body bucket is left that no record names.
//
// Open refuses a damaged file before bbolt opens it for writing: a quick
// check of both meta pages, the freelist and the page headers of every
// tree, bounded by the number of objects and not their bytes (quickcheck.go
// says what it reads and what it costs); Check, run by resourced fsck, is
// the full check.
//
// Deleting the last object of a scheme or tenant removes that bucket too.
// An expired object stays in the file, invisible to every method but
// Usage, until a Put over it replaces it or DeleteExpired removes it.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourced/resourced/store"
)

// DefaultTimeout is how long Open waits for the file lock by default.
const DefaultTimeout = 5 * time.Second

// rootBucket is the top-level bucket; its name versions the layout.
const rootBucket = "v1"

// publicBucket is the top-level bucket of the index of public listed
// objects, a sibling of rootBucket.
const publicBucket = "v1-public"

// expiryBucket is the top-level bucket of the index of objects by expiry.
const expiryBucket = "v1-expiry"

// usageBucket is the top-level bucket of per-tenant usage.
const usageBucket = "v1-usage"

// maxSweepScan bounds the expiry index entries one DeleteExpired looks at,
// in multiples of its limit: stale entries (only in a damaged file) are
// removed but do not count as removed objects.
const maxSweepScan = 4

// Options configures Open. The zero value is ready to use.
type Options struct {
	// Now is the clock used for expiry (the Bucket's, passed to the
	// Driver on every call); nil means time.Now.
	Now func() time.Time
	// Timeout is how long Open waits for another process's lock on the
	// file; zero or negative means DefaultTimeout. bbolt's "wait forever"
	// is never used.
	Timeout time.Duration
	// SpoolDir holds the temporary files of PutStream (unlinked at once);
	// "" means the directory of the database file.
	SpoolDir string
	// MmapSize is the address space bbolt maps up front: virtual memory,
	// not resident. A commit that grows the file beyond the mapping
	// remaps it, and before remapping bbolt copies every key and value of
	// the transaction to the heap (a large body once more). Zero means
	// DefaultMmapSize on 64-bit systems other than Windows (where bbolt
	// would grow the file to the mapping), and bbolt's default elsewhere.
	MmapSize int
}

// DefaultMmapSize is the default of Options.MmapSize.
const DefaultMmapSize = 1 << 30

// Driver is the store.Driver in one bbolt file (also a store.ViewDriver
// and a store.StreamDriver), safe for concurrent use. Open wraps it in the
// portable store; OpenDriver returns it alone, for storetest.
type Driver struct {
	db       *bolt.DB
	writer   *committer
	spoolDir string
	// boltBatch sends writes through DB.Batch instead of the writer; only
	// the benchmarks set it, to measure the old path in the same run.
	boltBatch bool
}

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.ViewDriver   = (*Driver)(nil)
	_ store.StreamDriver = (*Driver)(nil)
)

// Open opens or creates the database at path, creating its directory with
// mode 0700 and the file with mode 0600. It fails after opts.Timeout if
// another Store, in this or another process, holds the file. Before using
// an existing file it runs a quick check of its structure (quickcheck.go),
// and refuses a damaged file with an error that wraps ErrDamaged and tells
// the operator to run resourced fsck and restore a backup: bbolt would
// otherwise panic on the damaged page later, in the middle of serving.
func Open(path string, opts Options) (*Store, error) {
	d, err := OpenDriver(path, opts)
	if err != nil {
		return nil, err
	}
	return newStore(d, opts), nil
}

// locked names the likely cause of a lock that timed out.
func locked(err error) error {
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("%w: another process holds the database (a resourced already serving this data directory?); stop it or use another --data-dir", err)
	}
	return err
}

// OpenDriver is Open without the portable store: the driver alone, which
// a store.Bucket (store.New) must wrap before anything else calls it.
// opts.Now is the Bucket's, not the driver's.
func OpenDriver(path string, opts Options) (*Driver, error) {
	if path == "" {
		return nil, errors.New("boltstore: open: empty path")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore: open: %w", err)
	}
	if err := quickCheck(path, timeout); err != nil {
		return nil, locked(err)
	}
	bo := *bolt.DefaultOptions
	bo.Timeout = timeout
	bo.InitialMmapSize = opts.MmapSize
	if bo.InitialMmapSize == 0 && runtime.GOOS != "windows" && math.MaxInt > math.MaxInt32 {
		bo.InitialMmapSize = DefaultMmapSize
	}
	db, err := bolt.Open(path, 0o600, &bo)
	if err != nil {
		return nil, locked(fmt.Errorf("boltstore: open %s: %w", path, err))
	}
	// A file that has every bucket is not written to: every commit, even
	// an empty one, writes a meta page, so fsck and an offline backup
	// would change the file they only read.
	complete := true
	err = db.View(func(tx *bolt.Tx) error {
		complete = tx.Bucket([]byte(rootBucket)) != nil
		for _, b := range derivedBuckets {
			complete = complete && tx.Bucket([]byte(b.name)) != nil
		}
		return nil
	})
	if err == nil && !complete {
		err = db.Update(createBuckets)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	spool := opts.SpoolDir
	if spool == "" {
		spool = filepath.Dir(path)
	}
	return &Driver{db: db, writer: newCommitter(db), spoolDir: spool}, nil
}

// derivedBuckets are the buckets built from the records of the root
// bucket, each with how.
var derivedBuckets = []struct {
	name  string
	build func(r, b *bolt.Bucket) error
}{
	{publicBucket, buildIndex},
	{expiryBucket, buildExpiry},
	{usageBucket, buildUsage},
	// Only version 3 records need body buckets: a file without the
	// bucket has none.
	{bodiesBucket, func(r, b *bolt.Bucket) error { return nil }},
}

// createBuckets creates the root bucket and the derived buckets a file
// lacks, building each from the records.
func createBuckets(tx *bolt.Tx) error {
	r, err := tx.CreateBucketIfNotExists([]byte(rootBucket))
	if err != nil {
		return err
	}
	for _, b := range derivedBuckets {
		if tx.Bucket([]byte(b.name)) != nil {
			continue
		}
		nb, err := tx.CreateBucket([]byte(b.name))
		if err != nil {
			return err
		}
		if err := b.build(r, nb); err != nil {
			return err
		}
	}
	return nil
}

// forEachRecord calls fn with the decoded metadata of every object of the
// tree under r; what names the caller in errors.
func forEachRecord(r *bolt.Bucket, what string, fn func(tenant, scheme, path []byte, m *store.Meta) error) error {
	return r.ForEachBucket(func(tenant []byte) error {
		tb := r.Bucket(tenant)
		return tb.ForEachBucket(func(scheme []byte) error {
			return tb.Bucket(scheme).ForEach(func(p, v []byte) error {
				if v == nil {
					return nil
				}
				m, err := decodeMeta(v)
				if err != nil {
					return fmt.Errorf("%s: %s://%s/%s: %w", what, scheme, tenant, p, err)
				}
				return fn(tenant, scheme, p, &m)
			})
		})
	})
}

// Walk calls fn with the metadata of every stored object, expired or not,
// in (tenant, scheme, path) order, from one read transaction: what
// resourced reindex and fsck compare the search index with. fn must not
// call the store; Walk stops at fn's first error, and returns it, or at
// ctx's end.
func (s *Driver) Walk(ctx context.Context, fn func(m *store.Meta) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		r, err := root(tx)
		if err != nil {
			return fmt.Errorf("boltstore: walk: %w", err)
		}
		return forEachRecord(r, "boltstore: walk", func(tenant, scheme, p []byte, m *store.Meta) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			k, err := store.NewKey(string(tenant), string(scheme), string(p))
			if err != nil {
				return fmt.Errorf("boltstore: walk: %s://%s/%s: %w", scheme, tenant, p, err)
			}
			m.Key = k
			return fn(m)
		})
	})
}

// buildIndex adds an index entry for every public listed object of the tree
// under r; Open runs it when a file has no index yet.
func buildIndex(r, idx *bolt.Bucket) error {
	return forEachRecord(r, "building the public index", func(tenant, scheme, p []byte, m *store.Meta) error {
		if !indexed(m) {
			return nil
		}
		return idx.Put(indexKey(string(tenant), string(scheme), string(p)), nil)
	})
}

// buildExpiry adds an expiry index entry for every object of the tree under
// r that has an expiry; Open runs it when a file has no expiry index yet.
func buildExpiry(r, exp *bolt.Bucket) error {
	return forEachRecord(r, "building the expiry index", func(tenant, scheme, p []byte, m *store.Meta) error {
		if m.Expires.IsZero() {
			return nil
		}
		return exp.Put(expiryKey(m.Expires, string(tenant), string(scheme), string(p)), nil)
	})
}

// sumUsage returns the usage of every tenant of the tree under r.
func sumUsage(r *bolt.Bucket, what string) (map[string]store.Usage, error) {
	sums := map[string]store.Usage{}
	err := forEachRecord(r, what, func(tenant, _, _ []byte, m *store.Meta) error {
		u := sums[string(tenant)]
		u.Bytes += m.Size
		u.Objects++
		sums[string(tenant)] = u
		return nil
	})
	return sums, err
}

// buildUsage fills the usage bucket from the tree under r; Open runs it
// when a file has no usage bucket yet.
func buildUsage(r, ub *bolt.Bucket) error {
	sums, err := sumUsage(r, "building the usage")
	if err != nil {
		return err
	}
	for tenant, u := range sums {
		if err := ub.Put([]byte(tenant), encodeUsage(u)); err != nil {
			return err
		}
	}
	return nil
}

// expiryKey returns the expiry index key of the object at tenant, scheme,
// path that expires at t: t's Unix milliseconds with the sign bit flipped,
// big-endian, then the object's public index key.
func expiryKey(t time.Time, tenant, scheme, path string) []byte {
	b := make([]byte, 8, 8+len(tenant)+len(scheme)+len(path)+2)
	binary.BigEndian.PutUint64(b, uint64(t.UnixMilli())^(1<<63))
	b = append(b, tenant...)
	b = append(b, 0)
	b = append(b, scheme...)
	b = append(b, 0)
	return append(b, path...)
}

// parseExpiryKey returns the expiry and the key of an expiry index entry.
func parseExpiryKey(ek []byte) (time.Time, store.Key, error) {
	if len(ek) < 8 {
		return time.Time{}, store.Key{}, fmt.Errorf("boltstore: corrupt expiry index entry %q", ek)
	}
	ms := int64(binary.BigEndian.Uint64(ek) ^ (1 << 63))
	k, err := parseIndexKey(ek[8:])
	if err != nil {
		return time.Time{}, store.Key{}, fmt.Errorf("boltstore: corrupt expiry index entry %q: %w", ek, err)
	}
	return time.UnixMilli(ms).UTC(), k, nil
}

// encodeUsage returns the usage bucket value of u.
func encodeUsage(u store.Usage) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(u.Bytes))
	binary.BigEndian.PutUint64(b[8:], uint64(u.Objects))
	return b
}

// decodeUsage decodes a usage bucket value; nil is the zero usage.
func decodeUsage(v []byte) (store.Usage, error) {
	if v == nil {
		return store.Usage{}, nil
	}
	if len(v) != 16 {
		return store.Usage{}, fmt.Errorf("boltstore: corrupt usage value of %d bytes", len(v))
	}
	u := store.Usage{
		Bytes:   int64(binary.BigEndian.Uint64(v)),
		Objects: int64(binary.BigEndian.Uint64(v[8:])),
	}
	if u.Bytes < 0 || u.Objects < 0 {
		return store.Usage{}, fmt.Errorf("boltstore: corrupt usage value: %d bytes, %d objects", u.Bytes, u.Objects)
	}
	return u, nil
}

// readUsage returns the stored usage of tenant.
func readUsage(ub *bolt.Bucket, tenant string) (store.Usage, error) {
	u, err := decodeUsage(ub.Get([]byte(tenant)))
	if err != nil {
		return store.Usage{}, fmt.Errorf("%w (tenant %s)", err, tenant)
	}
	return u, nil
}

// writeUsage stores u as tenant's usage, removing the entry when the
// tenant stores nothing.
func writeUsage(ub *bolt.Bucket, tenant string, u store.Usage) error {
	if u.Objects == 0 && u.Bytes == 0 {
		return ub.Delete([]byte(tenant))
	}
	if u.Objects <= 0 || u.Bytes < 0 {
		return fmt.Errorf("boltstore: usage of tenant %s would be %d bytes in %d objects: the usage bucket is damaged (run fsck)", tenant, u.Bytes, u.Objects)
	}
	return ub.Put([]byte(tenant), encodeUsage(u))
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
	return topBucket(tx, publicBucket)
}

// topBucket returns the top-level bucket name, which Open created.
func topBucket(tx *bolt.Tx, name string) (*bolt.Bucket, error) {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil, fmt.Errorf("boltstore: bucket %q missing", name)
	}
	return b, nil
}

// indexes returns the public index, the expiry index and the usage bucket.
func indexes(tx *bolt.Tx) (idx, exp, ub *bolt.Bucket, err error) {
	if idx, err = topBucket(tx, publicBucket); err != nil {
		return nil, nil, nil, err
	}
	if exp, err = topBucket(tx, expiryBucket); err != nil {
		return nil, nil, nil, err
	}
	if ub, err = topBucket(tx, usageBucket); err != nil {
		return nil, nil, nil, err
	}
	return idx, exp, ub, nil
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

// liveMeta returns the metadata of the object at k in sb live at now (nil
// when missing or expired) and the raw record.
func liveMeta(sb *bolt.Bucket, k store.Key, now time.Time) (*store.Meta, []byte, error) {
	m, v, err := storedMeta(sb, k)
	if m == nil || err != nil || m.Expired(now) {
		return nil, nil, err
	}
	return m, v, nil
}

// storedMeta returns the metadata of the object stored at k in sb, expired
// or not (nil when missing), and the raw record.
func storedMeta(sb *bolt.Bucket, k store.Key) (*store.Meta, []byte, error) {
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
	m.Key = k
	return &m, v, nil
}

// Put implements store.Driver.
func (s *Driver) Put(ctx context.Context, obj *store.Object, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	body, encoded := obj.Body, obj.Encoded
	if isLarge(int64(len(encoded)), int64(len(body))) {
		return s.write(obj.Key, obj.Meta, cond, now, value{large: true, encoded: encoded, body: body})
	}
	return s.write(obj.Key, obj.Meta, cond, now, value{record: func(m *store.Meta) []byte { return encodeRecord(m, encoded, body) }})
}

// write stores at k, if cond holds, v for the final metadata (want with
// Created kept from a live object it replaces), removes the body bucket of
// the record it replaces, and updates the indexes and usage, in one
// transaction of the writer (commit.go). Its functions may run more than
// once, v.record included: they read what they decide on from the
// transaction and only assign results.
func (s *Driver) write(k store.Key, want store.Meta, cond store.Cond, now func() time.Time, v value) (store.Meta, bool, error) {
	var (
		stored   store.Meta
		replaced bool
	)
	err := s.do(func(tx *bolt.Tx) (func() error, error) {
		// The check: nothing is written before the last refusal.
		r, err := root(tx)
		if err != nil {
			return nil, err
		}
		idx, exp, ub, err := indexes(tx)
		if err != nil {
			return nil, err
		}
		var sb *bolt.Bucket
		if tb := r.Bucket([]byte(k.Tenant())); tb != nil {
			sb = tb.Bucket([]byte(k.Scheme()))
		}
		// old is what the write replaces, live or expired; cur only if
		// live; oldRef its body bucket, if it has one.
		var (
			old    *store.Meta
			oldRef []byte
		)
		if sb != nil {
			if ov := sb.Get([]byte(k.Path())); ov != nil {
				m, err := decodeMeta(ov)
				if err != nil {
					return nil, fmt.Errorf("boltstore: %s: %w", k, err)
				}
				old, oldRef = &m, bodyRef(ov)
			}
		}
		var cur *store.Meta
		if old != nil && !old.Expired(now()) {
			cur = old
		}
		if err := store.CheckCond(cur, cond); err != nil {
			return nil, err
		}
		u, err := readUsage(ub, k.Tenant())
		if err != nil {
			return nil, fmt.Errorf("boltstore: put %s: %w", k, err)
		}
		u.Bytes += want.Size
		if old != nil {
			u.Bytes -= old.Size
		} else {
			u.Objects++
		}
		if err := store.CheckQuota(u, cond.Quota); err != nil {
			return nil, err
		}
		m := want
		if cur != nil {
			m.Created = cur.Created
		}
		return func() error {
			tb, err := r.CreateBucketIfNotExists([]byte(k.Tenant()))
			if err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			sb, err := tb.CreateBucketIfNotExists([]byte(k.Scheme()))
			if err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			if err := dropBody(tx, oldRef); err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			rec, err := v.put(tx, &m)
			if err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			if err := sb.Put([]byte(k.Path()), rec); err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			// The entries follow the new object, whatever the old one was
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
			if old != nil && !old.Expires.IsZero() && !old.Expires.Equal(m.Expires) {
				if err := exp.Delete(expiryKey(old.Expires, k.Tenant(), k.Scheme(), k.Path())); err != nil {
					return fmt.Errorf("boltstore: put %s: expiry index: %w", k, err)
				}
			}
			if !m.Expires.IsZero() {
				if err := exp.Put(expiryKey(m.Expires, k.Tenant(), k.Scheme(), k.Path()), nil); err != nil {
					return fmt.Errorf("boltstore: put %s: expiry index: %w", k, err)
				}
			}
			if err := writeUsage(ub, k.Tenant(), u); err != nil {
				return fmt.Errorf("boltstore: put %s: %w", k, err)
			}
			stored, replaced = m, cur != nil
			return nil
		}, nil
	})
	if err != nil {
		return store.Meta{}, false, err
	}
	if v.large && int64(len(v.body))+int64(len(v.encoded)) >= releaseMin {
		// bbolt built the body's pages on the heap for the commit; they
		// are garbage now. Returned to the system at once, so that the
		// next large save (the next part of the same answer, often) does
		// not add its pages to these: one forced collection per save of
		// releaseMin bytes or more, small beside writing them (issue 24).
		debug.FreeOSMemory()
	}
	return stored, replaced, nil
}

// do runs op in the writer's next transaction (commit.go), or through
// DB.Batch when the Driver was set to (the commit path before group
// commit, which the benchmarks measure side by side): there a refusal
// rolls back the batch and bbolt runs the function again alone.
func (s *Driver) do(op txOp) error {
	if s.boltBatch {
		return s.db.Batch(func(tx *bolt.Tx) error {
			apply, err := op(tx)
			if err != nil {
				return err
			}
			return apply()
		})
	}
	return s.writer.do(op)
}

// Read implements store.Driver on View.
func (s *Driver) Read(ctx context.Context, k store.Key, fn func(m *store.Meta, body []byte) error) error {
	return s.View(ctx, k, func(m *store.Meta, _, body []byte) error { return fn(m, body) })
}

// View implements store.ViewDriver: fn runs inside a read transaction
// and sees the record in bbolt's mmap, so it copies what it keeps and
// returns soon (a long read transaction delays the remap a growing file
// needs, and with it every write).
func (s *Driver) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, k)
		if err != nil {
			return err
		}
		m, v, err := storedMeta(sb, k)
		if err != nil {
			return err
		}
		if m == nil {
			return store.ErrNotFound
		}
		rec, err := loadRecord(tx, v, m.Size)
		if err != nil {
			return fmt.Errorf("boltstore: %s: %w", k, err)
		}
		return fn(m, rec.encoded, rec.body)
	})
}

// Stat implements store.Driver.
func (s *Driver) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	var meta store.Meta
	err := s.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, k)
		if err != nil {
			return err
		}
		m, _, err := storedMeta(sb, k)
		if err != nil {
			return err
		}
		if m == nil {
			return store.ErrNotFound
		}
		meta = *m
		return nil
	})
	if err != nil {
		return store.Meta{}, err
	}
	return meta, nil
}

// List implements store.Driver. It walks the tenant's scheme buckets in
// order, seeking each to the cursor or the prefix, and peeks past the last
// item so that More is exact.
func (s *Driver) List(ctx context.Context, q store.ListQuery, now func() time.Time) (store.Page, error) {
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
		l := lister{q: q, now: now(), prefix: []byte(q.Prefix)}
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

// ListPublic implements store.Driver. It seeks the index to after,
// reads the metadata of each entry's object and skips expired ones, and
// peeks past the last item so that More is exact. It costs one index entry
// and one metadata decode per item or skipped (expired) object.
func (s *Driver) ListPublic(ctx context.Context, after store.PublicPosition, limit int, clock func() time.Time) (store.PublicPage, error) {
	var page store.PublicPage
	now := clock()
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
			m, _, err := liveMeta(sb, k, now)
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

// Delete implements store.Driver. Removing the last object of a scheme or
// tenant removes its bucket.
func (s *Driver) Delete(ctx context.Context, k store.Key, cond store.Cond, now func() time.Time) error {
	// Its functions may run more than once: they read everything they
	// decide on from tx.
	return s.do(func(tx *bolt.Tx) (func() error, error) {
		r, err := root(tx)
		if err != nil {
			return nil, err
		}
		tb := r.Bucket([]byte(k.Tenant()))
		var sb *bolt.Bucket
		if tb != nil {
			sb = tb.Bucket([]byte(k.Scheme()))
		}
		cur, _, err := liveMeta(sb, k, now())
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, store.ErrNotFound
		}
		if err := store.CheckCond(cur, cond); err != nil {
			return nil, err
		}
		return func() error {
			if err := s.remove(tx, r, tb, sb, k, cur); err != nil {
				return fmt.Errorf("boltstore: %w", err)
			}
			return nil
		}, nil
	})
}

// remove deletes the object at k, whose metadata is m, from sb (in tb in
// r), with its body bucket, index entries and usage; it removes sb and tb
// when they become empty.
func (s *Driver) remove(tx *bolt.Tx, r, tb, sb *bolt.Bucket, k store.Key, m *store.Meta) error {
	idx, exp, ub, err := indexes(tx)
	if err != nil {
		return err
	}
	if err := dropBody(tx, bodyRef(sb.Get([]byte(k.Path())))); err != nil {
		return err
	}
	if err := sb.Delete([]byte(k.Path())); err != nil {
		return err
	}
	if err := idx.Delete(indexKey(k.Tenant(), k.Scheme(), k.Path())); err != nil {
		return fmt.Errorf("public index: %w", err)
	}
	if !m.Expires.IsZero() {
		if err := exp.Delete(expiryKey(m.Expires, k.Tenant(), k.Scheme(), k.Path())); err != nil {
			return fmt.Errorf("expiry index: %w", err)
		}
	}
	u, err := readUsage(ub, k.Tenant())
	if err != nil {
		return err
	}
	u.Bytes -= m.Size
	u.Objects--
	if err := writeUsage(ub, k.Tenant(), u); err != nil {
		return err
	}
	if empty(sb) {
		if err := tb.DeleteBucket([]byte(k.Scheme())); err != nil {
			return err
		}
		if empty(tb) {
			if err := r.DeleteBucket([]byte(k.Tenant())); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteExpired implements store.Driver in one write transaction (through
// Update, not Batch: it is already a batch of deletions). It walks the
// expiry index from its start while the expiry is at or before now, and
// removes each entry's object when its record still carries that expiry;
// an entry whose object is gone or carries another expiry is stale (only
// a damaged file has one) and is removed alone. It stops after limit
// objects, or after maxSweepScan×limit entries. Being one transaction, it
// cannot remove an object that a concurrent Put made live again: that Put
// commits before it (and moved the entry) or after it (and creates anew).
func (s *Driver) DeleteExpired(ctx context.Context, limit int, clock func() time.Time) (int, error) {
	scan := maxSweepScan * limit
	if limit > math.MaxInt/maxSweepScan {
		scan = math.MaxInt
	}
	var removed int
	err := s.db.Update(func(tx *bolt.Tx) error {
		removed = 0
		r, err := root(tx)
		if err != nil {
			return err
		}
		exp, err := topBucket(tx, expiryBucket)
		if err != nil {
			return err
		}
		now := clock()
		c := exp.Cursor()
		ek, _ := c.First()
		for scanned := 0; ek != nil && removed < limit && scanned < scan; scanned++ {
			if scanned%64 == 63 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("boltstore: delete expired: %w", err)
				}
			}
			at, k, err := parseExpiryKey(ek)
			if err != nil {
				return err
			}
			if at.After(now) {
				break
			}
			// Copy: ek points into the page the deletes below may change.
			next := append(bytes.Clone(ek), 0) // the least key after ek
			tb := r.Bucket([]byte(k.Tenant()))
			var sb *bolt.Bucket
			if tb != nil {
				sb = tb.Bucket([]byte(k.Scheme()))
			}
			var m *store.Meta
			if sb != nil {
				if v := sb.Get([]byte(k.Path())); v != nil {
					dm, err := decodeMeta(v)
					if err != nil {
						return fmt.Errorf("boltstore: delete expired %s: %w", k, err)
					}
					m = &dm
				}
			}
			switch {
			case m != nil && m.Expires.Equal(at) && m.Expired(now):
				if err := s.remove(tx, r, tb, sb, k, m); err != nil {
					return fmt.Errorf("boltstore: delete expired %s: %w", k, err)
				}
				removed++
			case m != nil && m.Expires.Equal(at):
				// Not expired after all (at is at or before now, so this
				// cannot happen); leave it.
			default:
				if err := exp.Delete(next[:len(next)-1]); err != nil {
					return fmt.Errorf("boltstore: delete expired: stale entry of %s: %w", k, err)
				}
			}
			// The deletes invalidate the cursor: seek again.
			ek, _ = c.Seek(next)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// Usage implements store.Driver: one read of the usage bucket.
func (s *Driver) Usage(ctx context.Context, tenant string) (store.Usage, error) {
	var u store.Usage
	err := s.db.View(func(tx *bolt.Tx) error {
		ub, err := topBucket(tx, usageBucket)
		if err != nil {
			return err
		}
		u, err = readUsage(ub, tenant)
		if err != nil {
			return fmt.Errorf("boltstore: usage: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.Usage{}, err
	}
	return u, nil
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

// Ping implements store.Driver with a read transaction.
func (s *Driver) Ping(ctx context.Context) error {
	return s.db.View(func(tx *bolt.Tx) error {
		_, err := root(tx)
		return err
	})
}

// Close closes the database file. Later calls fail.
func (s *Driver) Close() error {
	s.writer.close() // the writes queued before Close commit first
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close: %w", err)
	}
	return nil
}

// Check runs bbolt's consistency check of the whole file, then checks that
// every record decodes, that its body matches its size and hash, that the
// public index holds exactly the public listed objects, that the expiry
// index holds exactly the objects with an expiry, each under its expiry,
// and that the usage bucket holds each tenant's sum of sizes and count of
// objects. It returns the first problem found, or nil.
func (s *Driver) Check() error { return s.CheckEncoded(nil) }

// CheckEncoded is Check, and it also calls verify with the metadata, the
// encoded form and the body of every record that has an encoded form
// (store.Object.Encoded; the store cannot judge one, its writer can). A
// verify error is reported with the record's key. One read transaction
// walks the tree once, so that fsck reads a large file once: bbolt's own
// check, then each invariant of the package doc in its order (the public
// index, the expiry index, the records, usage).
func (s *Driver) CheckEncoded(verify func(m *store.Meta, encoded, body []byte) error) error {
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
		idx, exp, ub, err := indexes(tx)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		bb, err := topBucket(tx, bodiesBucket)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		c := &treeCheck{tx: tx, r: r, idx: idx, exp: exp, ub: ub, bb: bb, verify: verify, sums: map[string]store.Usage{}, refs: map[string]bool{}}
		for _, step := range []func() error{c.publicIndex, c.expiryIndex, c.records, c.usage, c.bodies} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
}

// treeCheck is one CheckEncoded: the buckets of its transaction, and the
// usage it sums from the records.
type treeCheck struct {
	tx                  *bolt.Tx
	r, idx, exp, ub, bb *bolt.Bucket
	verify              func(m *store.Meta, encoded, body []byte) error
	sums                map[string]store.Usage
	// refs holds the body bucket ids the records name, for bodies.
	refs map[string]bool
}

// record returns the stored value at k, or nil.
func (c *treeCheck) record(k store.Key) []byte {
	if tb := c.r.Bucket([]byte(k.Tenant())); tb != nil {
		if sb := tb.Bucket([]byte(k.Scheme())); sb != nil {
			return sb.Get([]byte(k.Path()))
		}
	}
	return nil
}

// publicIndex: every public index entry names a public listed object.
func (c *treeCheck) publicIndex() error {
	// Every index entry names a public listed object...
	return c.idx.ForEach(func(ik, v []byte) error {
		k, err := parseIndexKey(ik)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		if v == nil || len(v) != 0 {
			return fmt.Errorf("boltstore: check: public index entry %s: not an empty value", k)
		}
		rec := c.record(k)
		if rec == nil {
			return fmt.Errorf("boltstore: check: public index entry %s: no such object", k)
		}
		if m, err := decodeMeta(rec); err == nil && !indexed(&m) {
			return fmt.Errorf("boltstore: check: public index entry %s: the object is not public and listed", k)
		}
		return nil
	})
}

// expiryIndex: every expiry index entry names an object with that expiry.
func (c *treeCheck) expiryIndex() error {
	// ...every expiry index entry names an object with that expiry...
	return c.exp.ForEach(func(ek, v []byte) error {
		at, k, err := parseExpiryKey(ek)
		if err != nil {
			return fmt.Errorf("boltstore: check: %w", err)
		}
		if v == nil || len(v) != 0 {
			return fmt.Errorf("boltstore: check: expiry index entry %s: not an empty value", k)
		}
		rec := c.record(k)
		if rec == nil {
			return fmt.Errorf("boltstore: check: expiry index entry %s at %v: no such object", k, at)
		}
		if m, err := decodeMeta(rec); err == nil && !m.Expires.Equal(at) {
			return fmt.Errorf("boltstore: check: expiry index entry %s at %v: the object expires at %v", k, at, m.Expires)
		}
		return nil
	})
}

// records: every record matches its sha256 (and verify), every public
// listed object and every object with an expiry has its index entry; the
// usage of each tenant is summed for usage.
func (c *treeCheck) records() error {
	r, idx, exp, verify, sums := c.r, c.idx, c.exp, c.verify, c.sums
	// ...and every public listed object, every object with an expiry
	// has its entry, and the usage bucket holds the sums (below).
	return r.ForEachBucket(func(tenant []byte) error {
		tb := r.Bucket(tenant)
		return tb.ForEachBucket(func(scheme []byte) error {
			return tb.Bucket(scheme).ForEach(func(p, v []byte) error {
				if v == nil {
					return fmt.Errorf("boltstore: check %s://%s/%s: unexpected bucket", scheme, tenant, p)
				}
				m, err := decodeMeta(v)
				var rec record
				if err == nil {
					rec, err = loadRecord(c.tx, v, m.Size)
				}
				if err == nil && rec.ref != nil {
					if c.refs[string(rec.ref)] {
						err = fmt.Errorf("body bucket %x is named by another record too", rec.ref)
					}
					c.refs[string(rec.ref)] = true
				}
				if err == nil {
					switch {
					case store.Sum(rec.body) != m.SHA256:
						err = errors.New("body does not match its sha256")
					case verify != nil && rec.encoded != nil:
						if k, kerr := store.NewKey(string(tenant), string(scheme), string(p)); kerr == nil {
							m.Key = k
						}
						if verr := verify(&m, rec.encoded, rec.body); verr != nil {
							err = fmt.Errorf("encoded form: %w", verr)
						}
					}
				}
				if err != nil {
					return fmt.Errorf("boltstore: check %s://%s/%s: %w", scheme, tenant, p, err)
				}
				if ik := indexKey(string(tenant), string(scheme), string(p)); indexed(&m) && !hasKey(idx, ik) {
					return fmt.Errorf("boltstore: check %s://%s/%s: public and listed, but not in the public index", scheme, tenant, p)
				}
				if ek := expiryKey(m.Expires, string(tenant), string(scheme), string(p)); !m.Expires.IsZero() && !hasKey(exp, ek) {
					return fmt.Errorf("boltstore: check %s://%s/%s: expires at %v, but not in the expiry index", scheme, tenant, p, m.Expires)
				}
				u := sums[string(tenant)]
				u.Bytes += m.Size
				u.Objects++
				sums[string(tenant)] = u
				return nil
			})
		})
	})
}

// usage: the usage bucket holds each tenant's sums, and nothing else.
func (c *treeCheck) usage() error {
	ub, sums := c.ub, c.sums
	err := ub.ForEach(func(tenant, v []byte) error {
		if v == nil {
			return fmt.Errorf("boltstore: check: usage of tenant %q: a bucket, not a value", tenant)
		}
		got, err := decodeUsage(v)
		if err != nil {
			return fmt.Errorf("boltstore: check: usage of tenant %q: %w", tenant, err)
		}
		if want := sums[string(tenant)]; got != want {
			return fmt.Errorf("boltstore: check: usage of tenant %q is %d bytes in %d objects; it stores %d bytes in %d objects", tenant, got.Bytes, got.Objects, want.Bytes, want.Objects)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for tenant, want := range sums {
		if ub.Get([]byte(tenant)) == nil {
			return fmt.Errorf("boltstore: check: tenant %q stores %d bytes in %d objects, but has no usage entry", tenant, want.Bytes, want.Objects)
		}
	}
	return nil
}

// bodies: every body bucket is named by a record (records checked those
// that are), so a write or delete left none behind.
func (c *treeCheck) bodies() error {
	return c.bb.ForEach(func(id, v []byte) error {
		if v != nil {
			return fmt.Errorf("boltstore: check: body bucket %x: a value, not a bucket", id)
		}
		if !c.refs[string(id)] {
			return fmt.Errorf("boltstore: check: body bucket %x: no record names it", id)
		}
		return nil
	})
}
