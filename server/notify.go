package server

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/uri"
)

// Change notifications.
//
// go-sdk v1.8.0 serves subscriptions in stateless mode only through the
// 2026-07-28 subscriptions/listen request, which stays open and carries
// notifications/resources/updated for the URIs it names. A 2025-11-25
// resources/subscribe would land on a session that ends with its own HTTP
// request, so it is refused with a message saying what works instead.
//
// Each instance watches the URIs its open listen streams name. A replace or
// delete through this instance notifies at once; changes made through other
// instances sharing the backend are found by polling the watched URIs'
// sha256 every pollInterval, so listeners on any instance hear of them.

// watched is one subscribed URI.
type watched struct {
	refs int
	key  store.Key
	sha  string // "" when absent
}

type watchlist struct {
	mu   sync.Mutex
	uris map[string]*watched
}

func (w *watchlist) add(raw string, k store.Key, sha string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uris == nil {
		w.uris = map[string]*watched{}
	}
	if e := w.uris[raw]; e != nil {
		e.refs++
		return
	}
	w.uris[raw] = &watched{refs: 1, key: k, sha: sha}
}

func (w *watchlist) remove(raw string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.uris[raw]; e != nil {
		if e.refs--; e.refs <= 0 {
			delete(w.uris, raw)
		}
	}
}

// update records sha for raw and reports whether it changed (false for an
// unwatched URI).
func (w *watchlist) update(raw, sha string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.uris[raw]
	if e == nil || e.sha == sha {
		return false
	}
	e.sha = sha
	return true
}

func (w *watchlist) snapshot() map[string]store.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]store.Key, len(w.uris))
	for raw, e := range w.uris {
		out[raw] = e.key
	}
	return out
}

// subscribe admits a subscription to a URI the caller may read.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if ip := req.Session.InitializeParams(); ip == nil || ip.ProtocolVersion < "2026-07-28" {
		return rpcError(jsonrpc.CodeMethodNotFound, "resources/subscribe is not available: this server is stateless, and delivers "+
			"notifications/resources/updated through subscriptions/listen (protocol 2026-07-28)", nil)
	}
	p, err := requireScope(ctx, auth.ScopeRead)
	if err != nil {
		return err
	}
	raw := req.Params.URI
	if err := s.checkReadURI(raw); err != nil {
		return err
	}
	u, _ := uri.Parse(raw)
	obj, err := s.lookup(ctx, p, u)
	if isNotFound(err) {
		return notFound(raw)
	}
	if err != nil {
		return s.internal(ctx, "resources/subscribe", err)
	}
	s.watch.add(raw, obj.Key, obj.SHA256)
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.watch.remove(req.Params.URI)
	return nil
}

// changed tells listeners that the resource at k now has sha ("" when it
// is gone), if they have not heard of it yet.
func (s *Server) changed(k store.Key, sha string) {
	raw := k.String()
	if s.watch.update(raw, sha) {
		s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: raw})
	}
}

// pollWatched finds changes made through other instances.
func (s *Server) pollWatched(ctx context.Context) {
	for raw, k := range s.watch.snapshot() {
		m, err := s.store.Stat(ctx, k)
		switch {
		case err == nil:
			s.changed(k, m.SHA256)
		case isNotFound(err):
			s.changed(k, "")
		default:
			s.log.Warn("polling a watched resource", "uri", raw, "err", err)
		}
	}
}

// every runs f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
