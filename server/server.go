// Package server is resourced's transports: it wires the service (package
// service), the store and the caller's principal into a go-sdk server
// behind a stateless Streamable HTTP handler, the /v1 HTTP API (uploads,
// signed downloads) and the health endpoints.
//
// It owns MCP and HTTP: authentication on the wire, the read path, the
// tool adapters (decode arguments, call the service, render), the upload
// and blob handlers, notifications, limits and metrics. What a save, stat,
// delete or list means, and how a store error becomes a failure, is the
// service's; server must not repeat it. It is the only package that knows
// MCP as a server; cmd/resourced, the bench harness and clienttest import
// it, the other packages do not.
// errors.go decides how JSON-RPC failures are written; service.Failure is
// the value of a failed tool call or upload.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/server/fixtures"
	"github.com/resourced/resourced/server/hostrun"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/formcache"
	"github.com/resourced/resourced/server/internal/fulltext"
	"github.com/resourced/resourced/server/internal/links"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/server/internal/metrics"
	"github.com/resourced/resourced/server/internal/notify"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// Scheme kinds, scheme policy and save limits are the service's
// (service/scheme.go); cmd/resourced names them through these aliases.
const (
	KindSearch = service.KindSearch
	KindReport = service.KindReport
)

type (
	// Scheme is the policy of one URI scheme.
	Scheme = service.Scheme
	// Limits bound what one save may carry; zero fields take the defaults.
	Limits = service.Limits
)

// Options configure a Server. Store and Schemes are required.
type Options struct {
	Store store.Backend
	// Index is the search index (search_resources); nil: none.
	Index *index.Index
	// DeepResearch adds the search and fetch tools over Index
	// (server/internal/fulltext).
	DeepResearch bool
	// IndexPageBytes is a page of search hits' byte budget (0:
	// fulltext.DefaultPageBytes, 8 KiB).
	IndexPageBytes int
	// IndexNote is a line /readyz adds after "ready" about the index (a
	// bleve index on S3 serves this instance only); "": none.
	IndexNote string
	Schemes   []Scheme
	// Auth identifies callers; nil means auth.None.
	Auth auth.Authenticator
	// Logger receives one line per request; nil means silent.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Version is reported as serverInfo.version.
	Version string
	// BaseURL is the canonical URL (no trailing slash), e.g.
	// https://resourced.example.com; the MCP endpoint is BaseURL + "/mcp".
	BaseURL string
	// AuthorizationServers are advertised in the RFC 9728 metadata.
	AuthorizationServers []string
	// AllowedOrigins may call /mcp from a browser; the BaseURL's origin
	// always may, and "*" allows any.
	AllowedOrigins []string
	// AllowedHosts are accepted in the Host header besides the BaseURL's
	// host (and localhost names on loopback listeners).
	AllowedHosts []string
	// Metrics is the registry /metrics serves; nil means a new one with the
	// Go and process collectors.
	Metrics *prometheus.Registry
	// Backend names the storage backend in metrics.
	Backend string
	// PollInterval is how often subscribed URIs are checked for changes
	// made through other instances; 0 means 2s.
	PollInterval time.Duration
	// MaxListenURIs bounds the distinct URIs one subscriptions/listen may
	// name (repeats count once); 0 means 100.
	MaxListenURIs int
	// MaxListensPerTenant bounds the subscriptions/listen streams a tenant
	// may hold open at once on this instance; 0 means 64.
	MaxListensPerTenant int
	// Limits bound one save.
	Limits Limits
	// Quota bounds what each tenant stores; zero fields are unlimited.
	Quota store.Quota
	// SweepInterval is how often expired resources are removed (0: 1m);
	// SweepBatch bounds one removal transaction (0: 500).
	SweepInterval time.Duration
	SweepBatch    int
	// LinkKey signs download links (/v1/blobs, HMAC-SHA256); nil disables
	// them. LinkTTL is a link's default life (0: 15m), LinkMaxTTL the
	// longest a caller may ask for (0: 1h).
	LinkKey             []byte
	LinkTTL, LinkMaxTTL time.Duration
	// MetricsToken, when not nil, is the bearer token GET /metrics
	// requires (metrics.Guard).
	MetricsToken []byte
	// Budgets bound each request's time, each tenant's requests in flight
	// and saves per second, and concurrent uploads; the zero value is the
	// defaults documented on its fields (guard.go).
	Budgets Budgets
	// FormCache is the memory kept for the content members of read
	// responses, on every backend (server/internal/formcache): a body read
	// again is written from memory; 0 keeps none.
	FormCache int64
	// Fixtures adds the fixture tools (docs/fixtures.md): one search result
	// in each of the four result forms and the host probes, with their
	// bodies stored as public resources of tenant "fixtures" at start.
	Fixtures bool
	// Extension builds the extension the server mounts (the gateway,
	// docs/gateway.md; server/extension.go says where it hooks in); nil
	// means none.
	Extension func(ExtensionDeps) (Extension, error)
}

