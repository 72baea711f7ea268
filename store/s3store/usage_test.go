package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

func usageObj(k store.Key, n int) *store.Object {
	return sweepObject(k, strings.Repeat("u", n), time.Now(), time.Time{}, false)
}

func wantUsage(t *testing.T, s *Store, tenant string, want store.Usage) {
	t.Helper()
	got, err := s.Usage(t.Context(), tenant)
	if err != nil || got != want {
		t.Fatalf("Usage(%s) = %+v, %v; want %+v", tenant, got, err, want)
	}
}

// tamper changes the usage object of tenant with fn, as drift would.
func tamper(t *testing.T, s *Store, tenant string, fn func(*usageDoc)) {
	t.Helper()
	if err := s.d.updateUsage(t.Context(), tenant, false, func(d *usageDoc) error { fn(d); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestReserveWithoutWriteOverCounts: a writer that dies between its
// reservation and its object write leaves an over-count (never an
// under-count) that a reconcile keeps while the reservation is young and
// drops once it is stale.
func TestReserveWithoutWriteOverCounts(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "a"), 10), store.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	dead := newIntent(s.d, "t1", store.Quota{Bytes: 30}, newWriteID())
	if err := dead.reserve(ctx, delta{15, 1}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, "t1", store.Usage{Bytes: 25, Objects: 2})
	// The reservation counts against the quota of others.
	_, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "b"), 6), store.Cond{Quota: store.Quota{Bytes: 30}})
	if !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("Put over a pending reservation = %v, want %v", err, store.ErrQuotaExceeded)
	}
	if _, after, err := s.Reconcile(ctx, "t1"); err != nil || after != (store.Usage{Bytes: 25, Objects: 2}) {
		t.Fatalf("Reconcile with a young reservation = %+v, %v; want it kept", after, err)
	}
	tamper(t, s, "t1", func(d *usageDoc) {
		for i := range d.Pending {
			d.Pending[i].At = time.Now().Add(-staleReservation - time.Minute).UnixMilli()
		}
	})
	if _, after, err := s.Reconcile(ctx, "t1"); err != nil || after != (store.Usage{Bytes: 10, Objects: 1}) {
		t.Fatalf("Reconcile with a stale reservation = %+v, %v; want the true 10 bytes in 1 object", after, err)
	}
}

