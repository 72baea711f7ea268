package s3store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// This file holds Walk: every stored object of every tenant, what
// resourced reindex and fsck compare the search index with, as
// boltstore's Walk is on bbolt.

// walkPage is the keys one ListObjectsV2 of Walk asks for: S3's most.
// What Walk holds at once is one page of keys and their headers. A
// variable for the tests.
var walkPage int32 = 1000

// Walk calls fn with the metadata of every stored object of every tenant,
// expired or not (tombstones are not objects: they are skipped), in
// (tenant, scheme, path) key order. It pages through ListObjectsV2 from
// the first object key (after the public index markers, as DeleteExpired
// does), reads each page's headers listConcurrency at a time, and calls
// fn for that page before it lists the next, so memory is one page
// whatever the bucket holds. An object deleted between the listing and
// its header read, and an object whose header does not decode (not
// written by this package), are skipped. fn runs on Walk's goroutine;
// Walk stops at fn's first error, and returns it, or at ctx's end.
// Objects written during a Walk may or may not be reported.
func (s *Driver) Walk(ctx context.Context, fn func(m *store.Meta) error) error {
	const op = "walk"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	after := s.sweepStart()
	for {
		out, err := s.listObjects(ctx, &s3.ListObjectsV2Input{
			Bucket:     aws.String(s.bucket),
			Prefix:     aws.String(s.base),
			StartAfter: aws.String(after),
			MaxKeys:    aws.Int32(walkPage),
		})
		if err != nil {
			return s.fail(ctx, op, "bucket "+s.bucket, err)
		}
		keys := make([]store.Key, 0, len(out.Contents))
		for _, o := range out.Contents {
			if k, ok := s.parseObjectKey(aws.ToString(o.Key)); ok {
				keys = append(keys, k)
			}
		}
		heads, err := s.readHeadsOpt(ctx, keys, true)
		if err != nil {
			return s.fail(ctx, op, "bucket "+s.bucket, err)
		}
		for i, h := range heads {
			if h == nil || isTombstone(&h.rec.meta) {
				continue
			}
			m := h.meta(keys[i])
			if err := fn(&m); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(out.Contents) == 0 || !aws.ToBool(out.IsTruncated) {
			return nil
		}
		after = aws.ToString(out.Contents[len(out.Contents)-1].Key)
	}
}

// Walk is Driver.Walk.
func (s *Store) Walk(ctx context.Context, fn func(m *store.Meta) error) error {
	return s.d.Walk(ctx, fn)
}
