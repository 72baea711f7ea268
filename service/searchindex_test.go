package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
)

func newSearchEnv(t *testing.T) (*Service, *index.Index, store.Backend) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	x := index.New(memindex.New(), index.Options{})
	t.Cleanup(func() { x.Close() })
	svc, err := New(Options{
		Store: st, Index: x,
		Schemes: []Scheme{
			{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
			{Name: "search", Kind: KindSearch, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc, x, st
}

func searchURIs(t *testing.T, svc *Service, tenant string, a toolapi.SearchResourcesArgs) []string {
	t.Helper()
	r, f := svc.SearchResources(context.Background(), tenant, &a)
	if f != nil {
		t.Fatalf("SearchResources(%q, %+v): %v", tenant, a, f)
	}
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.URI)
	}
	slices.Sort(out)
	return out
}

// TestSearchFollowsTheStore: saves, replaces and deletes through the
// service reach the index after their commit; another tenant's private
// report is never found, its public listed one is.
func TestSearchFollowsTheStore(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	ctx := context.Background()
	save := func(tenant, path, body string, o toolapi.SaveOptions, overwrite bool) {
		t.Helper()
		if _, f := svc.SaveReport(ctx, tenant, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text(body), Overwrite: overwrite, SaveOptions: o}); f != nil {
			t.Fatal(f)
		}
	}
	save(alice, "a", "the quarterly invoice", toolapi.SaveOptions{}, false)
	save("bob", "b", "bob's invoice", toolapi.SaveOptions{}, false)
	save("bob", "pub", "a public invoice", toolapi.SaveOptions{Visibility: "public", Listed: true}, false)
	save("bob", "unlisted", "an unlisted public invoice", toolapi.SaveOptions{Visibility: "public"}, false)
	if got, want := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "invoice"}), []string{"report://alice/a", "report://bob/pub"}; !slices.Equal(got, want) {
		t.Errorf("alice's search = %v, want %v", got, want)
	}
	save(alice, "a", "now about receipts", toolapi.SaveOptions{}, true)
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "receipts"}); !slices.Equal(got, []string{"report://alice/a"}) {
		t.Errorf("after replace = %v", got)
	}
	if _, f := svc.Delete(ctx, alice, &toolapi.DeleteArgs{URI: "report://alice/a"}); f != nil {
		t.Fatal(f)
	}
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "receipts"}); len(got) != 0 {
		t.Errorf("after delete = %v", got)
	}
}

// TestSearchChecksEveryHit: an index entry the store does not back (a
// stale index) is not shown, and is repaired.
func TestSearchChecksEveryHit(t *testing.T) {
	svc, x, _ := newSearchEnv(t)
	ctx := context.Background()
	ghost := &index.Document{Ref: index.Ref{Tenant: alice, Scheme: "report", Path: "gone"}, MediaType: "text/plain", Created: time.Now(), Text: "ghost"}
	if err := x.Put(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "ghost"}); len(got) != 0 {
		t.Errorf("a hit the store does not hold was shown: %v", got)
	}
	if n, _ := x.Count(ctx, alice); n != 0 {
		t.Errorf("the stale entry is still indexed (%d)", n)
	}
}

// TestIndexFailureIsKept: an update the index refuses is counted and kept
// for RetryIndex, and the save itself stands.
func TestIndexFailureIsKept(t *testing.T) {
	svc, x, st := newSearchEnv(t)
	ctx := context.Background()
	x.Close()
	r, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "kept", MIMEType: "text/plain", Text: text("x")})
	if f != nil {
		t.Fatalf("a save failed for its index: %v", f)
	}
	if _, err := st.Stat(ctx, r.Meta.Key); err != nil {
		t.Errorf("the saved object is gone: %v", err)
	}
	if n := svc.IndexFailures(); n != 1 {
		t.Errorf("IndexFailures = %d, want 1", n)
	}
	if left := svc.RetryIndex(ctx); left != 1 {
		t.Errorf("RetryIndex on a closed index left %d, want 1", left)
	}
}

func TestSearchRefusesBadInput(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	for _, a := range []toolapi.SearchResourcesArgs{
		{Query: "-only"}, {CreatedAfter: "yesterday"}, {Cursor: "x"}, {MIMEType: "text"}, {Limit: new(int)},
	} {
		_, f := svc.SearchResources(context.Background(), alice, &a)
		if f == nil || f.ErrorKind != KindValidation {
			t.Errorf("SearchResources(%+v) = %v, want a validation_error", a, f)
		}
	}
}
