package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Deadlines per request. http.Server's ReadTimeout and WriteTimeout would
// cut subscriptions/listen, a long-lived POST, so cmd/resourced sets
// neither; each request gets its own instead:
//
//   - A body deadline for POST /mcp and PUT uploads: the body must arrive
//     within BodyGrace plus its length at BodyMinRate. Without a
//     Content-Length the deadline moves as bytes arrive, so a body sent at
//     the minimum rate or faster is never cut. A body that misses it is
//     answered 408 and the connection closed.
//   - A write deadline for every response, set at its first byte:
//     WriteGrace plus its length (Content-Length, or the bytes written so
//     far) at WriteMinRate. A client that stops reading is dropped when it
//     passes, and the memory its response holds is freed. A
//     subscriptions/listen stream gets the deadline per write instead: each
//     notification must be taken within WriteGrace, however long the
//     stream lives.

// Defaults of Budgets.
const (
	DefaultBodyMinRate  = 64 << 10 // bytes per second
	DefaultBodyGrace    = 10 * time.Second
	DefaultWriteMinRate = 256 << 10 // bytes per second: a 32 MiB response within 158 s
	DefaultWriteGrace   = 30 * time.Second
)

// deadlineStep is how far a moving deadline must advance before the
// connection's deadline is set again (each set costs a timer update).
const deadlineStep = time.Second

// applyDefaults fills in the zero fields of b.
func (b *Budgets) applyDefaults() {
	if b.BodyMinRate <= 0 {
		b.BodyMinRate = DefaultBodyMinRate
	}
	if b.BodyGrace <= 0 {
		b.BodyGrace = DefaultBodyGrace
	}
	if b.WriteMinRate <= 0 {
		b.WriteMinRate = DefaultWriteMinRate
	}
	if b.WriteGrace <= 0 {
		b.WriteGrace = DefaultWriteGrace
	}
	if b.MaxInflight == 0 {
		b.MaxInflight = DefaultMaxInflight
	}
	if b.SaveRate == 0 {
		b.SaveRate = DefaultSaveRate
	}
	if b.SaveBurst <= 0 {
		b.SaveBurst = DefaultSaveBurst
	}
	switch {
	case b.SaveWait == 0:
		b.SaveWait = DefaultSaveWait
	case b.SaveWait < 0:
		b.SaveWait = 0
	}
	if b.MaxUploads == 0 {
		b.MaxUploads = DefaultMaxUploads
	}
}

// budgetAt is the time n bytes take at rate bytes per second, plus grace.
func budgetAt(grace time.Duration, n, rate int64) time.Duration {
	if n <= 0 {
		return grace
	}
	secs := n / rate
	if secs > int64(365*24*time.Hour/time.Second) {
		secs = int64(365 * 24 * time.Hour / time.Second)
	}
	return grace + time.Duration(secs)*time.Second + time.Duration(n%rate)*time.Second/time.Duration(rate)
}

// guardWriter sets the write deadline of a response and tracks whether any
// of it has gone out.
type guardWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	b  *Budgets

	started  bool      // WriteHeader or Write was called
	stream   bool      // a long-lived stream: a deadline per write
	first    time.Time // first byte
	size     int64     // the response's length, as far as it is known
	wrote    int64     // bytes written
	deadline time.Time // the write deadline set; zero: none yet
}

func (s *Server) newGuardWriter(w http.ResponseWriter, _ *http.Request) *guardWriter {
	return &guardWriter{ResponseWriter: w, rc: http.NewResponseController(w), b: &s.budgets}
}

// begin starts the response's write budget.
func (w *guardWriter) begin() {
	if w.started {
		return
	}
	w.started = true
	w.first = time.Now()
	if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil && n > 0 {
		w.size = n
	}
	w.apply(0)
}

// apply sets the write deadline for a response of w.size bytes, plus n
// bytes about to be written on a stream.
func (w *guardWriter) apply(n int64) {
	var d time.Time
	if w.stream {
		d = time.Now().Add(budgetAt(w.b.WriteGrace, n, w.b.WriteMinRate))
	} else {
		d = w.first.Add(budgetAt(w.b.WriteGrace, w.size, w.b.WriteMinRate))
		if !w.deadline.IsZero() && d.Sub(w.deadline) < deadlineStep {
			return
		}
	}
	w.deadline = d
	_ = w.rc.SetWriteDeadline(d) // a writer without deadlines (a test recorder) keeps none
}

func (w *guardWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.begin()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardWriter) Write(b []byte) (int, error) {
	w.begin()
	if w.stream {
		w.apply(int64(len(b)))
	} else if seen := w.wrote + int64(len(b)); seen > w.size {
		w.size = seen
		w.apply(0)
	}
	n, err := w.ResponseWriter.Write(b)
	w.wrote += int64(n)
	return n, err
}