// TestReconcileCorrectsDrift: Reconcile and ReconcileAll set the usage
// object to the true sum, whichever way it drifted, for every tenant,
// including one whose objects are all gone.
func TestReconcileCorrectsDrift(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	for i, n := range []int{3, 5, 7} {
		if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", fmt.Sprint(i)), n), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Put(ctx, usageObj(store.MustKey("t2", "r", "x"), 4), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, store.MustKey("t2", "r", "x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, "t1", store.Usage{Bytes: 15, Objects: 3})
	wantUsage(t, s, "t2", store.Usage{})
	tamper(t, s, "t1", func(d *usageDoc) { d.Committed = delta{1, 1} })
	tamper(t, s, "t2", func(d *usageDoc) { d.Committed = delta{100, 9} })
	wantUsage(t, s, "t1", store.Usage{Bytes: 1, Objects: 1})
	got, err := s.ReconcileAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Reconciled{
		{Tenant: "t1", Before: store.Usage{Bytes: 1, Objects: 1}, After: store.Usage{Bytes: 15, Objects: 3}},
		{Tenant: "t2", Before: store.Usage{Bytes: 100, Objects: 9}, After: store.Usage{}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ReconcileAll = %+v, want %+v", got, want)
	}
	wantUsage(t, s, "t1", store.Usage{Bytes: 15, Objects: 3})
	wantUsage(t, s, "t2", store.Usage{})
	if _, _, err := s.Reconcile(ctx, "T1"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Reconcile(T1) = %v, want %v", err, store.ErrInvalidKey)
	}
}

// TestReconcileDuringWrites: saves and deletes that run while a reconcile
// lists are never lost: usage stays at or above the true sum right after,
// and a quiet reconcile then gives the true sum.
func TestReconcileDuringWrites(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	base := serverOptions(t)
	other := openTest(t, base) // the concurrent writer, same prefix
	ctx := t.Context()
	for i := range 4 {
		if _, _, err := other.Put(ctx, usageObj(store.MustKey("t1", "r", fmt.Sprint(i)), 10), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every time the reconciler lists the tenant, another process saves
	// one new object (which sorts before and after the listing's keys)
	// and deletes one.
	var lists atomic.Int32
	var hookErr error
	var mu sync.Mutex
	opts := base
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Query().Has("list-type") && strings.HasSuffix(req.URL.Query().Get("prefix"), "/t1/") {
				n := lists.Add(1)
				mu.Lock()
				if _, _, err := other.Put(ctx, usageObj(store.MustKey("t1", "r", fmt.Sprintf("new%d", n)), 7), store.Cond{}); err != nil {
					hookErr = err
				}
				if err := other.Delete(ctx, store.MustKey("t1", "r", fmt.Sprint(n-1)), store.Cond{}); err != nil {
					hookErr = err
				}
				mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	}
	s, err := openOptions(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Drift first, so that the reconcile has something to correct.
	tamper(t, other, "t1", func(d *usageDoc) { d.Committed = delta{0, 0} })
	_, after, err := s.Reconcile(ctx, "t1")
	if err != nil || hookErr != nil {
		t.Fatalf("Reconcile = %v; concurrent writes: %v", err, hookErr)
	}
	if lists.Load() != 1 {
		t.Fatalf("%d listings, want 1", lists.Load())
	}
	// True now: 3 objects of 10 bytes and one of 7.
	truth := store.Usage{Bytes: 37, Objects: 4}
	if after.Bytes < truth.Bytes || after.Objects < truth.Objects {
		t.Fatalf("Reconcile during writes = %+v, under the true %+v", after, truth)
	}
	if u, _ := other.Usage(ctx, "t1"); u.Bytes < truth.Bytes || u.Objects < truth.Objects {
		t.Fatalf("Usage after = %+v, under the true %+v", u, truth)
	}
	// A quiet reconcile (the hook writes again, before the listing, so
	// the count sees it: the truth moves to 34 bytes in 4 objects).
	_, after, err = s.Reconcile(ctx, "t1")
	if err != nil || hookErr != nil {
		t.Fatalf("Reconcile = %v; concurrent writes: %v", err, hookErr)
	}
	truth = store.Usage{Bytes: 34, Objects: 4}
	if after.Bytes < truth.Bytes || after.Objects < truth.Objects {
		t.Fatalf("second Reconcile = %+v, under the true %+v", after, truth)
	}
	other.d.usage.mu.Lock()
	other.d.usage.entries = nil // forget the cache: read what the reconciler wrote
	other.d.usage.mu.Unlock()
	if _, after, err = other.Reconcile(ctx, "t1"); err != nil || after != truth {
		t.Fatalf("quiet Reconcile = %+v, %v; want %+v", after, err, truth)
	}
}

// TestQuotaTwoStores: two stores (two processes' worth of caches and
// combiners) on one prefix racing for the last bytes of a quota: exactly
// the quota is granted, never more.
func TestQuotaTwoStores(t *testing.T) {
	base := serverOptions(t)
	a, b := openTest(t, base), openTest(t, base)
	ctx := t.Context()
	const workers, size = 8, 100
	q := store.Quota{Bytes: 10 * size}
	var wg sync.WaitGroup
	var won atomic.Int32
	for i, s := range []*Store{a, b} {
		for w := range workers {
			wg.Go(func() {
				k := store.MustKey("t1", "r", fmt.Sprintf("s%dw%d", i, w))
				_, _, err := s.Put(ctx, usageObj(k, size), store.Cond{Kind: store.IfNone, Quota: q})
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, store.ErrQuotaExceeded):
					t.Errorf("Put(%s) = %v", k, err)
				}
			})
		}
	}
	wg.Wait()
	if won.Load() != 10 {
		t.Errorf("%d Puts of %d bytes won under a quota of %d, want 10", won.Load(), size, q.Bytes)
	}
	wantUsage(t, a, "t1", store.Usage{Bytes: 10 * size, Objects: 10})
	if _, after, err := b.Reconcile(ctx, "t1"); err != nil || after != (store.Usage{Bytes: 10 * size, Objects: 10}) {
		t.Errorf("Reconcile = %+v, %v", after, err)
	}
}

// TestUsagePutsBatched: concurrent saves of one tenant in one process
// share usage PUTs: fewer than two per save.
func TestUsagePutsBatched(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "first"), 1), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := s.d.usage.puts.Load()
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", fmt.Sprint(i)), 1), store.Cond{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if puts := s.d.usage.puts.Load() - before; puts >= 2*n {
		t.Errorf("%d concurrent saves sent %d usage PUTs, want fewer than %d", n, puts, 2*n)
	}
	wantUsage(t, s, "t1", store.Usage{Bytes: n + 1, Objects: n + 1})
}

