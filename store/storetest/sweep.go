package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// This file holds the subtests of DeleteExpired and of quotas. A backend
// whose Usage returns store.ErrQuotaUnsupported skips the quota subtests,
// after checking that it refuses a Put with a quota.

// sweep calls DeleteExpired with limit until it has removed want objects in
// all, checking that no call removes more than limit, and fails after 100
// calls. It returns the counts of the calls.
func (h *harness) sweep(t *testing.T, limit, want int) []int {
	t.Helper()
	var counts []int
	total := 0
	for total < want {
		if len(counts) == 100 {
			t.Fatalf("DeleteExpired(%d): %d calls removed %d objects (%v), want %d", limit, len(counts), total, counts, want)
		}
		n, err := h.b.DeleteExpired(h.ctx, limit)
		if err != nil {
			t.Fatalf("DeleteExpired(%d) = %d, %v; want nil error", limit, n, err)
		}
		if n < 0 || n > limit {
			t.Fatalf("DeleteExpired(%d) = %d, want 0 to %d", limit, n, limit)
		}
		counts = append(counts, n)
		total += n
	}
	if total != want {
		t.Fatalf("DeleteExpired(%d): calls removed %d objects (%v), want %d", limit, total, counts, want)
	}
	return counts
}

// sweepNothing checks that a few more calls of DeleteExpired remove
// nothing (a backend may examine a bounded part of the store per call).
func (h *harness) sweepNothing(t *testing.T, what string) {
	t.Helper()
	for range 5 {
		n, err := h.b.DeleteExpired(h.ctx, 100)
		if err != nil || n != 0 {
			t.Fatalf("DeleteExpired(100) %s = %d, %v; want 0, nil", what, n, err)
		}
	}
}

func testDeleteExpired(t *testing.T, h *harness) {
	for _, limit := range []int{0, -1} {
		if _, err := h.b.DeleteExpired(h.ctx, limit); err == nil {
			t.Errorf("DeleteExpired(%d) = nil error, want an error", limit)
		}
	}

	soon := epoch.Add(time.Minute)
	later := epoch.Add(time.Hour)
	var (
		expiring []store.Key // expire at soon
		lasting  []store.Key // expire at later
		forever  []store.Key // never expire
		all      []store.Key
	)
	i := 0
	for _, tenant := range []string{"t1", "t10", "t1-x"} {
		for _, scheme := range []string{"a", "b"} {
			for _, p := range []string{"x", "x/y", "z"} {
				k := store.MustKey(tenant, scheme, p)
				o := h.obj(k, "v1 of "+k.String())
				o.Visibility = []store.Visibility{store.Public, store.Private}[i%2]
				switch i % 3 {
				case 0, 1:
					if i%9 == 4 {
						o.Expires = later
						lasting = append(lasting, k)
					} else {
						o.Expires = soon
						expiring = append(expiring, k)
					}
				default:
					forever = append(forever, k)
				}
				h.put(t, o, store.CreateOnly())
				all = append(all, k)
				i++
			}
		}
	}
	if len(expiring) < 8 || len(lasting) < 2 || len(forever) < 4 {
		t.Fatalf("test setup: %d expiring, %d lasting, %d forever objects", len(expiring), len(lasting), len(forever))
	}

	// Nothing has expired yet.
	h.clock.Set(soon.Add(-time.Millisecond))
	h.sweepNothing(t, "before any expiry")
	for _, k := range all {
		h.stat(t, k)
	}

	// Expires == now: expired. Two of the expired keys are written again:
	// live with Always, and with IfNone and a later expiry.
	h.clock.Set(soon)
	revived := map[string]string{}
	o := h.obj(expiring[0], "revived forever")
	h.put(t, o, store.Cond{})
	revived[expiring[0].String()] = "revived forever"
	o = h.obj(expiring[1], "revived until later")
	o.Expires = later.Add(time.Hour)
	o.Visibility = store.Public
	h.put(t, o, store.CreateOnly())
	revived[expiring[1].String()] = "revived until later"
	gone := expiring[2:]

	// live lists what every tenant's List and ListPublic show now; the
	// sweep must not change it.
	live := func() map[string][]store.Meta {
		t.Helper()
		lists := map[string][]store.Meta{}
		for _, tenant := range []string{"t1", "t10", "t1-x"} {
			p := h.list(t, store.ListQuery{Tenant: tenant, Limit: 100})
			lists[tenant] = p.Items
		}
		p, err := h.b.ListPublic(h.ctx, store.PublicPosition{}, 100)
		if err != nil {
			t.Fatalf("ListPublic = %v", err)
		}
		lists["public"] = p.Items
		return lists
	}
	before := live()

	// One bounded call; with the clock set back, exactly as many expired
	// objects as it reports are gone.
	const limit = 3
	n1, err := h.b.DeleteExpired(h.ctx, limit)
	if err != nil || n1 < 0 || n1 > limit {
		t.Fatalf("DeleteExpired(%d) = %d, %v; want 0 to %d, nil", limit, n1, err, limit)
	}
	h.clock.Set(soon.Add(-time.Millisecond))
	present := 0
	for _, k := range gone {
		if _, err := h.b.Stat(h.ctx, k); err == nil {
			present++
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat(%s) = %v", k, err)
		}
	}
	if present != len(gone)-n1 {
		t.Errorf("DeleteExpired(%d) = %d, but %d of %d expired objects remain", limit, n1, present, len(gone))
	}
	h.clock.Set(soon)

	// Repeated calls finish the job, never more than limit at a time.
	h.sweep(t, limit, len(gone)-n1)
	h.sweepNothing(t, "after removing every expired object")
	if diff := cmp.Diff(before, live(), keyAsString); diff != "" {
		t.Errorf("List or ListPublic changed by DeleteExpired (-before +after):\n%s", diff)
	}

	// With the clock set back, the removed objects stay gone (in
	// ListPublic too) and everything else is as it was.
	h.clock.Set(soon.Add(-time.Millisecond))
	var wantPublic []store.Key
	for _, k := range gone {
		h.wantAbsent(t, k)
	}
	for _, k := range all {
		if slices.Contains(gone, k) {
			continue
		}
		want := "v1 of " + k.String()
		if b, ok := revived[k.String()]; ok {
			want = b
		}
		o := h.wantBody(t, k, []byte(want))
		if isPublicListed(o.Meta) {
			wantPublic = append(wantPublic, k)
		}
	}
	slices.SortFunc(wantPublic, comparePublic)
	h.wantPublic(t, "after DeleteExpired, with the clock set back", wantPublic)

	// Later, the objects that expire then go too, and the one revived
	// until after that stays.
	h.clock.Set(later)
	h.sweep(t, 100, len(lasting))
	h.sweepNothing(t, "after removing the later expired objects")
	h.clock.Set(soon)
	for _, k := range lasting {
		h.wantAbsent(t, k)
	}
	h.wantBody(t, expiring[0], []byte("revived forever"))
	h.wantBody(t, expiring[1], []byte("revived until later"))
	for _, k := range forever {
		h.wantBody(t, k, []byte("v1 of "+k.String()))
	}

	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	_, err = h.b.DeleteExpired(ctx, 10)
	wantErr(t, "DeleteExpired(canceled)", err, context.Canceled)
}

