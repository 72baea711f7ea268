package boltstore

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
)

// SetLargeMin sets largeMin for the rest of t: 0 stores every body in a
// body bucket, math.MaxInt none (the layout before version 3).
func SetLargeMin(t testing.TB, n int) {
	old := largeMin
	largeMin = n
	t.Cleanup(func() { largeMin = old })
}

// LargeMin is the default threshold of version 3 records.
func LargeMin() int { return largeMin }

// Layout reports the record version of the object at k and the number of
// body buckets in the file.
func (s *Store) Layout(k store.Key) (version byte, bodies int, err error) {
	err = s.d.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, k)
		if err != nil {
			return err
		}
		if sb != nil {
			if v := sb.Get([]byte(k.Path())); len(v) > 0 {
				version = v[0]
			}
		}
		return tx.Bucket([]byte(bodiesBucket)).ForEachBucket(func([]byte) error {
			bodies++
			return nil
		})
	})
	return version, bodies, err
}
