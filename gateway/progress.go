package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"

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
type ProgressRouter struct {
	mu     sync.Mutex
	routes map[string]route
}

type route struct {
	session *mcp.ClientSession
	deliver func(*mcp.ProgressNotificationParams)
}

// newProgressToken is "rsd-gw-" and 128 bits from crypto/rand in hex.
func newProgressToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "rsd-gw-" + hex.EncodeToString(b[:])
}

// Route registers deliver for one call forwarded on session and returns
// the token to send upstream and a function that removes the route (call
// it when the call ends; notifications after that are dropped).
func (r *ProgressRouter) Route(session *mcp.ClientSession, deliver func(*mcp.ProgressNotificationParams)) (token string, done func()) {
	r.mu.Lock()
	if r.routes == nil {
		r.routes = map[string]route{}
	}
	for {
		token = newProgressToken()
		if _, taken := r.routes[token]; !taken {
			break
		}
	}
	r.routes[token] = route{session: session, deliver: deliver}
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.routes, token)
		r.mu.Unlock()
	}
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
	rt, ok := r.routes[tok]
	r.mu.Unlock()
	if !ok || rt.session != req.Session {
		return false
	}
	rt.deliver(req.Params)
	return true
}
