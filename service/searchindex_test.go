package service

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
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
	for _, h := range r.Value.Hits {
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
// for MaintainIndex, and the save itself stands.
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
	if err := svc.WaitIndexed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := svc.IndexFailures(); n != 1 {
		t.Errorf("IndexFailures = %d, want 1", n)
	}
	if _, left := svc.MaintainIndex(ctx); left != 1 {
		t.Errorf("MaintainIndex on a closed index left %d, want 1", left)
	}
}

func TestSearchRefusesBadInput(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	for _, a := range []toolapi.SearchResourcesArgs{
		{Query: "-only"}, {Query: "or"}, {Query: "OR"}, {Query: `""`}, {Query: "-"}, {CreatedAfter: "yesterday"}, {Cursor: "x"}, {MIMEType: "text"}, {Limit: new(int)},
		{MIMEType: "*/*"}, {MIMEType: "*/plain"},
	} {
		_, f := svc.SearchResources(context.Background(), alice, &a)
		if f == nil || f.ErrorKind != KindValidation {
			t.Errorf("SearchResources(%+v) = %v, want a validation_error", a, f)
		}
	}
	// RFC 3339 allows a lower-case t and z.
	if _, f := svc.SearchResources(context.Background(), alice, &toolapi.SearchResourcesArgs{Query: "x", CreatedAfter: "2026-03-01t00:00:00z"}); f != nil {
		t.Errorf("createdAfter with a lower-case t and z = %v, want accepted", f)
	}
}

// TestSearchFailureNamesItsFieldOnce: a refused search says its field
// once, as "field: what is wrong", with the field the caller passed (not
// "query: query: invalid: …" or "cursor: invalid: cursor: …").
func TestSearchFailureNamesItsFieldOnce(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	many := strings.Repeat("w ", index.MaxTerms+1)
	for _, tc := range []struct {
		a      toolapi.SearchResourcesArgs
		field  string
		reason string // what FieldErrors[0].Message starts with
	}{
		{toolapi.SearchResourcesArgs{Query: "-only"}, "query", "a query needs a word that is not excluded"},
		{toolapi.SearchResourcesArgs{Query: "or"}, "query", "a query needs a word of letters or digits"},
		{toolapi.SearchResourcesArgs{Query: strings.Repeat("x", index.MaxTokenBytes+1)}, "query", "the word"},
		{toolapi.SearchResourcesArgs{Query: "x", Cursor: "x"}, "cursor", "not a cursor of this query"},
		{toolapi.SearchResourcesArgs{MIMEType: "text"}, "mimeType", `"text": want type/subtype`},
		{toolapi.SearchResourcesArgs{Scheme: "Report"}, "scheme", `"Report": `},
		{toolapi.SearchResourcesArgs{Prefix: "a b"}, "prefix", `"a b": only the characters of a path`},
		{toolapi.SearchResourcesArgs{Labels: []string{"a", "*"}}, "labels[1]", "has no word"},
		{toolapi.SearchResourcesArgs{Labels: []string{"a", "x or -y"}}, "labels[1]", "`or` cannot join"},
		{toolapi.SearchResourcesArgs{CreatedAfter: "2026-03-02T00:00:00Z", CreatedBefore: "2026-03-01T00:00:00Z"}, "createdAfter", "must be before createdBefore"},
		{toolapi.SearchResourcesArgs{Query: many}, "query", "33 terms"},
	} {
		_, f := svc.SearchResources(context.Background(), alice, &tc.a)
		if f == nil || f.ErrorKind != KindValidation || len(f.FieldErrors) != 1 {
			t.Errorf("SearchResources(%+v) = %+v, want a validation_error of %s", tc.a, f, tc.field)
			continue
		}
		fe := f.FieldErrors[0]
		if fe.Field != tc.field || !strings.HasPrefix(fe.Message, tc.reason) {
			t.Errorf("SearchResources(%+v): field error %+v, want field %q and a message starting %q", tc.a, fe, tc.field, tc.reason)
		}
		for _, stutter := range []string{"invalid:", "too costly:", fe.Field + ":", "mediaType"} {
			if strings.Contains(fe.Message, stutter) {
				t.Errorf("SearchResources(%+v): field message %q repeats %q", tc.a, fe.Message, stutter)
			}
		}
		if strings.Count(f.Message, fe.Field+":") != 1 || strings.Contains(f.Message, "invalid:") || strings.Count(f.Message, "too costly") > 1 {
			t.Errorf("SearchResources(%+v): message %q, want its field %q said once", tc.a, f.Message, fe.Field)
		}
	}
}

// TestSearchLimitIsBounded: limit is 1 to index.MaxLimit, as the
// inputSchema says; a limit outside is refused, never capped.
func TestSearchLimitIsBounded(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	for _, n := range []int{0, -1, index.MaxLimit + 1, 1000, 1 << 40} {
		_, f := svc.SearchResources(context.Background(), alice, &toolapi.SearchResourcesArgs{Query: "x", Limit: &n})
		want := fmt.Sprintf("limit: must be between 1 and %d", index.MaxLimit)
		if f == nil || f.ErrorKind != KindValidation || len(f.FieldErrors) != 1 || f.FieldErrors[0].Field != "limit" || f.Message != want {
			t.Errorf("SearchResources(limit %d) = %v, want the validation_error %q", n, f, want)
		}
	}
	for _, n := range []int{1, index.MaxLimit} {
		if _, f := svc.SearchResources(context.Background(), alice, &toolapi.SearchResourcesArgs{Query: "x", Limit: &n}); f != nil {
			t.Errorf("SearchResources(limit %d) = %v, want accepted", n, f)
		}
	}
}

