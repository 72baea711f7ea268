package s3store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/resourced/resourced/store"
)

// This file holds Load, the bulk writer of benchmark preparations.

// Load stores objs, all of one tenant, with up to workers PUTs at a time,
// and returns how many it stored. Each object is the record, key and
// headers a Put writes (putObject), so that Get, List, Stat, Usage and
// reconcile read it as they read a Put's; what Load leaves out is what only
// concurrent writers of the same keys need:
//   - each PUT is unconditional, with no read of the object before it and
//     none after a conflict (there are none) or a retry: Load is for keys
//     nobody else writes meanwhile. Created is the caller's, not kept from
//     an object it replaces;
//   - usage is reserved once for the whole batch (every object counting as
//     a new one) before the first PUT and committed after the last, the
//     way one Put reserves and commits its own; an object replaced counts
//     twice until the next reconcile, as after an unconditional Put. When
//     a PUT fails, the reservation is kept, since it may have landed (an
//     over-count the reconciler drops after staleReservation);
//   - the public index marker of a public listed object is written after
//     it, as Put writes it, but that of an object replaced is not removed:
//     such a stale marker shows nothing (ListPublic reads the object
//     behind each marker and drops those that no longer need one).
//
// Each object's SHA256 and Size are computed when both are unset and
// checked otherwise, as store.Bucket.Put does; its times are stored to the
// millisecond, in UTC, by the record's own encoding. A batch whose reservation grows too old to write
// under (staleReservation/2; a few thousand objects take seconds) stops
// with an error; so does the first failed PUT, after the PUTs already
// sent. It is what resourced-bench -prepare-s3 stores a million objects
// with.
func (s *Store) Load(ctx context.Context, objs []*store.Object, workers int) (int, error) {
	d := s.d
	if len(objs) == 0 {
		return 0, nil
	}
	if workers < 1 {
		return 0, fmt.Errorf("s3store: load: %d workers", workers)
	}
	type item struct {
		objKey string
		rec    record
		body   []byte
	}
	items := make([]item, len(objs))
	var tenant string
	var total delta
	for i, o := range objs {
		if o == nil || o.Key == (store.Key{}) {
			return 0, fmt.Errorf("s3store: load: object %d: %w: zero key", i, store.ErrInvalidKey)
		}
		k := o.Key
		if i == 0 {
			tenant = k.Tenant()
		} else if k.Tenant() != tenant {
			return 0, fmt.Errorf("s3store: load: %s is not of tenant %s: a batch is of one tenant", k, tenant)
		}
		objKey, err := d.putKey(k)
		if err != nil {
			return 0, err
		}
		m := o.Meta
		m.Key = store.Key{}
		switch n := int64(len(o.Body)); {
		case m.SHA256 == "" && m.Size == 0:
			m.Size, m.SHA256 = n, store.Sum(o.Body)
		case m.Size != n:
			return 0, fmt.Errorf("s3store: load %s: size %d does not match body length %d", k, m.Size, n)
		case store.Sum(o.Body) != m.SHA256:
			return 0, fmt.Errorf("s3store: load %s: sha256 does not match body", k)
		}
		items[i] = item{objKey: objKey, rec: record{meta: m, writeID: newWriteID()}, body: o.Body}
		total = total.add(delta{m.Size, 1})
	}
	end, err := d.beginWrite(ctx, "load")
	if err != nil {
		return 0, err
	}
	defer end()
	// The batch's reservation has an id of its own, which no object's
	// write id starts with: a reconcile that lists some of the objects
	// must not take the whole batch for counted (it marks the reservation
	// as straddling instead, an over-count at most).
	usage := newIntent(d, tenant, store.Quota{}, newWriteID())
	if err := usage.reserve(ctx, total); err != nil {
		return 0, d.fail(ctx, "load for tenant", tenant, err)
	}
	var (
		next, stored atomic.Int64
		mu           sync.Mutex
		first        error
		wg           sync.WaitGroup
	)
	failed := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	for range min(workers, len(items)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) || stop() {
					return
				}
				if usage.stale() {
					failed(errors.New("s3store: load: the usage reservation is too old to write under; load smaller batches"))
					return
				}
				it := &items[i]
				k := objs[i].Key
				unlock := d.keyLock(it.objKey)
				_, err := d.putObject(ctx, it.objKey, &it.rec, memPayload(it.body), putCond{})
				if err == nil && indexed(&it.rec.meta) {
					err = d.putMarker(ctx, k)
				}
				unlock()
				if err != nil {
					failed(d.fail(ctx, "load", k, err))
					return
				}
				stored.Add(1)
			}
		})
	}
	wg.Wait()
	if first != nil {
		usage.maybeLanded = true // a failed PUT may have landed
	}
	usage.settle(ctx, first == nil)
	return int(stored.Load()), first
}
