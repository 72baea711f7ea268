package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/service"
)

// The Front is the gateway's MCP face: a go-sdk receiving middleware that
// answers the proxied methods through the Sessions (the Pool), namespaces
// names and URIs (namespace.go) and offloads large tool results through
// the service (offload.go). Requests it does not proxy (resourced's own
// read tools, reads of resourced's URIs, initialize, …) go on to the next
// handler untouched.

// Deps are what the Front needs of the server that mounts it.
type Deps struct {
	// Service saves offloaded parts (and removes them again when a later
	// part of the same result cannot be saved).
	Service *service.Service
	// Logger gets one line per upstream call; nil: silent.
	Logger *slog.Logger
	// Metrics is where the gateway's collectors are registered; nil: none.
	Metrics prometheus.Registerer
	// RenderFailure turns a failure into the isError result every tool of
	// the server returns.
	RenderFailure func(*service.Failure) *mcp.CallToolResult
	// Schemes are resourced's configured schemes: their URIs are
	// resourced's, never an upstream's.
	Schemes []string
}

// OwnTools are the server's own tools the gateway keeps listed: the read
// tools, for hosts that cannot read resources; saving, listing and
// deleting are not the gateway's business.
var OwnTools = []string{"read_resource", "grep_resource", "query_resource"}

// DefaultPreviewChars is the preview length when FrontOptions leaves it 0.
const DefaultPreviewChars = 500

// DefaultThreshold is the offload threshold of an upstream that sets none.
const DefaultThreshold = 16 << 10

// Front serves the upstreams' tools, prompts, resources and completions
// on the server's MCP endpoint.
type Front struct {
	sessions Sessions
	ups      map[string]Upstream
	order    []string
	names    *names
	svc      *service.Service
	log      *slog.Logger
	render   func(*service.Failure) *mcp.CallToolResult
	scheme   string
	preview  int
	m        *frontMetrics
	tools    toolCache
	calls    inflight
	private  bool // some upstream is perTenant: its lists are per caller
}

