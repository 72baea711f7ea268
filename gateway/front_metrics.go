package gateway

import "github.com/prometheus/client_golang/prometheus"

// frontMetrics are the gateway's collectors. Labels are bounded: the
// upstreams of the config, the proxied methods, the tools each upstream
// listed (others are "other") and outcomes; never a tenant.
type frontMetrics struct {
	calls *prometheus.CounterVec // upstream, method, tool, outcome
	parts *prometheus.CounterVec // upstream, tool
	bytes *prometheus.CounterVec // upstream, tool
}

func newFrontMetrics(reg prometheus.Registerer) (*frontMetrics, error) {
	m := &frontMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_gateway_calls_total",
			Help: "Requests forwarded to upstreams, by upstream, JSON-RPC method, upstream tool (\"other\" for tools the upstream did not list) and outcome (ok, isError, unavailable, timeout, canceled, an upstream JSON-RPC error code, offload:<errorKind>).",
		}, []string{"upstream", "method", "tool", "outcome"}),
		parts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_gateway_offloaded_parts_total",
			Help: "Parts of upstream tool results saved and replaced by a resource_link, by upstream and tool.",
		}, []string{"upstream", "tool"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resourced_gateway_offloaded_bytes_total",
			Help: "Bytes of upstream tool results saved instead of returned inline, by upstream and tool.",
		}, []string{"upstream", "tool"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.parts, m.bytes} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