// Server is resourced's HTTP handler.
type Server struct {
	store   store.Backend
	schemes map[string]*Scheme
	auth    auth.Authenticator
	log     *slog.Logger
	now     func() time.Time
	mcp     *mcp.Server
	handler http.Handler
	svc     *service.Service
	svcOpts service.Options // what svc was built with
	maxBody int64
	// fulltext is the search index's tools, counters and sweep (nil:
	// no index).
	fulltext *fulltext.Room

	baseURL string
	// origin and bearer are the HTTP stages of server/internal/edge.
	origin        *edge.Origin
	bearer        *edge.Bearer
	deadlines     *edge.Deadlines // from budgets (guard.go)
	metrics       *metrics.Set
	notify        *notify.Hub // change notifications (server/internal/notify)
	pollInterval  time.Duration
	limits        Limits
	sweepInterval time.Duration
	sweepBatch    int
	// toolScopes maps each registered tool to the scope it needs.
	toolScopes map[string]string
	// links signs and checks download links (nil: none); blobs serves them.
	links *links.Signer
	blobs *links.Handler
	// noFastRead sends every resources/read through go-sdk (for the
	// differential test of the fast path).
	noFastRead bool
	// calls is the fast path of our own tools' calls, and in gateway mode
	// of the calls the front proxies (callpath.go); noFastCall sends every call through go-sdk (for
	// the differential test).
	calls      *callPath
	noFastCall bool
	// serverInfoMeta is the result _meta go-sdk adds on 2026-07-28.
	serverInfoMeta []byte
	// damaged remembers records whose stored form failed its checksum
	// (encoded.go).
	damaged *damagedForms
	// ext is the mounted extension (extension.go); nil: none.
	ext Extension
	// budgets, limiter and uploadSlots enforce Options.Budgets (guard.go).
	budgets Budgets
	limiter *edge.Limiter
	// forms caches the content members of read responses; nil: off.
	forms       *formcache.Cache
	uploadSlots chan struct{}
	// runs are the host runs (server/hostrun); nil without fixtures.
	runs *hostrun.Runs
}

