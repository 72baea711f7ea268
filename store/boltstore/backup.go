package boltstore

import (
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database file to w from one
// read transaction, while the store keeps serving reads and writes (bbolt's
// online backup). The copy is a valid bbolt file; restore it by putting it
// in place of the database while the server is stopped.
func (s *Driver) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("boltstore: backup: %w", err)
	}
	return n, nil
}
