package s3store

import (
	"context"

	"github.com/resourced/resourced/store"
)

// Store is the portable store (store.Bucket) over a Driver, with the
// driver's reconciles. It is what Open returns and what resourced serves
// from. S3 objects keep no encoded form (KeepsEncoded is false).
type Store struct {
	*store.Bucket
	d *Driver
}

func newStore(d *Driver, opts Options) *Store {
	return &Store{Bucket: store.NewBucket(d, store.Options{Now: opts.Now}), d: d}
}

// Reconcile recounts the usage of tenant from a listing and corrects its
// usage object; see Driver.Reconcile and the package doc, "Quotas".
func (s *Store) Reconcile(ctx context.Context, tenant string) (before, after store.Usage, err error) {
	return s.d.Reconcile(ctx, tenant)
}

// ReconcileAll reconciles every tenant of the bucket's prefix; see
// Driver.ReconcileAll. A server with several instances calls it from one
// background loop per instance at a slow pace (every hour, say): the
// reconciles of two instances only waste requests.
func (s *Store) ReconcileAll(ctx context.Context) ([]Reconciled, error) {
	return s.d.ReconcileAll(ctx)
}
