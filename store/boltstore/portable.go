package boltstore

import (
	"context"
	"io"

	"github.com/resourced/resourced/store"
)

// Store is the portable store (store.Bucket) over a Driver, with the
// driver's file-level operations. It is what Open returns and what
// resourced serves from.
type Store struct {
	*store.Bucket
	d *Driver
}

func newStore(d *Driver, opts Options) *Store {
	return &Store{Bucket: store.NewBucket(d, store.Options{Now: opts.Now}), d: d}
}

// Backup is Driver.Backup.
func (s *Store) Backup(w io.Writer) (int64, error) { return s.d.Backup(w) }

// Check is Driver.Check.
func (s *Store) Check() error { return s.d.Check() }

// CheckEncoded is Driver.CheckEncoded.
func (s *Store) CheckEncoded(verify func(m *store.Meta, encoded, body []byte) error) error {
	return s.d.CheckEncoded(verify)
}

// Walk is Driver.Walk.
func (s *Store) Walk(ctx context.Context, fn func(m *store.Meta) error) error {
	return s.d.Walk(ctx, fn)
}
