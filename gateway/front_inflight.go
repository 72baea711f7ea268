package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
)

// Cancellation of forwarded calls.
//
// The front is stateless: a caller's notifications/cancelled arrives in a
// POST of its own, which go-sdk serves in a new session that knows nothing
// of the call it names. So the server's HTTP stage tracks every tools/call
// it passes on (Track, keyed by the caller's tenant and the JSON-RPC id of
// the call) and hands a notifications/cancelled to Cancel, which cancels
// the calls of that tenant with that id. The scope is (tenant, id): a
// caller can cancel only its own tenant's calls, and a tenant whose
// clients reuse ids cancels every call in flight under that id. The same
// context ends when the caller's HTTP request ends (a disconnect), and
// go-sdk's client then sends notifications/cancelled upstream.

type inflight struct {
	mu    sync.Mutex
	calls map[string]map[*trackedCall]bool
}

type trackedCall struct {
	ctx    context.Context
	cancel context.CancelFunc
}

type trackedKey struct{}

// idKey is the canonical form of a raw JSON-RPC id: strings and integers
// never collide, and 1 and 1.0 are one id.
func idKey(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	if f, err := n.Float64(); err == nil && f == float64(int64(f)) {
		return "n:" + strconv.FormatInt(int64(f), 10), true
	}
	return "n:" + n.String(), true
}

// Track registers a tools/call of tenant with the raw JSON id as in
// flight, returning the context the call runs under (ended by Cancel or
// by ctx) and a function to call when the request is answered.
func (f *Front) Track(ctx context.Context, tenant string, id []byte) (context.Context, func()) {
	k, ok := idKey(id)
	if !ok {
		return ctx, func() {}
	}
	key := tenant + "\x00" + k
	cctx, cancel := context.WithCancel(ctx)
	c := &trackedCall{ctx: cctx, cancel: cancel}
	f.calls.mu.Lock()
	if f.calls.calls == nil {
		f.calls.calls = map[string]map[*trackedCall]bool{}
	}
	if f.calls.calls[key] == nil {
		f.calls.calls[key] = map[*trackedCall]bool{}
	}
	f.calls.calls[key][c] = true
	f.calls.mu.Unlock()
	return context.WithValue(ctx, trackedKey{}, c), func() {
		f.calls.mu.Lock()
		delete(f.calls.calls[key], c)
		if len(f.calls.calls[key]) == 0 {
			delete(f.calls.calls, key)
		}
		f.calls.mu.Unlock()
		cancel()
	}
}

// Cancel cancels the calls in flight of tenant with the raw JSON id
// requestID, and reports whether there were any.
func (f *Front) Cancel(tenant string, requestID []byte) bool {
	k, ok := idKey(requestID)
	if !ok {
		return false
	}
	f.calls.mu.Lock()
	set := f.calls.calls[tenant+"\x00"+k]
	cancels := make([]context.CancelFunc, 0, len(set))
	for c := range set {
		cancels = append(cancels, c.cancel)
	}
	f.calls.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	return len(cancels) > 0
}

// context is ctx, also ended when the tracked call that ctx belongs to is
// cancelled or its HTTP request ends.
func (c *inflight) context(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	t, ok := ctx.Value(trackedKey{}).(*trackedCall)
	if !ok {
		return cctx, cancel
	}
	stop := context.AfterFunc(t.ctx, cancel)
	return cctx, func() { stop(); cancel() }
}
