package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/resourced/resourced/store"
)

// sweep removes expired resources in bounded batches until a batch comes
// back short or the context ends. Expired resources already read as not
// found; the sweeper frees their storage and quota.
func (s *Server) sweep(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := s.store.DeleteExpired(ctx, s.sweepBatch)
		if n > 0 {
			s.metrics.swept.Add(float64(n))
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

// quotaFailure explains a refused save: the limits and the tenant's usage.
func (s *Server) quotaFailure(ctx context.Context, tenant string, err error) *toolError {
	if errors.Is(err, store.ErrQuotaUnsupported) {
		return s.storeFailure(ctx, "quota on a backend without quotas", err)
	}
	msg := "the save would take your tenant over its quota"
	if u, uerr := s.store.Usage(ctx, tenant); uerr == nil {
		msg += fmt.Sprintf(" (you store %d resources, %d bytes", u.Objects, u.Bytes)
		if s.quota.Objects > 0 {
			msg += fmt.Sprintf("; at most %d resources", s.quota.Objects)
		}
		if s.quota.Bytes > 0 {
			msg += fmt.Sprintf("; at most %d bytes", s.quota.Bytes)
		}
		msg += ")"
	}
	return failure(kindQuota, msg+". Nothing was stored. Delete resources you no longer need (list_resources, delete_resource) and save again.")
}