// quotaSupported reports whether h's backend supports quotas. When it does
// not, it checks that a Put with a quota fails with ErrQuotaUnsupported and
// stores nothing.
func (h *harness) quotaSupported(t *testing.T) bool {
	t.Helper()
	_, err := h.b.Usage(h.ctx, "t1")
	if err == nil {
		return true
	}
	if !errors.Is(err, store.ErrQuotaUnsupported) {
		t.Fatalf("Usage(t1) = %v, want nil or %v", err, store.ErrQuotaUnsupported)
	}
	k := store.MustKey("t1", "report", "quota")
	for _, cond := range []store.Cond{
		{Quota: store.Quota{Bytes: 1 << 40}},
		{Kind: store.IfNone, Quota: store.Quota{Objects: 1 << 40}},
	} {
		_, _, err := h.b.Put(h.ctx, h.obj(k, "x"), cond)
		wantErr(t, fmt.Sprintf("Put(%s, %+v) without quota support", k, cond), err, store.ErrQuotaUnsupported)
	}
	h.wantAbsent(t, k)
	return false
}

func (h *harness) wantUsage(t *testing.T, tenant string, want store.Usage) {
	t.Helper()
	got, err := h.b.Usage(h.ctx, tenant)
	if err != nil {
		t.Fatalf("Usage(%s) = %v, want nil", tenant, err)
	}
	if got != want {
		t.Errorf("Usage(%s) = %+v, want %+v", tenant, got, want)
	}
}

// sized returns an object at k with a body of n bytes.
func (h *harness) sized(k store.Key, n int) *store.Object {
	return h.obj(k, strings.Repeat("q", n))
}

// putOver checks that a Put fails with ErrQuotaExceeded, naming the key,
// and leaves the object at its key as it was (absent when was is nil).
func (h *harness) putOver(t *testing.T, o *store.Object, cond store.Cond, was []byte) {
	t.Helper()
	_, replaced, err := h.b.Put(h.ctx, o, cond)
	op := fmt.Sprintf("Put(%s, %d bytes, %+v)", o.Key, o.Size, cond)
	wantErr(t, op, err, store.ErrQuotaExceeded)
	if err != nil && !strings.Contains(err.Error(), o.Key.String()) {
		t.Errorf("%s = %q, want the error text to name %s", op, err, o.Key)
	}
	if replaced {
		t.Errorf("%s failing: replaced = true", op)
	}
	if was == nil {
		h.wantAbsent(t, o.Key)
	} else {
		h.wantBody(t, o.Key, was)
	}
}

func testQuota(t *testing.T, h *harness) {
	if !h.quotaSupported(t) {
		t.Skipf("%T does not support quotas", h.b)
	}
	h.wantUsage(t, "t1", store.Usage{})
	for _, tenant := range []string{"", "T1", "t1/x"} {
		_, err := h.b.Usage(h.ctx, tenant)
		wantErr(t, fmt.Sprintf("Usage(%q)", tenant), err, store.ErrInvalidKey)
	}

	// Usage sums every scheme of a tenant; look-alike tenants are apart.
	key := func(tenant, scheme, p string) store.Key { return store.MustKey(tenant, scheme, p) }
	h.put(t, h.sized(key("t1", "a", "1"), 10), store.CreateOnly())
	h.put(t, h.sized(key("t1", "b", "1"), 20), store.CreateOnly())
	h.put(t, h.sized(key("t1", "b", "2"), 0), store.CreateOnly())
	h.put(t, h.sized(key("t10", "a", "1"), 7), store.CreateOnly())
	h.put(t, h.sized(key("t1-x", "a", "1"), 5), store.CreateOnly())
	h.wantUsage(t, "t1", store.Usage{Bytes: 30, Objects: 3})
	h.wantUsage(t, "t10", store.Usage{Bytes: 7, Objects: 1})
	h.wantUsage(t, "t1-x", store.Usage{Bytes: 5, Objects: 1})
	h.wantUsage(t, "t2", store.Usage{})

	// Creates within the quota succeed, up to it exactly.
	q := store.Quota{Bytes: 50, Objects: 5}
	withQ := func(c store.Cond) store.Cond { c.Quota = q; return c }
	h.put(t, h.sized(key("t1", "a", "2"), 15), withQ(store.CreateOnly()))
	h.wantUsage(t, "t1", store.Usage{Bytes: 45, Objects: 4})

	// One byte too many: nothing stored.
	h.putOver(t, h.sized(key("t1", "a", "3"), 6), withQ(store.CreateOnly()), nil)
	h.putOver(t, h.sized(key("t1", "a", "3"), 6), withQ(store.Cond{}), nil)
	h.putOver(t, h.sized(key("t1", "a", "3"), 6), store.Cond{Quota: store.Quota{Bytes: 50}}, nil)
	h.wantUsage(t, "t1", store.Usage{Bytes: 45, Objects: 4})
	h.put(t, h.sized(key("t1", "a", "3"), 5), withQ(store.Cond{}))
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 5})

	// One object too many, even an empty one.
	h.putOver(t, h.sized(key("t1", "a", "4"), 0), withQ(store.CreateOnly()), nil)
	h.putOver(t, h.sized(key("t1", "a", "4"), 0), store.Cond{Quota: store.Quota{Objects: 5}}, nil)
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 5})

	// A replace counts its size difference and no new object: at the
	// object limit it succeeds; shrinking and growing adjust exactly.
	b1 := key("t1", "b", "1")
	m, replaced := h.put(t, h.sized(b1, 12), withQ(store.Matching(store.Sum([]byte(strings.Repeat("q", 20))))))
	if !replaced {
		t.Errorf("Put(%s, IfMatch) with a quota: replaced = false, want true", b1)
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 42, Objects: 5})
	m, _ = h.put(t, h.sized(b1, 20), withQ(store.Matching(m.SHA256)))
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 5})
	h.putOver(t, h.sized(b1, 21), withQ(store.Matching(m.SHA256)), []byte(strings.Repeat("q", 20)))
	h.putOver(t, h.sized(b1, 21), withQ(store.Cond{}), []byte(strings.Repeat("q", 20)))
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 5})

	// A failed precondition is reported as such, quota or not.
	_, _, err := h.b.Put(h.ctx, h.sized(b1, 1), withQ(store.CreateOnly()))
	wantErr(t, fmt.Sprintf("Put(%s, IfNone) over an existing object with a quota", b1), err, store.ErrPreconditionFailed)
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 5})

	// Quotas are per Put and per tenant: t10 has room under the same
	// quota, and a Put without a quota is not limited.
	h.put(t, h.sized(key("t10", "a", "2"), 43), withQ(store.CreateOnly()))
	h.wantUsage(t, "t10", store.Usage{Bytes: 50, Objects: 2})
	h.put(t, h.sized(key("t1", "a", "4"), 1), store.CreateOnly())
	h.wantUsage(t, "t1", store.Usage{Bytes: 51, Objects: 6})

	// Delete gives back the object and its bytes.
	for _, k := range []store.Key{key("t1", "a", "4"), key("t1", "a", "3")} {
		if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
			t.Fatalf("Delete(%s) = %v", k, err)
		}
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 45, Objects: 4})

	// A backend may keep what Delete removed as expired records until
	// DeleteExpired removes them (s3store's tombstones, which count
	// nothing): sweep them now, so that the sweep below counts e2 alone.
	for range 100 {
		if n, err := h.b.DeleteExpired(h.ctx, 100); err != nil || n == 0 {
			break
		}
	}

	// An expired object counts until it is replaced or removed...
	e1, e2 := key("t1", "e", "1"), key("t1", "e", "2")
	for _, k := range []store.Key{e1, e2} {
		o := h.sized(k, 4)
		o.Expires = epoch.Add(time.Minute)
		h.put(t, o, store.CreateOnly())
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 53, Objects: 6})
	h.clock.Set(epoch.Add(time.Minute))
	h.wantUsage(t, "t1", store.Usage{Bytes: 53, Objects: 6})

	// ...a create over it counts the size difference, not a new object
	// (counting both would exceed this quota)...
	m, replaced = h.put(t, h.sized(e1, 1), store.Cond{Kind: store.IfNone, Quota: store.Quota{Bytes: 50, Objects: 6}})
	if replaced {
		t.Errorf("Put(%s, IfNone) over an expired object: replaced = true, want false", e1)
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 6})
	h.putOver(t, h.sized(e2, 5), store.Cond{Quota: store.Quota{Bytes: 50}}, nil)
	h.wantUsage(t, "t1", store.Usage{Bytes: 50, Objects: 6})

	// ...and DeleteExpired gives it back.
	h.sweep(t, 10, 1)
	h.wantUsage(t, "t1", store.Usage{Bytes: 46, Objects: 5})
	if err := h.b.Delete(h.ctx, e1, store.Matching(m.SHA256)); err != nil {
		t.Fatalf("Delete(%s) = %v", e1, err)
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 45, Objects: 4})

	// Deleting everything brings usage back to zero.
	for _, k := range []store.Key{key("t1", "a", "1"), key("t1", "a", "2"), b1, key("t1", "b", "2")} {
		if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
			t.Fatalf("Delete(%s) = %v", k, err)
		}
	}
	h.wantUsage(t, "t1", store.Usage{})
	h.wantUsage(t, "t10", store.Usage{Bytes: 50, Objects: 2})
	h.wantUsage(t, "t1-x", store.Usage{Bytes: 5, Objects: 1})
}

