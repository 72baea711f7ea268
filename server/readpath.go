package server

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/resourced/resourced/auth"
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

// fastReadRequest is what the fast path needs of a resources/read.
type fastReadRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		URI  string                     `json:"uri"`
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
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
	var req fastReadRequest
	if json.Unmarshal(body, &req) != nil || req.JSONRPC != "2.0" || !knownParams(body) {
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
		if _, ok := req.Params.Meta[metaProtocolVersion]; ok {
			return false // a per-request version on a legacy request: go-sdk decides
		}
	default:
		return false
	}
	if !p.Has(auth.ScopeRead) {
		return false
	}
	raw := req.Params.URI
	scheme, ok := uri.SplitScheme(raw)
	if !ok || s.schemes[scheme] == nil {
		return false
	}
	u, err := uri.Parse(raw)
	if err != nil {
		return false
	}
	obj, err := s.lookup(r.Context(), p, u)
	if err != nil {
		return false // not found, foreign, backend trouble: go-sdk's path answers
	}
	if e := logEntry(r.Context()); e != nil {
		e.method, e.outcome = "resources/read", "ok"
	}
	s.metrics.bytesRead.WithLabelValues(u.Scheme).Add(float64(obj.Size))
	s.writeRead(w, req.ID, modern, raw, obj)
	return true
}

// modernMetaOK repeats go-sdk's checks of a 2026-07-28 request: headers
// that match the body, and a well-formed _meta triple.
func (s *Server) modernMetaOK(r *http.Request, req *fastReadRequest) bool {
	var v string
	if json.Unmarshal(req.Params.Meta[metaProtocolVersion], &v) != nil || v != "2026-07-28" {
		return false
	}
	if r.Header.Get("Mcp-Method") != "resources/read" || r.Header.Get("Mcp-Name") != req.Params.URI || req.Params.URI == "" {
		return false
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(req.Params.Meta[metaClientCapabilities], &caps) != nil || caps == nil {
		return false
	}
	if ci, ok := req.Params.Meta[metaClientInfo]; ok {
		var impl struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if json.Unmarshal(ci, &impl) != nil {
			return false
		}
	}
	if lv, ok := req.Params.Meta[metaLogLevel]; ok {
		var level string
		if json.Unmarshal(lv, &level) != nil {
			return false
		}
	}
	return true
}

// knownParams reports whether params holds nothing but uri and _meta, and
// the message nothing but jsonrpc, id, method and params.
func knownParams(body []byte) bool {
	ok := true
	_ = members(body, func(name string, v []byte) error {
		switch name {
		case "jsonrpc", "id", "method":
		case "params":
			_ = members(v, func(pn string, _ []byte) error {
				if pn != "uri" && pn != "_meta" {
					ok = false
				}
				return nil
			})
		default:
			ok = false
		}
		return nil
	})
	return ok
}

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

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// writeRead writes the JSON-RPC response of a successful read, field for
// field as go-sdk writes it.
func (s *Server) writeRead(w http.ResponseWriter, id json.RawMessage, modern bool, raw string, obj *store.Object) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() { bw.Reset(nil); bufPool.Put(bw) }()

	bw.WriteString(`{"jsonrpc":"2.0","id":`)
	bw.Write(id)
	bw.WriteString(`,"result":{`)
	if modern {
		bw.Write(s.serverInfoMeta)
		bw.WriteByte(',')
	}
	bw.WriteString(`"ttlMs":`)
	bw.WriteString(strconv.Itoa(s.ttlMs(&obj.Meta)))
	bw.WriteString(`,"cacheScope":"`)
	bw.WriteString(cacheScope(obj.Visibility))
	bw.WriteString(`","contents":[{"uri":`)
	writeJSONString(bw, raw)
	bw.WriteString(`,"mimeType":`)
	writeJSONString(bw, obj.MIMEType)
	if isTextual(obj.MIMEType) && utf8.Valid(obj.Body) {
		bw.WriteString(`,"text":`)
		writeJSONString(bw, string(obj.Body))
	} else {
		bw.WriteString(`,"blob":"`)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(obj.Body)
		enc.Close()
		bw.WriteByte('"')
	}
	bw.WriteString(`,"_meta":{`)
	if !obj.Expires.IsZero() {
		bw.WriteString(`"expiresAt":"`)
		bw.WriteString(formatTime(obj.Expires))
		bw.WriteString(`",`)
	}
	bw.WriteString(`"lastModified":"`)
	bw.WriteString(formatTime(obj.Modified))
	bw.WriteString(`","sha256":"`)
	bw.WriteString(obj.SHA256)
	bw.WriteString(`","size":`)
	bw.WriteString(strconv.FormatInt(obj.Size, 10))
	bw.WriteString(`}}]`)
	if modern {
		bw.WriteString(`,"resultType":"complete"`)
	}
	bw.WriteString("}}")
	bw.Flush()
}

const hexDigits = "0123456789abcdef"

const (
	lo7 = 0x0101010101010101
	hi7 = 0x8080808080808080
)

// hasByte reports whether any byte of x equals b (SWAR).
func hasByte(x uint64, b byte) bool {
	v := x ^ (lo7 * uint64(b))
	return (v-lo7)&^v&hi7 != 0
}

// plain8 reports whether the eight bytes of s need no escaping: ASCII,
// not a control character, not '"', '\\', '<', '>' or '&'.
func plain8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	if x&hi7 != 0 || (x-lo7*0x20)&^x&hi7 != 0 {
		return false // non-ASCII, or a byte below 0x20
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// writeJSONString writes s as a JSON string, escaping as encoding/json
// does (quotes, backslashes, control characters, <, >, &, U+2028, U+2029),
// copying runs of plain bytes at once. s is valid UTF-8.
func writeJSONString(w *bufio.Writer, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time (most report text).
		for i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(c)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[c>>4])
				w.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}
