package s3store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// A service whose ListObjectsV2 reads a directory (versitygw's posix
// backend) can take longer than the call deadline for every call of a
// large prefix (docs/s3.md, "Listing"). Then each list page would wait the
// whole callTimeout, hold a request and the service's work, and fail
// anyway. So once a listing of a prefix has missed the deadline, the list
// pages of that prefix fail at once, with the same retry-safe backend
// failure and a text saying that the service's listing is the bound, for
// slowListHold; the first page after that asks the service again.

// slowListHold is how long the pages of a prefix whose listing missed
// the deadline fail at once (a variable for the tests); maxSlowLists
// bounds the prefixes remembered.
var slowListHold = 30 * time.Second

const maxSlowLists = 1024

// slowLists are the listing prefixes that missed the call deadline, and
// until when their pages fail at once.
type slowLists struct {
	mu    sync.Mutex
	until map[string]slowList
}

type slowList struct {
	since, until time.Time
}

// slowListingError is a listing's deadline failure (whose chain Driver.fail
// cuts, so the deadline is not taken for the caller's) that still is
// store.ErrSlowListing.
type slowListingError struct{ error }

func (e slowListingError) Is(target error) bool { return target == store.ErrSlowListing }

// check returns the error of a page of prefix while it is held.
func (l *slowLists) check(prefix string, timeout time.Duration, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl, ok := l.until[prefix]
	if !ok || !now.Before(sl.until) {
		delete(l.until, prefix)
		return nil
	}
	return fmt.Errorf("%w: the S3 service's ListObjectsV2 of this prefix took longer than %v (store.s3.callTimeout) at %s, so pages of it fail at once until %s; "+
		"a service that lists in O(page) (docs/s3.md), a narrower prefix, or bbolt avoids it",
		store.ErrSlowListing, timeout, sl.since.UTC().Format(time.RFC3339), sl.until.UTC().Format(time.RFC3339))
}

// missed records that a listing of prefix missed the deadline at now.
func (l *slowLists) missed(prefix string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until == nil {
		l.until = map[string]slowList{}
	}
	if len(l.until) >= maxSlowLists {
		for p, sl := range l.until {
			if !now.Before(sl.until) {
				delete(l.until, p)
			}
		}
		if len(l.until) >= maxSlowLists {
			clear(l.until)
		}
	}
	l.until[prefix] = slowList{since: now, until: now.Add(slowListHold)}
}

// listPage is listObjects for a page of List or ListPublic under prefix:
// it fails at once while the prefix is held, and holds it when the call
// misses the deadline (not when the caller gave up).
func (s *Driver) listPage(ctx context.Context, prefix string, in *s3.ListObjectsV2Input) (*s3.ListObjectsV2Output, error) {
	if err := s.slow.check(prefix, s.timeout, time.Now()); err != nil {
		return nil, err
	}
	out, err := s.listObjects(ctx, in)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		s.slow.missed(prefix, time.Now())
		return nil, fmt.Errorf("%w (%w): pages of this prefix fail at once for %v", err, store.ErrSlowListing, slowListHold)
	}
	return out, err
}
