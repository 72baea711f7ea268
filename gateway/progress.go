package gateway

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
type ProgressRouter struct {
	next   atomic.Uint64
	mu     sync.Mutex
	routes map[string]func(*mcp.ProgressNotificationParams)
}

// Route registers deliver for one forwarded call and returns the token to
// send upstream and a function that removes the route (call it when the
// call ends; notifications after that are dropped).
func (r *ProgressRouter) Route(deliver func(*mcp.ProgressNotificationParams)) (token string, done func()) {
	token = fmt.Sprintf("rsd-gw-%d", r.next.Add(1))
	r.mu.Lock()
	if r.routes == nil {
		r.routes = map[string]func(*mcp.ProgressNotificationParams){}
	}
	r.routes[token] = deliver
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.routes, token)
		r.mu.Unlock()
	}
}

// Deliver hands p to the route of its token, if any, and reports whether
// one took it. The pool's sessions call it from their
// ProgressNotificationHandler.
func (r *ProgressRouter) Deliver(p *mcp.ProgressNotificationParams) bool {
	if p == nil {
		return false
	}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return false
	}
	r.mu.Lock()
	deliver := r.routes[tok]
	r.mu.Unlock()
	if deliver == nil {
		return false
	}
	deliver(p)
	return true
}
