package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/formcache"
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
	// cached is the content member from the form cache, held until
	// release.
	cached *formcache.Entry
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, readChunk+readChunk/8); return &b }}

func (v *readView) release() {
	if v.cached != nil {
		v.cached.Release()
		v.cached = nil
	}
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
// a copy (go-sdk's path); otherwise the view is for renderRead: the
// member from the form cache (s.forms, filled on a miss), or, when the
// cache cannot keep it, rendered whole or chunk by chunk. The caller
// releases the view.
func (s *Server) resolveRead(ctx context.Context, p auth.Principal, raw string, wantBody bool) (*readView, error) {
	v := &readView{}
	f := s.svc.View(ctx, p.Tenant, raw, func(m *store.Meta, encoded, body []byte) error {
		v.meta = *m
		if wantBody {
			v.body = append([]byte{}, body...)
			return nil
		}
		// The key is the content; readability was decided on m above.
		k := formcache.Key{SHA256: m.SHA256, MIMEType: m.MIMEType}
		if v.cached = s.forms.Get(k); v.cached != nil {
			return nil
		}
		if v.cached = s.forms.Fill(k, memberBound(s.damaged, m, encoded), func() ([]byte, error) { return fillMember(s.damaged, m, encoded, body) }); v.cached != nil {
			return nil
		}
		uncachedView(s.damaged, s.store, v, m, encoded, body)
		return nil
	})
	if f != nil {
		v.release()
		return nil, readError(raw, f)
	}
	return v, nil
}

// memberBound is the most bytes the member of m can take: the stored
// form's, or what escaping (six bytes a byte at worst) or base64 makes of
// the body.
func memberBound(d *damagedForms, m *store.Meta, encoded []byte) int64 {
	if n := jsonwire.FormLen(encoded); n > 0 && !d.has(m) {
		return int64(n)
	}
	if jsonwire.TextType(m.MIMEType) {
		return 6*m.Size + 16
	}
	return (m.Size+2)/3*4 + 16
}

// fillMember is the member of m for the form cache, verified: the stored
// form when its checksum holds (a damaged one is reported and fails the
// fill, so the read encodes the body), else the body encoded, which the
// backend checked against its digest.
func fillMember(d *damagedForms, m *store.Meta, encoded, body []byte) ([]byte, error) {
	if jsonwire.FormLen(encoded) > 0 && !d.has(m) {
		member, err := jsonwire.FormMember(encoded)
		if err != nil {
			d.add(m)
			return nil, err
		}
		return bytes.Clone(member), nil
	}
	return jsonwire.AppendMember(nil, jsonwire.Textual(m.MIMEType, body), body), nil
}

// uncachedView fills v for a read the form cache does not keep (off, the
// body over its entry limit, or no room) from backend b, d holding the
// damaged forms:
// small responses rendered whole,
// larger ones chunk by chunk from a backend that keeps the body in
// memory, or escaped as sent from the copy a remote backend handed out.
func uncachedView(d *damagedForms, b store.Backend, v *readView, m *store.Meta, encoded, body []byte) {
	if !b.KeepsEncoded() {
		if len(body) <= readChunk/8 {
			v.whole = chunkPool.Get().(*[]byte)
			*v.whole = jsonwire.AppendMember((*v.whole)[:0], jsonwire.Textual(m.MIMEType, body), body)
			return
		}
		v.body, v.text = append([]byte{}, body...), jsonwire.Textual(m.MIMEType, body)
		return
	}
	var member []byte
	switch n := jsonwire.FormLen(encoded); {
	case n == 0 || d.has(m):
	case n <= readChunk:
		// Small: verified whole, then copied.
		var ferr error
		if member, ferr = jsonwire.FormMember(encoded); ferr != nil {
			d.add(m)
		} else {
			v.whole = chunkPool.Get().(*[]byte)
			*v.whole = append((*v.whole)[:0], member...)
			return
		}
	default:
		// Large: verified here, before a byte is sent (a damaged
		// form is then never served, not even in part), and
		// copied chunk by chunk by copyForm.
		var ferr error
		if member, ferr = jsonwire.FormMember(encoded); ferr != nil {
			d.add(m)
		}
	}
	if member == nil && len(body) <= readChunk/8 {
		// Small enough that the member, however escaped (up to six
		// bytes a byte), stays near one chunk.
		v.whole = chunkPool.Get().(*[]byte)
		*v.whole = jsonwire.AppendMember((*v.whole)[:0], jsonwire.Textual(m.MIMEType, body), body)
		return
	}
	v.viewer = b
	if member != nil {
		v.form, v.formLen = true, len(member)
	} else {
		v.text = jsonwire.Textual(m.MIMEType, body)
	}
}

// readResponse is what a read's response says besides the object: the
// request id, the protocol, the URI as the caller wrote it.
type readResponse struct {
	id     []byte // raw JSON
	modern bool   // 2026-07-28
	uri    string
}

// The header values every read response has, set without allocating:
// net/http copies a response's header when it writes it (Header.Clone),
// and h.Set, h.Add or a delete replace a value rather than write into it.
var (
	noCacheValue  = []string{"no-cache, no-transform"}
	jsonTypeValue = []string{"application/json"}
)

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
	h["Cache-Control"], h["Content-Type"] = noCacheValue, jsonTypeValue // shared, never modified
	if v.whole != nil {
		// One write of the whole response.
		out := append(head, *v.whole...)
		out = appendReadTail(out, rr, &v.meta)
		*bp = out[:0]
		h["Content-Length"] = []string{strconv.Itoa(len(out))} // sets the write deadline (guardHTTP)
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(out)
		return err
	}
	if v.cached != nil {
		// From memory: no checksum, no backend access. Head and tail
		// share the pooled buffer.
		out := appendReadTail(head, rr, &v.meta)
		*bp = out[:0]
		h["Content-Length"] = []string{strconv.Itoa(len(out) + len(v.cached.Member))}
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(out[:len(head)]); err != nil {
			return err
		}
		if _, err := w.Write(v.cached.Member); err != nil {
			return err
		}
		_, err := w.Write(out[len(head):])
		return err
	}
	tail := appendReadTail(nil, rr, &v.meta)
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
	s.metrics.BytesRead.WithLabelValues(v.meta.Key.Scheme()).Add(float64(v.meta.Size))
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
