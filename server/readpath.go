package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/uri"
)

// The fast read path.
//
// A resources/read that go-sdk would answer with a successful read is
// answered here instead, writing the response straight from the stored
// body: go-sdk would copy the body into a string, marshal it into the
// result, compact that JSON again as it wraps it into the response, and
// buffer the whole response (four passes and as many copies). Here the body
// is escaped (or base64-encoded) once, as it is written.
//
// The wire stays what go-sdk produces (server/readpath_test.go sends the
// same randomized requests through both paths and compares the JSON):
// only requests that pass every check go-sdk makes take this path, and
// only when the read succeeds. Everything else — other methods, batches,
// unusual headers or params, errors of any kind — falls through to
// go-sdk with the body untouched, so every error still comes from one
// place.

// fastReadRequest is what the fast path needs of a resources/read: the
// raw id, the URI, and the raw values of the _meta members go-sdk checks.
type fastReadRequest struct {
	ID                 json.RawMessage
	URI                string
	HasMeta            bool
	ProtocolVersion    []byte // raw JSON, nil when absent
	ClientInfo         []byte
	ClientCapabilities []byte
	LogLevel           []byte
}

// parseFastRead reads body, a single request whose envelope was checked
// (one valid JSON value, members at the top level unique), for the fast
// path. It accepts only the plainest form: jsonrpc exactly "2.0", params
// holding nothing but uri (a string without escapes) and _meta, and no
// member of params or _meta twice. Anything else reports false and goes to
// go-sdk, which is never wrong.
func parseFastRead(body []byte) (req fastReadRequest, ok bool) {
	var rpcOK, paramsOK bool
	err := jsonwire.Members(body, func(name string, v []byte) error {
		switch name {
		case "jsonrpc":
			rpcOK = string(v) == `"2.0"`
		case "id":
			req.ID = v
		case "method":
		case "params":
			paramsOK = parseFastParams(v, &req)
		default:
			return jsonwire.ErrSyntax
		}
		return nil
	})
	return req, err == nil && rpcOK && paramsOK
}

func parseFastParams(v []byte, req *fastReadRequest) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	var haveURI bool
	err := jsonwire.Members(v, func(name string, pv []byte) error {
		switch name {
		case "uri":
			if haveURI || len(pv) < 2 || pv[0] != '"' || bytes.IndexByte(pv, '\\') >= 0 {
				return jsonwire.ErrSyntax
			}
			haveURI, req.URI = true, string(pv[1:len(pv)-1])
		case "_meta":
			if req.HasMeta || len(pv) == 0 || pv[0] != '{' {
				return jsonwire.ErrSyntax
			}
			req.HasMeta = true
			return jsonwire.Members(pv, func(mn string, mv []byte) error {
				var slot *[]byte
				switch mn {
				case metaProtocolVersion:
					slot = &req.ProtocolVersion
				case metaClientInfo:
					slot = &req.ClientInfo
				case metaClientCapabilities:
					slot = &req.ClientCapabilities
				case metaLogLevel:
					slot = &req.LogLevel
				default:
					return nil
				}
				if *slot != nil {
					return jsonwire.ErrSyntax
				}
				*slot = mv
				return nil
			})
		default:
			return jsonwire.ErrSyntax
		}
		return nil
	})
	return err == nil && haveURI
}

