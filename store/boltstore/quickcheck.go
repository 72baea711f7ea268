package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is wrapped by the error of an Open that refused a damaged file.
var ErrDamaged = errors.New("damaged")

// damagedError is what Open returns for a file that fails the quick check.
type damagedError struct {
	path    string
	problem error
}

func (e *damagedError) Error() string {
	fsck := "resourced fsck --data-dir " + filepath.Dir(e.path)
	if filepath.Base(e.path) != "resourced.db" {
		// A store.bbolt.path of its own: --data-dir would name another file.
		fsck = "resourced fsck --config FILE (the config that names " + e.path + ")"
	}
	return fmt.Sprintf("boltstore: open %s: the database file %s is damaged (%v); refusing to serve from it: run `%s` and restore it from a backup as the README's \"Backup and restore\" section says",
		e.path, e.path, e.problem, fsck)
}

func (e *damagedError) Unwrap() []error { return []error{ErrDamaged, e.problem} }

// The on-disk format of bbolt (file format version 2), as far as the quick
// check reads it. bbolt writes its structures in the machine's byte order.
const (
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elementSize    = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeader   = 16 // a bucket value: root pgid u64, sequence u64, then the inline page if root is 0
	metaSize       = 64 // magic, version, pageSize, flags u32; root bucket 16; freelist, pgid, txid, checksum u64

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10
	bucketLeaf   = 0x01

	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	noFreelist     = ^uint64(0)
	maxTreeDepth   = 64 // a B+tree of fanout 2 this deep would not fit any disk
	minPageSize    = pageHeaderSize + metaSize
	maxFreelistLen = 0xFFFF
)

var ne = binary.NativeEndian

// quickCheck is what Open runs on an existing file before bbolt opens it
// for writing. bbolt validates one meta page (it falls back to the other)
// and trusts every page it reaches: a damaged page header makes it panic in
// the middle of a transaction (Bucket.Delete, DeleteExpired), and a damaged
// freelist page makes bolt.Open itself panic. So, holding bbolt's shared
// lock (a read-only bolt.Open, which does not read the freelist), it reads
// the file with its own bounds-checked decoder and checks:
//
//   - both meta pages: page id, type, magic, version, checksum, the same
//     page size, root and freelist below the high-water mark;
//   - the freelist page of the newer meta: type, id, length, ids in range;
//   - every page of the trees that hold no bodies: the tree of top-level
//     buckets, "v1" (tenants), each tenant (schemes), the indexes
//     "v1-public", "v1-expiry" and "v1-usage", and "v1-bodies" (the ids of
//     the body buckets): each page's header names itself, is a branch or a
//     leaf, its overflow and elements lie inside the file and the page, and
//     no page is reached twice;
//   - of each scheme bucket (the records, with their bodies) and each body
//     bucket: every branch page whole, and of each leaf only its 16-byte
//     header (its id, type, element count and overflow). Record values and
//     bodies are never read.
//
// Why it is bounded: it reads each index page (an index entry is about 16
// bytes of element and 30-60 of key, two entries per object at most), each
// branch page of the record trees, one header per record leaf (a leaf
// holds one or more records), and of a large object (a version 3 record)
// a "v1-bodies" entry of about 40 bytes and its body bucket's root header:
// proportional to the number of objects with a
// small constant, never to the bytes of the bodies (overflow pages are
// skipped), and through a read-only mapping, so a header costs no system
// call. Measured once (2-core machine, warm page cache; 200 000 objects of
// 200 bytes, each with an expiry, public and listed, in 10 tenants: a
// 178 MiB file, 41 610 pages read): 16 ms for the quick check including
// its read-only bolt.Open, against 38 ms for tx.Check of the same file
// (which also walks every page, and which resourced fsck runs with the
// hash of every body). A 1M-object file reads about five times the pages.
//
// A damaged record value or body is what fsck finds, not this. One invalid
// meta page is refused although bbolt would fall back to the other: after
// a power loss tore a commit's meta write, or after damage, it is the
// operator's to decide, with fsck. The lock is released between the check
// and bbolt's read-write open; a process that takes the file in between
// runs this check itself.
func quickCheck(path string, timeout time.Duration) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0 {
		return nil // bbolt creates it
	}
	if err != nil {
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	bo := *bolt.DefaultOptions
	bo.ReadOnly = true
	bo.Timeout = timeout
	db, err := bolt.Open(path, 0o600, &bo)
	if err != nil {
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
			return &damagedError{path: path, problem: fmt.Errorf("bbolt: %w", err)}
		}
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	defer db.Close()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	defer f.Close()
	c := &checker{f: f}
	if data, unmap, err := mapFile(f, fi.Size()); err == nil {
		defer unmap()
		c.data = data
	}
	if err := c.run(); err != nil {
		return &damagedError{path: path, problem: err}
	}
	return nil
}

