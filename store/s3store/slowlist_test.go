package s3store

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

// TestSlowListingFailsFast: once a prefix's ListObjectsV2 misses the call
// deadline, its pages fail at once (a backend failure that says the
// listing is the bound) for slowListHold, other prefixes are not held, and
// after the hold the service is asked again.
func TestSlowListingFailsFast(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	old := slowListHold
	slowListHold = 1500 * time.Millisecond
	t.Cleanup(func() { slowListHold = old })
	var slow atomic.Bool
	opts := serverOptions(t)
	opts.CallTimeout = 400 * time.Millisecond
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if slow.Load() && req.URL.Query().Get("list-type") == "2" {
				<-req.Context().Done() // a listing that outlasts every deadline
				return nil, req.Context().Err()
			}
			return next.RoundTrip(req)
		})
	}
	s := openTest(t, opts)
	t.Cleanup(func() { slow.Store(false) }) // before openTest's cleanup lists
	ctx := t.Context()
	for _, tenant := range []string{"t1", "t2"} {
		if _, _, err := s.Put(ctx, usageObj(store.MustKey(tenant, "report", "x"), 10), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(tenant string) (time.Duration, error) {
		start := time.Now()
		_, err := s.List(ctx, store.ListQuery{Tenant: tenant, Limit: 10})
		return time.Since(start), err
	}

	slow.Store(true)
	d, err := list("t1")
	if !errors.Is(err, store.ErrSlowListing) || !strings.Contains(err.Error(), "callTimeout") || d < opts.CallTimeout {
		t.Fatalf("List on a listing that misses the deadline = %v after %v, want the deadline's failure naming the bound", err, d)
	}
	d, err = list("t1")
	if !errors.Is(err, store.ErrSlowListing) || d > opts.CallTimeout/2 {
		t.Fatalf("the next List of the prefix = %v after %v, want to fail at once", err, d)
	}
	t.Logf("held: %v (after %v)", err, d)
	if d, err := list("t2"); err == nil || d < opts.CallTimeout {
		t.Errorf("List of another tenant = %v after %v: held by t1's slow listing", err, d)
	}

	slow.Store(false)
	deadline := time.Now().Add(10 * slowListHold)
	for {
		_, err := list("t1")
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrSlowListing) || time.Now().After(deadline) {
			t.Fatalf("List after the listing recovered = %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	page, err := s.List(ctx, store.ListQuery{Tenant: "t1", Limit: 10})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("List after the hold = %d items, %v; want 1", len(page.Items), err)
	}
}
