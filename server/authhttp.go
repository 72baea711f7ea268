package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/envelope"
)

// This file is the HTTP face of auth: DNS-rebinding protection (Origin and
// Host), bearer authentication with RFC 6750 answers (401, 403
// insufficient_scope, 503 when keys cannot be fetched), and the RFC 9728
// protected resource metadata. go-sdk's RequireBearerToken answers 403
// without error="insufficient_scope", copies verifier errors into responses
// and turns a key-source outage into 500, so it is not used.

// mcpRequest is what the stages before go-sdk learned of one /mcp POST:
// its body, read once, and its envelope.
type mcpRequest struct {
	body []byte
	msgs []envelope.Message
}

// authenticate resolves the caller to a principal before MCP sees the
// request, reads a POST's body once and checks its envelope, and enforces
// the scope each JSON-RPC method or tool needs. What it learned goes into
// the request's state (reqState: auth.FromContext, mcpRequestOf) for the
// stages after it, without a new context or request.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.bearer.Principal(w, r)
		if !ok {
			return
		}
		st := stateOf(r.Context())
		if st == nil {
			// Below logRequests there always is one; a handler mounted
			// without it gets its own.
			st = &reqState{}
			r = st.bind(r)
		}
		st.p, st.authed = p, true
		if r.Method == http.MethodPost {
			body, err := edge.ReadBody(r, requestBodyLimit(s.maxBody))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
					return
				}
				s.bodyReadFailed(w, r, err)
				return
			}
			msgs, err := envelope.Parse(body)
			if err != nil {
				refuseEnvelope(w, r, err)
				return
			}
			if s.refuseMessages(w, r, msgs) {
				return
			}
			if missing, m := missingScope(s, msgs, p); missing != "" {
				s.refuseScope(w, r, missing, m)
				return
			}
			release, ok := s.admit(w, r, p.Tenant, body, msgs) // per-tenant limits (limit.go)
			if !ok {
				return
			}
			defer release()
			st.req = mcpRequest{body: body, msgs: msgs}
			st.body.Reset(body)
			r.Body = &st.body
		}
		next.ServeHTTP(w, r)
	})
}

// refuseScope answers a caller whose token lacks scope for m: 403 with
// the RFC 6750 insufficient_scope challenge. The request log names m's
// method and tool (an upload, with no message, named itself already).
func (s *Server) refuseScope(w http.ResponseWriter, r *http.Request, scope string, m envelope.Message) {
	if e := logEntry(r.Context()); e != nil && m.Method != "" {
		e.method, e.tool = m.Method, m.Tool
	}
	s.bearer.RefuseScope(w, r, scope)
}

// readStage answers the resources/read requests the read path takes
// (fastRead, readpath.go) and the tools/call requests the call path takes
// (fastCall, callpath.go), and passes everything else to go-sdk. It runs
// after authenticate, with the principal and the parsed body.
func (s *Server) readStage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := mcpRequestOf(r.Context())
		p, ok := auth.FromContext(r.Context())
		if req != nil && ok && (s.fastRead(w, r, p, req.msgs) || s.fastCall(w, r, req.msgs)) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// scopeFor returns the scope a JSON-RPC method (and tool) needs, or "".
// An unknown tool needs none: go-sdk answers it itself.
func (s *Server) scopeFor(method, tool string) string {
	switch method {
	case "tools/call", "prompts/get", "completion/complete":
		if s.ext != nil {
			if sc := s.ext.ScopeFor(method); sc != "" {
				return sc
			}
		}
		if method == "tools/call" {
			return s.toolScopes[tool]
		}
	case "resources/read", "resources/list", "resources/templates/list", "resources/subscribe", "resources/unsubscribe":
		return auth.ScopeRead
	}
	return ""
}

// missingScope returns the first scope that one of msgs needs and p
// lacks, and that message, or "".
func missingScope(s *Server, msgs []envelope.Message, p auth.Principal) (string, envelope.Message) {
	for _, m := range msgs {
		if sc := s.scopeFor(m.Method, m.Tool); sc != "" && !p.Has(sc) {
			return sc, m
		}
	}
	return "", envelope.Message{}
}

// refuseMessages answers, in JSON-RPC, a request for a method go-sdk does
// not serve or with params its method cannot take (checkMessage), and
// reports whether it did. A batch with such a message is refused whole.
func (s *Server) refuseMessages(w http.ResponseWriter, r *http.Request, msgs []envelope.Message) bool {
	for i := range msgs {
		err := envelope.Check(&msgs[i])
		if err == nil {
			continue
		}
		if len(msgs) > 1 {
			refuseEnvelope(w, r, &envelope.Error{Reason: "message " + strconv.Itoa(i) + ": " + err.Error()})
			return true
		}
		m := &msgs[0]
		var em *envelope.MethodError
		if errors.As(err, &em) && !m.HasID {
			// An unknown notification: JSON-RPC answers none.
			if e := logEntry(r.Context()); e != nil {
				e.method, e.outcome = "other", "ignored"
			}
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		code := int64(jsonrpc.CodeInvalidParams)
		if em != nil {
			code = jsonrpc.CodeMethodNotFound
		}
		rerr := rpcError(code, err.Error(), nil)
		recordOutcome(r.Context(), m.Method, m.Tool, nil, rerr)
		writeRPCError(w, r.Header.Get("MCP-Protocol-Version") == versionModern, m.ID, rerr)
		return true
	}
	return false
}

// refuseEnvelope answers a body that is not acceptable JSON-RPC with HTTP
// 400 and a JSON-RPC error (-32700 or -32600) without an id: JSON-RPC 2.0
// would send "id": null, which MCP's schema does not admit (its id is
// optional, a string or an integer). A body nested deeper than go-sdk
// parses is a -32700 too, saying so, and one that is not UTF-8 a -32700
// naming its first byte that is not.
func refuseEnvelope(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := int64(-32700), "Parse error: the body must be one JSON value"
	var ee *envelope.Error
	var nu *envelope.NotUTF8Error
	switch {
	case errors.As(err, &ee):
		code, msg = -32600, "Invalid Request: "+ee.Reason
	case errors.Is(err, envelope.ErrTooDeep), errors.As(err, &nu):
		msg = "Parse error: " + err.Error()
	}
	if e := logEntry(r.Context()); e != nil {
		e.outcome = strconv.FormatInt(code, 10)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
