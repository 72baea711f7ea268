package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// This file holds the subtests of ListPublic, which every driver must
// implement (store.Driver): none of them skips.

func publicPosOf(k store.Key) store.PublicPosition {
	return store.PublicPosition{Tenant: k.Tenant(), Scheme: k.Scheme(), Path: k.Path()}
}

func comparePublic(a, b store.Key) int {
	pa, pb := publicPosOf(a), publicPosOf(b)
	switch {
	case pa.Less(pb):
		return -1
	case pb.Less(pa):
		return 1
	}
	return 0
}

// isPublicListed reports whether m belongs in ListPublic (expiry aside).
func isPublicListed(m store.Meta) bool {
	return m.Listed && m.Visibility == store.Public
}

// listPublic returns one page and checks what holds for every page: at most
// limit items, all public and listed, strictly increasing and after after,
// and a Next that moves forward when More is set.
func (h *harness) listPublic(t *testing.T, after store.PublicPosition, limit int) store.PublicPage {
	t.Helper()
	p, err := h.b.ListPublic(h.ctx, after, limit)
	if err != nil {
		t.Fatalf("ListPublic(%+v, %d) = %v, want nil", after, limit, err)
	}
	if len(p.Items) > limit {
		t.Fatalf("ListPublic(%+v, %d) returned %d items, more than limit", after, limit, len(p.Items))
	}
	last := after
	for _, m := range p.Items {
		pos := publicPosOf(m.Key)
		if !last.Less(pos) {
			t.Fatalf("ListPublic(%+v, %d) returned %s after %+v: not strictly increasing after the cursor", after, limit, m.Key, last)
		}
		if !isPublicListed(m) {
			t.Errorf("ListPublic(%+v, %d) returned %s with Listed %v, Visibility %q", after, limit, m.Key, m.Listed, m.Visibility)
		}
		last = pos
	}
	if p.More && !after.Less(p.Next) {
		t.Fatalf("ListPublic(%+v, %d): More with Next %+v, which does not move forward", after, limit, p.Next)
	}
	return p
}

// listPublicAll pages through ListPublic from after, limit per page, and
// returns the keys in order.
func (h *harness) listPublicAll(t *testing.T, after store.PublicPosition, limit int) []string {
	t.Helper()
	var keys []string
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatalf("ListPublic(%+v, %d): no end after %d pages", after, limit, i)
		}
		p := h.listPublic(t, after, limit)
		for _, m := range p.Items {
			keys = append(keys, m.Key.String())
		}
		if !p.More {
			return keys
		}
		after = p.Next
	}
}

// wantPublic checks that ListPublic, paged with a few limits, gives want.
func (h *harness) wantPublic(t *testing.T, what string, want []store.Key) {
	t.Helper()
	ws := keyStrings(want)
	for _, limit := range []int{1, 2, 100} {
		if diff := cmp.Diff(ws, h.listPublicAll(t, store.PublicPosition{}, limit), cmpEmpty); diff != "" {
			t.Errorf("ListPublic %s, limit %d (-want +got):\n%s", what, limit, diff)
		}
	}
}

