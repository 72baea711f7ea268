package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Guard is what a Bucket does with a panic. A panic of the driver fails
// the call with an error wrapping ErrPanic, is reported, and marks the
// store failing: Ping fails until Hold has passed since the last one and
// a ping of the driver then succeeds, so that a damaged database that
// panics on every sweep keeps the instance out of a load balancer's
// rotation instead of ending the process. A panic of the caller's own
// function (View's and ReadIf's fn, run inside the driver's read) is
// recovered inside it, so that the driver ends its transaction normally,
// and fails the call with ErrCallbackPanic without marking the store.
type Guard struct {
	// Report is called once per recovered panic: op names the call, v is
	// the panic's value, callback tells the caller's function panicked.
	// nil: not reported.
	Report func(ctx context.Context, op string, v any, callback bool)
	// Hold is how long Ping fails after a driver panic; <= 0 means
	// DefaultPanicHold.
	Hold time.Duration
}

// DefaultPanicHold is Guard.Hold when it is not set.
const DefaultPanicHold = 30 * time.Second

var (
	// ErrPanic is the error of a call whose driver panicked.
	ErrPanic = errors.New("the storage backend panicked (recovered; see the log)")
	// ErrCallbackPanic is the error of a read whose fn panicked.
	ErrCallbackPanic = errors.New("a read callback panicked (recovered; see the log)")
)

func (g *Guard) hold() time.Duration {
	if g.Hold <= 0 {
		return DefaultPanicHold
	}
	return g.Hold
}

func (g *Guard) report(ctx context.Context, op string, v any, callback bool) {
	if g.Report != nil {
		g.Report(ctx, op, v, callback)
	}
}

// Guard implements Backend.
func (b *Bucket) Guard(g Guard) { b.guard.Store(&g) }

// catch is deferred by every method: it turns a panic of the driver into
// ErrPanic in *err and marks the store failing.
func (b *Bucket) catch(ctx context.Context, op string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	b.guard.Load().report(ctx, op, v, false)
	b.failedAt.Store(b.now().UnixNano())
	*err = fmt.Errorf("store: %s: %w", op, ErrPanic)
}

// callback runs the caller's fn, recovering its panic as ErrCallbackPanic.
func (b *Bucket) callback(ctx context.Context, op string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			b.guard.Load().report(ctx, op+" callback", v, true)
			err = ErrCallbackPanic
		}
	}()
	return fn()
}

// guardedReader recovers panics of an opened body's reader.
type guardedReader struct {
	b *Bucket
	r io.ReadSeekCloser
}

func (gr *guardedReader) Read(p []byte) (n int, err error) {
	defer gr.b.catch(context.Background(), "read", &err)
	return gr.r.Read(p)
}

func (gr *guardedReader) Seek(off int64, whence int) (n int64, err error) {
	defer gr.b.catch(context.Background(), "seek", &err)
	return gr.r.Seek(off, whence)
}

func (gr *guardedReader) Close() (err error) {
	defer gr.b.catch(context.Background(), "close reader", &err)
	return gr.r.Close()
}
