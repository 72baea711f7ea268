package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the one place that decides what the wire sees for a failure.
//
//   - A URI this caller cannot read (unknown, expired, deleted, another
//     tenant's, a scheme we do not serve) is the same -32602 "Resource not
//     found" with data {"uri": <as sent>}, byte for byte.
//   - A malformed URI of a configured scheme is -32602 with the reason.
//   - Anything unexpected is logged once and answered with a generic
//     internal error; raw Go error text never reaches the client.
//
// The error data is built with encoding/json: go-sdk's ResourceNotFoundError
// formats it with %q, which is not JSON for control characters. The code is
// the literal -32602 rather than mcp.CodeResourceNotFound, which an
// MCPGODEBUG setting can change.

type uriData struct {
	URI    string `json:"uri"`
	Reason string `json:"reason,omitempty"`
}

func rpcError(code int64, msg string, data any) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: code, Message: msg}
	if data != nil {
		b, err := json.Marshal(data)
		if err == nil {
			e.Data = b
		}
	}
	return e
}

// notFound is the answer for every URI the caller cannot read.
func notFound(raw string) error {
	return rpcError(jsonrpc.CodeInvalidParams, "Resource not found", uriData{URI: raw})
}

// invalidURI is the answer for a malformed URI of a configured scheme.
func invalidURI(raw, reason string) error {
	return rpcError(jsonrpc.CodeInvalidParams, "Invalid resource URI: "+reason, uriData{URI: raw, Reason: reason})
}

// invalidParams is the answer for malformed request parameters.
func invalidParams(msg string) error {
	return rpcError(jsonrpc.CodeInvalidParams, msg, nil)
}

// internal logs err once and returns a generic error.
func (s *Server) internal(ctx context.Context, what string, err error) error {
	s.log.ErrorContext(ctx, what, "err", err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return rpcError(jsonrpc.CodeInternalError, "Request canceled or timed out", nil)
	}
	return rpcError(jsonrpc.CodeInternalError, "Internal error: the storage backend failed; retry later", nil)
}

// writeRPCError writes err, a *jsonrpc.Error, as the response to the
// request with the raw JSON id, exactly as go-sdk writes one in stateless
// JSON mode: HTTP 200 on 2025-11-25; on 2026-07-28 (SEP-2575) 400 for
// -32602, 404 for -32601, 200 otherwise.
func writeRPCError(w http.ResponseWriter, modern bool, rawID []byte, err error) {
	var jerr *jsonrpc.Error
	if !errors.As(err, &jerr) {
		jerr = rpcError(jsonrpc.CodeInternalError, "Internal error", nil)
	}
	writeErrorResponse(w, modern, rawID, jerr)
}

// writeErrorResponse writes err as go-sdk's jsonrpc2 layer writes a
// handler's error in stateless JSON mode: a *jsonrpc.Error as it is, any
// other error with code 0 and its text, the raw JSON id written back as
// go-sdk does; HTTP 200, except on 2026-07-28 (SEP-2575,
// extractErrorStatus) 404 for -32601 and 400 for -32602 and the protocol
// version and capability errors.
func writeErrorResponse(w http.ResponseWriter, modern bool, rawID []byte, err error) {
	var idv any
	var id jsonrpc.ID
	if json.Unmarshal(rawID, &idv) == nil {
		id, _ = jsonrpc.MakeID(idv)
	}
	b, merr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
	if merr != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	status := http.StatusOK
	if jerr := (*jsonrpc.Error)(nil); modern && errors.As(err, &jerr) {
		switch jerr.Code {
		case jsonrpc.CodeMethodNotFound:
			status = http.StatusNotFound
		case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
			status = http.StatusBadRequest
		}
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
