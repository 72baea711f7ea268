package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// Package notify is change notifications: the watched URIs of open
// subscriptions/listen streams, and who may hear of a change.
//
// go-sdk v1.8.0 serves subscriptions in stateless mode only through the
// 2026-07-28 subscriptions/listen request, which stays open and carries
// notifications/resources/updated for the URIs it names. go-sdk calls
// subscribe for each URI the listen names, in order, on the listen's own
// session, and unsubscribe for each of them when the listen ends. A
// 2025-11-25 resources/subscribe would land on a session that ends with its
// own HTTP request, so it is refused with a message saying what works
// instead.
//
// What a listen costs is bounded: a URI is resolved with Stat (metadata
// only, never the body), a URI named again by the same listen costs a map
// lookup, one listen may name at most maxURIs distinct URIs, and a tenant
// may hold at most maxListens listens open at once on this instance.
//
// Each instance watches the URIs its open listen streams name. A replace or
// delete through this instance notifies at once; changes made through other
// instances sharing the backend are found by polling the watched URIs every
// pollInterval, one Stat per distinct URI however many listens name it.
//
// Access is checked again before every notification: each change is Stated
// once, and a notification reaches a listener only if it may read the
// resource in that state (its own tenant's, present or gone, or another
// tenant's public one). A listener that can no longer read a resource hears
// nothing more of it, and its stream stays open exactly as for a resource
// that does not change; once it may read it again (the resource is public
// again) it hears of the next change, the one that made it public included.

const (
	DefaultMaxListenURIs       = 100
	DefaultMaxListensPerTenant = 64
)

// Options configure a Hub.
type Options struct {
	Service *service.Service
	Store   store.Backend
	Log     *slog.Logger
	// ReadError is the JSON-RPC error of a read the service refused.
	ReadError func(raw string, f *service.Failure) error
	// Send sends notifications/resources/updated for uri (go-sdk's
	// ResourceUpdated; Filter decides who gets it).
	Send func(ctx context.Context, uri string)
	// MaxURIs and MaxListens bound a listen and a tenant's listens; 0
	// means the defaults.
	MaxURIs, MaxListens int
}

// Hub holds the listens of one instance.
type Hub struct {
	o     Options
	watch watchlist
}

// New returns a Hub.
func New(o Options) *Hub {
	return &Hub{o: o, watch: watchlist{maxURIs: o.MaxURIs, maxListens: o.MaxListens}}
}

// rpcError is a JSON-RPC error with data encoded by encoding/json.
func rpcError(code int64, msg string, data any) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

// resState is the state of a watched resource that notifications are about:
// its body and who besides its tenant may read it.
type resState struct {
	present bool
	sha     string
	vis     store.Visibility
}

func stateOf(m *store.Meta) resState {
	return resState{present: true, sha: m.SHA256, vis: m.Visibility}
}

// mayRead reports whether p may read the resource at k in state st: the
// rule of readableBy (own tenant, or public), from metadata only. Its own
// tenant hears of a resource's removal; nobody else does.
func mayRead(p auth.Principal, k store.Key, st resState) bool {
	return k.Tenant() == p.Tenant || st.present && service.Readable(p.Tenant, &store.Meta{Key: k, Visibility: st.vis})
}

// Dedupe removes repeated URIs from a subscriptions/listen before
// go-sdk walks them (it calls subscribe once per entry, and repeats them
// all in its acknowledgement), and refuses more distinct URIs than the cap
// without walking further: a request naming one URI a million times costs
// one pass over its list.
func (s *Hub) Dedupe(p *mcp.SubscriptionsListenParams) error {
	if p == nil || p.Notifications == nil || len(p.Notifications.ResourceSubscriptions) < 2 {
		return nil
	}
	list := p.Notifications.ResourceSubscriptions
	seen := make(map[string]struct{}, min(len(list), s.watch.uriCap()+1))
	out := list[:0]
	for _, u := range list {
		if _, dup := seen[u]; dup {
			continue
		}
		if n := s.watch.uriCap(); len(seen) >= n {
			return rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("Too many URIs: a subscriptions/listen may name at most %d distinct "+
				"resourceSubscriptions (repeats count once); split them across listens", n), limitData{Limit: n})
		}
		seen[u] = struct{}{}
		out = append(out, u)
	}
	p.Notifications.ResourceSubscriptions = out
	return nil
}