// testListPublic is a table of listing cases run in sequence on one store
// (gocyclo 31: one branch per case's check), so that each builds on the
// objects the previous ones wrote.
func testListPublic(t *testing.T, h *harness) {
	pl := h.b
	if p := h.listPublic(t, store.PublicPosition{}, 10); len(p.Items) != 0 || p.More {
		t.Errorf("ListPublic of an empty store = %d items, More %v; want none", len(p.Items), p.More)
	}

	// Tenants and schemes whose byte order differs from a segment-wise
	// order ("t1" < "t1-x" < "t10"), every mix of visibility and listing.
	var all, want []store.Key
	i := 0
	for _, tenant := range []string{"t1", "t10", "t1-x"} {
		for _, scheme := range []string{"a", "a+b", "a-b", "b"} {
			for _, p := range []string{"A", "a", "a-b", "a/b", "a~"} {
				k := store.MustKey(tenant, scheme, p)
				o := h.obj(k, "body of "+k.String())
				o.Visibility = []store.Visibility{store.Public, store.Private}[i%2]
				o.Listed = i%3 != 1
				h.put(t, o, store.Cond{})
				all = append(all, k)
				if isPublicListed(o.Meta) {
					want = append(want, k)
				}
				i++
			}
		}
	}
	// A tenant with nothing public, and one between the others.
	for _, k := range []store.Key{store.MustKey("t2", "a", "x"), store.MustKey("t10-private", "a", "x")} {
		h.put(t, h.obj(k, "private"), store.Cond{})
		all = append(all, k)
	}
	unlisted := store.MustKey("t0", "a", "x")
	o := h.obj(unlisted, "unlisted")
	o.Visibility, o.Listed = store.Public, false
	h.put(t, o, store.Cond{})
	all = append(all, unlisted)

	slices.SortFunc(want, comparePublic)
	ws := keyStrings(want)
	if len(ws) < 10 {
		t.Fatalf("test setup: %d public listed objects, want more", len(ws))
	}
	for _, limit := range []int{1, 2, 3, 7, len(ws) - 1, len(ws), len(ws) + 1, 1000} {
		if diff := cmp.Diff(ws, h.listPublicAll(t, store.PublicPosition{}, limit)); diff != "" {
			t.Errorf("ListPublic paging with limit %d (-want +got):\n%s", limit, diff)
		}
	}

	// More is exact.
	if p := h.listPublic(t, store.PublicPosition{}, len(ws)); len(p.Items) == len(ws) && p.More {
		t.Errorf("ListPublic(limit %d) of %d objects: More = true, want false", len(ws), len(ws))
	}
	if p := h.listPublic(t, store.PublicPosition{}, len(ws)-1); !p.More {
		t.Errorf("ListPublic(limit %d) of %d objects: More = false, want true", len(ws)-1, len(ws))
	}
	if p := h.listPublic(t, publicPosOf(want[len(want)-1]), 5); len(p.Items) != 0 || p.More {
		t.Errorf("ListPublic(after the last object) = %d items, More %v; want none", len(p.Items), p.More)
	}

	// Items are what Stat returns.
	p := h.listPublic(t, store.PublicPosition{}, 1000)
	for _, m := range p.Items {
		checkSame(t, fmt.Sprintf("ListPublic(%s)", m.Key), m, h.stat(t, m.Key))
	}

	// From every object's position, and from positions between objects.
	for i, k := range want {
		got := h.listPublicAll(t, publicPosOf(k), 4)
		if diff := cmp.Diff(ws[i+1:], got, cmpEmpty); diff != "" {
			t.Errorf("ListPublic(after %s) (-want +got):\n%s", k, diff)
		}
	}
	for _, k := range all {
		if isPublicListed(h.stat(t, k)) {
			continue
		}
		after := publicPosOf(k)
		var rest []string
		for _, w := range want {
			if after.Less(publicPosOf(w)) {
				rest = append(rest, w.String())
			}
		}
		if diff := cmp.Diff(rest, h.listPublicAll(t, after, 3), cmpEmpty); diff != "" {
			t.Errorf("ListPublic(after private or unlisted %s) (-want +got):\n%s", k, diff)
		}
	}
	for _, after := range []store.PublicPosition{
		{Tenant: "t0"},
		{Tenant: "t1"},
		{Tenant: "t1", Scheme: "a"},
		{Tenant: "t1", Scheme: "a", Path: "zzz"},
		{Tenant: "t1", Scheme: "a+"},
		{Tenant: "t1", Scheme: "a-b", Path: "a/"},
		{Tenant: "t1", Scheme: "zzz"},
		{Tenant: "t1-"},
		{Tenant: "t1-x", Scheme: "a-b", Path: "a-b"},
		{Tenant: "t10", Scheme: "b", Path: "a~"},
		{Tenant: "t100"},
		{Tenant: "t2"},
		{Tenant: "zzz"},
		{Tenant: "t1", Scheme: "a", Path: "a\x00"},
		{Tenant: "t1!", Scheme: "a"},
		{Tenant: "t1 "},
		{Tenant: "t1\x00", Scheme: "\x00", Path: "\x00"},
	} {
		var rest []string
		for _, w := range want {
			if after.Less(publicPosOf(w)) {
				rest = append(rest, w.String())
			}
		}
		for _, limit := range []int{2, 100} {
			if diff := cmp.Diff(rest, h.listPublicAll(t, after, limit), cmpEmpty); diff != "" {
				t.Errorf("ListPublic(after %+q, limit %d) (-want +got):\n%s", after, limit, diff)
			}
		}
	}

	// Bad limits and canceled contexts fail.
	for _, limit := range []int{0, -1} {
		if _, err := pl.ListPublic(h.ctx, store.PublicPosition{}, limit); err == nil {
			t.Errorf("ListPublic(limit %d) = nil error, want an error", limit)
		}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	_, err := pl.ListPublic(ctx, store.PublicPosition{}, 10)
	wantErr(t, "ListPublic(canceled)", err, context.Canceled)
}

func testListPublicChanges(t *testing.T, h *harness) {
	k := store.MustKey("t1", "report", "doc")
	other := store.MustKey("t10", "report", "doc")
	put := func(vis store.Visibility, listed bool, body string, cond store.Cond) store.Meta {
		t.Helper()
		o := h.obj(k, body)
		o.Visibility, o.Listed = vis, listed
		m, _ := h.put(t, o, cond)
		return m
	}
	po := h.obj(other, "other")
	po.Visibility = store.Public
	h.put(t, po, store.Cond{})

	m := put(store.Public, true, "v1", store.CreateOnly())
	h.wantPublic(t, "after a public create", []store.Key{k, other})

	m = put(store.Private, true, "v2", store.Cond{})
	h.wantPublic(t, "after an Always put made it private", []store.Key{other})

	m = put(store.Public, true, "v3", store.Matching(m.SHA256))
	h.wantPublic(t, "after an IfMatch put made it public", []store.Key{k, other})

	// A failed write changes nothing.
	o := h.obj(k, "v4")
	_, _, err := h.b.Put(h.ctx, o, store.CreateOnly())
	wantErr(t, "Put(IfNone) of a private object over a public one", err, store.ErrPreconditionFailed)
	_, _, err = h.b.Put(h.ctx, o, store.Matching(store.Sum([]byte("stale"))))
	wantErr(t, "Put(IfMatch stale) of a private object over a public one", err, store.ErrPreconditionFailed)
	h.wantPublic(t, "after failed private puts", []store.Key{k, other})

	m = put(store.Private, true, "v5", store.Matching(m.SHA256))
	h.wantPublic(t, "after an IfMatch put made it private", []store.Key{other})

	m = put(store.Public, true, "v6", store.Cond{})
	h.wantPublic(t, "after an Always put made it public", []store.Key{k, other})
	checkSame(t, "ListPublic item after a replace", h.listPublic(t, store.PublicPosition{}, 1).Items[0], m)

	m = put(store.Public, false, "v7", store.Cond{})
	h.wantPublic(t, "after an Always put unlisted it", []store.Key{other})

	m = put(store.Public, true, "v8", store.Matching(m.SHA256))
	h.wantPublic(t, "after an IfMatch put listed it", []store.Key{k, other})

	m = put(store.Public, false, "v9", store.Matching(m.SHA256))
	h.wantPublic(t, "after an IfMatch put unlisted it", []store.Key{other})

	m = put(store.Public, true, "v10", store.Cond{})
	if err := h.b.Delete(h.ctx, k, store.Matching(store.Sum([]byte("stale")))); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Errorf("Delete(%s, IfMatch stale) = %v, want %v", k, err, store.ErrPreconditionFailed)
	}
	h.wantPublic(t, "after a failed delete", []store.Key{k, other})
	if err := h.b.Delete(h.ctx, k, store.Matching(m.SHA256)); err != nil {
		t.Fatalf("Delete(%s, IfMatch) = %v", k, err)
	}
	h.wantPublic(t, "after an IfMatch delete", []store.Key{other})

	put(store.Public, true, "v11", store.CreateOnly())
	h.wantPublic(t, "after a create over a deleted key", []store.Key{k, other})
	if err := h.b.Delete(h.ctx, k, store.Cond{}); err != nil {
		t.Fatalf("Delete(%s) = %v", k, err)
	}
	h.wantPublic(t, "after a delete", []store.Key{other})
	if err := h.b.Delete(h.ctx, other, store.Cond{}); err != nil {
		t.Fatalf("Delete(%s) = %v", other, err)
	}
	h.wantPublic(t, "after deleting everything", nil)

	// Changes between pages: an object after the cursor turns private,
	// another appears after it.
	var keys []store.Key
	for i := range 6 {
		k := store.MustKey(fmt.Sprintf("p%d", i), "report", "x")
		o := h.obj(k, "x")
		o.Visibility = store.Public
		h.put(t, o, store.Cond{})
		keys = append(keys, k)
	}
	p := h.listPublic(t, store.PublicPosition{}, 2)
	if len(p.Items) != 2 || !p.More {
		t.Fatalf("ListPublic(limit 2) of 6 = %d items, More %v; want 2, true", len(p.Items), p.More)
	}
	hidden := h.obj(keys[3], "now private")
	h.put(t, hidden, store.Cond{})
	added := store.MustKey("p4", "report", "y")
	ao := h.obj(added, "added")
	ao.Visibility = store.Public
	h.put(t, ao, store.CreateOnly())
	got := keyStrings([]store.Key{keys[0], keys[1]})
	got = append(got, h.listPublicAll(t, p.Next, 2)...)
	want := keyStrings([]store.Key{keys[0], keys[1], keys[2], keys[4], added, keys[5]})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListPublic with changes between pages (-want +got):\n%s", diff)
	}
}

