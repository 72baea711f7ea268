package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/resourced/resourced/server/internal/formcache"
)

// metrics are resourced's Prometheus collectors. Labels have bounded
// values only: JSON-RPC methods and tools outside the known sets are
// "other", and tenants are never labels.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec   // method, tool, outcome
	duration     *prometheus.HistogramVec // method, tool
	bytesSaved   *prometheus.CounterVec   // scheme
	bytesRead    *prometheus.CounterVec   // scheme
	authFailures *prometheus.CounterVec   // reason
	swept        prometheus.Counter
	formsDamaged prometheus.Counter
	panics       *prometheus.CounterVec // where: http, mcp, job, store
	limited      *prometheus.CounterVec // reason: inflight, save_rate, uploads, connections
}

func newMetrics(reg *prometheus.Registry, backend string) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_requests_total",
			Help: "MCP requests by JSON-RPC method, tool and outcome (ok, a JSON-RPC error code, a tool errorKind, or auth:<reason>).",
		}, []string{"method", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "resourced_request_duration_seconds",
			Help:    "Time to answer an MCP request, by JSON-RPC method and tool (resources/read is the read path, save_* the write path).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "tool"}),
		bytesSaved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "resourced_saved_bytes_total",
			Help:        "Body bytes stored by successful saves, by scheme.",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, []string{"scheme"}),
		bytesRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "resourced_read_bytes_total",
			Help:        "Body bytes served by resources/read, by scheme.",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, []string{"scheme"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_auth_failures_total",
			Help: "Requests refused by authentication or authorization, by reason.",
		}, []string{"reason"}),
	}
	m.swept = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "resourced_swept_total",
		Help:        "Expired resources removed by the sweeper.",
		ConstLabels: prometheus.Labels{"backend": backend},
	})
	m.formsDamaged = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "resourced_stored_forms_damaged_total",
		Help:        "Reads that found a stored JSON form failing its checksum and served the body instead (run resourced fsck).",
		ConstLabels: prometheus.Labels{"backend": backend},
	})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_panics_total",
		Help: "Panics recovered, by where they happened: http (a handler), mcp (an MCP method or tool), job (a background job), store (the storage backend).",
	}, []string{"where"})
	m.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_limited_total",
		Help: "Requests refused by a limit, by reason: inflight (a tenant's concurrent requests), save_rate (a tenant's saves per second), uploads (concurrent upload spools of the server), connections (connections past the server's cap).",
	}, []string{"reason"})
	for _, w := range []string{panicHTTP, panicMCP, panicJob, panicStore} {
		m.panics.WithLabelValues(w)
	}
	for _, r := range []string{limitInflight, limitSaveRate, limitUploads, limitConnections} {
		m.limited.WithLabelValues(r)
	}
	reg.MustRegister(m.requests, m.duration, m.bytesSaved, m.bytesRead, m.authFailures, m.swept, m.formsDamaged, m.panics, m.limited)
	return m
}

// watchFormCache exports the form cache's counters and size (all zero
// when it is off).
func (m *metrics) watchFormCache(c *formcache.Cache) {
	for _, f := range []struct {
		name, help string
		gauge      bool
		get        func(formcache.Stats) float64
	}{
		{"resourced_read_cache_hits_total", "Reads whose content member was written from the form cache.", false, func(s formcache.Stats) float64 { return float64(s.Hits) }},
		{"resourced_read_cache_misses_total", "Reads that filled the form cache (once per body, however many read it at once).", false, func(s formcache.Stats) float64 { return float64(s.Misses) }},
		{"resourced_read_cache_evictions_total", "Form cache entries dropped for room or after being idle.", false, func(s formcache.Stats) float64 { return float64(s.Evictions) }},
		{"resourced_read_cache_refused_total", "Fills refused because every entry was being written to a client (the read was served without the cache).", false, func(s formcache.Stats) float64 { return float64(s.Refused) }},
		{"resourced_read_cache_bytes", "Bytes the form cache holds (cache.maxBytes bounds it).", true, func(s formcache.Stats) float64 { return float64(s.Bytes) }},
	} {
		get := f.get
		fn := func() float64 { return get(c.Stats()) }
		if f.gauge {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: f.name, Help: f.help}, fn))
		} else {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: f.name, Help: f.help}, fn))
		}
	}
}

// metricsGuard lets a request through to next only with "Authorization:
// Bearer <token>" (compared in constant time); others get 401 with a
// Bearer challenge of realm "metrics". A nil token lets every request
// through.
func metricsGuard(token []byte, next http.Handler) http.Handler {
	if token == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "Unauthorized: /metrics needs the bearer token of metrics.bearerTokenFile", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "subscriptions/listen": true,
	"prompts/list": true, "notifications/initialized": true, "notifications/cancelled": true,
}

// observeRequest records one finished MCP request; knownTool tells the
// registered tools from names a client made up.
func (m *metrics) observeRequest(e *reqLog, d time.Duration, knownTool func(string) bool) {
	method, tool := e.method, e.tool
	if method == "" {
		method = "none" // refused before MCP saw it (auth, malformed body)
	} else if !knownMethods[method] {
		method = "other"
	}
	if tool != "" && !knownTool(tool) {
		tool = "other"
	}
	outcome := e.outcome
	if outcome == "" {
		outcome = "none"
	}
	m.requests.WithLabelValues(method, tool, outcome).Inc()
	m.duration.WithLabelValues(method, tool).Observe(d.Seconds())
}
