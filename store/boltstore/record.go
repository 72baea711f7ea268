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
// received one holds only version 1 records. (A resourced older than
// version 2 records reports them as corrupt: downgrading after one was
// written needs a backup taken before the upgrade.)
const (
	recordV1 = 1
	recordV2 = 2
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

var errCorrupt = metacodec.ErrCorrupt

// record is a stored value taken apart. Its slices alias the value: copy
// before the transaction ends.
type record struct {
	meta, encoded, body []byte
}

// splitRecord takes a stored value apart.
func splitRecord(v []byte) (record, error) {
	if len(v) == 0 {
		return record{}, fmt.Errorf("%w: empty", errCorrupt)
	}
	version := v[0]
	if version != recordV1 && version != recordV2 {
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
	r.body = rest
	return r, nil
}

// decodeMeta decodes only the metadata of a stored value; the body is not
// touched. Key is left for the caller to set.
func decodeMeta(v []byte) (store.Meta, error) {
	r, err := splitRecord(v)
	if err != nil {
		return store.Meta{}, err
	}
	m, err := metacodec.Decode(r.meta)
	if err != nil {
		return store.Meta{}, err
	}
	if m.Size != int64(len(r.body)) {
		return store.Meta{}, fmt.Errorf("%w: size %d, body of %d bytes", errCorrupt, m.Size, len(r.body))
	}
	return m, nil
}
