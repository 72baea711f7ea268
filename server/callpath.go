package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/envelope"
	"github.com/resourced/resourced/server/internal/mcptool"
)

// The fast call path.
//
// A tools/call of one of the server's own tools (addTools) that go-sdk
// would dispatch unchanged to the tool's handler is answered here instead.
// go-sdk decodes such a call five or six times before the tool runs
// (readBatch, the header and _meta checks, handleReceive, the params), each
// time with a decoder that allocates and zeroes a 32 KiB buffer, then
// marshals the result and compacts it again inside the response: on a
// 1 KiB save that was a third of the server's CPU, three times the tool's
// own work. Here the one walk over the body that checked its envelope
// (envelope.Parse) has found the name, arguments and _meta already, the
// same handler runs with the same context, and the result is marshalled
// once.
//
// The wire stays what go-sdk produces (server/callpath_test.go sends the
// same randomized calls of every tool through both paths, to two servers
// over equal stores, and compares the answers):
//
//   - Only the plainest form is taken: one request with an id, jsonrpc
//     exactly "2.0", params holding a name (a string without escapes, a
//     tool this server registered itself), arguments (an object) and
//     optionally _meta (go-sdk's checks repeated or made stricter, as for
//     the read path), on 2026-07-28 or 2025-11-25, with Mcp-Method and
//     Mcp-Name matching the body on 2026-07-28, no Mcp-Param-* header, no
//     Last-Event-ID or Mcp-Session-Id, no gateway mounted, no number near
//     float64's ends where go-sdk decodes one (_meta; the arguments on
//     2026-07-28: envelope's numberFits). Anything else — inputResponses or
//     requestState (multi-round-trip), batches, fixture tools, other
//     methods — goes to go-sdk with the body untouched, and that is decided
//     before the tool runs: a tool runs once, by one path.
//   - The tool runs through the receiving middleware go-sdk would run it
//     through (recoverMCP, observe, intercept, composed as server.New adds
//     them), so panics, the request log's outcome and the metrics are the
//     same. go-sdk's own multi-round-trip middleware is not in the chain:
//     it acts only on results with inputRequests, which no tool here
//     returns.
//   - The result is what go-sdk's callTool and handle make of the handler's
//     value: content [] rather than null, and on 2026-07-28 the serverInfo
//     _meta and (on a result the tool returned, not on recoverMCP's)
//     resultType "complete"; JSON-RPC errors as go-sdk's jsonrpc2 layer
//     writes them (writeCallError; HTTP 400 for -32602 on 2026-07-28). The
//     per-tenant limits are charged before this stage (authenticate,
//     limit.go), for both paths alike.

// callPath is what the fast call path needs, built once in New (nil in
// gateway mode, where the front decides which tools exist): the handlers
// of the server's own tools by name, the very ones addTools gives go-sdk,
// and the same receiving middleware (Server.receiving) around callTool.
type callPath struct {
	tools map[string]mcp.ToolHandler
	chain mcp.MethodHandler
}

// drop removes name from the fast path: a tool registered later under the
// same name (a fixture) replaces ours in go-sdk.
func (c *callPath) drop(name string) {
	if c != nil {
		delete(c.tools, name)
	}
}

// callState is what go-sdk's callTool leaves on a result beyond its
// fields: whether it returned one itself (resultType is set there, in
// handleMultiRoundTripResult, so a result recoverMCP made up after a panic
// has none).
type callState struct{ returned bool }

type callStateKey struct{}

// callTool is go-sdk's callTool (server.go) for one of our tools: the
// handler's result, with content [] rather than null, noted as returned.
func (c *callPath) callTool(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	cr := req.(*mcp.CallToolRequest)
	h := c.tools[cr.Params.Name]
	res, err := h(ctx, cr)
	if err != nil {
		return nil, err
	}
	if res != nil {
		if st, _ := ctx.Value(callStateKey{}).(*callState); st != nil {
			st.returned = true
		}
		if res.Content == nil {
			res2 := *res
			res2.Content = []mcp.Content{}
			res = &res2
		}
	}
	return res, nil
}

