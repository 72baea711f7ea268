package s3store

import (
	"encoding/binary"
	"fmt"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/internal/metacodec"
)

// magic starts every object this package writes: "rsd" and the format
// version. A different first four bytes means the object is not ours or is
// of a newer format; both read as corrupt.
var magic = [4]byte{'r', 's', 'd', 1}

// maxHeaderLen bounds the header of a record. Metadata is small (the server
// caps titles and descriptions at a few KiB); the bound only stops a
// corrupt length from asking for gigabytes.
const maxHeaderLen = 1 << 20

var errCorrupt = metacodec.ErrCorrupt

// record is the decoded header of a stored object.
type record struct {
	meta    store.Meta // Key is left zero
	writeID string     // random per Put attempt; tells our own write apart
}

// encodeRecord returns the object content for r and body: magic, uvarint
// metadata length, metadata, body. The body is copied.
func encodeRecord(r *record, body []byte) []byte {
	return append(encodeHeader(r), body...)
}

// encodeHeader returns the header of r's object content: magic, uvarint
// metadata length and metadata; the body follows it.
func encodeHeader(r *record) []byte {
	meta := metacodec.Append(make([]byte, 0, metacodec.Bound(&r.meta, r.writeID)), &r.meta, r.writeID)
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
	var r record
	if r.meta, err = metacodec.Decode(b[len(magic)+w:n], &r.writeID); err != nil {
		return record{}, 0, err
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
