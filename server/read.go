package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// The read path: one resolution and one renderer for resources/read.
//
// Whether a caller may read a URI is the service's decision
// (service/resolve.go: Resolve, then View on the metadata alone, before a
// byte of the body is copied). resolveRead asks it and keeps the
// rendering choices. Both ways a read arrives use it: the read stage
// (readpath.go), which answers the plainest requests itself, and go-sdk's
// dispatch (readResource below), which answers everything else.
//
// What it gives back is a readView, which renderRead writes as the
// JSON-RPC response and readResource turns into go-sdk's result. Both take
// the _meta members of a content item from one ordered list (eachMeta), so
// the two answers cannot drift apart; server/readpath_test.go holds them
// byte for byte equal.
//
// Memory per read is bounded. A response of up to readChunk bytes is
// rendered whole in a pooled buffer. A larger one is written readChunk
// bytes at a time, each chunk copied from the backend in its own short
// read transaction (store.Backend.View): a client that reads slowly,
// or not at all, holds one chunk (until the write deadline guardHTTP sets
// from the response's length drops it), never the body, and never holds a bbolt
// transaction open (a long one would stall bbolt's remapping, and so every
// write, once the file grows). Each later chunk checks that the object is
// still the one the first saw (sha256 and modification time): a replace in
// the middle of a read ends the response (the client sees a cut stream and
// retries) rather than mixing two bodies.

// readChunk is the most one read holds of a body or its encoded form:
// 1 000 clients that never read hold 128 MiB at most.
const readChunk = 128 << 10

// errChanged ends a chunked read whose object changed between chunks.
var errChanged = errors.New("object changed during the read")

// readView is a readable object, as resolve opened it.
type readView struct {
	meta store.Meta
	// viewer is set when the bytes come from the backend's own memory,
	// chunk by chunk while rendering (large reads on bbolt and memory).
	viewer store.Backend
	// whole is the response's content member ("text":… or "blob":…),
	// rendered during resolve, when it fit in one chunk; pooled.
	whole *[]byte
	// body is the whole body when the backend handed out a copy (backends
	// that keep no encoded form, and go-sdk's path, which needs a string).
	body []byte
	// form reports that the stored form is used (chunked reads); text that
	// the body is served as text (chunked reads without a form).
	form, text bool
	// formLen is the length of the stored form's member (chunked reads).
	formLen int
	// member is the content member from the server's member cache
	// (backends without stored forms); shared, never modified.
	member []byte
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, readChunk+readChunk/8); return &b }}

func (v *readView) release() {
	if v.whole != nil && cap(*v.whole) <= 2*readChunk {
		*v.whole = (*v.whole)[:0]
		chunkPool.Put(v.whole)
	}
	v.whole = nil
}

// checkReadURI is the service's Resolve as a JSON-RPC error: it runs
// before go-sdk dispatches a read or a listen, so that a malformed URI is
// answered in our words.
func (s *Server) checkReadURI(raw string) error {
	if _, f := s.svc.Resolve(raw); f != nil {
		return readError(raw, f)
	}
	return nil
}

// readError is the JSON-RPC error of a read the service refused: every
// URI the caller cannot read is one notFound, a malformed URI of ours says
// why, a backend failure (logged by the service) is an internal error.
func readError(raw string, f *service.Failure) error {
	switch f.ErrorKind {
	case service.KindNotFound:
		return notFound(raw)
	case service.KindValidation:
		reason := f.Message
		if len(f.FieldErrors) > 0 {
			reason = f.FieldErrors[0].Message
		}
		return invalidURI(raw, reason)
	}
	if errors.Is(f, store.ErrSlowListing) {
		return rpcError(jsonrpc.CodeInternalError, f.Message, nil) // names no backend detail
	}
	if errors.Is(f, context.Canceled) || errors.Is(f, context.DeadlineExceeded) {
		return rpcError(jsonrpc.CodeInternalError, "Request canceled or timed out", nil)
	}
	return rpcError(jsonrpc.CodeInternalError, "Internal error: the storage backend failed; retry later", nil)
}