// New builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("server: Options.Store is required")
	}
	if len(opts.Schemes) == 0 {
		return nil, errors.New("server: at least one scheme is required")
	}
	s := &Server{
		store: opts.Store,
		auth:  opts.Auth,
		log:   opts.Logger,
		now:   opts.Now,

		baseURL: strings.TrimRight(opts.BaseURL, "/"),
	}
	if s.baseURL == "" {
		return nil, errors.New("server: Options.BaseURL is required")
	}
	if s.auth == nil {
		s.auth = auth.None{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.origin = &edge.Origin{AllowedOrigins: opts.AllowedOrigins, AllowedHosts: opts.AllowedHosts, BaseURL: s.baseURL, Log: s.log}
	s.bearer = &edge.Bearer{Auth: s.auth, BaseURL: s.baseURL, AuthServers: opts.AuthorizationServers, Log: s.log,
		Failed: func(reason string) { s.metrics.AuthFailures.WithLabelValues(reason).Inc() },
		Note: func(r *http.Request, outcome, tenant string) {
			if e := logEntry(r.Context()); e != nil {
				if outcome != "" {
					e.outcome = outcome
				}
				if tenant != "" {
					e.tenant = tenant
				}
			}
			telemetry.SetTenant(r.Context(), tenant)
		},
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.links = links.New(opts.LinkKey, opts.LinkTTL, opts.LinkMaxTTL, s.baseURL, s.now)
	s.forms = formcache.New(opts.FormCache, s.now)
	s.toolScopes = map[string]string{}
	s.metrics = metrics.New(opts.Metrics, opts.Backend,
		[]string{panicHTTP, panicMCP, panicJob, panicStore}, []string{limitInflight, limitSaveRate, limitUploads, limitConnections})
	s.damaged = &damagedForms{counter: s.metrics.FormsDamaged, log: s.log}
	s.metrics.WatchFormCache(s.forms)
	s.initGuards(opts.Budgets, opts.Store) // s.store recovers panics from here on
	s.sweepInterval, s.sweepBatch = opts.SweepInterval, opts.SweepBatch
	if s.sweepInterval <= 0 {
		s.sweepInterval = time.Minute
	}
	if s.sweepBatch <= 0 {
		s.sweepBatch = 500
	}
	s.pollInterval = opts.PollInterval
	if s.pollInterval <= 0 {
		s.pollInterval = 2 * time.Second
	}
	s.svcOpts = service.Options{
		Store: s.store, Schemes: opts.Schemes, Limits: opts.Limits, Quota: opts.Quota,
		Links: s.links.Policy(), Now: s.now, Logger: s.log,
		OnChange: func(k store.Key) { s.notify.Changed(k) },
		OnSaved: func(scheme string, n int64) {
			s.metrics.BytesSaved.WithLabelValues(scheme).Add(float64(n))
		},
	}
	if opts.Index != nil {
		s.fulltext = fulltext.New(fulltext.Options{Metrics: s.metrics.Reg, Log: s.log, DeepResearch: opts.DeepResearch,
			Note: opts.IndexNote, PageBytes: opts.IndexPageBytes})
		s.svcOpts.Index, s.svcOpts.OnIndexFailure = opts.Index, s.fulltext.Failed
	}
	svc, err := service.New(s.svcOpts)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.svc, s.schemes, s.limits = svc, svc.Schemes(), svc.Limits()
	s.notify = notify.New(notify.Options{Service: svc, Store: s.store, Log: s.log, ReadError: readError,
		Send: func(ctx context.Context, uri string) {
			s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		},
		MaxURIs: opts.MaxListenURIs, MaxListens: opts.MaxListensPerTenant})
	s.blobs = &links.Handler{Signer: s.links, Service: svc, TTL: s.ttlMs,
		Note: func(r *http.Request, outcome, tenant string) {
			if e := logEntry(r.Context()); e != nil {
				e.method = "blob"
				if outcome != "" {
					e.outcome = outcome
				}
				if tenant != "" {
					e.tenant = tenant
				}
			}
		},
		Read: func(scheme string, n int64) { s.metrics.BytesRead.WithLabelValues(scheme).Add(float64(n)) },
	}
	for _, sc := range s.schemes {
		s.maxBody = max(s.maxBody, sc.MaxBytes)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	impl := &mcp.Implementation{Name: "resourced", Title: "resourced", Version: version}
	info, err := json.Marshal(impl)
	if err != nil {
		return nil, err
	}
	s.serverInfoMeta = append(append([]byte(`"_meta":{"io.modelcontextprotocol/serverInfo":`), info...), '}')
	if opts.Extension != nil {
		s.ext, err = opts.Extension(ExtensionDeps{Service: s.svc, Logger: s.log, Metrics: s.metrics.Reg,
			RenderFailure: mcptool.ErrorResult, Schemes: s.svc.SchemeNames()})
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{},
		Resources: &mcp.ResourceCapabilities{Subscribe: true},
		// go-sdk answers prompts/list (with no prompts) whether or not
		// the capability is declared, and the official conformance suite
		// requires a server that answers prompts/list to declare it
		// (sep-2575-server-declares-prompts-in-discover): declare it so
		// the two agree (docs/decisions.md).
		Prompts: &mcp.PromptCapabilities{},
	}
	if s.ext != nil {
		s.ext.Capabilities(caps)
	}
	s.mcp = mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: "resourced stores large tool results (search snapshots, reports) and serves them by URI. " +
			"Save with save_search_snapshot or save_report, which return a resource_link; read it back with resources/read. " +
			"Hosts that cannot read resources can call read_resource, which returns the body in windows.",
		Capabilities:       caps,
		SetCacheable:       setCacheable,
		SubscribeHandler:   s.notify.Subscribe,
		UnsubscribeHandler: s.notify.Unsubscribe,
	})
	s.addResources()
	s.addTools() // and s.calls, the fast call path's tools (callpath.go)
	if opts.Fixtures {
		names, err := fixtures.Register(context.Background(), s.mcp, s.svc, s.log)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			s.toolScopes[n] = auth.ScopeRead
			s.calls.drop(n) // go-sdk now calls the fixture of that name
		}
		s.runs = hostrun.New(hostrun.Options{BaseURL: s.baseURL, ServerVersion: version, Body: requestBody,
			Principal: s.bearer.Principal, Now: s.now, Logger: s.log})
	}
	s.mcp.AddReceivingMiddleware(s.receiving()...)
	s.calls.chain = chain(s.calls.callTool, s.receiving())
	// Updates reach only listeners that may still read the resource.
	s.mcp.AddSendingMiddleware(s.notify.Filter)

	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: requestBodyLimit(s.maxBody),
		// guardOrigin does this, with the configured allow-lists.
		DisableLocalhostProtection: true,
	})
	mcpHandler := s.readStage(streamable)
	if s.ext != nil {
		sse := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
			Stateless:                  true,
			MaxRequestBodyBytes:        requestBodyLimit(s.maxBody),
			DisableLocalhostProtection: true,
		})
		mcpHandler = s.extensionStage(mcpHandler, sse)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.origin.Wrap(s.authenticate(s.runs.Record(mcpHandler))))
	if s.runs != nil { // host runs (docs/fixtures.md); Route below maps their URLs
		mux.Handle("/fixtures/runs", s.origin.Wrap(s.runs.Create()))
		mux.Handle("/fixtures/runs/", s.origin.Wrap(s.runs.Pages()))
	}
	if s.bearer.Required() {
		mux.Handle(edge.MetadataPath, s.bearer.Metadata())
		mux.Handle(edge.MetadataPath+"/mcp", s.bearer.Metadata())
		if !s.bearer.Advertised() {
			mux.Handle("POST "+edge.RegistrationPath, s.origin.Wrap(s.bearer.RefuseRegistration()))
		}
	}
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	// The Host guard: a DNS-rebinding page must not read the metrics.
	mux.Handle("GET /metrics", s.origin.Wrap(metrics.Guard(opts.MetricsToken, s.metrics.Handler())))
	s.handler = telemetry.Handler(s.runs.Route(s.logRequests(s.guardHTTP(s.routeV1(mux)))))
	return s, nil
}

