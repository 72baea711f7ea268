package boltstore

import (
	"encoding/binary"
	"fmt"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/internal/metacodec"
)

// Record format versions: the first byte of every value this package
// writes. A version 1 record is the header (metadata) and the body; a
// version 2 record also holds Object.Encoded, between the two. Put writes
// version 2 only when there is an encoded form, so a store that never
// received one holds only version 1 records. A version 3 record is the
// metadata and the id of a body bucket (bodiesBucket), which holds the
// body and the encoded form: what a write of largeMin bytes or more
// stores. (A resourced older than version 2 or 3 records reports them as
// corrupt: downgrading after one was written needs a backup taken before
// the upgrade.)
const (
	recordV1 = 1
	recordV2 = 2
	recordV3 = 3
)

// largeMin is the size (body and encoded form together) from which a
// write stores the body in a body bucket of its own (a version 3 record)
// instead of in the record. bbolt rewrites a dirty leaf page whole and
// puts at least two values on a leaf, so a large body that shares a leaf
// is copied again, from the mapping onto the heap, by every later write
// to its neighbours (issue 24: PutStream of parts of 40, 47 and 30 MiB in
// one scheme allocated 40, 89 and 121 MiB). In a body bucket it is written
// once. A variable for the tests, which write the old layout with it.
var largeMin = 64 << 10

// bodyIDLen is the length of a body bucket's id: big-endian uint64.
const bodyIDLen = 8

// The keys of a body bucket: the body, and the encoded form when there
// is one.
var (
	bodyKey    = []byte("b")
	encodedKey = []byte("e")
)

// encodeRecord returns version, uvarint metadata length, metadata, then
// for version 2 the uvarint length of encoded and encoded, then the body.
// The zero time encodes as its (negative) UnixMilli and decodes back to
// the zero time.
func encodeRecord(m *store.Meta, encoded, body []byte) []byte {
	rec := make([]byte, 0, headerBound(m)+binary.MaxVarintLen64+len(encoded)+len(body))
	rec = appendHeader(rec, m, encoded)
	return append(rec, body...)
}

// headerBound is an upper bound of the length of m's version 1 record
// header (version, metadata length and metadata), whatever its times are.
func headerBound(m *store.Meta) int {
	return 1 + binary.MaxVarintLen64 + metacodec.Bound(m)
}

// appendHeader appends m's record header, everything but the body, to dst:
// a version 1 header when encoded is empty, else a version 2 header that
// ends with encoded.
func appendHeader(dst []byte, m *store.Meta, encoded []byte) []byte {
	meta := metacodec.Append(make([]byte, 0, metacodec.Bound(m)), m)
	if len(encoded) == 0 {
		dst = append(dst, recordV1)
		dst = binary.AppendUvarint(dst, uint64(len(meta)))
		return append(dst, meta...)
	}
	dst = append(dst, recordV2)
	dst = binary.AppendUvarint(dst, uint64(len(meta)))
	dst = append(dst, meta...)
	dst = binary.AppendUvarint(dst, uint64(len(encoded)))
	return append(dst, encoded...)
}

// appendRef returns m's version 3 record: the header and the id of the
// body bucket that holds the body and the encoded form.
func appendRef(m *store.Meta, id uint64) []byte {
	meta := metacodec.Append(make([]byte, 0, metacodec.Bound(m)), m)
	rec := make([]byte, 0, 1+binary.MaxVarintLen64+len(meta)+bodyIDLen)
	rec = append(rec, recordV3)
	rec = binary.AppendUvarint(rec, uint64(len(meta)))
	rec = append(rec, meta...)
	return binary.BigEndian.AppendUint64(rec, id)
}

// bodyID returns the key of body bucket id.
func bodyID(id uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, bodyIDLen), id)
}

var errCorrupt = metacodec.ErrCorrupt

// record is a stored value taken apart. Its slices alias the value: copy
// before the transaction ends. A version 3 record has ref, the key of its
// body bucket, and no body or encoded form until loadRecord fills them.
type record struct {
	meta, encoded, body []byte
	ref                 []byte
}

// splitRecord takes a stored value apart.
func splitRecord(v []byte) (record, error) {
	if len(v) == 0 {
		return record{}, fmt.Errorf("%w: empty", errCorrupt)
	}
	version := v[0]
	if version != recordV1 && version != recordV2 && version != recordV3 {
		return record{}, fmt.Errorf("%w: unknown format version %d", errCorrupt, version)
	}
	rest := v[1:]
	part := func(what string) ([]byte, error) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, fmt.Errorf("%w: bad %s length", errCorrupt, what)
		}
		p := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		return p, nil
	}
	var r record
	var err error
	if r.meta, err = part("metadata"); err != nil {
		return record{}, err
	}
	if version == recordV2 {
		if r.encoded, err = part("encoded form"); err != nil {
			return record{}, err
		}
		if len(r.encoded) == 0 {
			return record{}, fmt.Errorf("%w: version 2 record without an encoded form", errCorrupt)
		}
	}
	if version == recordV3 {
		if len(rest) != bodyIDLen {
			return record{}, fmt.Errorf("%w: version 3 record with a body id of %d bytes", errCorrupt, len(rest))
		}
		r.ref = rest
		return r, nil
	}
	r.body = rest
	return r, nil
}

// decodeMeta decodes only the metadata of a stored value; the body is not
// touched. Key is left for the caller to set. The size of a version 3
// record's body is checked where the body is read (loadRecord).
func decodeMeta(v []byte) (store.Meta, error) {
	r, err := splitRecord(v)
	if err != nil {
		return store.Meta{}, err
	}
	m, err := metacodec.Decode(r.meta)
	if err != nil {
		return store.Meta{}, err
	}
	if r.ref == nil && m.Size != int64(len(r.body)) {
		return store.Meta{}, fmt.Errorf("%w: size %d, body of %d bytes", errCorrupt, m.Size, len(r.body))
	}
	return m, nil
}