func testListPublicExpiry(t *testing.T, h *harness) {
	stays := store.MustKey("t1", "report", "a")
	exp := store.MustKey("t1", "report", "z-exp")
	exp2 := store.MustKey("t10", "report", "exp")
	for _, k := range []store.Key{stays, exp, exp2} {
		o := h.obj(k, "v1 of "+k.String())
		o.Visibility = store.Public
		if k != stays {
			o.Expires = epoch.Add(time.Minute)
		}
		h.put(t, o, store.CreateOnly())
	}
	h.clock.Set(epoch.Add(time.Minute - time.Millisecond))
	h.wantPublic(t, "before expiry", []store.Key{stays, exp, exp2})

	h.clock.Set(epoch.Add(time.Minute)) // Expires == now: expired
	h.wantPublic(t, "after expiry", []store.Key{stays})
	// Only expired objects follow: More is false.
	if p := h.listPublic(t, store.PublicPosition{}, 1); len(p.Items) != 1 || p.More {
		t.Errorf("ListPublic(limit 1) with only expired objects after the first = %d items, More %v; want 1, false", len(p.Items), p.More)
	}

	// Re-created as private, an expired public object stays out.
	h.clock.Advance(time.Second)
	h.put(t, h.obj(exp, "v2 private"), store.CreateOnly())
	h.wantPublic(t, "after re-creating an expired key as private", []store.Key{stays})
	h.clock.Advance(time.Hour)
	h.wantPublic(t, "an hour later", []store.Key{stays})

	// Re-created as public with Always, it comes back once, new.
	o := h.obj(exp2, "v2 public")
	o.Visibility = store.Public
	m, replaced := h.put(t, o, store.Cond{})
	if replaced {
		t.Errorf("Put(%s, Always) over an expired object: replaced = true, want false", exp2)
	}
	h.wantPublic(t, "after re-creating an expired key as public", []store.Key{stays, exp2})
	p := h.listPublic(t, publicPosOf(stays), 10)
	if len(p.Items) != 1 {
		t.Fatalf("ListPublic(after %s) = %d items, want 1", stays, len(p.Items))
	}
	checkSame(t, fmt.Sprintf("ListPublic(%s) after re-creation", exp2), p.Items[0], m)
}