// TestStaleCacheDoesNotRefuse: a process whose cached usage object is
// full still saves once another process has freed the room: a refusal
// is decided on a fresh read.
func TestStaleCacheDoesNotRefuse(t *testing.T) {
	base := serverOptions(t)
	a, b := openTest(t, base), openTest(t, base)
	ctx := t.Context()
	q := store.Cond{Quota: store.Quota{Bytes: 10}}
	if _, _, err := a.Put(ctx, usageObj(store.MustKey("t1", "r", "x"), 10), q); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, store.MustKey("t1", "r", "x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Put(ctx, usageObj(store.MustKey("t1", "r", "y"), 10), q); err != nil {
		t.Fatalf("Put into the room another process freed = %v, want nil", err)
	}
	wantUsage(t, b, "t1", store.Usage{Bytes: 10, Objects: 1})
}

// TestCommitAfterSave: a save that only adds returns without waiting for
// its commit, and the usage it reports meanwhile is already right; a
// reconcile by another process that lists while the commit is still on
// its way, before it lands or while it lands, counts the object once, not
// once in the listing and again as a pending or committed write.
func TestCommitAfterSave(t *testing.T) {
	for _, when := range []string{"after the reconcile", "during the listing"} {
		t.Run(when, func(t *testing.T) {
			t.Setenv("AWS_CA_BUNDLE", "")
			base := serverOptions(t)
			ctx := t.Context()
			// a's usage PUTs wait on release once its PUT of the object
			// "late" has answered: its commit is held back.
			var wrote atomic.Bool
			release := make(chan struct{})
			opts := base
			opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "!usage") && wrote.Load() {
						<-release
					}
					resp, err := next.RoundTrip(req)
					if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "late") && err == nil {
						wrote.Store(true)
					}
					return resp, err
				})
			}
			a, err := openOptions(t, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b := openTest(t, base)
			if _, _, err := a.Put(ctx, usageObj(store.MustKey("t1", "r", "early"), 10), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
			if !a.d.flushUsage(10 * time.Second) {
				t.Fatal("the first commit did not land")
			}
			saved := make(chan error, 1)
			go func() {
				_, _, err := a.Put(ctx, usageObj(store.MustKey("t1", "r", "late"), 20), store.CreateOnly())
				saved <- err
			}()
			select {
			case err := <-saved:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				close(release)
				t.Fatal("the save waited for its commit")
			}
			truth := store.Usage{Bytes: 30, Objects: 2}
			wantUsage(t, b, "t1", truth)
			if when == "during the listing" {
				// b's listing runs after a's commit has landed inside b's epoch.
				lister := base
				lister.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
					var once sync.Once
					return roundTripFunc(func(req *http.Request) (*http.Response, error) {
						if req.Method == http.MethodGet && req.URL.Query().Has("list-type") {
							once.Do(func() {
								close(release)
								if !a.d.flushUsage(10 * time.Second) {
									t.Error("the held commit did not land")
								}
							})
						}
						return next.RoundTrip(req)
					})
				}
				b = openTest(t, lister)
			}
			if _, after, err := b.Reconcile(ctx, "t1"); err != nil || after != truth {
				t.Fatalf("Reconcile with a commit %s = %+v, %v; want %+v", when, after, err, truth)
			}
			if when == "after the reconcile" {
				close(release)
				if !a.d.flushUsage(10 * time.Second) {
					t.Fatal("the held commit did not land")
				}
			}
			wantUsage(t, b, "t1", truth)
			doc, _, err := b.d.readUsage(ctx, b.d.usageKey("t1"))
			if err != nil || len(doc.Pending) != 0 || doc.Committed != (delta{30, 2}) {
				t.Fatalf("usage object after the commit = %+v, %v; want 30 bytes in 2 objects committed, nothing pending", doc, err)
			}
		})
	}
}