// TestMaintainIndexRemovesExpired: the sweep's part removes the entries
// of expired resources of every tenant, and keeps the entry of a resource
// saved again after it expired.
func TestMaintainIndexRemovesExpired(t *testing.T) {
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	st := memstore.New(memstore.Options{Now: now})
	x := index.New(memindex.New(), index.Options{Now: now})
	t.Cleanup(func() { x.Close() })
	svc, err := New(Options{Store: st, Index: x, Now: now, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	save := func(tenant, path, retention string) {
		t.Helper()
		if _, f := svc.SaveReport(ctx, tenant, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text("kept words"), SaveOptions: toolapi.SaveOptions{Retention: json.RawMessage(`"` + retention + `"`)}}); f != nil {
			t.Fatal(f)
		}
	}
	save(alice, "short", "PT1M")
	save("bob", "short", "PT1M")
	save(alice, "again", "PT1M")
	save(alice, "long", "PT10H")
	if err := svc.WaitIndexed(ctx, time.Minute); err != nil { // indexed before they expire
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Minute)
	save(alice, "again", "PT10H") // expired, so a create
	if swept, left := svc.MaintainIndex(ctx); swept != 2 || left != 0 {
		t.Errorf("MaintainIndex = %d swept, %d pending; want 2 and 0", swept, left)
	}
	var got []string
	if err := x.Walk(ctx, func(e index.Entry) error { got = append(got, e.URI()); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"report://alice/again", "report://alice/long"}; !slices.Equal(got, want) {
		t.Errorf("entries after the sweep = %v, want %v", got, want)
	}
}

// TestCheckIndexFindsAndRepairs: CheckIndex names a missing, a stale and
// a changed entry, leaves them without Repair, and repairs them with it.
func TestCheckIndexFindsAndRepairs(t *testing.T) {
	svc, x, st := newSearchEnv(t)
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: p, MIMEType: "text/plain", Text: text("body " + p)}); f != nil {
			t.Fatal(f)
		}
	}
	if err := svc.WaitIndexed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	walk := func(ctx context.Context, fn func(m *store.Meta) error) error {
		page, err := st.List(ctx, store.ListQuery{Tenant: alice, Limit: 100})
		if err != nil {
			return err
		}
		for i := range page.Items {
			if err := fn(&page.Items[i]); err != nil {
				return err
			}
		}
		return nil
	}
	// Plant: b missing, a stale entry, c's entry of another version.
	if err := x.Delete(ctx, index.Ref{Tenant: alice, Scheme: "report", Path: "b"}); err != nil {
		t.Fatal(err)
	}
	ghost := &index.Document{Ref: index.Ref{Tenant: "bob", Scheme: "report", Path: "gone"}, MediaType: "text/plain", Created: time.Now(), Text: "ghost"}
	old := &index.Document{Ref: index.Ref{Tenant: alice, Scheme: "report", Path: "c"}, MediaType: "text/plain", Created: time.Now(), SHA256: "0000", Text: "old"}
	for _, d := range []*index.Document{ghost, old} {
		if err := x.Put(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	r, err := CheckIndex(ctx, st, x, walk, CheckIndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := IndexReport{Objects: 3, Entries: 3, Missing: 1, Stale: 1, Changed: 1,
		MissingExamples: []string{"report://alice/b"}, StaleExamples: []string{"report://bob/gone"}, ChangedExamples: []string{"report://alice/c"}}
	if !reflect.DeepEqual(*r, want) || r.Consistent() {
		t.Errorf("CheckIndex = %+v, want %+v", *r, want)
	}
	if r, err := CheckIndex(ctx, st, x, walk, CheckIndexOptions{}); err != nil || r.Missing != 1 {
		t.Errorf("a check without Repair changed the index: %+v, %v", r, err)
	}
	if r, err := CheckIndex(ctx, st, x, walk, CheckIndexOptions{Repair: true}); err != nil || r.Indexed != 2 || r.Removed != 1 {
		t.Errorf("CheckIndex with Repair = %+v, %v; want 2 indexed, 1 removed", r, err)
	}
	if r, err := CheckIndex(ctx, st, x, walk, CheckIndexOptions{}); err != nil || !r.Consistent() {
		t.Errorf("after the repair: %+v, %v", r, err)
	}
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "body"}); len(got) != 3 {
		t.Errorf("search after the repair = %v, want all three", got)
	}
	if r, err := CheckIndex(ctx, st, x, walk, CheckIndexOptions{Rebuild: true}); err != nil || r.Indexed != 3 {
		t.Errorf("CheckIndex with Rebuild = %+v, %v; want every object indexed", r, err)
	}
}

// TestSearchErrorsQuoteShort: a refused filter value is quoted short
// (Quote), however long the caller sent it.
func TestSearchErrorsQuoteShort(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	huge := strings.Repeat("x", 1<<20)
	for _, a := range []toolapi.SearchResourcesArgs{{CreatedAfter: huge}, {ExpiresBefore: huge}} {
		_, f := svc.SearchResources(context.Background(), alice, &a)
		if f == nil || f.ErrorKind != KindValidation || len(f.Message) > 300 || !strings.Contains(f.Message, "(1048576 bytes)") {
			t.Errorf("SearchResources with a 1 MB time = %.300v, want a short validation_error", f)
		}
	}
}