// checker reads pages of one file.
type checker struct {
	f        *os.File
	data     []byte // the file mapped, or nil: read with f.ReadAt
	pageSize uint64
	hwm      uint64   // the newer meta's high-water mark: pages are below it
	seen     []uint64 // a bit per page below hwm: reached already
	pages    int      // pages read (headers included), for the cost figure
}

// meta is a decoded meta page.
type meta struct {
	pageSize, root, freelist, hwm, txid uint64
}

func (c *checker) run() error {
	m0, err := c.meta(0, 0)
	if err != nil {
		return err
	}
	c.pageSize = m0.pageSize
	m1, err := c.meta(1, m0.pageSize)
	if err != nil {
		return err
	}
	if m1.pageSize != m0.pageSize {
		return fmt.Errorf("meta page 1: page size %d, meta page 0 says %d", m1.pageSize, m0.pageSize)
	}
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	c.hwm = m.hwm
	c.seen = make([]uint64, (m.hwm+63)/64)
	if m.freelist != noFreelist {
		if err := c.freelist(m.freelist); err != nil {
			return err
		}
	}
	return c.tree("the bucket tree", m.root, 0, walk{full: true, sub: topLevel})
}

// meta reads and validates meta page id; pageSize is 0 for page 0, whose
// page size it learns.
func (c *checker) meta(id, pageSize uint64) (meta, error) {
	b, err := c.at(id*pageSize, pageHeaderSize+metaSize)
	if err != nil {
		return meta{}, fmt.Errorf("meta page %d: %w", id, readErr(err))
	}
	c.pages++
	h, mb := b[:pageHeaderSize], b[pageHeaderSize:]
	switch {
	case ne.Uint32(mb[0:]) != boltMagic:
		return meta{}, fmt.Errorf("meta page %d: not a bbolt meta page (bad magic)", id)
	case ne.Uint32(mb[4:]) != boltVersion:
		return meta{}, fmt.Errorf("meta page %d: file format version %d, want %d", id, ne.Uint32(mb[4:]), boltVersion)
	}
	h64 := fnv.New64a()
	h64.Write(mb[:56])
	if sum := ne.Uint64(mb[56:]); sum != h64.Sum64() {
		return meta{}, fmt.Errorf("meta page %d: checksum mismatch", id)
	}
	m := meta{
		pageSize: uint64(ne.Uint32(mb[8:])),
		root:     ne.Uint64(mb[16:]),
		freelist: ne.Uint64(mb[32:]),
		hwm:      ne.Uint64(mb[40:]),
		txid:     ne.Uint64(mb[48:]),
	}
	switch {
	case ne.Uint64(h) != id || ne.Uint16(h[8:])&metaPage == 0:
		return meta{}, fmt.Errorf("meta page %d: bad page header", id)
	case m.pageSize < minPageSize || m.pageSize > 1<<26:
		return meta{}, fmt.Errorf("meta page %d: page size %d", id, m.pageSize)
	case m.hwm < 3 || m.root < 2 || m.root >= m.hwm:
		return meta{}, fmt.Errorf("meta page %d: root page %d, high-water mark %d", id, m.root, m.hwm)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.hwm):
		return meta{}, fmt.Errorf("meta page %d: freelist page %d, high-water mark %d", id, m.freelist, m.hwm)
	}
	return m, nil
}