// watched is one subscribed URI.
type watched struct {
	refs  int // listens naming it
	key   store.Key
	state resState // the last state listeners were told of
}

// listen is one open subscriptions/listen (one go-sdk session in stateless
// mode).
type listen struct {
	p       auth.Principal
	uris    map[string]int // URI → times the listen named it
	pending int            // URIs admitted and being resolved
}

type watchlist struct {
	mu        sync.Mutex
	uris      map[string]*watched
	listens   map[*mcp.ServerSession]*listen
	perTenant map[string]int // open listens by tenant

	// maxURIs and maxListens are Options.MaxListenURIs and
	// Options.MaxListensPerTenant; 0 means the default.
	maxURIs, maxListens int
}

func (w *watchlist) uriCap() int {
	if w.maxURIs > 0 {
		return w.maxURIs
	}
	return DefaultMaxListenURIs
}

func (w *watchlist) listenCap() int {
	if w.maxListens > 0 {
		return w.maxListens
	}
	return DefaultMaxListensPerTenant
}

// repeat counts raw once more if the listen of sess already names it.
func (w *watchlist) repeat(sess *mcp.ServerSession, raw string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.listens[sess]; l != nil && l.uris[raw] > 0 {
		l.uris[raw]++
		return true
	}
	return false
}

// admit reserves a place for raw in the listen of sess, or reports that the
// listen already names it (dup: nothing more to do). Past a cap it returns
// a -32602 that states the cap.
func (w *watchlist) admit(sess *mcp.ServerSession, p auth.Principal, raw string) (l *listen, dup bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l = w.listens[sess]
	if l != nil {
		if l.uris[raw] > 0 {
			l.uris[raw]++
			return l, true, nil
		}
		if n := w.uriCap(); len(l.uris)+l.pending >= n {
			return nil, false, rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("Too many URIs: a subscriptions/listen may name at most %d distinct "+
				"resourceSubscriptions (repeats count once); split them across listens", n), limitData{Limit: n})
		}
	} else {
		if n := w.listenCap(); w.perTenant[p.Tenant] >= n {
			return nil, false, rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("Too many listens: a tenant may hold at most %d "+
				"subscriptions/listen streams open at once; close one, or name several URIs in one listen", n), limitData{Limit: n})
		}
		if w.listens == nil {
			w.listens, w.perTenant = map[*mcp.ServerSession]*listen{}, map[string]int{}
		}
		l = &listen{p: p, uris: map[string]int{}}
		w.listens[sess] = l
		w.perTenant[p.Tenant]++
	}
	l.pending++
	return l, false, nil
}

type limitData struct {
	Limit int `json:"limit"`
}

// add completes an admitted raw: the listen names it, and st is its state
// unless another listen already watches it (its state then stays, so a
// change that listen has not heard of yet is still notified).
func (w *watchlist) add(l *listen, raw string, k store.Key, st resState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l.pending--
	l.uris[raw] = 1
	if w.uris == nil {
		w.uris = map[string]*watched{}
	}
	if e := w.uris[raw]; e != nil {
		e.refs++
		return
	}
	w.uris[raw] = &watched{refs: 1, key: k, state: st}
}

// abandon gives up an admitted URI that could not be resolved.
func (w *watchlist) abandon(sess *mcp.ServerSession, l *listen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l.pending--
	w.closeIfEmpty(sess, l)
}

// remove undoes one naming of raw by the listen of sess.
func (w *watchlist) remove(sess *mcp.ServerSession, raw string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.listens[sess]
	if l == nil || l.uris[raw] == 0 {
		return
	}
	if l.uris[raw]--; l.uris[raw] > 0 {
		return
	}
	delete(l.uris, raw)
	if e := w.uris[raw]; e != nil {
		if e.refs--; e.refs <= 0 {
			delete(w.uris, raw)
		}
	}
	w.closeIfEmpty(sess, l)
}