// NewFront checks opts and builds a Front.
func NewFront(opts FrontOptions, d Deps) (*Front, error) {
	if opts.Sessions == nil {
		return nil, errors.New("gateway: FrontOptions.Sessions is required")
	}
	if d.Service == nil || d.RenderFailure == nil {
		return nil, errors.New("gateway: Deps.Service and Deps.RenderFailure are required")
	}
	f := &Front{
		sessions: opts.Sessions, ups: map[string]Upstream{}, svc: d.Service, log: d.Logger,
		render: d.RenderFailure, scheme: opts.Scheme, preview: opts.PreviewChars,
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.preview <= 0 {
		f.preview = DefaultPreviewChars
	}
	sc := d.Service.Schemes()[f.scheme]
	if sc == nil || sc.Kind != service.KindReport {
		return nil, fmt.Errorf("gateway: scheme %q must be a configured scheme of kind report", f.scheme)
	}
	for _, u := range opts.Sessions.Upstreams() {
		if !namePattern.MatchString(u.Name) {
			return nil, fmt.Errorf("gateway: upstream name %q does not match %s", u.Name, NamePattern)
		}
		if _, dup := f.ups[u.Name]; dup {
			return nil, fmt.Errorf("gateway: upstream %q is configured twice", u.Name)
		}
		if u.CallTimeout <= 0 {
			u.CallTimeout = DefaultCallTimeout
		}
		f.private = f.private || u.Isolation == PerTenant
		f.ups[u.Name] = u
		f.order = append(f.order, u.Name)
	}
	if len(f.order) == 0 {
		return nil, errors.New("gateway: at least one upstream is required")
	}
	f.names = newNames(f.order, OwnTools, d.Schemes)
	m, err := newFrontMetrics(d.Metrics)
	if err != nil {
		return nil, err
	}
	f.m = m
	return f, nil
}

// KeepsTool reports whether the server's own tool name stays listed.
func (f *Front) KeepsTool(name string) bool { return slices.Contains(OwnTools, name) }

// ScopeFor is the scope of what the gateway answers: every tools/call,
// prompts/get and completion/complete reads (upstream data, or resourced's
// read tools).
func (f *Front) ScopeFor(method string) string {
	switch method {
	case "tools/call", "prompts/get", "completion/complete":
		return auth.ScopeRead
	}
	return ""
}

// Capabilities declares what the front proxies beyond resourced's own
// capabilities: completions.
func (f *Front) Capabilities(c *mcp.ServerCapabilities) {
	c.Completions = &mcp.CompletionCapabilities{}
}

// OwnsURI reports whether a resources/read of uri goes to an upstream
// (the read stage leaves those to the middleware).
func (f *Front) OwnsURI(uri string) bool {
	_, _, ok := f.names.backURI(uri)
	return ok
}

// OwnsTool reports whether a tools/call of name goes to an upstream (the
// fast call path runs those through Middleware, which answers them).
func (f *Front) OwnsTool(name string) bool {
	_, _, ok := f.names.backTool(name, true)
	return ok
}

// Ready reports, per upstream, nil or why it cannot be reached, and
// whether each is required.
func (f *Front) Ready(ctx context.Context) (status map[string]error, required map[string]bool) {
	status = f.sessions.Ready(ctx)
	required = make(map[string]bool, len(f.ups))
	for n, u := range f.ups {
		required[n] = u.Required
	}
	return status, required
}

// Upstreams lists the upstream names in config order.
func (f *Front) Upstreams() []string { return append([]string(nil), f.order...) }

// Middleware is the go-sdk receiving middleware that answers the proxied
// methods. It runs inside the server's observation and recovery
// middleware and outside its own interception.
func (f *Front) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			return f.listTools(ctx, next, method, req)
		case "tools/call":
			r, ok := req.(*mcp.CallToolRequest)
			if !ok || r.Params == nil {
				break
			}
			if up, name, ok := f.names.backTool(r.Params.Name, true); ok {
				return completed(r)(f.callTool(ctx, r, up, name))
			}
		case "prompts/list":
			if r, ok := req.(*mcp.ListPromptsRequest); ok {
				return f.listPrompts(ctx, r)
			}
		case "prompts/get":
			if r, ok := req.(*mcp.GetPromptRequest); ok && r.Params != nil {
				if up, name, ok := f.names.backTool(r.Params.Name, false); ok {
					return completed(r)(f.getPrompt(ctx, r, up, name))
				}
			}
		case "resources/list":
			if r, ok := req.(*mcp.ListResourcesRequest); ok {
				return f.listResources(ctx, next, method, r)
			}
		case "resources/templates/list":
			if r, ok := req.(*mcp.ListResourceTemplatesRequest); ok {
				return f.listTemplates(ctx, next, method, r)
			}
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
				if up, raw, ok := f.names.backURI(r.Params.URI); ok {
					return completed(r)(f.readResource(ctx, r, up, raw))
				}
			}
		case "completion/complete":
			if r, ok := req.(*mcp.CompleteRequest); ok && r.Params != nil && r.Params.Ref != nil {
				return f.complete(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

// tenantOf is the caller's tenant ("" when the request carries no
// principal, which the server's authentication never lets happen).
func tenantOf(ctx context.Context) (auth.Principal, bool) {
	return auth.FromContext(ctx)
}

// session returns the upstream's session for the caller, bounded by its
// CallTimeout, with the caller's cancellation (front_inflight.go) and a
// ticket (budget.go) attached: the answer's bytes count against the
// in-flight budget, and its large strings wait in the ticket, until stop.
func (f *Front) session(ctx context.Context, up, method, target string) (context.Context, context.CancelFunc, *mcp.ClientSession, error) {
	u := f.ups[up]
	p, _ := tenantOf(ctx)
	t := newTicket(p.Tenant)
	cctx, cancel := f.calls.context(withTicket(ctx, t))
	cctx, cancelTimeout := context.WithTimeout(cctx, u.CallTimeout)
	cctx, sp := telemetry.StartUpstream(cctx, up, method, target)
	stop := func() { cancelTimeout(); cancel(); t.release(); sp.End() }
	cs, err := f.sessions.Session(cctx, up, p.Tenant)
	if err != nil {
		return cctx, stop, nil, err
	}
	return cctx, stop, cs, nil
}

// upstreamError is what went wrong with one upstream request.
type upstreamError struct {
	// wire is the upstream's own JSON-RPC error answer, passed on
	// unchanged; nil when the upstream could not answer.
	wire *jsonrpc.Error
	// canceled: the caller went away or cancelled the call.
	canceled bool
	// timeout: CallTimeout passed.
	timeout bool
	// cause is why the upstream could not answer (err.Error()), for the
	// log only: the caller is told "unavailable", never this.
	cause string
	// tooLarge: the upstream's answer was over the pool's message limit
	// (limit.go); the session goes on, and a retry fails the same way.
	tooLarge *tooLargeData
	// busy: the answer would have gone over the gateway's in-flight
	// budget (budget.go); a retry shortly may pass.
	busy *busyData
	// bad: the upstream's answer was not JSON (limit.go); the session
	// goes on.
	bad bool
}

// transportCodes are the codes go-sdk's client uses for its own
// transport failures (connection closing, rejected by the transport):
// they are not an upstream's answer.
var transportCodes = map[int64]bool{-32003: true, -32004: true, -32005: true}

// classify sorts an upstream request's error: an upstream's JSON-RPC
// answer, the caller's cancellation, or an upstream that cannot be
// reached (anything else: ErrUnavailable, a closed connection, a process
// that died, a timeout, an answer that does not decode).
func classify(callerCtx context.Context, cctx context.Context, err error) upstreamError {
	cause := ""
	if err != nil {
		cause = err.Error()
	}
	switch {
	case callerCtx.Err() != nil, errors.Is(cctx.Err(), context.Canceled):
		return upstreamError{canceled: true}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return upstreamError{timeout: true, cause: cause}
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if d, ok := asTooLarge(we.Code, we.Data); ok {
			return upstreamError{tooLarge: &d, cause: cause}
		}
		if d, ok := asBusy(we.Code, we.Data); ok {
			return upstreamError{busy: &d, cause: cause}
		}
		if isBadMessage(we.Code, we.Data) {
			return upstreamError{bad: true, cause: cause}
		}
	}
	if !errors.Is(err, ErrUnavailable) && !errors.Is(err, mcp.ErrConnectionClosed) && errors.As(err, &we) && !transportCodes[we.Code] {
		return upstreamError{wire: &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}}
	}
	return upstreamError{cause: cause}
}

func (e upstreamError) outcome() string {
	switch {
	case e.wire != nil:
		return fmt.Sprint(e.wire.Code)
	case e.canceled:
		return "canceled"
	case e.timeout:
		return "timeout"
	case e.tooLarge != nil:
		return "too_large"
	case e.busy != nil:
		return "busy"
	case e.bad:
		return "bad_message"
	}
	return "unavailable"
}

// rpcError is the JSON-RPC error of a method other than tools/call for e:
// the upstream's own answer, or an internal error naming the upstream.
func (e upstreamError) rpcError(up string) error {
	switch {
	case e.wire != nil:
		return e.wire
	case e.canceled:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Request canceled"}
	case e.timeout:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Upstream " + up + " did not answer in time; retry later"}
	case e.tooLarge != nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"Upstream %s answered with %s, more than the %s the gateway reads in one message; ask for less",
			up, e.tooLarge.sizeOrMore(), sizeWords(e.tooLarge.Limit))}
	case e.busy != nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.busy.words(up)}
	case e.bad:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Upstream " + up + " answered with a message that is not valid JSON; retry later"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Upstream " + up + " is unavailable; retry later"}
}