// header reads the header of page id and checks that it names the page,
// has one of the types in flags, and that it and its overflow pages lie
// below the high-water mark. It returns the type, count and overflow.
func (c *checker) header(what string, id uint64, types uint16) (typ, count uint16, overflow uint32, err error) {
	if id < 2 || id >= c.hwm {
		return 0, 0, 0, fmt.Errorf("%s: page %d out of range [2, %d)", what, id, c.hwm)
	}
	if c.seen[id/64]&(1<<(id%64)) != 0 {
		return 0, 0, 0, fmt.Errorf("%s: page %d is reached twice", what, id)
	}
	c.seen[id/64] |= 1 << (id % 64)
	h, err := c.at(id*c.pageSize, pageHeaderSize)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: page %d: %w", what, id, readErr(err))
	}
	c.pages++
	typ, count, overflow = ne.Uint16(h[8:]), ne.Uint16(h[10:]), ne.Uint32(h[12:])
	switch {
	case ne.Uint64(h[:]) != id:
		return 0, 0, 0, fmt.Errorf("%s: page %d: its header names page %d", what, id, ne.Uint64(h[:]))
	case typ&types == 0 || typ&(typ-1) != 0:
		return 0, 0, 0, fmt.Errorf("%s: page %d: page type %#x, want %s", what, id, typ, typeNames(types))
	case uint64(overflow) >= c.hwm-id:
		return 0, 0, 0, fmt.Errorf("%s: page %d: %d overflow pages run past the high-water mark %d", what, id, overflow, c.hwm)
	}
	return typ, count, overflow, nil
}

// read reads page id whole, with its overflow pages.
func (c *checker) read(what string, id uint64, overflow uint32) ([]byte, error) {
	b, err := c.at(id*c.pageSize, (uint64(overflow)+1)*c.pageSize)
	if err != nil {
		return nil, fmt.Errorf("%s: page %d: %w", what, id, readErr(err))
	}
	return b, nil
}

func (c *checker) freelist(id uint64) error {
	_, _, overflow, err := c.header("the freelist", id, freelistPage)
	if err != nil {
		return err
	}
	b, err := c.read("the freelist", id, overflow)
	if err != nil {
		return err
	}
	n, ids := uint64(ne.Uint16(b[10:])), b[pageHeaderSize:]
	if n == maxFreelistLen { // the count is the first element
		n, ids = ne.Uint64(ids), ids[8:]
	}
	if n > uint64(len(ids))/8 {
		return fmt.Errorf("the freelist: page %d: %d ids do not fit in it", id, n)
	}
	for i := range n {
		if fid := ne.Uint64(ids[8*i:]); fid < 2 || fid >= c.hwm {
			return fmt.Errorf("the freelist: page %d: free page %d out of range [2, %d)", id, fid, c.hwm)
		}
	}
	return nil
}

// walk says how to check one tree: full reads every page (and calls sub
// for each bucket found in a leaf); otherwise only the root and branch
// pages are read (the package's record trees), see quickCheck.
type walk struct {
	full bool
	sub  func(name []byte) walk
}

// topLevel is the walk of each top-level bucket.
func topLevel(name []byte) walk {
	switch string(name) {
	case rootBucket:
		return walk{full: true, sub: func([]byte) walk { // a tenant
			return walk{full: true, sub: func([]byte) walk { return walk{} }} // a scheme: records
		}}
	case bodiesBucket:
		return walk{full: true, sub: func([]byte) walk { return walk{} }} // a body bucket: a body
	}
	return walk{full: true, sub: func([]byte) walk { return walk{full: true} }}
}

