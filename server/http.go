package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/resourced/resourced/internal/telemetry"
)

// reqLog collects what one HTTP request did, filled in by the layers that
// know it, and written as one log line when the request ends.
type reqLog struct {
	method  string // JSON-RPC method
	tool    string
	tenant  string
	outcome string // "ok", a JSON-RPC error code, or a tool errorKind
}

type reqLogKey struct{}

func logEntry(ctx context.Context) *reqLog {
	e, _ := ctx.Value(reqLogKey{}).(*reqLog)
	return e
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
// method, tool, tenant, outcome and duration. Never tokens or bodies.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{sw: statusWriter{ResponseWriter: w}} // one allocation for both
		// Deferred, so that a request aborted mid-response (guardHTTP
		// re-panics http.ErrAbortHandler then) is logged too.
		defer s.logRequest(r, &st.e, &st.sw, start)
		next.ServeHTTP(&st.sw, r.WithContext(context.WithValue(r.Context(), reqLogKey{}, &st.e)))
	})
}

// reqState is what logRequests keeps of one request.
type reqState struct {
	e  reqLog
	sw statusWriter
}

// logRequest writes the line of one finished request.
func (s *Server) logRequest(r *http.Request, e *reqLog, sw *statusWriter, start time.Time) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	end := time.Now()
	d := end.Sub(start)
	if r.URL.Path == "/mcp" {
		s.metrics.observeRequest(e, d, func(name string) bool { _, ok := s.toolScopes[name]; return ok })
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
