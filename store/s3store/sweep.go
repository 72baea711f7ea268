package s3store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// This file holds DeleteExpired (see the package doc, "Expiry").

// maxSweepScan bounds the objects one DeleteExpired examines, in multiples
// of its limit.
const maxSweepScan = 4

// sweepStart returns the key DeleteExpired lists after when it starts at
// the beginning: after every public index marker (<prefix>/!public/...,
// and 'p' < '~') and before every object, whose tenant starts with a byte
// above '!'.
func (s *Driver) sweepStart() string {
	return s.base + "!~"
}

// parseObjectKey returns the key of an object listed under the prefix, and
// false for keys this package did not write as objects (markers included).
func (s *Driver) parseObjectKey(objKey string) (store.Key, bool) {
	rest, ok := strings.CutPrefix(objKey, s.base)
	if !ok {
		return store.Key{}, false
	}
	tenant, _, ok := strings.Cut(rest, "/")
	if !ok || store.ValidTenant(tenant) != nil {
		return store.Key{}, false
	}
	return s.parseKey(tenant, objKey)
}

// DeleteExpired implements store.Driver; the package doc gives its cost.
// It examines at most maxSweepScan×limit listed keys, continuing after the
// last key the previous call examined, and starts over at the beginning
// once it reaches the end of the listing (the call that reaches the end
// returns there). Objects whose header does not decode (not written by
// this package, or damaged) are skipped, not deleted.
func (s *Driver) DeleteExpired(ctx context.Context, limit int, clock func() time.Time) (int, error) {
	const op = "delete expired"
	end, err := s.beginWrite(ctx, op)
	if err != nil {
		return 0, err
	}
	defer end()
	s.sweep.mu.Lock()
	defer s.sweep.mu.Unlock()
	after := s.sweep.after
	if after == "" {
		after = s.sweepStart()
	}
	defer func() {
		if after == s.sweepStart() {
			after = ""
		}
		s.sweep.after = after
	}()

	budget := maxSweepScan * limit
	if limit > math.MaxInt/maxSweepScan {
		budget = math.MaxInt
	}
	now := clock()
	removed := 0
	for budget > 0 && removed < limit {
		out, err := s.listObjects(ctx, &s3.ListObjectsV2Input{
			Bucket:     aws.String(s.bucket),
			Prefix:     aws.String(s.base),
			StartAfter: aws.String(after),
			MaxKeys:    aws.Int32(int32(min(budget, 1000))),
		})
		if err != nil {
			return removed, s.fail(ctx, op, "bucket "+s.bucket, err)
		}
		objs := out.Contents
		for len(objs) > 0 && budget > 0 && removed < limit {
			// Read the headers of a chunk, but not many more than the
			// removals still allowed may need.
			n := min(len(objs), budget, max(limit-removed, listConcurrency))
			chunk := objs[:n]
			var keys []store.Key
			for _, o := range chunk {
				if k, ok := s.parseObjectKey(aws.ToString(o.Key)); ok {
					keys = append(keys, k)
				}
			}
			// An object that is not a record of ours is left alone.
			heads, err := s.readHeadsOpt(ctx, keys, true)
			if err != nil {
				return removed, s.fail(ctx, op, "bucket "+s.bucket, err)
			}
			j := 0 // index into keys and heads
			for _, o := range chunk {
				if removed == limit {
					return removed, nil // o is examined again next time
				}
				prev := after
				after = aws.ToString(o.Key)
				budget--
				k, ok := s.parseObjectKey(after)
				if !ok {
					continue
				}
				h := heads[j]
				j++
				if h == nil || !h.rec.meta.Expired(now) || h.etag == "" {
					continue // gone, live, or not deletable conditionally
				}
				ok, err := s.deleteExpired(ctx, k, h, clock)
				if ok {
					removed++
				}
				if err != nil {
					after = prev // examine it again next time
					return removed, err
				}
			}
			objs = objs[n:]
		}
		if len(out.Contents) == 0 || len(objs) == 0 && !aws.ToBool(out.IsTruncated) {
			after = s.sweepStart() // the end: start over next time
			break
		}
	}
	return removed, nil
}

// deleteExpired deletes the expired object k whose header h was read, if
// it has not changed since, and then its marker; ok reports that this call
// deleted it.
func (s *Driver) deleteExpired(ctx context.Context, k store.Key, h *head, now func() time.Time) (ok bool, err error) {
	defer s.keyLock(s.objectKey(k))()
	// The usage it gives back is reserved first, like any write's (see
	// "Quotas"); tombstones count nothing.
	usage := newIntent(s, k.Tenant(), store.Quota{}, newWriteID())
	if c := counted(h); c != (delta{}) {
		if err := usage.reserve(ctx, delta{-c.Bytes, -c.Objects}); err != nil {
			return false, s.fail(ctx, "delete expired", k, err)
		}
	}
	err = s.deleteObject(ctx, &s3.DeleteObjectInput{
		Bucket:  aws.String(s.bucket),
		Key:     aws.String(s.objectKey(k)),
		IfMatch: aws.String(h.etag),
	})
	if status, _ := apiError(err); err != nil && status == 0 {
		usage.maybeLanded = true
	}
	usage.settle(ctx, err == nil)
	switch {
	case err == nil:
		ok = true
	case isMissing(err):
		// Gone already (a Delete, another sweeper, or our own request
		// retried by the SDK); its marker may remain.
	case isConflict(err):
		return false, nil // replaced meanwhile: it stays
	default:
		return false, s.fail(ctx, "delete expired", k, err)
	}
	if indexed(&h.rec.meta) {
		if err := s.removeMarker(ctx, k, now); err != nil {
			return ok, fmt.Errorf("s3store: delete expired %s: deleted, but: %w", k, err)
		}
	}
	return ok, nil
}
