package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The server writes one log line per request. Written straight to stderr
// that is one write(2) per request, about a tenth of the cost of a small
// resources/read (bench/README.md), so the log stream is buffered: lines
// go out when 32 KiB have accumulated, logFlushDelay after the first line
// still held, at once for records of level warn and above, and when the
// server stops. What a crash (kill -9) can lose is the last
// logFlushDelay of info and debug lines; never a warning or an error.

// logFlushDelay bounds how long a line waits in the buffer.
const logFlushDelay = 100 * time.Millisecond

// logWriter is a buffered, concurrency-safe writer that flushes itself
// after a delay.
type logWriter struct {
	delay time.Duration

	mu    sync.Mutex
	w     *bufio.Writer
	timer *time.Timer // pending flush, nil when the buffer is empty
}

func newLogWriter(w io.Writer, delay time.Duration) *logWriter {
	return &logWriter{delay: delay, w: bufio.NewWriterSize(w, 32<<10)}
}

// Write implements io.Writer. slog handlers write a whole record per call.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.w.Buffered() > 0 && l.timer == nil {
		l.timer = time.AfterFunc(l.delay, func() { _ = l.Flush() })
	}
	return n, err
}

// Flush writes out what is buffered.
func (l *logWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	return l.w.Flush()
}

// flushingHandler flushes its logWriter after every record of level warn
// and above, so that problems are never held back.
type flushingHandler struct {
	slog.Handler
	w *logWriter
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.w}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.w}
}

// announcer is a logger on the same writer whose info records are written
// whatever the configured level: for the "listening" line that scripts wait
// for (docs/CONTRACT.md §8), also at logLevel warn and error.
func announcer(w *logWriter) *slog.Logger {
	return slog.New(flushingHandler{slog.NewJSONHandler(w, nil), w})
}