func (w *guardWriter) Flush() {
	w.begin()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// extend announces n more bytes of response, for a writer that streams a
// body it has not given a Content-Length.
func (w *guardWriter) extend(n int64) {
	if n <= 0 || w.stream {
		return
	}
	if !w.started {
		w.size += n
		return
	}
	w.size = max(w.size, w.wrote) + n
	w.apply(0)
}

// extendWrite gives the response being written to w a write deadline that
// also covers n more bytes at the minimum write rate. The read renderer
// calls it before it streams a body whose length the response headers do
// not announce (a response with a Content-Length is covered already). It
// does nothing on a writer that guardHTTP did not wrap.
func extendWrite(w http.ResponseWriter, n int64) {
	if gw := findGuardWriter(w); gw != nil {
		gw.extend(n)
	}
}

// streamResponse makes the response to w a long-lived stream (a
// subscriptions/listen): instead of one deadline for the whole response,
// every write must be taken by the client within the write grace.
func streamResponse(w http.ResponseWriter) {
	if gw := findGuardWriter(w); gw != nil {
		gw.stream = true
		if gw.started {
			gw.apply(0)
		}
	}
}

func findGuardWriter(w http.ResponseWriter) *guardWriter {
	for w != nil {
		if gw, ok := w.(*guardWriter); ok {
			return gw
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// errSlowBody is the error of a request body that missed its deadline.
var errSlowBody = errors.New("the request body arrived too slowly")

// isSlowBody reports whether err is a body read that missed its deadline.
func isSlowBody(err error) bool { return errors.Is(err, errSlowBody) }

// deadlineBody is a request body under a read deadline.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	b      *Budgets
	start  time.Time
	moving bool // no Content-Length: the deadline follows the bytes read
	read   int64
	set    time.Time
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	d.read += int64(n)
	if d.moving && n > 0 {
		if next := d.start.Add(budgetAt(d.b.BodyGrace, d.read, d.b.BodyMinRate)); next.Sub(d.set) >= deadlineStep {
			d.set = next
			_ = d.rc.SetReadDeadline(next)
		}
	}
	if errors.Is(err, io.EOF) {
		// The whole body is in. net/http now reads the connection in the
		// background to notice a client going away, and a deadline left
		// set would end the request's context when it passes (a
		// subscriptions/listen lives far longer than its body took).
		_ = d.rc.SetReadDeadline(time.Time{})
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w (%d bytes in %s): %w", errSlowBody, d.read, time.Since(d.start).Round(time.Millisecond), err)
	}
	return n, err
}

// bodyDeadline reports whether r's body is read under a deadline: POST
// /mcp and uploads.
func bodyDeadline(r *http.Request) bool {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/mcp":
		return true
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, uploadPrefix):
		return true
	}
	return false
}

// withDeadlines puts r's body under its read deadline and returns r.
func (s *Server) withDeadlines(gw *guardWriter, r *http.Request) *http.Request {
	if !bodyDeadline(r) || r.Body == nil || r.Body == http.NoBody {
		return r
	}
	now := time.Now()
	d := &deadlineBody{ReadCloser: r.Body, rc: gw.rc, b: &s.budgets, start: now, moving: r.ContentLength < 0}
	d.set = now.Add(budgetAt(s.budgets.BodyGrace, max(r.ContentLength, 0), s.budgets.BodyMinRate))
	if err := gw.rc.SetReadDeadline(d.set); err != nil {
		return r // no deadlines on this writer (not a net/http connection)
	}
	r2 := *r
	r2.Body = d
	return &r2
}

// bodyReadFailed answers a request whose body could not be read: 408 when
// it came too slowly, 400 otherwise.
func (s *Server) bodyReadFailed(w http.ResponseWriter, r *http.Request, err error) {
	if isSlowBody(err) {
		s.log.InfoContext(r.Context(), "request body too slow; dropped", "http", r.Method+" "+r.URL.Path, "err", err)
		if e := logEntry(r.Context()); e != nil {
			e.outcome = "slow_body"
		}
		w.Header().Set("Connection", "close")
		http.Error(w, s.slowBodyMessage(), http.StatusRequestTimeout)
		return
	}
	http.Error(w, "failed to read body", http.StatusBadRequest)
}

func (s *Server) slowBodyMessage() string {
	return fmt.Sprintf("Request Timeout: the request body must arrive within %s plus its length at %d bytes/s; nothing was done. Send it again.",
		s.budgets.BodyGrace, s.budgets.BodyMinRate)
}