func testQuotaConcurrent(t *testing.T, h *harness) {
	if !h.quotaSupported(t) {
		t.Skipf("%T does not support quotas", h.b)
	}
	const workers, size = 16, 100
	q := store.Quota{Bytes: 10 * size}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners int
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			k := store.MustKey("t1", "report", fmt.Sprintf("w%02d", w))
			_, _, err := h.b.Put(h.ctx, h.sized(k, size), store.Cond{Kind: store.IfNone, Quota: q})
			switch {
			case err == nil:
				mu.Lock()
				winners++
				mu.Unlock()
			case errors.Is(err, store.ErrQuotaExceeded):
				h.wantAbsent(t, k)
			default:
				t.Errorf("Put(%s) = %v, want nil or %v", k, err, store.ErrQuotaExceeded)
			}
		})
	}
	close(start)
	wg.Wait()
	if winners != 10 {
		t.Errorf("%d concurrent Puts of %d bytes under a quota of %d bytes: %d succeeded, want 10", workers, size, q.Bytes, winners)
	}
	h.wantUsage(t, "t1", store.Usage{Bytes: 10 * size, Objects: 10})
	if got := h.listAll(t, store.ListQuery{Tenant: "t1", Limit: 100}); len(got) != 10 {
		t.Errorf("List after the race = %d objects, want 10", len(got))
	}
}
