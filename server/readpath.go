package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/envelope"
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
// only requests that pass every check go-sdk makes take this path
// (fastGate, fastVersion). It then answers every outcome of the read, a
// miss included, with the bytes go-sdk would write (writeRPCError);
// everything else — other methods, batches, unusual headers or params —
// falls through to go-sdk with the body untouched.

// fastRead is the read stage: it answers r itself when r is a
// resources/read that go-sdk would dispatch to readResource unchanged — a
// single request, in the plainest form, on 2026-07-28 or 2025-11-25, with
// no header go-sdk would act on — and reports whether it did. It answers
// every outcome of such a read, found or not, through resolve (read.go), so
// a read costs one resolution whichever way it goes; anything else falls
// through to go-sdk untouched. msgs is the request's envelope, whose Fast
// holds what the walk over the body found for this path.
func (s *Server) fastRead(w http.ResponseWriter, r *http.Request, p auth.Principal, msgs []envelope.Message) bool {
	if s.noFastRead || !fastGate(r, msgs, "resources/read") || !msgs[0].Fast.Read {
		return false
	}
	m := &msgs[0]
	uri := m.Fast.URI
	if s.ext != nil && s.ext.OwnsURI(uri) {
		return false // an upstream's URI is the extension's
	}
	modern, ok := fastVersion(r, "resources/read", uri, &m.Fast)
	if !ok || !p.Has(auth.ScopeRead) {
		return false
	}
	ctx, sp := traceFast(r.Context(), "resources/read", &m.Fast)
	defer sp.End()
	rr := readResponse{id: m.ID, modern: modern, uri: uri}
	v, err := s.resolveRead(ctx, p, uri, false)
	if err != nil {
		recordOutcome(ctx, "resources/read", "", nil, err)
		sp.Fail(outcome(nil, err))
		writeRPCError(w, modern, m.ID, err)
		return true
	}
	defer v.release()
	if err := s.renderRead(w, ctx, &rr, v); err != nil {
		// The status line is out: the response is cut and the client
		// sees a broken stream. Say why in the log.
		s.log.InfoContext(ctx, "read response cut", "uri", uri, "reason", err.Error())
		recordOutcome(ctx, "resources/read", "", nil, err)
		sp.Fail("cut")
		return true
	}
	recordOutcome(ctx, "resources/read", "", nil, nil)
	s.metrics.BytesRead.WithLabelValues(v.meta.Key.Scheme()).Add(float64(v.meta.Size))
	return true
}

// fastGate is the one gate of both fast paths: a single request of method
// with an id, a JSON Content-Type and an Accept go-sdk takes, and no header
// go-sdk acts on beyond those (Last-Event-ID, refused on a POST;
// Mcp-Session-Id, read in a compatibility mode). The body's shape is the
// walk's to judge (envelope.Fast: one object in the plainest form, nested
// at most 64 deep). Everything either refuses is go-sdk's to answer.
func fastGate(r *http.Request, msgs []envelope.Message, method string) bool {
	if len(msgs) != 1 || msgs[0].Method != method || !msgs[0].HasID {
		return false
	}
	if !isJSONType(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	return len(r.Header.Values("Last-Event-ID")) == 0 && len(r.Header.Values("Mcp-Session-Id")) == 0
}

// fastVersion is the gate's second half, once the body is parsed: the
// protocol version (sdkmirror.go) and, on the modern one, go-sdk's checks
// of the headers against the body and of the _meta triple (modernMetaOK).
// name is what Mcp-Name must say. It reports whether the request is
// modern, and false in ok for anything go-sdk decides.
func fastVersion(r *http.Request, method, name string, meta *envelope.Fast) (modern, ok bool) {
	switch r.Header.Get("MCP-Protocol-Version") {
	case versionModern:
		return true, modernMetaOK(r, method, name, meta)
	case versionLegacy:
		return false, meta.ProtocolVersion == nil // a per-request version on a legacy request: go-sdk decides
	}
	return false, false
}

// modernMetaOK repeats go-sdk's checks of a 2026-07-28 request: headers
// that match the body, and a well-formed _meta triple. It is stricter than
// go-sdk where that is simpler: a clientCapabilities member that is not an
// object, a clientInfo member that is not a string, a logLevel that is not
// a string all go to go-sdk, which decides.
//
// method and name are what Mcp-Method and Mcp-Name must say: the read's
// URI, the call's tool name.
func modernMetaOK(r *http.Request, method, name string, req *envelope.Fast) bool {
	if string(req.ProtocolVersion) != `"`+versionModern+`"` || !objectOf(req.ClientCapabilities, '{') {
		return false
	}
	if r.Header.Get("Mcp-Method") != method || r.Header.Get("Mcp-Name") != name || name == "" {
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

// isJSONType reports whether a Content-Type is application/json (with
// parameters or not), as go-sdk's check reads it.
func isJSONType(ct string) bool {
	if ct == "application/json" {
		return true // the common spelling, without parsing it
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// acceptsBoth is go-sdk's stateless Accept rule: both application/json and
// text/event-stream (or a wildcard).
func acceptsBoth(values []string) bool {
	if len(values) == 1 && (values[0] == "application/json, text/event-stream" || values[0] == "text/event-stream, application/json") {
		return true // what every client sends, without parsing it
	}
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