// resolveRead opens raw for p through the service's View, which decides
// readability from the metadata alone with one backend access; what is
// left here is the rendering choice. wantBody asks for the whole body as
// a copy (go-sdk's path); otherwise the view is for renderRead. The
// caller releases the view.
func (s *Server) resolveRead(ctx context.Context, p auth.Principal, raw string, wantBody bool) (*readView, error) {
	v := &readView{}
	chunked := s.store.KeepsEncoded()
	f := s.svc.View(ctx, p.Tenant, raw, func(m *store.Meta, encoded, body []byte) error {
		v.meta = *m
		if wantBody {
			v.body = append([]byte{}, body...)
			return nil
		}
		if !chunked {
			s.memberView(v, m, body)
			return nil
		}
		var member []byte
		switch n := jsonwire.FormLen(encoded); {
		case n == 0 || s.damaged.has(m):
		case n <= readChunk:
			// Small: verified whole, then copied.
			var ferr error
			if member, ferr = jsonwire.FormMember(encoded); ferr != nil {
				s.damaged.add(m)
			} else {
				v.whole = chunkPool.Get().(*[]byte)
				*v.whole = append((*v.whole)[:0], member...)
				return nil
			}
		default:
			// Large: verified here, before a byte is sent (a damaged
			// form is then never served, not even in part), and
			// copied chunk by chunk by copyForm.
			var ferr error
			if member, ferr = jsonwire.FormMember(encoded); ferr != nil {
				s.damaged.add(m)
			}
		}
		if member == nil && len(body) <= readChunk/8 {
			// Small enough that the member, however escaped (up to six
			// bytes a byte), stays near one chunk.
			v.whole = chunkPool.Get().(*[]byte)
			*v.whole = jsonwire.AppendMember((*v.whole)[:0], jsonwire.Textual(m.MIMEType, body), body)
			return nil
		}
		v.viewer = s.store
		if member != nil {
			v.form, v.formLen = true, len(member)
		} else {
			v.text = jsonwire.Textual(m.MIMEType, body)
		}
		return nil
	})
	if f != nil {
		v.release()
		return nil, readError(raw, f)
	}
	return v, nil
}

// memberView fills v from a body copied out of a backend that keeps no
// encoded form (s3store): the content member is encoded once per body
// (s.members), not once per read.
func (s *Server) memberView(v *readView, m *store.Meta, body []byte) {
	switch {
	case len(body) <= readChunk/8:
		v.whole = chunkPool.Get().(*[]byte)
		*v.whole = jsonwire.AppendMember((*v.whole)[:0], jsonwire.Textual(m.MIMEType, body), body)
	case s.members.Fits(m.Size * 2):
		// The member follows from the body and whether its type is
		// textual (then the body's UTF-8 validity, a function of the
		// body, decides), so that pair keys it and a hit needs no pass
		// over the body.
		tt := jsonwire.TextType(m.MIMEType)
		if v.member = s.members.Get(m.SHA256, tt); v.member == nil {
			v.member = jsonwire.AppendMember(make([]byte, 0, len(body)+len(body)/8+16), tt && utf8.Valid(body), body)
			s.members.Put(m.SHA256, tt, v.member)
		}
	default:
		// Too large to keep encoded: a copy, escaped as it is sent.
		v.body, v.text = append([]byte{}, body...), jsonwire.Textual(m.MIMEType, body)
	}
}

// readResponse is what a read's response says besides the object: the
// request id, the protocol, the URI as the caller wrote it.
type readResponse struct {
	id     []byte // raw JSON
	modern bool   // 2026-07-28
	uri    string
}

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, readChunk) }}