const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// fastRead serves r if it is a resources/read the fast path may answer and
// reports whether it did. body is the request body; msgs its envelope.
func (s *Server) fastRead(w http.ResponseWriter, r *http.Request, p auth.Principal, body []byte, msgs []message) bool {
	if s.noFastRead || len(msgs) != 1 || msgs[0].method != "resources/read" || !msgs[0].hasID {
		return false
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return false
	}
	if !jsonwire.Shallow(body, maxFastDepth) {
		return false
	}
	req, ok := parseFastRead(body)
	if !ok {
		return false
	}
	version := r.Header.Get("MCP-Protocol-Version")
	modern := false
	switch version {
	case "2026-07-28":
		if !s.modernMetaOK(r, &req) {
			return false
		}
		modern = true
	case "2025-11-25":
		if req.ProtocolVersion != nil {
			return false // a per-request version on a legacy request: go-sdk decides
		}
	default:
		return false
	}
	if !p.Has(auth.ScopeRead) {
		return false
	}
	raw := req.URI
	scheme, ok := uri.SplitScheme(raw)
	if !ok || s.schemes[scheme] == nil {
		return false
	}
	u, err := uri.Parse(raw)
	if err != nil {
		return false
	}
	rr := readResponse{id: req.ID, modern: modern, uri: raw}
	if v, ok := s.store.(store.EncodedViewer); ok {
		k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
		if err != nil || !s.viewRead(w, r.Context(), v, p, k, &rr) {
			return false // not found, foreign, backend trouble: go-sdk's path answers
		}
	} else {
		obj, err := s.lookup(r.Context(), p, u)
		if err != nil {
			return false // as above
		}
		s.streamRead(w, &rr, obj)
	}
	if e := logEntry(r.Context()); e != nil {
		e.method, e.outcome = "resources/read", "ok"
	}
	s.metrics.bytesRead.WithLabelValues(u.Scheme).Add(float64(rr.size))
	return true
}

// modernMetaOK repeats go-sdk's checks of a 2026-07-28 request: headers
// that match the body, and a well-formed _meta triple. It is stricter than
// go-sdk where that is simpler: a clientCapabilities member that is not an
// object, a clientInfo member that is not a string, a logLevel that is not
// a string all go to go-sdk, which decides.
func (s *Server) modernMetaOK(r *http.Request, req *fastReadRequest) bool {
	if string(req.ProtocolVersion) != `"2026-07-28"` || !objectOf(req.ClientCapabilities, '{') {
		return false
	}
	if r.Header.Get("Mcp-Method") != "resources/read" || r.Header.Get("Mcp-Name") != req.URI || req.URI == "" {
		return false
	}
	if string(req.ClientCapabilities) != "{}" {
		var caps mcp.ClientCapabilities
		if json.Unmarshal(req.ClientCapabilities, &caps) != nil {
			return false
		}
	}
	if req.ClientInfo != nil && !objectOf(req.ClientInfo, '"') {
		return false
	}
	if req.LogLevel != nil && req.LogLevel[0] != '"' {
		return false
	}
	return true
}

// objectOf reports whether v is a JSON object whose member values all
// start with first ('{': objects, '"': strings).
func objectOf(v []byte, first byte) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	ok := true
	err := jsonwire.Members(v, func(_ string, mv []byte) error {
		if len(mv) == 0 || mv[0] != first {
			ok = false
		}
		return nil
	})
	return err == nil && ok
}

// maxFastDepth is the deepest nesting of arrays and objects the fast path
// takes; go-sdk refuses bodies nested deeper than 1000, encoding/json
// (the envelope check) only beyond 10000.
const maxFastDepth = 64

// acceptsBoth is go-sdk's stateless Accept rule: both application/json and
// text/event-stream (or a wildcard).
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			case "*/*", "application/*":
				jsonOK, streamOK = true, streamOK || mt == "*/*"
			}
		}
	}
	return jsonOK && streamOK
}

// readResponse is what a successful read's response says besides the
// object: the request id, the protocol, the URI as the caller wrote it;
// size is set to the body's size once it is written.
type readResponse struct {
	id     json.RawMessage
	modern bool
	uri    string
	size   int64
}

// maxPooledResponse bounds the response buffers kept for reuse: larger ones
// (bodies of megabytes) go back to the garbage collector, so that a burst
// of large reads does not pin its peak in the pool.
const maxPooledResponse = 1 << 20

var respPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// viewRead writes the response of a read of k from inside the backend's
// read transaction: the stored encoded form when there is one (one copy),
// else the body encoded as it is copied. It reports whether it wrote one;
// when it did not (missing, expired, another tenant's private object, a
// backend failure) nothing was written.
func (s *Server) viewRead(w http.ResponseWriter, ctx context.Context, v store.EncodedViewer, p auth.Principal, k store.Key, rr *readResponse) bool {
	bp := respPool.Get().(*[]byte)
	buf := (*bp)[:0]
	err := v.View(ctx, k, func(m *store.Meta, encoded, body []byte) error {
		if !readableBy(p, m) {
			return store.ErrNotFound
		}
		if n := s.responseBound(rr, m, encoded); cap(buf) < n {
			buf = make([]byte, 0, n)
		}
		buf = s.appendReadHead(buf, rr, m)
		buf = s.appendContents(buf, m, encoded, body)
		buf = s.appendReadTail(buf, rr, m)
		rr.size = m.Size
		return nil
	})
	if err == nil {
		h := w.Header()
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(buf)))
		w.WriteHeader(http.StatusOK)
		w.Write(buf)
	}
	if cap(buf) <= maxPooledResponse {
		*bp = buf
		respPool.Put(bp)
	}
	return err == nil
}

// responseBound is the buffer a response needs, exactly for a stored
// encoded form and as a guess otherwise (the body plus a tenth for
// escapes; appending grows it when that is short).
func (s *Server) responseBound(rr *readResponse, m *store.Meta, encoded []byte) int {
	n := 512 + len(rr.id) + len(rr.uri) + len(m.MIMEType) + len(s.serverInfoMeta)
	if jsonwire.FormLen(encoded) > 0 {
		return n + len(encoded)
	}
	return n + int(m.Size) + int(m.Size)/10
}

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// streamRead writes the response of a read of obj, a body the backend
// copied out, through a buffer: the body is encoded as it is written, so
// the response is never held whole.
func (s *Server) streamRead(w http.ResponseWriter, rr *readResponse, obj *store.Object) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(w)
	bp := respPool.Get().(*[]byte)
	scratch := s.appendReadHead((*bp)[:0], rr, &obj.Meta)
	bw.Write(scratch)
	if textual(obj.MIMEType, obj.Body) {
		bw.WriteString(`"text":"`)
		const chunk = 16 << 10
		for b := obj.Body; len(b) > 0; {
			n := min(len(b), chunk)
			for n < len(b) && n > chunk-4 && b[n]&0xc0 == 0x80 {
				n-- // end the chunk before a rune, never inside one
			}
			scratch = jsonwire.AppendEscaped(scratch[:0], b[:n])
			bw.Write(scratch)
			b = b[n:]
		}
		bw.WriteByte('"')
	} else {
		bw.WriteString(`"blob":"`)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(obj.Body)
		enc.Close()
		bw.WriteByte('"')
	}
	bw.Write(s.appendReadTail(scratch[:0], rr, &obj.Meta))
	bw.Flush()
	rr.size = obj.Size
	bw.Reset(nil)
	bufPool.Put(bw)
	if cap(scratch) <= maxPooledResponse {
		*bp = scratch
		respPool.Put(bp)
	}
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
// text or blob member.
func (s *Server) appendReadTail(dst []byte, rr *readResponse, m *store.Meta) []byte {
	dst = append(dst, `,"_meta":{`...)
	if !m.Expires.IsZero() {
		dst = append(dst, `"expiresAt":"`...)
		dst = jsonwire.AppendTime(dst, m.Expires)
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"lastModified":"`...)
	dst = jsonwire.AppendTime(dst, m.Modified)
	dst = append(dst, `","sha256":"`...)
	dst = append(dst, m.SHA256...)
	dst = append(dst, `","size":`...)
	dst = strconv.AppendInt(dst, m.Size, 10)
	dst = append(dst, `}}]`...)
	if rr.modern {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, "}}"...)
}