// failure is the failure of a tools/call (tool as the caller named it)
// whose upstream cannot be reached, did not answer in time, or answered
// more than the gateway reads.
func (e upstreamError) failure(up, tool string) *service.Failure {
	if d := e.tooLarge; d != nil {
		return service.Fail(service.KindTooLarge, fmt.Sprintf("The result of %s from the upstream server %s is %s, more than the %s "+
			"the gateway reads in one message, so it was dropped and nothing of it was kept. Call the tool for less "+
			"(a narrower query, a smaller range, fewer items), or ask the operator of this gateway to raise the maxBytes "+
			"of its offload scheme (the limit is twice that and 1 MiB); the same call fails again until then.",
			tool, up, d.sizeOrMore(), sizeWords(d.Limit)))
	}
	if d := e.busy; d != nil {
		return service.Fail(service.KindUnavailable, d.words(up))
	}
	if e.bad {
		return service.Fail(service.KindUnavailable, "The upstream server "+up+" answered "+tool+" with a message that is not valid JSON, "+
			"so nothing of it was kept. Retry the same call later; the gateway and its other calls go on.")
	}
	if e.timeout {
		return service.Fail(service.KindUnavailable, "The upstream server "+up+" did not answer in time. Retry the same call later.")
	}
	return service.Fail(service.KindUnavailable, "The upstream server "+up+" is unavailable. Retry the same call later.")
}