// TestCloseWaitsForWrites: Close while a save's object PUT is in flight
// waits for the save and then for the commit it queues (before, Close saw
// no queued commit and returned, and the commit went out after it).
func TestCloseWaitsForWrites(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	opts := serverOptions(t)
	hold := make(chan struct{})
	var held atomic.Bool
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "slow") {
				held.Store(true)
				<-hold
			}
			return next.RoundTrip(req)
		})
	}
	s, err := openOptions(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "first"), 5), store.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	s.d.flushUsage(5 * time.Second)
	saved := make(chan error, 1)
	go func() {
		_, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "slow"), 7), store.CreateOnly())
		saved <- err
	}()
	for !held.Load() {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	var putsAtClose atomic.Int64
	go func() { err := s.Close(); putsAtClose.Store(s.d.usage.puts.Load()); closed <- err }()
	time.Sleep(20 * time.Millisecond)
	close(hold)
	cerr := <-closed
	perr := <-saved
	time.Sleep(500 * time.Millisecond)
	t.Logf("Close=%v Put=%v usage PUTs at Close %d, 500ms later %d", cerr, perr, putsAtClose.Load(), s.d.usage.puts.Load())
	if perr == nil && cerr == nil && s.d.usage.puts.Load() > putsAtClose.Load() {
		t.Errorf("Close returned before the commit of a save it let finish: the commit went out after Close")
	}
}

// TestUnknownCreateKeepsReservation is the over-count of
// integration/partition_test.go TestPartitionS3Quota: a create whose PUT
// never reached the server fails with an unknown outcome (no answer, so
// it may have landed), and keeps its reservation. Reconcile counts it on
// top of what the listing shows (the PUT may still land: it was sent, and
// nothing fences it) until the reservation is staleReservation old; the
// object itself is neither listed, read nor counted by the listing.
func TestUnknownCreateKeepsReservation(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	opts := serverOptions(t)
	opts.Prefix = uniquePrefix(t)
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "lost") {
				return nil, errors.New("injected: the link is down")
			}
			return next.RoundTrip(req)
		})
	}
	s := openTest(t, opts)
	ctx := t.Context()
	q := store.Cond{Quota: store.Quota{Bytes: 1000}}
	if _, _, err := s.Put(ctx, usageObj(store.MustKey("t1", "r", "kept"), 10), q); err != nil {
		t.Fatal(err)
	}
	lost := store.MustKey("t1", "r", "lost")
	if _, _, err := s.Put(ctx, usageObj(lost, 100), q); err == nil || errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("Put whose PUT never got an answer = %v, want a failure of unknown outcome", err)
	}
	if _, err := s.Stat(ctx, lost); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of the create that did not land = %v, want %v", err, store.ErrNotFound)
	}
	p, err := s.List(ctx, store.ListQuery{Tenant: "t1", Limit: 10})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("List = %d items, %v; want the one stored object", len(p.Items), err)
	}
	if _, after, err := s.Reconcile(ctx, "t1"); err != nil || after != (store.Usage{Bytes: 110, Objects: 2}) {
		t.Fatalf("Reconcile after a create of unknown outcome = %+v, %v; want the listed 10 bytes in 1 object plus its reservation of 100 bytes in 1", after, err)
	}
	tamper(t, s, "t1", func(d *usageDoc) {
		for i := range d.Pending {
			d.Pending[i].At = time.Now().Add(-staleReservation - time.Minute).UnixMilli()
		}
	})
	if _, after, err := s.Reconcile(ctx, "t1"); err != nil || after != (store.Usage{Bytes: 10, Objects: 1}) {
		t.Fatalf("Reconcile once the reservation is stale = %+v, %v; want the listed 10 bytes in 1 object", after, err)
	}
}
