package edge

import (
	"io"
	"net/http"
)

// BodyPrealloc is the most of a body's announced length ReadBody
// allocates before the bytes arrive: a client that announces a body and
// sends it slowly holds no more than this before it is dropped.
const BodyPrealloc = 16 << 10

// ReadBody reads r's body, at most limit bytes (an *http.MaxBytesError
// past them). A body whose Content-Length is at most BodyPrealloc is read
// into one buffer of that size; io.ReadAll would read it in growing pieces
// and copy them into a final slice (four allocations for a 1 KiB save).
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(nil, r.Body, limit)
	if r.ContentLength <= 0 || r.ContentLength > BodyPrealloc {
		return io.ReadAll(rd)
	}
	b := make([]byte, 0, r.ContentLength+1) // +1: EOF arrives without a growth
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than announced: net/http's error follows
		}
	}
}