// forwardMeta is the caller's _meta as sent upstream: without the
// protocol's reserved keys (the gateway's client session adds its own)
// and without the caller's progress token (the router's replaces it).
func forwardMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := mcp.Meta{}
	for k, v := range m {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resultMeta is an upstream result's _meta as passed on: the protocol's
// reserved keys are the front's (its serverInfo, not the upstream's).
func resultMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return m
	}
	var out mcp.Meta
	for k := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			if out == nil {
				out = maps.Clone(m)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return m
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// logCall writes the one line of an upstream call; never arguments,
// results or tokens.
func (f *Front) logCall(ctx context.Context, up, method, tool string, start time.Time, outcome string, parts int, bytes int64) {
	f.logLine(ctx, up, method, tool, start, outcome, parts, bytes, "")
}

// logFailure is logCall of a request that failed with e: the line adds
// e's cause (the error's text: never arguments, results or headers), the
// one place an operator learns why a caller was told "unavailable". ctx
// is the call's (session's), whose span it fails.
func (f *Front) logFailure(ctx context.Context, up, method, tool string, start time.Time, e upstreamError) {
	telemetry.Fail(ctx, e.outcome())
	f.logLine(ctx, up, method, tool, start, e.outcome(), 0, 0, e.cause)
}

func (f *Front) logLine(ctx context.Context, up, method, tool string, start time.Time, outcome string, parts int, bytes int64, cause string) {
	attrs := []any{"upstream", up, "method", telemetry.ClipName(method), "tool", telemetry.ClipName(tool),
		"duration", time.Since(start).Seconds(), "outcome", outcome, "offloadedParts", parts, "offloadedBytes", bytes}
	if cause != "" {
		attrs = append(attrs, "err", cause)
	}
	f.log.InfoContext(ctx, "upstream call", attrs...)
	f.m.calls.WithLabelValues(up, method, f.tools.label(up, tool), outcome).Inc()
}

// listTools answers tools/list: the server's own tools, then every
// upstream's (all of their pages), namespaced. A required upstream that
// cannot be reached fails the list; an optional one is left out.
func (f *Front) listTools(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	own, ok := res.(*mcp.ListToolsResult)
	if !ok {
		return res, nil
	}
	out := *own
	out.Tools = append([]*mcp.Tool(nil), own.Tools...)
	for _, up := range f.order {
		tools, err := f.upstreamTools(ctx, up)
		if err != nil {
			if f.ups[up].Required {
				return nil, err
			}
			continue
		}
		for _, t := range tools {
			c := *t
			c.Name = f.names.frontTool(up, t.Name, true)
			c.OutputSchema = f.listedOutputSchema(up, t)
			out.Tools = append(out.Tools, &c)
		}
	}
	out.CacheScope = f.listScope()
	return &out, nil
}

// upstreamTools fetches every page of an upstream's tools/list for the
// caller and remembers them (outputSchema and metric labels).
func (f *Front) upstreamTools(ctx context.Context, up string) ([]*mcp.Tool, error) {
	start := time.Now()
	cctx, stop, cs, err := f.session(ctx, up, "tools/list", "")
	defer stop()
	var tools []*mcp.Tool
	if err == nil && serves(cs, "tools/list") {
		for t, terr := range cs.Tools(cctx, nil) {
			if terr != nil {
				err = terr
				break
			}
			tools = append(tools, t)
		}
	}
	if err != nil {
		e := classify(ctx, cctx, err)
		f.logFailure(cctx, up, "tools/list", "", start, e)
		if e.wire == nil || e.wire.Code != jsonrpc.CodeMethodNotFound {
			return nil, e.rpcError(up)
		}
		tools = nil // an upstream without tools lists none
	}
	p, _ := tenantOf(ctx)
	f.tools.put(f.cacheKey(up, p.Tenant), up, tools)
	if err == nil {
		f.logCall(ctx, up, "tools/list", "", start, "ok", 0, 0)
	}
	return tools, nil
}

func (f *Front) cacheKey(up, tenant string) string {
	if f.ups[up].Isolation == PerTenant {
		return up + "\x00" + tenant
	}
	return up
}

// toolCache remembers the tools each upstream listed (per tenant under
// perTenant isolation): their names bound the metrics' tool label. It holds at most maxCachedLists lists and maxLabels names per
// upstream.
type toolCache struct {
	mu     sync.Mutex
	lists  map[string]map[string]bool
	labels map[string]map[string]bool
}

const (
	maxCachedLists = 4096
	maxLabels      = 1000
)

func (c *toolCache) put(key, up string, tools []*mcp.Tool) {
	m := make(map[string]bool, len(tools))
	for _, t := range tools {
		m[t.Name] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lists == nil || len(c.lists) >= maxCachedLists {
		c.lists = map[string]map[string]bool{}
	}
	c.lists[key] = m
	if c.labels == nil {
		c.labels = map[string]map[string]bool{}
	}
	l := c.labels[up]
	if l == nil {
		l = map[string]bool{}
		c.labels[up] = l
	}
	for _, t := range tools {
		if len(l) < maxLabels {
			l[t.Name] = true
		}
	}
}

func (c *toolCache) listed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.lists[key]
	return ok
}

// label is the metrics' tool label: a name the upstream listed, or
// "other".
func (c *toolCache) label(up, tool string) string {
	if tool == "" {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.labels[up][tool] {
		return tool
	}
	return "other"
}

// ensureListed lists the upstream's tools once when this caller's list
// was never fetched on this instance (a stateless front may get a call
// before any tools/list), so the metrics know the tool names.
func (f *Front) ensureListed(ctx context.Context, up string) {
	p, _ := tenantOf(ctx)
	if !f.tools.listed(f.cacheKey(up, p.Tenant)) {
		_, _ = f.upstreamTools(ctx, up)
	}
}

// callTool forwards a tools/call to its upstream: the caller's progress
// token replaced by the router's, the caller's cancellation and the
// upstream's CallTimeout on its context; the answer namespaced and, when
// large, offloaded.
func (f *Front) callTool(ctx context.Context, req *mcp.CallToolRequest, up, name string) (mcp.Result, error) {
	start := time.Now()
	p, ok := tenantOf(ctx)
	if !ok || !p.Has(auth.ScopeRead) {
		return f.render(service.Fail(service.KindValidation, "calling an upstream tool needs the resources:read scope")), nil
	}
	f.ensureListed(ctx, up)
	cctx, stop, cs, err := f.session(ctx, up, "tools/call", name)
	defer stop()
	t := ticketFrom(cctx)
	var res *mcp.CallToolResult
	if err == nil {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		params := &mcp.CallToolParams{Name: name, Arguments: args, Meta: telemetry.InjectMeta(cctx, forwardMeta(req.Params.Meta))}
		if tok := req.Params.GetProgressToken(); tok != nil {
			session := req.Session
			lim := rate.NewLimiter(progressRate, progressBurst)
			upTok, done := f.sessions.Progress().Route(cs, func(n *mcp.ProgressNotificationParams) {
				// Bounded per call: a burst, then progressRate a second;
				// the last step (progress reaching total) always passes.
				if final := n.Total > 0 && n.Progress >= n.Total; !final && !lim.Allow() {
					return
				}
				c := *n
				c.ProgressToken = tok
				c.Meta = forwardMeta(n.Meta)
				if session != nil {
					_ = session.NotifyProgress(ctx, &c)
				}
			})
			defer done(ctx) // the progress read before the answer reaches the caller first
			params.SetProgressToken(upTok)
		}
		callCtx := cctx
		var plain *plainAnswer
		if params.GetProgressToken() == nil {
			// Read on this goroutine when it is a plain answer (plain.go).
			plain = &plainAnswer{}
			callCtx = withPlain(cctx, plain)
		}
		res, err = cs.CallTool(callCtx, params)
		if plain != nil && plain.res != nil {
			res, err = plain.res, nil
		}
	}
	if err != nil {
		e := classify(ctx, cctx, err)
		f.logFailure(cctx, up, "tools/call", name, start, e)
		if e.wire != nil || e.canceled {
			return nil, e.rpcError(up)
		}
		return f.render(e.failure(up, req.Params.Name)), nil
	}
	out := f.frontResult(up, res)
	o, fail := f.offload(ctx, p, up, name, req.Params.Name, out, t)
	if fail != nil {
		f.logCall(ctx, up, "tools/call", name, start, "offload:"+fail.ErrorKind, 0, 0)
		return f.render(fail), nil
	}
	outcome := "ok"
	if out.IsError {
		outcome = "isError"
	}
	f.logCall(ctx, up, "tools/call", name, start, outcome, o.parts, o.bytes)
	if o.parts > 0 {
		label := f.tools.label(up, name)
		f.m.parts.WithLabelValues(up, label).Add(float64(o.parts))
		f.m.bytes.WithLabelValues(up, label).Add(float64(o.bytes))
		return o.result, nil
	}
	return out, nil
}

const (
	// progressRate and progressBurst bound the progress notifications
	// forwarded for one call: the ones over are dropped (progress is a
	// state, the latest says it all), so an upstream's flood costs its
	// caller's stream at most 50 a second after the first 100.
	progressRate  = 50
	progressBurst = 100
)

// frontResult is an upstream's tool result with its URIs namespaced (a
// copy: the upstream's result is not changed).
func (f *Front) frontResult(up string, res *mcp.CallToolResult) *mcp.CallToolResult {
	out := *res
	out.Meta = resultMeta(res.Meta)
	out.Content = f.frontContent(up, res.Content)
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	return &out
}

// frontContent namespaces the URIs of resource links and embedded
// resources.
func (f *Front) frontContent(up string, content []mcp.Content) []mcp.Content {
	if content == nil {
		return nil
	}
	out := make([]mcp.Content, len(content))
	for i, c := range content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			l := *c
			l.URI = f.names.frontURI(up, c.URI)
			out[i] = &l
		case *mcp.EmbeddedResource:
			e := *c
			if c.Resource != nil {
				r := *c.Resource
				r.URI = f.names.frontURI(up, r.URI)
				e.Resource = &r
			}
			out[i] = &e
		default:
			out[i] = c
		}
	}
	return out
}

