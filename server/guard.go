package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// Panics are contained where they can unwind:
//
//   - HTTP handlers (guardHTTP, around everything server.New routes): the
//     caller gets HTTP 500, a JSON-RPC internal error on /mcp, and the
//     connection is dropped when the response had already started.
//   - MCP methods and tools (recoverMCP, the outermost receiving
//     middleware): go-sdk runs every method handler on a goroutine of its
//     own (jsonrpc2's handleAsync), where no HTTP-level recover reaches, and
//     has no recover of its own, so a panicking tool would end the process.
//     A tools/call becomes an isError "unavailable" result, any other
//     method a JSON-RPC -32603.
//   - Background jobs (job, around every tick of the sweeper and the
//     subscription poll): the tick ends, the next one runs.
//   - The storage backend (store.Guard, installed by initGuards): the call fails
//     with an error and /readyz answers 503 for a while.
//
// Each is logged at error level with its stack and counted in
// resourced_panics_total{where}.

// Budgets bound what one caller may take of the server: time for its
// bodies and responses, requests in flight, saves per second, upload
// spools, and how long a storage panic keeps /readyz at 503. Every zero
// field takes its default (the Default* constants).
type Budgets struct {
	// BodyMinRate is the slowest a POST /mcp or upload body may arrive,
	// in bytes per second, after BodyGrace: a body must be in within
	// BodyGrace + length/BodyMinRate, or it is answered 408 (default
	// 64 KiB/s and 10s).
	BodyMinRate int64
	BodyGrace   time.Duration
	// WriteMinRate and WriteGrace bound the time a client may take to read
	// a response: WriteGrace + length/WriteMinRate from its first byte,
	// after which the connection is dropped (default 256 KiB/s and 30s). A
	// subscriptions/listen stream gives each write WriteGrace instead.
	WriteMinRate int64
	WriteGrace   time.Duration
	// MaxInflight caps the requests one tenant has in progress at once
	// (default 64; negative: no cap). Past it: 429, Retry-After: 1.
	MaxInflight int
	// SaveRate and SaveBurst limit one tenant's saves (save_report,
	// save_search_snapshot, uploads): a token bucket filling at SaveRate
	// per second up to SaveBurst (default 100/s and 200; a negative
	// SaveRate: no limit). Past it: 429 with the seconds until a token.
	SaveRate  float64
	SaveBurst int
	// SaveWait is how long a save past the rate may wait for its token
	// instead of being refused (default 1s; negative: never wait). A
	// tenant slightly over its rate is slowed to it; the wait counts as in
	// flight.
	SaveWait time.Duration
	// MaxUploads caps the uploads spooling their bodies at once, over all
	// tenants (each holds a connection and a temporary file; default 64;
	// negative: no cap). Past it: 503 with Retry-After. One tenant holds
	// at most a quarter of them (at least one); past its share: 429.
	MaxUploads int
	// StorePanicHold is how long /readyz answers 503 after the storage
	// backend panicked (recovered); after it, readiness returns with the
	// first successful ping (default 30s).
	StorePanicHold time.Duration
}

// initGuards sets up the budgets, the fairness limiter, the upload slots
// and the panic-guarded store.
func (s *Server) initGuards(b Budgets, backend store.Backend) {
	b.applyDefaults()
	s.budgets = b
	s.deadlines = &edge.Deadlines{BodyMinRate: b.BodyMinRate, BodyGrace: b.BodyGrace, WriteMinRate: b.WriteMinRate, WriteGrace: b.WriteGrace}
	s.limiter = edge.NewLimiter(edge.Limits{MaxInflight: b.MaxInflight, SaveRate: b.SaveRate, SaveBurst: b.SaveBurst,
		SaveWait: b.SaveWait, MaxUploads: b.MaxUploads}, s.now)
	if b.MaxUploads > 0 {
		s.uploadSlots = make(chan struct{}, b.MaxUploads)
	}
	backend.Guard(store.Guard{Hold: b.StorePanicHold, Report: func(ctx context.Context, op string, v any, callback bool) {
		where := panicStore
		if callback {
			where = callerWhere(ctx)
		}
		s.panicked(ctx, where, v, "op", op)
	}})
	s.store = backend
}

// Where a panic was recovered: the label values of resourced_panics_total.
const (
	panicHTTP  = "http"
	panicMCP   = "mcp"
	panicJob   = "job"
	panicStore = "store"
)

// inMCPKey marks a context as being inside an MCP method handler, so that a
// panic recovered below it (in a store callback) is counted as mcp.
type inMCPKey struct{}

// callerWhere is the label of a panic in server code called with ctx: mcp
// inside an MCP method handler, http otherwise.
func callerWhere(ctx context.Context) string {
	if ctx != nil && ctx.Value(inMCPKey{}) != nil {
		return panicMCP
	}
	return panicHTTP
}

// panicked logs a recovered panic with its stack and counts it. It is
// called from the deferred function that recovered v, so the stack still
// shows where the panic happened.
func (s *Server) panicked(ctx context.Context, where string, v any, attrs ...any) {
	s.metrics.Panics.WithLabelValues(where).Inc()
	args := append([]any{"where", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack())}, attrs...)
	if ctx == nil {
		ctx = context.Background()
	}
	s.log.ErrorContext(ctx, "panic recovered", args...)
}

// internalErrorBody is the /mcp answer to a request whose handler panicked.
// It has no id: the body may not have been read, and it names nothing of
// the server's internals.
const internalErrorBody = `{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"}}`

// guardHTTP is the outermost handler below the request log: it bounds the
// time a request may take to send its body and to read its response
// (guard_deadline.go), and recovers a panic of any handler below it.
func (s *Server) guardHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var gw *edge.Writer
		if st := stateOf(r.Context()); st != nil {
			gw = &st.gw // in the request's one allocation
			s.deadlines.Init(gw, w)
		} else {
			gw = s.deadlines.Writer(w)
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as is
				panic(v)
			}
			s.panicked(r.Context(), panicHTTP, v, "http", r.Method+" "+r.URL.Path)
			if e := logEntry(r.Context()); e != nil {
				e.outcome = "panic"
			}
			if gw.Started() {
				// Part of a response is out: all that is left is to make
				// sure the client does not take it for a whole one.
				panic(http.ErrAbortHandler)
			}
			h := gw.Header()
			for k := range h {
				delete(h, k)
			}
			h.Set("Cache-Control", "no-store")
			h.Set("Connection", "close")
			if r.URL.Path == "/mcp" {
				h.Set("Content-Type", "application/json")
				gw.WriteHeader(http.StatusInternalServerError)
				gw.Write([]byte(internalErrorBody + "\n"))
				return
			}
			http.Error(gw, "Internal Server Error", http.StatusInternalServerError)
		}()
		if bodyDeadline(r) {
			s.deadlines.Body(gw, r) // r is logRequests' copy
		}
		next.ServeHTTP(gw, r)
	})
}

// recoverMCP is the outermost receiving middleware: a panic of any MCP
// method handler below it, a tool included, becomes an error answer on the
// goroutine go-sdk runs the handler on.
func (s *Server) recoverMCP(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			tool := ""
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				tool = p.Name
			}
			s.panicked(ctx, panicMCP, v, "method", method, "tool", tool)
			e := logEntry(ctx)
			if e != nil {
				e.method, e.tool = method, tool
			}
			if method == "tools/call" {
				if e != nil {
					e.outcome = service.KindUnavailable
				}
				res, err = mcptool.ErrorResult(service.Fail(service.KindUnavailable, "The server failed while handling this call. Retry the same call later; if it fails again, the server's operators have the details in its log.")), nil
				return
			}
			if e != nil {
				e.outcome = "-32603"
			}
			res, err = nil, rpcError(jsonrpc.CodeInternalError, "Internal error", nil)
		}()
		return next(context.WithValue(ctx, inMCPKey{}, true), method, req)
	}
}

// job wraps one tick of a background job: a panic ends the tick, is logged
// and counted, and the next tick runs as usual.
func (s *Server) job(name string, f func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		defer func() {
			if v := recover(); v != nil {
				s.panicked(ctx, panicJob, v, "job", name)
			}
		}()
		f(ctx)
	}
}
