// Package metacodec owns the binary encoding of store.Meta that boltstore
// records and s3store objects share: a flags byte, the size and three
// times as varints (milliseconds since the Unix epoch, UTC), then MIME
// type, SHA-256, title, description and visibility as uvarint-length
// strings, then whatever extra strings the backend keeps (s3store: the
// write id). The key is not encoded: it is where the record is stored.
//
// Both on-disk formats depend on these bytes; change them only with a new
// record version in both backends.
package metacodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/resourced/resourced/store"
)

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("corrupt record")

// flagListed is bit 0 of the flags byte.
const flagListed = 1 << 0

// MsUTC returns t at the precision and in the zone the backends keep.
func MsUTC(t time.Time) time.Time {
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// Normalize returns m as it reads back after being stored.
func Normalize(m store.Meta) store.Meta {
	m.Created = MsUTC(m.Created)
	m.Modified = MsUTC(m.Modified)
	m.Expires = MsUTC(m.Expires)
	return m
}

// strings returns m's string fields in encoding order.
func stringFields(m *store.Meta) [5]string {
	return [5]string{m.MIMEType, m.SHA256, m.Title, m.Description, string(m.Visibility)}
}

// Bound is an upper bound of the length of Append's encoding of m and
// extra, whatever m's times are.
func Bound(m *store.Meta, extra ...string) int {
	n := 1 + 4*binary.MaxVarintLen64
	for _, s := range stringFields(m) {
		n += binary.MaxVarintLen64 + len(s)
	}
	for _, s := range extra {
		n += binary.MaxVarintLen64 + len(s)
	}
	return n
}

// Append appends the encoding of m, then of extra, to dst. The zero time
// encodes as its (negative) UnixMilli and decodes back to the zero time.
func Append(dst []byte, m *store.Meta, extra ...string) []byte {
	var flags byte
	if m.Listed {
		flags |= flagListed
	}
	dst = append(dst, flags)
	dst = binary.AppendVarint(dst, m.Size)
	dst = binary.AppendVarint(dst, m.Created.UnixMilli())
	dst = binary.AppendVarint(dst, m.Modified.UnixMilli())
	dst = binary.AppendVarint(dst, m.Expires.UnixMilli())
	for _, s := range stringFields(m) {
		dst = appendString(dst, s)
	}
	for _, s := range extra {
		dst = appendString(dst, s)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Decode decodes b, which holds exactly one encoding of a Meta followed by
// len(extra) extra strings, into a Meta (Key left zero) and *extra[i]. A
// negative size, a short or long b, or a malformed field is an error
// wrapping ErrCorrupt. Strings are copied out of b.
func Decode(b []byte, extra ...*string) (store.Meta, error) {
	d := decoder{b: b}
	var m store.Meta
	m.Listed = d.byte()&flagListed != 0
	m.Size = d.varint()
	m.Created = time.UnixMilli(d.varint()).UTC()
	m.Modified = time.UnixMilli(d.varint()).UTC()
	m.Expires = time.UnixMilli(d.varint()).UTC()
	m.MIMEType = d.string()
	m.SHA256 = d.string()
	m.Title = d.string()
	m.Description = d.string()
	m.Visibility = store.Visibility(d.string())
	for _, e := range extra {
		*e = d.string()
	}
	if d.err != nil {
		return store.Meta{}, d.err
	}
	if len(d.b) != 0 {
		return store.Meta{}, fmt.Errorf("%w: %d trailing metadata bytes", ErrCorrupt, len(d.b))
	}
	if m.Size < 0 {
		return store.Meta{}, fmt.Errorf("%w: negative size", ErrCorrupt)
	}
	return m, nil
}

// decoder reads the encoding; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
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
	s := string(d.b[w : w+int(n)]) // a copy: b may be bbolt's mmap
	d.b = d.b[w+int(n):]
	return s
}