// fastCall answers r itself when r is a tools/call of one of the server's
// own tools in the plainest form (see the file comment), and reports
// whether it did. Every check is made before the tool runs; once it runs,
// its answer is written here, whatever it is.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, msgs []envelope.Message) bool {
	c := s.calls
	if c == nil || s.noFastCall || !fastGate(r, msgs, "tools/call") || !msgs[0].Fast.Call {
		return false
	}
	req := &msgs[0].Fast
	_, own := c.tools[req.Name]
	proxied := !own && s.ext != nil && s.ext.OwnsTool(req.Name)
	if !own && !proxied {
		return false
	}
	for k := range r.Header {
		if len(k) > len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") {
			return false // go-sdk checks x-mcp-header parameters; ours have none
		}
	}
	modern, ok := fastVersion(r, "tools/call", req.Name, req)
	if !ok || modern && !req.ArgsFit {
		return false
	}
	id := msgs[0].ID
	meta := fastMeta(req)
	base := context.WithoutCancel(r.Context())
	if proxied {
		var ok bool
		if meta, ok = proxiedMeta(msgs[0].Params); !ok {
			return false
		}
		// A proxied call ends with its caller's request, as in go-sdk's
		// handler: the front cancels the upstream call (docs/gateway.md,
		// "Cancellation").
		base = r.Context()
	}

	// From here on the tool runs, and this path answers. As in go-sdk
	// (jsonrpc2's notDone), one of our tools runs to its end whatever the
	// client does: a save is not cut in the middle because its caller went
	// away.
	st := &callState{}
	ctx := context.WithValue(base, callStateKey{}, st)
	res, err := c.chain(ctx, "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: req.Name, Arguments: req.Args, Meta: meta}})
	if err != nil {
		writeCallError(w, modern, id, err)
		return true
	}
	cres, _ := res.(*mcp.CallToolResult)
	if cres == nil {
		// No tool here returns neither a result nor an error.
		writeCallError(w, modern, id, rpcError(jsonrpc.CodeInternalError, "Internal error", nil))
		return true
	}
	out, err := s.appendCallResponse(nil, id, cres, modern, st.returned, own)
	if err != nil {
		// Marshalling a result failed: go-sdk answers a request whose
		// result it cannot encode with an internal error too.
		writeCallError(w, modern, id, s.internal(ctx, "encoding a tool result", err))
		return true
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out))) // sets the write deadline (guardHTTP)
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return true
}

// proxiedMeta is the _meta of a call the extension proxies, decoded as
// go-sdk decodes it (the front forwards it upstream and reads the
// protocol version from it), and whether the fast path may take the call:
// not one with a progress token, whose notifications go-sdk's session
// carries (extensionStage sends those that accept an event stream there;
// the rest are go-sdk's too, so that the two paths never differ).
func proxiedMeta(params []byte) (mcp.Meta, bool) {
	raw := memberOf(params, "_meta")
	if raw == nil {
		return nil, true
	}
	if tok := memberOf(raw, "progressToken"); tok != nil {
		return nil, false
	}
	var m mcp.Meta
	if sdkjson.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// appendCallResponse appends the JSON-RPC response carrying res as go-sdk
// writes it: the result marshalled by its MarshalJSON, on 2026-07-28 with
// the serverInfo _meta (annotateServerInfo) and, when the tool returned it
// (not recoverMCP), resultType "complete" as its last member
// (handleMultiRoundTripResult), the id written back as go-sdk does.
//
// own says the result is one of the server's own tools' (toolHandler's or
// recoverMCP's), which mcptool.AppendResponse writes without go-sdk's
// generic marshalling; a proxied tool's result is marshalled by go-sdk.
func (s *Server) appendCallResponse(dst []byte, id []byte, res *mcp.CallToolResult, modern, returned, own bool) ([]byte, error) {
	prebuilt := modern && len(res.Meta) == 0 // the common case: no _meta of the tool's own
	if modern && !prebuilt {
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			m := make(mcp.Meta, len(res.Meta)+1)
			for k, v := range res.Meta {
				m[k] = v
			}
			m[mcp.MetaKeyServerInfo] = s.serverInfo()
			res2 := *res
			res2.Meta = m
			res = &res2
		}
	}
	if own && mcptool.PlainResult(res) {
		return mcptool.AppendResponse(dst, id, s.serverInfoMeta, res, modern, returned)
	}
	// Its MarshalJSON, not json.Marshal: the bytes are the same (they come
	// out of encoding/json compact and HTML-escaped already, and go-sdk
	// compacts them again without escaping), one pass over them fewer.
	b, err := res.MarshalJSON() // {"content":[...],...}: content is never omitted
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = jsonwire.AppendID(dst, id)
	dst = append(dst, `,"result":`...)
	if !modern {
		dst = append(dst, b...)
		return append(dst, '}'), nil
	}
	dst = append(dst, '{')
	if prebuilt {
		dst = append(append(dst, s.serverInfoMeta...), ',')
	}
	dst = append(dst, b[1:len(b)-1]...)
	if returned {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, "}}"...), nil
}

// writeCallError writes err as go-sdk answers a tool handler's error:
// writeErrorResponse, with -32601 renamed after the method (toWireError).
// (MCPGODEBUG=nomethodnotfoundcodeinerror=1, which turns the renaming off,
// is not followed: no tool here answers -32601.)
func writeCallError(w http.ResponseWriter, modern bool, rawID []byte, err error) {
	if jerr := (*jsonrpc.Error)(nil); errors.As(err, &jerr) && jerr.Code == jsonrpc.CodeMethodNotFound {
		err = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: `method not found: "tools/call"`}
	}
	writeErrorResponse(w, modern, rawID, err)
}

// serverInfo is the serverInfo value of s.serverInfoMeta, as raw JSON.
func (s *Server) serverInfo() json.RawMessage {
	const prefix = `"_meta":{"` + mcp.MetaKeyServerInfo + `":`
	return json.RawMessage(s.serverInfoMeta[len(prefix) : len(s.serverInfoMeta)-1])
}
