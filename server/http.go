package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/server/internal/edge"
)

// reqLog collects what one HTTP request did, filled in by the layers that
// know it, and written as one log line when the request ends.
type reqLog struct {
	method  string // JSON-RPC method
	tool    string
	tenant  string
	outcome string // "ok", a JSON-RPC error code, or a tool errorKind
}

// logEntry is the log entry of the request ctx belongs to, or nil.
func logEntry(ctx context.Context) *reqLog {
	if st := stateOf(ctx); st != nil {
		return &st.e
	}
	return nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests writes one line per HTTP request: path, status, JSON-RPC
// method, tool, tenant, outcome and duration. Never tokens or bodies. It
// also makes the request's one copy and its one context value (reqState),
// which the later stages fill in.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{sw: statusWriter{ResponseWriter: w}}
		// Deferred, so that a request aborted mid-response (guardHTTP
		// re-panics http.ErrAbortHandler then) is logged too.
		defer s.logRequest(r, &st.e, &st.sw, start)
		next.ServeHTTP(&st.sw, st.bind(r))
	})
}

// logRequest writes the line of one finished request.
func (s *Server) logRequest(r *http.Request, e *reqLog, sw *statusWriter, start time.Time) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	end := time.Now()
	d := end.Sub(start)
	if r.URL.Path == "/mcp" {
		s.metrics.ObserveRequest(e.method, e.tool, e.outcome, d, func(name string) bool { _, ok := s.toolScopes[name]; return ok })
	}
	ctx := r.Context()
	telemetry.SetStatus(ctx, sw.status)
	level := slog.LevelInfo
	if sw.status >= http.StatusInternalServerError {
		level = slog.LevelError
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	// The record is made here, as slog's wrappers do, with the time read
	// once for the duration and the line, and no caller's PC (the line's
	// source would always be this function; runtime.Callers on every
	// request for nothing).
	rec := slog.NewRecord(end, level, "request", 0)
	rec.AddAttrs(
		slog.String("http", r.Method+" "+r.URL.Path),
		slog.Int("status", sw.status),
		slog.String("method", telemetry.ClipName(e.method)),
		slog.String("tool", telemetry.ClipName(e.tool)),
		slog.String("tenant", e.tenant),
		slog.String("outcome", e.outcome),
		slog.Int64("bytes", sw.bytes),
		slog.Float64("duration", d.Seconds()), // seconds, in every log line (docs/decisions.md)
	)
	_ = s.log.Handler().Handle(ctx, rec)
}

func setOutcome(r *http.Request, outcome string) {
	if e := logEntry(r.Context()); e != nil {
		e.outcome = outcome
	}
}

// reqState is what the HTTP stages learn of one request, in one allocation
// and one context value: the log entry and status writer (logRequests),
// the deadlines' writer (guardHTTP), the principal, the body and its
// envelope (authenticate). Its copy of the request is the only one the
// stages make (bind): the deadline stage and authenticate set its Body in
// place, and every value a later stage or go-sdk's handler looks up
// (logEntry, auth.FromContext, mcpRequestOf) is answered by reqContext
// from here.
type reqState struct {
	ctx reqContext
	e   reqLog
	sw  statusWriter
	gw  edge.Writer // guardHTTP's, with the body's deadline
	// p is the caller, set by authenticate (authed).
	p      auth.Principal
	authed bool
	// req is a POST /mcp's body and envelope, set by authenticate (has
	// body != nil); body replays req.body to go-sdk.
	req  mcpRequest
	body replayBody
}

// bind returns the request's one copy: r with a context that answers st's
// values.
func (st *reqState) bind(r *http.Request) *http.Request {
	st.ctx = reqContext{Context: r.Context(), st: st}
	return r.WithContext(&st.ctx)
}

// reqContext is the context of a request below logRequests: it answers the
// request log entry, the principal and the parsed body from its reqState,
// without a context.WithValue (and a copy of the request) per value.
type reqContext struct {
	context.Context
	st *reqState
}

type reqStateKey struct{}

func (c *reqContext) Value(key any) any {
	switch key.(type) {
	case reqStateKey:
		return c.st
	}
	if c.st.authed && auth.IsPrincipalKey(key) {
		return c.st.p
	}
	return c.Context.Value(key)
}

// stateOf is the state of the request ctx belongs to, or nil outside
// logRequests.
func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(reqStateKey{}).(*reqState)
	return st
}

// mcpRequestOf is the body and envelope authenticate read of a POST /mcp,
// or nil.
func mcpRequestOf(ctx context.Context) *mcpRequest {
	if st := stateOf(ctx); st != nil && st.req.body != nil {
		return &st.req
	}
	return nil
}

// replayBody is a body read before go-sdk, handed to it again.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }
