package server

import (
	"context"
)

// sweep removes expired resources in bounded batches until a batch comes
// back short or the context ends, then the search index's entries of
// expired resources (service.MaintainIndex, which also retries failed
// index updates): after a sweep, no entry of a resource it removed is
// left. Expired resources already read as not found; the sweeper frees
// their storage and quota.
func (s *Server) sweep(ctx context.Context) {
	s.sweepStore(ctx)
	s.fulltext.Maintain(ctx, s.svc)
}

func (s *Server) sweepStore(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := s.store.DeleteExpired(ctx, s.sweepBatch)
		if n > 0 {
			s.metrics.Swept.Add(float64(n))
			s.log.Info("removed expired resources", "count", n)
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sweeping expired resources", "err", err)
			}
			return
		}
		if n < s.sweepBatch {
			return
		}
	}
}
