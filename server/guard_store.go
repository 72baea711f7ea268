package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/resourced/resourced/store"
)

// guardedStore is the store.Backend the server uses: the configured backend
// with every call's panic recovered. A recovered panic fails the call with
// an error (which the callers map like any backend failure: unavailable,
// internal error) and marks the store failing: Ping, and so /readyz,
// fails until holdDown has passed since the last such panic and a ping of
// the backend then succeeds. A damaged database that panics on every sweep
// thus keeps the instance out of a load balancer's rotation instead of
// ending the process.
//
// The wrapper has exactly the optional interfaces (store.EncodedViewer,
// store.Streamer) of the backend it wraps, since the
// server picks its read and upload paths by them.
type guardedStore struct {
	b        store.Backend
	s        *Server
	holdDown time.Duration

	mu       sync.Mutex
	failedAt time.Time // last recovered panic; zero: none since the last good ping
}

// errStorePanic is the error of a backend call that panicked.
var errStorePanic = errors.New("the storage backend panicked (recovered; see the log)")

// errCallbackPanic is the error of a View whose callback panicked.
var errCallbackPanic = errors.New("a read callback panicked (recovered; see the log)")

// DefaultStorePanicHold is how long /readyz stays 503 after a storage
// panic when Budgets.StorePanicHold is zero.
const DefaultStorePanicHold = 30 * time.Second

// guardStore wraps b; holdDown <= 0 means DefaultStorePanicHold.
func (s *Server) guardStore(b store.Backend, holdDown time.Duration) store.Backend {
	if holdDown <= 0 {
		holdDown = DefaultStorePanicHold
	}
	g := &guardedStore{b: b, s: s, holdDown: holdDown}
	v, isV := b.(store.EncodedViewer)
	st, isS := b.(store.Streamer)
	gv, gs := guardedViewer{g, v}, guardedStreamer{g, st}
	switch {
	case isV && isS:
		return struct {
			*guardedStore
			guardedViewer
			guardedStreamer
		}{g, gv, gs}
	case isV:
		return struct {
			*guardedStore
			guardedViewer
		}{g, gv}
	case isS:
		return struct {
			*guardedStore
			guardedStreamer
		}{g, gs}
	}
	return g
}

// catch is deferred by every method: it turns a panic of the backend into
// errStorePanic in *err and marks the store failing.
func (g *guardedStore) catch(ctx context.Context, op string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	g.s.panicked(ctx, panicStore, v, "op", op)
	g.mu.Lock()
	g.failedAt = g.s.now()
	g.mu.Unlock()
	*err = fmt.Errorf("store: %s: %w", op, errStorePanic)
}

func (g *guardedStore) Put(ctx context.Context, obj *store.Object, cond store.Cond) (m store.Meta, replaced bool, err error) {
	defer g.catch(ctx, "put", &err)
	return g.b.Put(ctx, obj, cond)
}

func (g *guardedStore) Get(ctx context.Context, k store.Key) (o *store.Object, err error) {
	defer g.catch(ctx, "get", &err)
	return g.b.Get(ctx, k)
}

func (g *guardedStore) ReadIf(ctx context.Context, k store.Key, allow func(*store.Meta) bool, fn func(m *store.Meta, body []byte) error) (err error) {
	defer g.catch(ctx, "get", &err)
	return g.b.ReadIf(ctx, k, allow, fn)
}

func (g *guardedStore) Stat(ctx context.Context, k store.Key) (m store.Meta, err error) {
	defer g.catch(ctx, "stat", &err)
	return g.b.Stat(ctx, k)
}

func (g *guardedStore) List(ctx context.Context, q store.ListQuery) (p store.Page, err error) {
	defer g.catch(ctx, "list", &err)
	return g.b.List(ctx, q)
}

func (g *guardedStore) Delete(ctx context.Context, k store.Key, cond store.Cond) (err error) {
	defer g.catch(ctx, "delete", &err)
	return g.b.Delete(ctx, k, cond)
}

