package s3store

import (
	"context"
	"io"

	"github.com/resourced/resourced/store"
)

// Store is the portable store (store.Bucket) over a Driver, with the
// driver's streaming. It is what Open returns and what resourced serves
// from. It is not a store.EncodedViewer: S3 objects keep no encoded form.
type Store struct {
	*store.Bucket
	stream store.Streamer
	d      *Driver
}

var (
	_ store.Backend  = (*Store)(nil)
	_ store.Streamer = (*Store)(nil)
)

func newStore(d *Driver, opts Options) *Store {
	b := store.NewBucket(d, store.Options{Now: opts.Now})
	return &Store{Bucket: b, stream: b.Streaming(), d: d}
}

// PutStream implements store.Streamer; the package doc says how.
func (s *Store) PutStream(ctx context.Context, meta *store.Meta, r io.Reader, cond store.Cond) (store.Meta, bool, error) {
	return s.stream.PutStream(ctx, meta, r, cond)
}

// Open implements store.Streamer: one header read now, ranged GETs as the
// body is read.
func (s *Store) Open(ctx context.Context, k store.Key) (store.Meta, io.ReadSeekCloser, error) {
	return s.stream.Open(ctx, k)
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
