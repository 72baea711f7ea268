package boltstore

import (
	"context"
	"io"

	"github.com/resourced/resourced/store"
)

// Store is the portable store (store.Bucket) over a Driver, with the
// driver's optional capabilities and its file-level operations. It is what
// Open returns and what resourced serves from.
type Store struct {
	*store.Bucket
	view   store.EncodedViewer
	stream store.Streamer
	d      *Driver
}

var (
	_ store.Backend       = (*Store)(nil)
	_ store.EncodedViewer = (*Store)(nil)
	_ store.Streamer      = (*Store)(nil)
)

func newStore(d *Driver, opts Options) *Store {
	b := store.NewBucket(d, store.Options{Now: opts.Now})
	return &Store{Bucket: b, view: b.EncodedView(), stream: b.Streaming(), d: d}
}

// View implements store.EncodedViewer; see Driver.View.
func (s *Store) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	return s.view.View(ctx, k, fn)
}

// PutStream implements store.Streamer; the package doc says how.
func (s *Store) PutStream(ctx context.Context, meta *store.Meta, r io.Reader, cond store.Cond) (store.Meta, bool, error) {
	return s.stream.PutStream(ctx, meta, r, cond)
}

// Open implements store.Streamer.
func (s *Store) Open(ctx context.Context, k store.Key) (store.Meta, io.ReadSeekCloser, error) {
	return s.stream.Open(ctx, k)
}

// Backup is Driver.Backup.
func (s *Store) Backup(w io.Writer) (int64, error) { return s.d.Backup(w) }

// Check is Driver.Check.
func (s *Store) Check() error { return s.d.Check() }

// CheckEncoded is Driver.CheckEncoded.
func (s *Store) CheckEncoded(verify func(m *store.Meta, encoded, body []byte) error) error {
	return s.d.CheckEncoded(verify)
}