func (g *guardedStore) DeleteExpired(ctx context.Context, limit int) (n int, err error) {
	defer g.catch(ctx, "delete expired", &err)
	return g.b.DeleteExpired(ctx, limit)
}

func (g *guardedStore) Usage(ctx context.Context, tenant string) (u store.Usage, err error) {
	defer g.catch(ctx, "usage", &err)
	return g.b.Usage(ctx, tenant)
}

// Ping fails while the store is marked failing and the hold-down since the
// last panic has not passed; after it, a successful ping of the backend
// clears the mark.
func (g *guardedStore) Ping(ctx context.Context) (err error) {
	defer g.catch(ctx, "ping", &err)
	g.mu.Lock()
	at := g.failedAt
	g.mu.Unlock()
	if !at.IsZero() {
		if since := g.s.now().Sub(at); since < g.holdDown {
			return fmt.Errorf("store: a storage operation panicked %s ago; not ready for %s after the last such panic", since.Round(time.Millisecond), g.holdDown)
		}
	}
	if err := g.b.Ping(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	if g.failedAt.Equal(at) {
		g.failedAt = time.Time{}
	}
	g.mu.Unlock()
	return nil
}

func (g *guardedStore) Close() (err error) {
	defer g.catch(context.Background(), "close", &err)
	return g.b.Close()
}

// guardedViewer adds store.EncodedViewer.
type guardedViewer struct {
	g *guardedStore
	v store.EncodedViewer
}

// View recovers a panic of the backend like every other method. fn is the
// caller's code, run inside the backend's read transaction: its panic is
// recovered inside fn, so that the backend ends its transaction normally,
// logged and counted as the caller's (http or mcp), and View returns an
// error; the store is not marked failing for it.
func (gv guardedViewer) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) (err error) {
	defer gv.g.catch(ctx, "view", &err)
	return gv.v.View(ctx, k, func(m *store.Meta, encoded, body []byte) (ferr error) {
		defer func() {
			if v := recover(); v != nil {
				gv.g.s.panicked(ctx, callerWhere(ctx), v, "op", "view callback")
				ferr = errCallbackPanic
			}
		}()
		return fn(m, encoded, body)
	})
}

// guardedStreamer adds store.Streamer.
type guardedStreamer struct {
	g  *guardedStore
	st store.Streamer
}

func (gs guardedStreamer) PutStream(ctx context.Context, meta *store.Meta, r io.Reader, cond store.Cond) (m store.Meta, replaced bool, err error) {
	defer gs.g.catch(ctx, "put stream", &err)
	return gs.st.PutStream(ctx, meta, r, cond)
}

func (gs guardedStreamer) Open(ctx context.Context, k store.Key) (m store.Meta, rc io.ReadSeekCloser, err error) {
	defer gs.g.catch(ctx, "open", &err)
	m, rc, err = gs.st.Open(ctx, k)
	if err != nil {
		return m, nil, err
	}
	return m, &guardedReader{g: gs.g, r: rc}, nil
}

// guardedReader recovers panics of an opened body's reader.
type guardedReader struct {
	g *guardedStore
	r io.ReadSeekCloser
}

func (gr *guardedReader) Read(p []byte) (n int, err error) {
	defer gr.g.catch(context.Background(), "read", &err)
	return gr.r.Read(p)
}

func (gr *guardedReader) Seek(off int64, whence int) (n int64, err error) {
	defer gr.g.catch(context.Background(), "seek", &err)
	return gr.r.Seek(off, whence)
}

func (gr *guardedReader) Close() (err error) {
	defer gr.g.catch(context.Background(), "close reader", &err)
	return gr.r.Close()
}

// ListPublic is part of every store.Backend.
func (g *guardedStore) ListPublic(ctx context.Context, after store.PublicPosition, limit int) (p store.PublicPage, err error) {
	defer g.catch(ctx, "list public", &err)
	return g.b.ListPublic(ctx, after, limit)
}
