package boltstore

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourced/resourced/store"
)

// bodiesBucket is the top-level bucket of body buckets: one nested bucket
// per version 3 record, keyed by its id (bodyID), holding the body under
// bodyKey and the encoded form, if any, under encodedKey. A body bucket is
// never inline (its values are largeMin bytes or more), so its root is
// pages of its own: a write elsewhere never dirties, and so never copies,
// a stored body (issue 24).
const bodiesBucket = "v1-bodies"

// releaseMin is the size (body and encoded form) from which a write
// returns the heap that bbolt's pages of it took to the system once it
// has committed (write).
const releaseMin = 16 << 20

// value is what a write stores for the final metadata of its object:
// record returns a version 1 or 2 record; or, when large, the body and
// the encoded form go into a new body bucket and the record is version 3.
// The slices must stay valid until the write returns (bbolt copies them at
// commit).
type value struct {
	record        func(m *store.Meta) []byte
	large         bool
	encoded, body []byte
}

// isLarge reports whether a body and encoded form of these sizes are
// stored in a body bucket.
func isLarge(encoded, body int64) bool {
	return encoded+body >= int64(largeMin)
}

// put stores v for m in tx (a body bucket first, when large) and returns
// the record.
func (v value) put(tx *bolt.Tx, m *store.Meta) ([]byte, error) {
	if !v.large {
		return v.record(m), nil
	}
	bb, err := topBucket(tx, bodiesBucket)
	if err != nil {
		return nil, err
	}
	// The sequence only grows (a rolled back transaction takes its
	// increments back with it), so an id is never reused.
	id, err := bb.NextSequence()
	if err != nil {
		return nil, err
	}
	nb, err := bb.CreateBucket(bodyID(id))
	if err != nil {
		return nil, fmt.Errorf("body bucket %d: %w", id, err)
	}
	body := v.body
	if body == nil {
		body = []byte{} // a value, not a missing one, within this transaction too
	}
	if err := nb.Put(bodyKey, body); err != nil {
		return nil, fmt.Errorf("body bucket %d: %w", id, err)
	}
	if len(v.encoded) > 0 {
		if err := nb.Put(encodedKey, v.encoded); err != nil {
			return nil, fmt.Errorf("body bucket %d: %w", id, err)
		}
	}
	return appendRef(m, id), nil
}

// bodyRef returns a copy of the body bucket id of stored record v, or nil
// when v keeps its body in itself (or does not decode: the caller has
// decoded its metadata already).
func bodyRef(v []byte) []byte {
	r, err := splitRecord(v)
	if err != nil || r.ref == nil {
		return nil
	}
	return bytes.Clone(r.ref)
}

// dropBody removes body bucket ref (nil: none), freeing its pages. A body
// bucket already missing (a damaged file, which Check reports) is not an
// error: the record that named it is going.
func dropBody(tx *bolt.Tx, ref []byte) error {
	if ref == nil {
		return nil
	}
	bb, err := topBucket(tx, bodiesBucket)
	if err != nil {
		return err
	}
	if err := bb.DeleteBucket(ref); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return fmt.Errorf("body bucket %x: %w", ref, err)
	}
	return nil
}

// loadRecord takes stored record v, whose metadata says size, apart, with
// the body and encoded form of a version 3 record read from its body
// bucket. The slices alias the file's mapping: copy before tx ends.
func loadRecord(tx *bolt.Tx, v []byte, size int64) (record, error) {
	r, err := splitRecord(v)
	if err != nil || r.ref == nil {
		return r, err
	}
	bb := tx.Bucket([]byte(bodiesBucket))
	var nb *bolt.Bucket
	if bb != nil {
		nb = bb.Bucket(r.ref)
	}
	if nb == nil {
		return record{}, fmt.Errorf("%w: body bucket %x is missing", errCorrupt, r.ref)
	}
	c := nb.Cursor()
	for k, bv := c.First(); k != nil; k, bv = c.Next() {
		switch {
		case bv == nil:
			return record{}, fmt.Errorf("%w: body bucket %x: a bucket at %q", errCorrupt, r.ref, k)
		case bytes.Equal(k, bodyKey):
			r.body = bv
		case bytes.Equal(k, encodedKey) && len(bv) > 0:
			r.encoded = bv
		default:
			return record{}, fmt.Errorf("%w: body bucket %x: unexpected key %q", errCorrupt, r.ref, k)
		}
	}
	if r.body == nil {
		return record{}, fmt.Errorf("%w: body bucket %x has no body", errCorrupt, r.ref)
	}
	if int64(len(r.body)) != size {
		return record{}, fmt.Errorf("%w: size %d, body of %d bytes", errCorrupt, size, len(r.body))
	}
	return r, nil
}
