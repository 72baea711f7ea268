package server

import (
	"net"

	"github.com/resourced/resourced/server/internal/edge"
)

// DefaultMaxConns is the connection cap of Listener when it is given 0.
const DefaultMaxConns = edge.DefaultMaxConns

// Listener returns l holding at most maxConns connections open at once (0:
// DefaultMaxConns; negative: no cap); a connection past the cap is
// answered 503 and closed at once (edge.Listener), and counted in
// resourced_limited_total{reason="connections"}.
func (s *Server) Listener(l net.Listener, maxConns int) net.Listener {
	return edge.Listener(l, maxConns, func() { s.metrics.Limited.WithLabelValues(limitConnections).Inc() })
}
