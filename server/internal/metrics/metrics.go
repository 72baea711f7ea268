// Package metrics holds resourced's Prometheus collectors, their guard and
// handler. Labels have bounded values only: JSON-RPC methods and tools
// outside the known sets are "other", and tenants are never labels.
package metrics

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

// Set is resourced's collectors, registered in Reg.
type Set struct {
	Reg          *prometheus.Registry
	requests     *prometheus.CounterVec   // method, tool, outcome
	duration     *prometheus.HistogramVec // method, tool
	BytesSaved   *prometheus.CounterVec   // scheme
	BytesRead    *prometheus.CounterVec   // scheme
	AuthFailures *prometheus.CounterVec   // reason
	Swept        prometheus.Counter
	FormsDamaged prometheus.Counter
	Panics       *prometheus.CounterVec // where: http, mcp, job, store
	Limited      *prometheus.CounterVec // reason: inflight, save_rate, uploads, connections
}

// New registers the collectors in reg (a new registry with the Go and
// process collectors when nil). backend names the storage backend;
// panics and limits are the label values of resourced_panics_total and
// resourced_limited_total, exported at 0 from the start.
func New(reg *prometheus.Registry, backend string, panics, limits []string) *Set {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &Set{
		Reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_requests_total",
			Help: "MCP requests by JSON-RPC method, tool and outcome (ok, a JSON-RPC error code, a tool errorKind, or auth:<reason>).",
		}, []string{"method", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "resourced_request_duration_seconds",
			Help:    "Time to answer an MCP request, by JSON-RPC method and tool (resources/read is the read path, save_* the write path).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "tool"}),
		BytesSaved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "resourced_saved_bytes_total",
			Help:        "Body bytes stored by successful saves, by scheme.",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, []string{"scheme"}),
		BytesRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "resourced_read_bytes_total",
			Help:        "Body bytes served by resources/read, by scheme.",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, []string{"scheme"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_auth_failures_total",
			Help: "Requests refused by authentication or authorization, by reason.",
		}, []string{"reason"}),
	}
	m.Swept = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "resourced_swept_total",
		Help:        "Expired resources removed by the sweeper.",
		ConstLabels: prometheus.Labels{"backend": backend},
	})
	m.FormsDamaged = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "resourced_stored_forms_damaged_total",
		Help:        "Reads that found a stored JSON form failing its checksum and served the body instead (run resourced fsck).",
		ConstLabels: prometheus.Labels{"backend": backend},
	})
	m.Panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_panics_total",
		Help: "Panics recovered, by where they happened: http (a handler), mcp (an MCP method or tool), job (a background job), store (the storage backend).",
	}, []string{"where"})
	m.Limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_limited_total",
		Help: "Requests refused by a limit, by reason: inflight (a tenant's concurrent requests), save_rate (a tenant's saves per second), uploads (concurrent upload spools of the server), connections (connections past the server's cap).",
	}, []string{"reason"})
	for _, w := range panics {
		m.Panics.WithLabelValues(w)
	}
	for _, r := range limits {
		m.Limited.WithLabelValues(r)
	}
	reg.MustRegister(m.requests, m.duration, m.BytesSaved, m.BytesRead, m.AuthFailures, m.Swept, m.FormsDamaged, m.Panics, m.Limited)
	return m
}

// WatchFormCache exports the form cache's counters and size (all zero
// when it is off).
func (m *Set) WatchFormCache(c *formcache.Cache) {
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
			m.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: f.name, Help: f.help}, fn))
		} else {
			m.Reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: f.name, Help: f.help}, fn))
		}
	}
}

// Guard lets a request through to next only with "Authorization:
// Bearer <token>" (compared in constant time); others get 401 with a
// Bearer challenge of realm "metrics". A nil token lets every request
// through.
func Guard(token []byte, next http.Handler) http.Handler {
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

// Handler serves the registry's metrics.
func (m *Set) Handler() http.Handler {
	return promhttp.HandlerFor(m.Reg, promhttp.HandlerOpts{Registry: m.Reg})
}

var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "subscriptions/listen": true,
	"prompts/list": true, "notifications/initialized": true, "notifications/cancelled": true,
}

// ObserveRequest records one finished MCP request: its JSON-RPC method
// and tool ("" when refused before MCP saw it) and outcome; knownTool
// tells the registered tools from names a client made up.
func (m *Set) ObserveRequest(method, tool, outcome string, d time.Duration, knownTool func(string) bool) {
	if method == "" {
		method = "none" // refused before MCP saw it (auth, malformed body)
	} else if !knownMethods[method] {
		method = "other"
	}
	if tool != "" && !knownTool(tool) {
		tool = "other"
	}
	if outcome == "" {
		outcome = "none"
	}
	m.requests.WithLabelValues(method, tool, outcome).Inc()
	m.duration.WithLabelValues(method, tool).Observe(d.Seconds())
}