// renderRead writes the successful response of a read: the head, the
// content member (whole, or chunk by chunk from the backend), the tail. A
// failure after the status line was sent (the object changed between
// chunks, the client went away) cuts the response; the caller counts it.
func (s *Server) renderRead(w http.ResponseWriter, ctx context.Context, rr *readResponse, v *readView) error {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	head := s.appendReadHead((*bp)[:0], rr, &v.meta)
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	if v.whole != nil {
		// One write of the whole response.
		out := append(head, *v.whole...)
		out = appendReadTail(out, rr, &v.meta)
		*bp = out[:0]
		h.Set("Content-Length", strconv.Itoa(len(out))) // sets the write deadline (guardHTTP)
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(out)
		return err
	}
	tail := appendReadTail(nil, rr, &v.meta)
	if v.member != nil {
		h.Set("Content-Length", strconv.Itoa(len(head)+len(v.member)+len(tail)))
		w.WriteHeader(http.StatusOK)
		for _, b := range [][]byte{head, v.member, tail} {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	if v.form {
		h.Set("Content-Length", strconv.Itoa(len(head)+v.formLen+len(tail)))
	} else {
		// The escaped length is not known before it is written: announce
		// a bound, for the write deadline (guardHTTP).
		edge.ExtendWrite(w, 2*v.meta.Size+int64(len(head)+len(tail)))
	}
	w.WriteHeader(http.StatusOK)
	if v.viewer != nil && v.form {
		// Straight from the chunk buffer to the connection: the head
		// leads the first chunk, the tail follows the last.
		*bp = head
		return copyForm(ctx, w, bp, v, tail)
	}
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() { bw.Reset(nil); bufPool.Put(bw) }()
	bw.Write(head)
	var err error
	switch {
	case v.viewer != nil:
		err = copyBody(ctx, bw, bp, v)
	default:
		err = writeMember(bw, bp, v.text, v.body)
	}
	if err != nil {
		return err
	}
	bw.Write(tail)
	return bw.Flush()
}

// sameObject reports whether m is still the object v opened.
func sameObject(v *readView, m *store.Meta) bool {
	return m.SHA256 == v.meta.SHA256 && m.Modified.Equal(v.meta.Modified)
}

// copyForm writes the stored form's member of v, readChunk bytes per
// backend access, then tail; *bp holds what goes before the member (the
// head). Each chunk goes from the chunk buffer to the connection as it is.
func copyForm(ctx context.Context, w http.ResponseWriter, bp *[]byte, v *readView, tail []byte) error {
	for off := 0; off < v.formLen; {
		start := len(*bp)
		err := v.viewer.View(ctx, v.meta.Key, func(m *store.Meta, encoded, _ []byte) error {
			member := jsonwire.FormUnchecked(encoded) // resolveRead verified it; sameObject below
			if !sameObject(v, m) || len(member) != v.formLen {
				return errChanged
			}
			*bp = append(*bp, member[off:min(off+readChunk, len(member))]...)
			return nil
		})
		if err != nil {
			return err
		}
		if off += len(*bp) - start; off == v.formLen {
			*bp = append(*bp, tail...)
		}
		if _, err := w.Write(*bp); err != nil {
			return err
		}
		*bp = (*bp)[:0]
	}
	return nil
}

// copyBody writes v's body as its text or blob member, encoding about
// readChunk/2 body bytes per backend access (text never split inside a
// character, base64 in whole groups of three bytes).
func copyBody(ctx context.Context, bw *bufio.Writer, bp *[]byte, v *readView) error {
	if v.text {
		bw.WriteString(`"text":"`)
	} else {
		bw.WriteString(`"blob":"`)
	}
	const step = readChunk / 2 / 3 * 3 // a multiple of 3: base64 without padding inside
	for off := 0; off < int(v.meta.Size); {
		var n int
		err := v.viewer.View(ctx, v.meta.Key, func(m *store.Meta, _, body []byte) error {
			if !sameObject(v, m) || len(body) != int(v.meta.Size) {
				return errChanged
			}
			n = min(step, len(body)-off)
			if v.text {
				for off+n < len(body) && n > step-4 && body[off+n]&0xc0 == 0x80 {
					n-- // end before a character, never inside one
				}
				*bp = jsonwire.AppendEscaped((*bp)[:0], body[off:off+n])
			} else {
				*bp = base64.StdEncoding.AppendEncode((*bp)[:0], body[off:off+n])
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := bw.Write(*bp); err != nil {
			return err
		}
		off += n
	}
	return bw.WriteByte('"')
}

// writeMember writes body, a copy the read owns, as its text or blob
// member through bw, encoding it chunk by chunk.
func writeMember(bw *bufio.Writer, bp *[]byte, text bool, body []byte) error {
	if !text {
		bw.WriteString(`"blob":"`)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(body)
		enc.Close()
		return bw.WriteByte('"')
	}
	bw.WriteString(`"text":"`)
	const chunk = readChunk / 4
	for b := body; len(b) > 0; {
		n := min(len(b), chunk)
		for n < len(b) && n > chunk-4 && b[n]&0xc0 == 0x80 {
			n-- // end the chunk before a character, never inside one
		}
		*bp = jsonwire.AppendEscaped((*bp)[:0], b[:n])
		if _, err := bw.Write(*bp); err != nil {
			return err
		}
		b = b[n:]
	}
	return bw.WriteByte('"')
}

// appendReadHead appends a read response up to its contents' text or blob
// member, field for field as go-sdk writes it.
func (s *Server) appendReadHead(dst []byte, rr *readResponse, m *store.Meta) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = jsonwire.AppendID(dst, rr.id)
	dst = append(dst, `,"result":{`...)
	if rr.modern {
		dst = append(dst, s.serverInfoMeta...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"ttlMs":`...)
	dst = strconv.AppendInt(dst, int64(s.ttlMs(m)), 10)
	dst = append(dst, `,"cacheScope":"`...)
	dst = append(dst, cacheScope(m.Visibility)...)
	dst = append(dst, `","contents":[{"uri":`...)
	dst = jsonwire.AppendString(dst, rr.uri)
	dst = append(dst, `,"mimeType":`...)
	dst = jsonwire.AppendString(dst, m.MIMEType)
	return append(dst, ',')
}

// appendReadTail appends the rest of a read response after the contents'
// text or blob member: the content's _meta (eachMeta), then the result's
// end.
func appendReadTail(dst []byte, rr *readResponse, m *store.Meta) []byte {
	dst = append(dst, `,"_meta":{`...)
	first := true
	eachMeta(m, func(name string, str string, t time.Time, n int64, kind metaKind) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		switch kind {
		case metaTime:
			dst = append(dst, '"')
			dst = jsonwire.AppendTime(dst, t)
			dst = append(dst, '"')
		case metaString:
			dst = jsonwire.AppendString(dst, str)
		case metaInt:
			dst = strconv.AppendInt(dst, n, 10)
		}
	})
	dst = append(dst, `}}]`...)
	if rr.modern {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, "}}"...)
}

type metaKind int

const (
	metaString metaKind = iota
	metaTime
	metaInt
)

// eachMeta calls f with each _meta member of a read's content item, in the
// order encoding/json writes a map's keys (sorted): the one list both
// renderers use.
func eachMeta(m *store.Meta, f func(name, str string, t time.Time, n int64, kind metaKind)) {
	if !m.Expires.IsZero() {
		f("expiresAt", "", m.Expires, 0, metaTime)
	}
	f("lastModified", "", m.Modified, 0, metaTime)
	f("sha256", m.SHA256, time.Time{}, 0, metaString)
	f("size", "", time.Time{}, m.Size, metaInt)
}

// contentMeta is eachMeta as go-sdk's Meta map.
func contentMeta(m *store.Meta) mcp.Meta {
	meta := mcp.Meta{}
	eachMeta(m, func(name, str string, t time.Time, n int64, kind metaKind) {
		switch kind {
		case metaTime:
			meta[name] = jsonwire.FormatTime(t)
		case metaString:
			meta[name] = str
		case metaInt:
			meta[name] = n
		}
	})
	return meta
}

// readResource serves resources/read for every scheme's template: the
// reads the read stage did not answer itself.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw := req.Params.URI
	p, err := mcptool.RequireScope(ctx, auth.ScopeRead)
	if err != nil {
		return nil, err
	}
	v, err := s.resolveRead(ctx, p, raw, true)
	if err != nil {
		return nil, err
	}
	c := &mcp.ResourceContents{URI: raw, MIMEType: v.meta.MIMEType, Meta: contentMeta(&v.meta)}
	if jsonwire.Textual(v.meta.MIMEType, v.body) {
		c.Text = string(v.body)
	} else {
		c.Blob = v.body
	}
	s.metrics.bytesRead.WithLabelValues(v.meta.Key.Scheme()).Add(float64(v.meta.Size))
	res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
	res.TTLMs = s.ttlMs(&v.meta)
	res.CacheScope = cacheScope(v.meta.Visibility)
	return res, nil
}

// ttlMs is the freshness hint of a read: the scheme's ttl, and for an
// immutable snapshot never beyond its remaining life.
func (s *Server) ttlMs(m *store.Meta) int {
	sc := s.schemes[m.Key.Scheme()]
	ttl := sc.TTL
	if !m.Expires.IsZero() {
		ttl = min(ttl, m.Expires.Sub(s.now()))
	}
	return int(max(ttl, 0) / time.Millisecond)
}

func cacheScope(v store.Visibility) string {
	if v == store.Public {
		return "public"
	}
	return "private"
}
