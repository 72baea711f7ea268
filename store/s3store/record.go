package s3store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/resourced/resourced/store"
)

// magic starts every object this package writes: "rsd" and the format
// version. A different first four bytes means the object is not ours or is
// of a newer format; both read as corrupt.
var magic = [4]byte{'r', 's', 'd', 1}

// flagListed is bit 0 of the metadata flags byte.
const flagListed = 1 << 0

// maxHeaderLen bounds the header of a record. Metadata is small (the server
// caps titles and descriptions at a few KiB); the bound only stops a
// corrupt length from asking for gigabytes.
const maxHeaderLen = 1 << 20

var errCorrupt = errors.New("corrupt record")

// record is the decoded header of a stored object.
type record struct {
	meta    store.Meta // Key is left zero
	writeID string     // random per Put attempt; tells our own write apart
}

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

// encodeRecord returns the object content for r and body: magic, uvarint
// metadata length, metadata, body. The body is copied.
func encodeRecord(r *record, body []byte) []byte {
	return append(encodeHeader(r), body...)
}

// encodeHeader returns the header of r's object content: magic, uvarint
// metadata length and metadata; the body follows it.
func encodeHeader(r *record) []byte {
	m := &r.meta
	strs := []string{m.MIMEType, m.SHA256, m.Title, m.Description, string(m.Visibility), r.writeID}
	n := 1 + 4*binary.MaxVarintLen64
	for _, s := range strs {
		n += binary.MaxVarintLen64 + len(s)
	}
	meta := make([]byte, 0, n)
	var flags byte
	if m.Listed {
		flags |= flagListed
	}
	meta = append(meta, flags)
	meta = binary.AppendVarint(meta, m.Size)
	meta = binary.AppendVarint(meta, m.Created.UnixMilli())
	meta = binary.AppendVarint(meta, m.Modified.UnixMilli())
	meta = binary.AppendVarint(meta, m.Expires.UnixMilli())
	for _, s := range strs {
		meta = binary.AppendUvarint(meta, uint64(len(s)))
		meta = append(meta, s...)
	}

	hdr := make([]byte, 0, len(magic)+binary.MaxVarintLen64+len(meta))
	hdr = append(hdr, magic[:]...)
	hdr = binary.AppendUvarint(hdr, uint64(len(meta)))
	return append(hdr, meta...)
}

// headerLen returns the length of the header (magic, length and metadata)
// of the record that b starts with. b needs only the first 14 bytes of the
// record; the result may exceed len(b).
func headerLen(b []byte) (int, error) {
	if len(b) < len(magic) || [4]byte(b[:4]) != magic {
		return 0, fmt.Errorf("%w: unknown format", errCorrupt)
	}
	n, w := binary.Uvarint(b[len(magic):])
	if w <= 0 || n > maxHeaderLen {
		return 0, fmt.Errorf("%w: bad metadata length", errCorrupt)
	}
	return len(magic) + w + int(n), nil
}

// decodeHeader decodes the header of a record from b, which holds at least
// the whole header. It returns the header length; the body follows it.
func decodeHeader(b []byte) (record, int, error) {
	n, err := headerLen(b)
	if err != nil {
		return record{}, 0, err
	}
	if n > len(b) {
		return record{}, 0, fmt.Errorf("%w: header of %d bytes, have %d", errCorrupt, n, len(b))
	}
	_, w := binary.Uvarint(b[len(magic):])
	d := decoder{b: b[len(magic)+w : n]}
	var r record
	m := &r.meta
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
	r.writeID = d.string()
	if d.err != nil {
		return record{}, 0, d.err
	}
	if len(d.b) != 0 {
		return record{}, 0, fmt.Errorf("%w: %d trailing metadata bytes", errCorrupt, len(d.b))
	}
	if m.Size < 0 {
		return record{}, 0, fmt.Errorf("%w: negative size", errCorrupt)
	}
	return r, n, nil
}

// decodeRecord decodes a whole object: the header and the body, checking
// the body against the stored size and SHA-256. body aliases b.
func decodeRecord(b []byte) (r record, body []byte, err error) {
	r, n, err := decodeHeader(b)
	if err != nil {
		return record{}, nil, err
	}
	body = b[n:]
	if int64(len(body)) != r.meta.Size {
		return record{}, nil, fmt.Errorf("%w: size %d, body of %d bytes", errCorrupt, r.meta.Size, len(body))
	}
	if store.Sum(body) != r.meta.SHA256 {
		return record{}, nil, fmt.Errorf("%w: body does not match its sha256", errCorrupt)
	}
	return r, body, nil
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
	s := string(d.b[w : w+int(n)])
	d.b = d.b[w+int(n):]
	return s
}