// getPrompt forwards prompts/get.
func (f *Front) getPrompt(ctx context.Context, req *mcp.GetPromptRequest, up, name string) (mcp.Result, error) {
	start := time.Now()
	cctx, stop, cs, err := f.session(ctx, up, "prompts/get", name)
	defer stop()
	var res *mcp.GetPromptResult
	if err == nil {
		res, err = cs.GetPrompt(cctx, &mcp.GetPromptParams{Name: name, Arguments: req.Params.Arguments, Meta: telemetry.InjectMeta(cctx, forwardMeta(req.Params.Meta))})
	}
	if err != nil {
		e := classify(ctx, cctx, err)
		f.logFailure(cctx, up, "prompts/get", "", start, e)
		return nil, e.rpcError(up)
	}
	f.logCall(ctx, up, "prompts/get", "", start, "ok", 0, 0)
	out := *res
	out.Meta = resultMeta(res.Meta)
	out.Messages = make([]*mcp.PromptMessage, len(res.Messages))
	for i, m := range res.Messages {
		c := *m
		if m.Content != nil {
			c.Content = f.frontContent(up, []mcp.Content{m.Content})[0]
		}
		out.Messages[i] = &c
	}
	return &out, nil
}

// readResource forwards a resources/read of an upstream's URI; the
// answer, errors included, comes back as the upstream gave it, with its
// URIs namespaced.
func (f *Front) readResource(ctx context.Context, req *mcp.ReadResourceRequest, up, raw string) (mcp.Result, error) {
	start := time.Now()
	cctx, stop, cs, err := f.session(ctx, up, "resources/read", "")
	defer stop()
	var res *mcp.ReadResourceResult
	if err == nil {
		res, err = cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: raw, Meta: telemetry.InjectMeta(cctx, forwardMeta(req.Params.Meta))})
	}
	if err != nil {
		e := classify(ctx, cctx, err)
		f.logFailure(cctx, up, "resources/read", "", start, e)
		return nil, e.rpcError(up)
	}
	if err := restoreContents(ticketFrom(cctx), res.Contents); err != nil {
		e := upstreamError{bad: true, cause: err.Error()}
		f.logFailure(cctx, up, "resources/read", "", start, e)
		return nil, e.rpcError(up)
	}
	f.logCall(ctx, up, "resources/read", "", start, "ok", 0, 0)
	out := *res
	out.Meta = resultMeta(res.Meta)
	out.Contents = make([]*mcp.ResourceContents, len(res.Contents))
	for i, c := range res.Contents {
		cc := *c
		cc.URI = f.names.frontURI(up, c.URI)
		out.Contents[i] = &cc
	}
	if out.CacheScope == "" || f.ups[up].Isolation == PerTenant {
		// An upstream's data is its caller's: never "public" by default;
		// and a perTenant upstream's answers are per tenant whatever it
		// says (go-sdk upstreams always say "public").
		out.CacheScope = "private"
	}
	return &out, nil
}

// complete forwards completion/complete of a namespaced prompt or
// resource template reference.
func (f *Front) complete(ctx context.Context, req *mcp.CompleteRequest) (mcp.Result, error) {
	ref := *req.Params.Ref
	var up string
	var ok bool
	switch ref.Type {
	case "ref/prompt":
		up, ref.Name, ok = f.names.backTool(ref.Name, false)
	case "ref/resource":
		up, ref.URI, ok = f.names.backURI(ref.URI)
	}
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: the reference names no upstream prompt or resource template"}
	}
	start := time.Now()
	cctx, stop, cs, err := f.session(ctx, up, "completion/complete", "")
	defer stop()
	var res *mcp.CompleteResult
	if err == nil {
		params := *req.Params
		params.Ref = &ref
		params.Meta = telemetry.InjectMeta(cctx, forwardMeta(req.Params.Meta))
		res, err = cs.Complete(cctx, &params)
	}
	if err != nil {
		e := classify(ctx, cctx, err)
		f.logFailure(cctx, up, "completion/complete", "", start, e)
		return nil, e.rpcError(up)
	}
	f.logCall(ctx, up, "completion/complete", "", start, "ok", 0, 0)
	out := *res
	out.Meta = resultMeta(res.Meta)
	return &out, nil
}
