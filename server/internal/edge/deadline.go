package edge

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Deadlines per request (Deadlines). http.Server's ReadTimeout and WriteTimeout would
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

// Deadlines are the rates and graces of a request's body and response.
type Deadlines struct {
	BodyMinRate  int64 // bytes per second
	BodyGrace    time.Duration
	WriteMinRate int64 // bytes per second
	WriteGrace   time.Duration
}

// deadlineStep is how far a moving deadline must advance before the
// connection's deadline is set again (each set costs a timer update).
const deadlineStep = time.Second

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

// Writer sets the write deadline of a response and tracks whether any
// of it has gone out.
type Writer struct {
	http.ResponseWriter
	rc http.ResponseController
	d  *Deadlines
	// body is the request body's deadline (Body), kept here: one
	// request, one writer, one body.
	body deadlineBody

	started  bool      // WriteHeader or Write was called
	stream   bool      // a long-lived stream: a deadline per write
	first    time.Time // first byte
	size     int64     // the response's length, as far as it is known
	wrote    int64     // bytes written
	deadline time.Time // the write deadline set; zero: none yet
}

// Writer wraps w under these deadlines.
func (d *Deadlines) Writer(w http.ResponseWriter) *Writer {
	gw := new(Writer)
	d.Init(gw, w)
	return gw
}

// Init makes gw, which may be part of a larger per-request value (the
// server's request state), the Writer of w under these deadlines.
func (d *Deadlines) Init(gw *Writer, w http.ResponseWriter) {
	*gw = Writer{ResponseWriter: w, rc: *http.NewResponseController(w), d: d}
}

// Started reports whether any of the response was written.
func (w *Writer) Started() bool { return w.started }

// begin starts the response's write budget.
func (w *Writer) begin() {
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
func (w *Writer) apply(n int64) {
	var d time.Time
	if w.stream {
		d = time.Now().Add(budgetAt(w.d.WriteGrace, n, w.d.WriteMinRate))
	} else {
		d = w.first.Add(budgetAt(w.d.WriteGrace, w.size, w.d.WriteMinRate))
		if !w.deadline.IsZero() && d.Sub(w.deadline) < deadlineStep {
			return
		}
	}
	w.deadline = d
	_ = w.rc.SetWriteDeadline(d) // a writer without deadlines (a test recorder) keeps none
}

func (w *Writer) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.begin()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Writer) Write(b []byte) (int, error) {
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

func (w *Writer) Flush() {
	w.begin()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// extend announces n more bytes of response, for a writer that streams a
// body it has not given a Content-Length.
func (w *Writer) extend(n int64) {
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

// ExtendWrite gives the response being written to w a write deadline that
// also covers n more bytes at the minimum write rate. The read renderer
// calls it before it streams a body whose length the response headers do
// not announce (a response with a Content-Length is covered already). It
// does nothing on a writer that guardHTTP did not wrap.
func ExtendWrite(w http.ResponseWriter, n int64) {
	if gw := findWriter(w); gw != nil {
		gw.extend(n)
	}
}

// StreamResponse makes the response to w a long-lived stream (a
// subscriptions/listen): instead of one deadline for the whole response,
// every write must be taken by the client within the write grace.
func StreamResponse(w http.ResponseWriter) {
	if gw := findWriter(w); gw != nil {
		gw.stream = true
		if gw.started {
			gw.apply(0)
		}
	}
}

func findWriter(w http.ResponseWriter) *Writer {
	for w != nil {
		if gw, ok := w.(*Writer); ok {
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

// IsSlowBody reports whether err is a body read that missed its deadline.
func IsSlowBody(err error) bool { return errors.Is(err, errSlowBody) }

// deadlineBody is a request body under a read deadline, set once (Body)
// and moved only for a body without a Content-Length. It is not cleared at
// the end of the body: net/http clears it itself when the body reaches EOF,
// as it starts reading the connection in the background to notice a client
// going away (connReader.startBackgroundRead), so that a request outliving
// its body's deadline (a subscriptions/listen) keeps its context;
// TestListenOutlivesBudgets holds net/http to it.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	dl     *Deadlines
	start  time.Time
	moving bool // no Content-Length: the deadline follows the bytes read
	read   int64
	set    time.Time
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	d.read += int64(n)
	if d.moving && n > 0 {
		if next := d.start.Add(budgetAt(d.dl.BodyGrace, d.read, d.dl.BodyMinRate)); next.Sub(d.set) >= deadlineStep {
			d.set = next
			_ = d.rc.SetReadDeadline(next)
		}
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w (%d bytes in %s): %w", errSlowBody, d.read, time.Since(d.start).Round(time.Millisecond), err)
	}
	return n, err
}

// Body puts r's body under its read deadline, in place: r must be the
// caller's own copy of the request (a handler may not change the one
// net/http gave it). gw is the request's Writer.
func (dl *Deadlines) Body(gw *Writer, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	now := time.Now()
	d := &gw.body
	*d = deadlineBody{ReadCloser: r.Body, rc: &gw.rc, dl: dl, start: now, moving: r.ContentLength < 0}
	d.set = now.Add(budgetAt(dl.BodyGrace, max(r.ContentLength, 0), dl.BodyMinRate))
	if err := gw.rc.SetReadDeadline(d.set); err != nil {
		return // no deadlines on this writer (not a net/http connection)
	}
	r.Body = d
}