func testListPublicConcurrent(t *testing.T, h *harness) {
	pl := h.b
	const workers, rounds = 8, 8
	keys := []store.Key{
		store.MustKey("t1", "report", "shared"),
		store.MustKey("t1", "report", "shared/2"),
		store.MustKey("t1-x", "a", "shared"),
		store.MustKey("t10", "a+b", "shared"),
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				k := keys[r.IntN(len(keys))]
				o := newObj(k, fmt.Appendf(nil, "worker %d round %d", w, i), h.clock.Now())
				o.Visibility = []store.Visibility{store.Public, store.Private}[r.IntN(2)]
				o.Listed = r.IntN(4) != 0
				var err error
				switch r.IntN(4) {
				case 0: // bound to what is there
					cur, serr := h.b.Stat(h.ctx, k)
					if serr != nil {
						_, _, err = h.b.Put(h.ctx, o, store.CreateOnly())
					} else {
						_, _, err = h.b.Put(h.ctx, o, store.Matching(cur.SHA256))
					}
				case 1:
					if r.IntN(2) == 0 {
						err = h.b.Delete(h.ctx, k, store.Cond{})
					} else {
						_, _, err = h.b.Put(h.ctx, o, store.Cond{})
					}
				default:
					_, _, err = h.b.Put(h.ctx, o, store.Cond{})
				}
				// ErrContended: an unconditional delete that lost every
				// round to the other workers (a loaded machine makes it likely).
				if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrContended) {
					t.Errorf("write of %s = %v", k, err)
					return
				}
				p, err := pl.ListPublic(h.ctx, store.PublicPosition{}, 100)
				if err != nil {
					t.Errorf("ListPublic under load = %v", err)
					return
				}
				for j, m := range p.Items {
					if !isPublicListed(m) {
						t.Errorf("ListPublic under load returned %s with Listed %v, Visibility %q", m.Key, m.Listed, m.Visibility)
					}
					if j > 0 && !publicPosOf(p.Items[j-1].Key).Less(publicPosOf(m.Key)) {
						t.Errorf("ListPublic under load: %s before %s", p.Items[j-1].Key, m.Key)
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()

	// The final state: ListPublic is the filter of what is stored.
	var want []store.Key
	for _, k := range keys {
		m, err := h.b.Stat(h.ctx, k)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Fatalf("Stat(%s) = %v", k, err)
		case isPublicListed(m):
			want = append(want, k)
		}
	}
	slices.SortFunc(want, comparePublic)
	h.wantPublic(t, "after concurrent writes", want)

	// Every key toggled once more, sequentially, still agrees.
	for i, k := range keys {
		o := h.obj(k, fmt.Sprintf("final %d", i))
		o.Visibility = []store.Visibility{store.Public, store.Private}[i%2]
		h.put(t, o, store.Cond{})
	}
	want = []store.Key{keys[0], keys[2]}
	slices.SortFunc(want, comparePublic)
	h.wantPublic(t, "after the final writes", want)
}
