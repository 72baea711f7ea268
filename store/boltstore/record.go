package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/resourced/resourced/store"
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

// flagListed is bit 0 of the metadata flags byte.
const flagListed = 1 << 0

// msUTC is the precision and zone the backend keeps times in.
func msUTC(t time.Time) time.Time {
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// normalize returns m as it reads back after being stored.
func normalize(m store.Meta) store.Meta {
	m.Created = msUTC(m.Created)
	m.Modified = msUTC(m.Modified)
	m.Expires = msUTC(m.Expires)
	return m
}

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
	n := 1 + 4*binary.MaxVarintLen64
	for _, s := range []string{m.MIMEType, m.SHA256, m.Title, m.Description, string(m.Visibility)} {
		n += binary.MaxVarintLen64 + len(s)
	}
	return 1 + binary.MaxVarintLen64 + n
}

// appendHeader appends m's record header, everything but the body, to dst:
// a version 1 header when encoded is empty, else a version 2 header that
// ends with encoded.
func appendHeader(dst []byte, m *store.Meta, encoded []byte) []byte {
	meta := make([]byte, 0, headerBound(m))
	var flags byte
	if m.Listed {
		flags |= flagListed
	}
	meta = append(meta, flags)
	meta = binary.AppendVarint(meta, m.Size)
	meta = binary.AppendVarint(meta, m.Created.UnixMilli())
	meta = binary.AppendVarint(meta, m.Modified.UnixMilli())
	meta = binary.AppendVarint(meta, m.Expires.UnixMilli())
	for _, s := range []string{m.MIMEType, m.SHA256, m.Title, m.Description, string(m.Visibility)} {
		meta = binary.AppendUvarint(meta, uint64(len(s)))
		meta = append(meta, s...)
	}
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

var errCorrupt = errors.New("corrupt record")

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
	body := r.body
	d := decoder{b: r.meta}
	var m store.Meta
	flags := d.byte()
	m.Listed = flags&flagListed != 0
	m.Size = d.varint()
	m.Created = time.UnixMilli(d.varint()).UTC()
	m.Modified = time.UnixMilli(d.varint()).UTC()
	m.Expires = time.UnixMilli(d.varint()).UTC()
	m.MIMEType = d.string()
	m.SHA256 = d.string()
	m.Title = d.string()
	m.Description = d.string()
	m.Visibility = store.Visibility(d.string())
	if d.err != nil {
		return store.Meta{}, d.err
	}
	if len(d.b) != 0 {
		return store.Meta{}, fmt.Errorf("%w: %d trailing metadata bytes", errCorrupt, len(d.b))
	}
	if m.Size != int64(len(body)) {
		return store.Meta{}, fmt.Errorf("%w: size %d, body of %d bytes", errCorrupt, m.Size, len(body))
	}
	return m, nil
}

// decoder reads the metadata encoding; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("flags")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("integer")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) string() string {
	n, w := binary.Uvarint(d.b)
	if w <= 0 || n > uint64(len(d.b)-w) {
		d.fail("string")
		return ""
	}
	s := string(d.b[w : w+int(n)]) // copies out of the mmap
	d.b = d.b[w+int(n):]
	return s
}