// requestBody is the body of a POST /mcp that authenticate has read.
func requestBody(r *http.Request) []byte {
	req := mcpRequestOf(r.Context())
	if req == nil {
		return nil
	}
	return req.body
}

// requestBodyLimit is the HTTP body limit for a largest body of maxBody
// bytes: base64 grows a body by 4/3 and JSON escaping of text can double
// it, so allow twice the body plus 1 MiB for the rest of the request.
func requestBodyLimit(maxBody int64) int64 { return 2*maxBody + 1<<20 }

// Run runs the server's background work until ctx ends: removing expired
// resources, and polling subscribed URIs for changes made through other
// instances.
func (s *Server) Run(ctx context.Context) {
	go every(ctx, s.sweepInterval, s.job("sweep", s.sweep))
	every(ctx, s.pollInterval, s.job("poll", s.notify.Poll))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// setCacheable decides ttlMs/cacheScope of results the SDK builds itself
// (server/discover, tools/list, templates/list): they hold no tenant data.
// resources/read and resources/list set their own before this runs.
func setCacheable(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	if c.CacheScope == "" {
		c.CacheScope = "public"
	}
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.store.Ping(ctx); err != nil {
		s.log.Error("readiness check failed", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "store unavailable")
		return
	}
	if s.ext != nil {
		lines, ok := s.extensionReady(ctx)
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
		} else {
			fmt.Fprintln(w, "ready")
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	} else {
		fmt.Fprintln(w, "ready")
	}
	if note := s.fulltext.Note(); note != "" {
		fmt.Fprintln(w, note)
	}
}

// receiving is the receiving middleware of every MCP request, outermost
// first: traceMCP when tracing is on (trace.go), recoverMCP, then observe, then (in gateway mode) the front, which
// answers what it proxies before intercept checks URIs as resourced's.
// go-sdk runs it (AddReceivingMiddleware), and so does the fast call path
// (callpath.go), from this one list.
func (s *Server) receiving() []mcp.Middleware {
	mw := []mcp.Middleware{s.recoverMCP, s.observe, s.intercept}
	if s.ext != nil {
		mw = []mcp.Middleware{s.recoverMCP, s.observe, s.ext.Middleware, s.intercept}
	}
	if telemetry.On() {
		mw = append([]mcp.Middleware{traceMCP}, mw...)
	}
	return mw
}

// chain is h wrapped in mw, outermost first, as go-sdk's
// AddReceivingMiddleware wraps its handler.
func chain(h mcp.MethodHandler, mw []mcp.Middleware) mcp.MethodHandler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