// tree checks the tree under page id, of bucket what.
func (c *checker) tree(what string, id uint64, depth int, w walk) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: page %d: deeper than %d levels", what, id, maxTreeDepth)
	}
	typ, count, overflow, err := c.header(what, id, branchPage|leafPage)
	if err != nil {
		return err
	}
	if typ == leafPage && !w.full { // a leaf of records: its header only
		if uint64(pageHeaderSize)+uint64(count)*elementSize > (uint64(overflow)+1)*c.pageSize {
			return fmt.Errorf("%s: page %d: %d elements do not fit in it", what, id, count)
		}
		return nil
	}
	p, err := c.read(what, id, overflow)
	if err != nil {
		return err
	}
	if typ == leafPage {
		return c.leaf(what, fmt.Sprintf("page %d", id), p, w)
	}
	if count == 0 {
		return fmt.Errorf("%s: page %d: a branch page without elements", what, id)
	}
	if pageHeaderSize+int(count)*elementSize > len(p) {
		return fmt.Errorf("%s: page %d: %d elements do not fit in it", what, id, count)
	}
	for i := range int(count) {
		off := pageHeaderSize + i*elementSize
		e := p[off:]
		if uint64(off)+uint64(ne.Uint32(e))+uint64(ne.Uint32(e[4:])) > uint64(len(p)) {
			return fmt.Errorf("%s: page %d: element %d: its key lies outside the page", what, id, i)
		}
		if err := c.tree(what, ne.Uint64(e[8:]), depth+1, w); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks the elements of a leaf page p (a page of the file, or an
// inline bucket's page) and walks the buckets it holds as w says.
func (c *checker) leaf(what, where string, p []byte, w walk) error {
	count := int(ne.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return fmt.Errorf("%s: %s: %d elements do not fit in it", what, where, count)
	}
	for i := range count {
		off := pageHeaderSize + i*elementSize
		e := p[off:]
		flags, pos, ksize, vsize := ne.Uint32(e), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if flags&^bucketLeaf != 0 {
			return fmt.Errorf("%s: %s: element %d: flags %#x", what, where, i, flags)
		}
		if uint64(off)+pos+ksize+vsize > uint64(len(p)) {
			return fmt.Errorf("%s: %s: element %d: its key or value lies outside the page", what, where, i)
		}
		if flags&bucketLeaf == 0 || w.sub == nil {
			continue
		}
		key := p[uint64(off)+pos : uint64(off)+pos+ksize]
		val := p[uint64(off)+pos+ksize : uint64(off)+pos+ksize+vsize]
		if err := c.bucket(what+"/"+strconv.Quote(string(key)), val, w.sub(key)); err != nil {
			return err
		}
	}
	return nil
}

// bucket checks the bucket whose value (in its parent's leaf) is v.
func (c *checker) bucket(what string, v []byte, w walk) error {
	if len(v) < bucketHeader {
		return fmt.Errorf("%s: a bucket value of %d bytes", what, len(v))
	}
	if root := ne.Uint64(v); root != 0 {
		return c.tree(what, root, 0, w)
	}
	inline := v[bucketHeader:]
	if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != leafPage {
		return fmt.Errorf("%s: a damaged inline bucket", what)
	}
	return c.leaf(what, "inline page", inline, w)
}

func typeNames(types uint16) string {
	var s []string
	for _, t := range []struct {
		f    uint16
		name string
	}{{branchPage, "branch"}, {leafPage, "leaf"}, {metaPage, "meta"}, {freelistPage, "freelist"}} {
		if types&t.f != 0 {
			s = append(s, t.name)
		}
	}
	return strings.Join(s, " or ")
}

// at returns n bytes of the file at off (a view of the mapping, or a copy).
func (c *checker) at(off, n uint64) ([]byte, error) {
	if c.data != nil {
		if off > uint64(len(c.data)) || n > uint64(len(c.data))-off {
			return nil, io.ErrUnexpectedEOF
		}
		return c.data[off : off+n], nil
	}
	if off > math.MaxInt64 || n > math.MaxInt {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	if _, err := c.f.ReadAt(b, int64(off)); err != nil {
		return nil, err
	}
	return b, nil
}

// readErr names a short read for what it is here.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("past the end of the file (truncated?)")
	}
	return err
}