// closeIfEmpty forgets a listen that names nothing; w.mu is held.
func (w *watchlist) closeIfEmpty(sess *mcp.ServerSession, l *listen) {
	if len(l.uris) > 0 || l.pending > 0 || w.listens[sess] != l {
		return
	}
	delete(w.listens, sess)
	if w.perTenant[l.p.Tenant]--; w.perTenant[l.p.Tenant] <= 0 {
		delete(w.perTenant, l.p.Tenant)
	}
}

func (w *watchlist) watching(raw string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uris[raw] != nil
}

// update records st for raw and reports whether it changed (false for an
// unwatched URI).
func (w *watchlist) update(raw string, st resState) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.uris[raw]
	if e == nil || e.state == st {
		return false
	}
	e.state = st
	return true
}

// mayHear reports whether the listen of sess names raw and may read it in
// its latest state.
func (w *watchlist) mayHear(sess *mcp.ServerSession, raw string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, e := w.listens[sess], w.uris[raw]
	return l != nil && e != nil && l.uris[raw] > 0 && mayRead(l.p, e.key, e.state)
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

// Subscribe admits one URI of a listen: a URI the caller may read, within
// the caps.
func (s *Hub) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if ip := req.Session.InitializeParams(); ip == nil || ip.ProtocolVersion < "2026-07-28" {
		return rpcError(jsonrpc.CodeMethodNotFound, "resources/subscribe is not available: this server is stateless, and delivers "+
			"notifications/resources/updated through subscriptions/listen (protocol 2026-07-28)", nil)
	}
	p, err := mcptool.RequireScope(ctx, auth.ScopeRead)
	if err != nil {
		return err
	}
	raw := req.Params.URI
	if s.watch.repeat(req.Session, raw) {
		return nil // checked when the listen first named it
	}
	if _, f := s.o.Service.Resolve(raw); f != nil {
		return s.o.ReadError(raw, f)
	}
	l, dup, err := s.watch.admit(req.Session, p, raw)
	if err != nil || dup {
		return err
	}
	k, st, err := s.resolveListened(ctx, p, raw)
	if err != nil {
		s.watch.abandon(req.Session, l)
		return err
	}
	s.watch.add(l, raw, k, st)
	return nil
}

// resolveListened finds the resource a listen names, from its metadata
// only (the service's Stat): every way of not being allowed to read it is
// the same notFound as for a read.
func (s *Hub) resolveListened(ctx context.Context, p auth.Principal, raw string) (store.Key, resState, error) {
	m, f := s.o.Service.Stat(ctx, p.Tenant, raw)
	if f != nil {
		return store.Key{}, resState{}, s.o.ReadError(raw, f)
	}
	return m.Key, stateOf(&m), nil
}

// Unsubscribe drops one URI of a listen.
func (s *Hub) Unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.watch.remove(req.Session, req.Params.URI)
	return nil
}

// Filter is go-sdk sending middleware: a resource update reaches a
// session only if its listen may read the resource in its latest state.
// Anything else is sent nothing, as for a resource that did not change.
func (s *Hub) Filter(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		params, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		sess, _ := req.GetSession().(*mcp.ServerSession)
		if params == nil || sess == nil || !s.watch.mayHear(sess, params.URI) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// Changed tells listeners that the resource at k was written or removed
// through this instance. Its state is read again with Stat rather than
// taken from the writer: that also gives its visibility, and concurrent
// writes settle on the latest one.
func (s *Hub) Changed(k store.Key) {
	raw := k.String()
	if !s.watch.watching(raw) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.recheck(ctx, raw, k)
}

// recheck reads the state of the watched resource at k and notifies its
// listeners (those that may read it, Filter decides) if it changed.
func (s *Hub) recheck(ctx context.Context, raw string, k store.Key) {
	var st resState
	m, err := s.o.Store.Stat(ctx, k)
	switch {
	case err == nil:
		st = stateOf(&m)
	case service.IsNotFound(err):
	default:
		s.o.Log.Warn("checking a watched resource", "uri", raw, "err", err)
		return
	}
	if s.watch.update(raw, st) {
		s.o.Send(ctx, raw)
	}
}

// Poll finds changes made through other instances: one Stat per
// distinct watched URI.
func (s *Hub) Poll(ctx context.Context) {
	for raw, k := range s.watch.snapshot() {
		s.recheck(ctx, raw, k)
	}
}
