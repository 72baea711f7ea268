package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnavailable is wrapped by errors of an upstream that cannot be
// reached (not started, died, refused the connection, timed out): the
// caller gets an isError "unavailable" result with retrySafe true.
var ErrUnavailable = errors.New("upstream unavailable")

// ProgressRouter routes progress notifications of upstream sessions back
// to the front request that caused them. Callers' progress tokens are
// their own and may collide across callers sharing one upstream session,
// so each forwarded call gets a token of the gateway's, and the router
// maps it back.
//
// A route belongs to the upstream session that carries its call: a
// notification is delivered only when it arrives on that session, so an
// upstream process of one tenant (perTenant isolation) cannot reach the
// stream of another tenant's call, even with its token. Tokens are 128
// random bits besides, so they cannot be guessed either.
//
// A call's progress reaches its caller before its result by count: the
// readers count what they pass on (Passed), Deliver what go-sdk hands on,
// done waits for the two to meet (docs/decisions.md).
type ProgressRouter struct {
	mu     sync.Mutex
	routes map[string]*route
}

type route struct {
	session *mcp.ClientSession
	deliver func(*mcp.ProgressNotificationParams)
	// passed counts the route's notifications a reader handed go-sdk,
	// handled those go-sdk handed Deliver; wake is closed at the next
	// handled (nil: nobody waits).
	passed, handled int
	wake            chan struct{}
}

// progressSettle bounds the wait of a call's done for notifications go-sdk
// never hands on (a session that ended, params it cannot decode).
const progressSettle = 2 * time.Second

// newProgressToken is "rsd-gw-" and 128 bits from crypto/rand in hex.
func newProgressToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "rsd-gw-" + hex.EncodeToString(b[:])
}

// Route registers deliver for one call forwarded on session and returns
// the token to send upstream and a function to call when the call ends:
// it waits until every notification of the route passed on has been
// delivered (at most progressSettle, or until ctx ends), then removes the
// route (notifications after that are dropped).
func (r *ProgressRouter) Route(session *mcp.ClientSession, deliver func(*mcp.ProgressNotificationParams)) (token string, done func(ctx context.Context)) {
	r.mu.Lock()
	if r.routes == nil {
		r.routes = map[string]*route{}
	}
	for {
		token = newProgressToken()
		if _, taken := r.routes[token]; !taken {
			break
		}
	}
	rt := &route{session: session, deliver: deliver}
	r.routes[token] = rt
	r.mu.Unlock()
	return token, func(ctx context.Context) {
		timer := time.NewTimer(progressSettle)
		defer timer.Stop()
		r.mu.Lock()
		defer func() {
			delete(r.routes, token)
			r.mu.Unlock()
		}()
		for rt.handled < rt.passed {
			rt.wake = make(chan struct{})
			wake := rt.wake
			r.mu.Unlock()
			select {
			case <-wake:
			case <-ctx.Done():
			case <-timer.C:
			}
			r.mu.Lock()
			if ctx.Err() != nil || wake == rt.wake { // ended or timed out
				return
			}
		}
	}
}

// Passed counts a message a session's reader hands go-sdk: a progress
// notification for a route is then waited for by the route's done. The
// pool's readers call it for every message they pass on; another
// Sessions calls it for every message its connections read.
func (r *ProgressRouter) Passed(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if r == nil || !ok || req.IsCall() || req.Method != "notifications/progress" {
		return
	}
	var p mcp.ProgressNotificationParams // what go-sdk decodes before Deliver
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	r.mu.Lock()
	if rt := r.routes[tok]; rt != nil {
		rt.passed++
	}
	r.mu.Unlock()
}

// Deliver hands the notification to the route of its token, if that
// route's call was forwarded on the session the notification came from,
// and reports whether one took it. The pool's sessions call it from
// their ProgressNotificationHandler.
func (r *ProgressRouter) Deliver(req *mcp.ProgressNotificationClientRequest) bool {
	if req == nil || req.Params == nil || req.Session == nil {
		return false
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return false
	}
	r.mu.Lock()
	rt := r.routes[tok]
	r.mu.Unlock()
	if rt == nil {
		return false
	}
	ok = rt.session == req.Session
	if ok {
		rt.deliver(req.Params)
	}
	// Handled either way: the reader counted it on whichever session.
	r.mu.Lock()
	rt.handled++
	if rt.wake != nil {
		close(rt.wake)
		rt.wake = nil
	}
	r.mu.Unlock()
	return ok
}
