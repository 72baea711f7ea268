// Package indextest owns the conformance suite every index.Driver must
// pass, run against the portable index.Index over it, as resourced uses
// it. Each driver's test file calls Run with a constructor of fresh,
// empty drivers; the suite gives every subtest its own driver and a fixed
// clock, and closes the Index when the subtest ends.
//
// What the suite requires beyond the index package's doc comments:
//   - a Put is visible to the next Search (no refresh interval);
//   - Search for a tenant never returns another tenant's document that is
//     not Shared, whatever the query (checked against a model with
//     random documents, tenants named alike, replaces and deletes);
//   - words match whole and case-insensitively, in the text, the title
//     and the labels, as index.Tokens cuts and folds them (full case
//     folding and NFKC: ΣΊΣΥΦΟΣ finds σίσυφος, STRASSE straße, file ﬁle,
//     an NFD café an NFC one, and the other way round);
//   - a title match ranks above a match in a long body only;
//   - paging by cursor returns every hit once, and Total is exact below
//     index.MaxTotal;
//   - Walk reports every document once, with its SHA256; Count agrees.
package indextest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
)

// NewFunc makes a fresh, empty driver for one subtest.
type NewFunc func(t *testing.T) index.Driver

// epoch is the suite's clock.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the conformance suite on drivers made by newDriver.
func Run(t *testing.T, newDriver NewFunc) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, x *index.Index)
	}{
		{"FindsByText", testFindsByText},
		{"FindsByJSONValue", testFindsByJSONValue},
		{"FindsByLabel", testFindsByLabel},
		{"Folding", testFolding},
		{"Syntax", testSyntax},
		{"Filters", testFilters},
		{"ExpiredHidden", testExpiredHidden},
		{"ExpiredListed", testExpiredListed},
		{"Paging", testPaging},
		{"ReplaceAndDelete", testReplaceAndDelete},
		{"Apply", testApply},
		{"TenantIsolation", testTenantIsolation},
		{"CrossTenantRandomized", testCrossTenantRandomized},
		{"Ranking", testRanking},
		{"SnippetAndLines", testSnippetAndLines},
		{"BadQueries", testBadQueries},
		{"WalkAndCount", testWalkAndCount},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := index.New(newDriver(t), index.Options{Now: func() time.Time { return epoch }})
			t.Cleanup(func() {
				if err := x.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, x)
		})
	}
}

// doc builds a private, never-expiring text/plain document.
func doc(tenant, scheme, path, text string) *index.Document {
	return &index.Document{
		Ref:       index.Ref{Tenant: tenant, Scheme: scheme, Path: path},
		MediaType: "text/plain", Created: epoch.Add(-time.Hour), Size: int64(len(text)),
		SHA256: fmt.Sprintf("%064x", len(text)), Text: text,
	}
}

func put(t *testing.T, x *index.Index, docs ...*index.Document) {
	t.Helper()
	for _, d := range docs {
		if err := x.Put(context.Background(), d); err != nil {
			t.Fatalf("Put(%s): %v", d.URI(), err)
		}
	}
}

// uris runs q for tenant, following every cursor, and returns the URIs
// in order.
func uris(t *testing.T, x *index.Index, tenant string, q index.Query) []string {
	t.Helper()
	var out []string
	for range 100 {
		p, err := x.Search(context.Background(), tenant, q)
		if err != nil {
			t.Fatalf("Search(%q, %+v): %v", tenant, q, err)
		}
		for _, h := range p.Hits {
			out = append(out, h.URI())
		}
		if p.Next == "" {
			return out
		}
		q.Cursor = p.Next
	}
	t.Fatalf("Search(%q, %+v): more than 100 pages", tenant, q)
	return nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func wantSet(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if g, w := sorted(got), sorted(want); !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

func testFindsByText(t *testing.T, x *index.Index) {
	put(t, x,
		doc("acme", "report", "a", "The quarterly Invoice run failed for 3 customers."),
		doc("acme", "report", "b", "Nothing to see here."),
		doc("acme", "search", "results/c", "naïve Überprüfung 東京 invoice"),
	)
	wantSet(t, "invoice", uris(t, x, "acme", index.Query{Text: "invoice"}), "report://acme/a", "search://acme/results/c")
	wantSet(t, "INVOICE failed", uris(t, x, "acme", index.Query{Text: "INVOICE failed"}), "report://acme/a")
	wantSet(t, "überprüfung", uris(t, x, "acme", index.Query{Text: "überprüfung"}), "search://acme/results/c")
	wantSet(t, "東京", uris(t, x, "acme", index.Query{Text: "東京"}), "search://acme/results/c")
	wantSet(t, "a word of no document", uris(t, x, "acme", index.Query{Text: "zebra"}))
	wantSet(t, "a part of a word", uris(t, x, "acme", index.Query{Text: "invoi"}))
	wantSet(t, "empty query", uris(t, x, "acme", index.Query{}), "report://acme/a", "report://acme/b", "search://acme/results/c")
}

func testFolding(t *testing.T, x *index.Index) {
	sisyphus := doc("acme", "report", "greek", "ο σίσυφος")
	cafe := doc("acme", "report", "nfc", "un café noir")
	cafeNFD := doc("acme", "report", "nfd", "un cafe\u0301 au lait")
	strasse := doc("acme", "report", "sharp-s", "die Straße")
	strasse.Title = "STRASSE"
	file := doc("acme", "report", "ligature", "the ﬁle of ﬂights")
	labeled := doc("acme", "report", "labeled", "body")
	labeled.Title, labeled.Labels = "ΣΊΣΥΦΟΣ", []string{"Weißbier ﬁle"}
	put(t, x, sisyphus, cafe, cafeNFD, strasse, file, labeled)
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"ΣΊΣΥΦΟΣ", []string{"report://acme/greek", "report://acme/labeled"}},
		{"σίσυφος", []string{"report://acme/greek", "report://acme/labeled"}},
		{"cafe\u0301", []string{"report://acme/nfc", "report://acme/nfd"}},
		{"CAFÉ", []string{"report://acme/nfc", "report://acme/nfd"}},
		{"STRASSE", []string{"report://acme/sharp-s"}},
		{"straße", []string{"report://acme/sharp-s"}},
		{"file", []string{"report://acme/ligature", "report://acme/labeled"}},
		{`"ﬁle of flights"`, []string{"report://acme/ligature"}},
		{"ＦＩＬＥ", []string{"report://acme/ligature", "report://acme/labeled"}},
	} {
		wantSet(t, tc.q, uris(t, x, "acme", index.Query{Text: tc.q}), tc.want...)
	}
	wantSet(t, "labels: weissbier", uris(t, x, "acme", index.Query{Labels: []string{"WEISSBIER"}}), "report://acme/labeled")
	wantSet(t, "labels: σίσυφος", uris(t, x, "acme", index.Query{Labels: []string{"σίσυφος"}}), "report://acme/labeled")
	// The snippet highlights the text's own word.
	p, err := x.Search(context.Background(), "acme", index.Query{Text: "STRASSE", Limit: 1})
	if err != nil || len(p.Hits) != 1 {
		t.Fatalf("Search(STRASSE): %+v, %v", p, err)
	}
	if want := "die " + index.HighlightStart + "Straße" + index.HighlightEnd; p.Hits[0].Snippet != want {
		t.Errorf("Snippet = %q, want %q", p.Hits[0].Snippet, want)
	}
}

func testFindsByJSONValue(t *testing.T, x *index.Index) {
	body := `{"query":"open incidents","total":1,"hits":[{"id":"INC-4711","title":"Payment gateway timeout","snippet":"p99 over 2s"}]}`
	text, complete := index.Extract("application/json", []byte(body), 1<<20)
	if !complete {
		t.Fatalf("Extract of a small JSON body is not complete")
	}
	d := doc("acme", "search", "results/01", text)
	d.MediaType = "application/json"
	put(t, x, d)
	wantSet(t, "a JSON value", uris(t, x, "acme", index.Query{Text: "gateway timeout"}), "search://acme/results/01")
	wantSet(t, "an id value", uris(t, x, "acme", index.Query{Text: "inc-4711"}), "search://acme/results/01")
	wantSet(t, "a JSON key is not text", uris(t, x, "acme", index.Query{Text: "snippet"}))
}

func testFindsByLabel(t *testing.T, x *index.Index) {
	a := doc("acme", "report", "a", "body one")
	a.Title, a.Labels = "Billing dry run", []string{"import of March"}
	b := doc("acme", "report", "b", "billing is mentioned in the body only")
	put(t, x, a, b)
	wantSet(t, "a title word", uris(t, x, "acme", index.Query{Text: "billing"}), "report://acme/a", "report://acme/b")
	wantSet(t, "labels: billing", uris(t, x, "acme", index.Query{Labels: []string{"billing"}}), "report://acme/a")
	wantSet(t, "labels: a description phrase", uris(t, x, "acme", index.Query{Labels: []string{`"of march"`}}), "report://acme/a")
	wantSet(t, "labels and text", uris(t, x, "acme", index.Query{Text: "one", Labels: []string{"dry", "march"}}), "report://acme/a")
	wantSet(t, "labels that do not all match", uris(t, x, "acme", index.Query{Labels: []string{"billing", "april"}}))
}

func testSyntax(t *testing.T, x *index.Index) {
	put(t, x,
		doc("acme", "report", "1", "red green blue"),
		doc("acme", "report", "2", "green red"),
		doc("acme", "report", "3", "yellow blue"),
		doc("acme", "report", "4", "foo-bar baz"),
	)
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{`"red green"`, []string{"1"}},
		{`"green red"`, []string{"2"}},
		{`red -blue`, []string{"2"}},
		{`red or yellow`, []string{"1", "2", "3"}},
		{`blue yellow or green`, []string{"1", "3"}},
		{`-"red green" green`, []string{"2"}},
		{`foo-bar`, []string{"4"}},
		{`"bar foo"`, nil},
		{`bar`, []string{"4"}},
	} {
		var want []string
		for _, p := range tc.want {
			want = append(want, "report://acme/"+p)
		}
		wantSet(t, fmt.Sprintf("query %s", tc.q), uris(t, x, "acme", index.Query{Text: tc.q}), want...)
	}
}

func testFilters(t *testing.T, x *index.Index) {
	mk := func(scheme, path, mt string, created, expires time.Time) *index.Document {
		d := doc("acme", scheme, path, "needle")
		d.MediaType, d.Created, d.Expires = mt, created, expires
		return d
	}
	day := 24 * time.Hour
	put(t, x,
		mk("report", "billing/2026-01/a", "text/markdown", epoch.Add(-10*day), time.Time{}),
		mk("report", "billing/2026-02/b", "application/json", epoch.Add(-5*day), epoch.Add(day)),
		mk("report", "ops/c", "text/csv", epoch.Add(-2*day), epoch.Add(3*day)),
		mk("search", "billing/d", "application/json", epoch.Add(-time.Hour), epoch.Add(10*day)),
	)
	q := func(f func(*index.Query)) []string {
		q := index.Query{Text: "needle"}
		f(&q)
		return uris(t, x, "acme", q)
	}
	a, b, c, d := "report://acme/billing/2026-01/a", "report://acme/billing/2026-02/b", "report://acme/ops/c", "search://acme/billing/d"
	wantSet(t, "scheme", q(func(q *index.Query) { q.Scheme = "search" }), d)
	wantSet(t, "prefix", q(func(q *index.Query) { q.Prefix = "billing/" }), a, b, d)
	wantSet(t, "scheme and prefix", q(func(q *index.Query) { q.Scheme, q.Prefix = "report", "billing/2026-0" }), a, b)
	wantSet(t, "prefix is not a pattern", q(func(q *index.Query) { q.Prefix = "billing/2026-0." }))
	wantSet(t, "media type", q(func(q *index.Query) { q.MediaType = "application/json" }), b, d)
	wantSet(t, "media type, any case, with parameters ignored", q(func(q *index.Query) { q.MediaType = "Text/CSV" }), c)
	wantSet(t, "media type wildcard", q(func(q *index.Query) { q.MediaType = "text/*" }), a, c)
	wantSet(t, "created after", q(func(q *index.Query) { q.CreatedAfter = epoch.Add(-5 * day) }), b, c, d)
	wantSet(t, "created before (exclusive)", q(func(q *index.Query) { q.CreatedBefore = epoch.Add(-5 * day) }), a)
	wantSet(t, "created range", q(func(q *index.Query) { q.CreatedAfter, q.CreatedBefore = epoch.Add(-6*day), epoch.Add(-day) }), b, c)
	wantSet(t, "expires before", q(func(q *index.Query) { q.ExpiresBefore = epoch.Add(5 * day) }), b, c)
	wantSet(t, "expires after", q(func(q *index.Query) { q.ExpiresAfter = epoch.Add(2 * day) }), a, c, d)
	wantSet(t, "everything", q(func(q *index.Query) {
		q.Scheme, q.Prefix, q.MediaType, q.CreatedAfter, q.ExpiresBefore = "report", "billing", "application/*", epoch.Add(-6*day), epoch.Add(2*day)
	}), b)
	// Without text the order is newest first.
	if got, want := uris(t, x, "acme", index.Query{}), []string{d, c, b, a}; !slices.Equal(got, want) {
		t.Errorf("order without text = %v, want %v", got, want)
	}
}

func testExpiredHidden(t *testing.T, x *index.Index) {
	old := doc("acme", "search", "results/old", "needle")
	old.Expires = epoch
	live := doc("acme", "search", "results/live", "needle")
	live.Expires = epoch.Add(time.Millisecond)
	put(t, x, old, live)
	wantSet(t, "at the clock's now", uris(t, x, "acme", index.Query{Text: "needle"}), "search://acme/results/live")
	wantSet(t, "at a later Now", uris(t, x, "acme", index.Query{Text: "needle", Now: epoch.Add(time.Second)}))
	wantSet(t, "at an earlier Now", uris(t, x, "acme", index.Query{Text: "needle", Now: epoch.Add(-time.Second)}),
		"search://acme/results/old", "search://acme/results/live")
}

// testExpiredListed: Expired names the documents of every tenant expired
// at now (at, not only before), none that never expire or expire later,
// and at most limit.
func testExpiredListed(t *testing.T, x *index.Index) {
	ctx := context.Background()
	var want []string
	for i, tn := range []string{"acme", "acme1", "beta"} {
		d := doc(tn, "search", fmt.Sprintf("results/%d", i), "x")
		d.Expires = epoch.Add(-time.Duration(i) * time.Hour)
		later := doc(tn, "search", fmt.Sprintf("results/later%d", i), "x")
		later.Expires = epoch.Add(time.Millisecond)
		put(t, x, d, later, doc(tn, "report", "never", "x"))
		want = append(want, d.URI())
	}
	refs, err := x.Expired(ctx, epoch, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.URI())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Expired(now) = %v, want %v", got, want)
	}
	if two, err := x.Expired(ctx, epoch, 2); err != nil || len(two) != 2 {
		t.Errorf("Expired(now, 2) = %v, %v; want 2 refs", two, err)
	}
	if none, err := x.Expired(ctx, epoch.Add(-3*time.Hour), 10); err != nil || len(none) != 0 {
		t.Errorf("Expired before every expiry = %v, %v; want none", none, err)
	}
	for _, r := range refs {
		if err := x.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := x.Expired(ctx, epoch, 10); err != nil || len(left) != 0 {
		t.Errorf("Expired after deleting them = %v, %v; want none", left, err)
	}
}

func testPaging(t *testing.T, x *index.Index) {
	var want []string
	for i := range 23 {
		d := doc("acme", "report", fmt.Sprintf("p/%02d", i), strings.Repeat("alpha ", i%4+1)+"omega")
		d.Created = epoch.Add(-time.Duration(i) * time.Minute)
		put(t, x, d)
		want = append(want, d.URI())
	}
	put(t, x, doc("acme2", "report", "p/x", "alpha omega"))
	for _, text := range []string{"alpha", ""} {
		q := index.Query{Text: text, Limit: 5, Prefix: "p/"}
		p, err := x.Search(context.Background(), "acme", q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 23 || p.Estimate || len(p.Hits) != 5 || p.Next == "" {
			t.Fatalf("first page of %q: total %d (estimate %v), %d hits, next %q; want 23, 5 hits and a cursor", text, p.Total, p.Estimate, len(p.Hits), p.Next)
		}
		got := uris(t, x, "acme", q)
		if len(got) != 23 {
			t.Errorf("paging %q by 5 gave %d hits: %v", text, len(got), got)
		}
		wantSet(t, "every hit once, query "+text, got, want...)
		if text == "" && !slices.Equal(got, want) {
			t.Errorf("newest first = %v, want %v", got, want)
		}
	}
	// The last page has no cursor, also when it ends exactly at the end.
	p, err := x.Search(context.Background(), "acme", index.Query{Text: "alpha", Limit: 23})
	if err != nil || len(p.Hits) != 23 || p.Next != "" {
		t.Errorf("a page of exactly all hits: %d hits, next %q, %v", len(p.Hits), p.Next, err)
	}
	p, err = x.Search(context.Background(), "acme", index.Query{Text: "alpha", Limit: 1000})
	if err != nil || len(p.Hits) != 23 {
		t.Errorf("a limit over MaxLimit: %d hits, %v", len(p.Hits), err)
	}
	// A cursor is the tenant's and the query's.
	first, _ := x.Search(context.Background(), "acme", index.Query{Text: "alpha", Limit: 5})
	for _, tc := range []struct {
		tenant string
		q      index.Query
	}{
		{"acme2", index.Query{Text: "alpha", Limit: 5, Cursor: first.Next}},
		{"acme", index.Query{Text: "omega", Limit: 5, Cursor: first.Next}},
		{"acme", index.Query{Text: "alpha", Limit: 5, Cursor: "bm90IGEgY3Vyc29y"}},
	} {
		if _, err := x.Search(context.Background(), tc.tenant, tc.q); !errors.Is(err, index.ErrInvalid) {
			t.Errorf("Search(%q, %+v) = %v, want ErrInvalid", tc.tenant, tc.q, err)
		}
	}
}

func testReplaceAndDelete(t *testing.T, x *index.Index) {
	ctx := context.Background()
	put(t, x, doc("acme", "report", "r", "first version apple"), doc("acme", "report", "keep", "apple"))
	d := doc("acme", "report", "r", "second version banana")
	d.Title = "Renamed"
	put(t, x, d)
	wantSet(t, "the replaced text", uris(t, x, "acme", index.Query{Text: "apple"}), "report://acme/keep")
	wantSet(t, "the new text", uris(t, x, "acme", index.Query{Text: "banana"}), "report://acme/r")
	p, err := x.Search(ctx, "acme", index.Query{Text: "banana"})
	if err != nil || len(p.Hits) != 1 || p.Hits[0].Title != "Renamed" || p.Total != 1 {
		t.Errorf("after replace: %+v, %v", p, err)
	}
	if err := x.Delete(ctx, d.Ref); err != nil {
		t.Fatal(err)
	}
	wantSet(t, "after delete", uris(t, x, "acme", index.Query{Text: "banana version"}))
	if err := x.Delete(ctx, d.Ref); err != nil {
		t.Errorf("Delete of a missing document = %v, want nil", err)
	}
	if n, err := x.Count(ctx, "acme"); err != nil || n != 1 {
		t.Errorf("Count after delete = %d, %v; want 1", n, err)
	}
}

// testApply: Apply puts and deletes many documents at once, as Put and
// Delete do one by one (a batch past the bleve driver's 1000 writes
// included), refuses an invalid change, and fails after Close.
func testApply(t *testing.T, x *index.Index) {
	ctx := context.Background()
	put(t, x, doc("acme", "report", "old", "cherry"))
	var cs []index.Change
	for i := range 1200 {
		cs = append(cs, index.Change{Doc: doc("acme", "report", fmt.Sprintf("p%d", i), fmt.Sprintf("applied word%d", i))})
	}
	cs = append(cs, index.Change{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "old"}},
		index.Change{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "never-there"}})
	if err := x.Apply(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if n, err := x.Count(ctx, "acme"); err != nil || n != 1200 {
		t.Errorf("Count after Apply = %d, %v; want 1200", n, err)
	}
	wantSet(t, "a document Apply put", uris(t, x, "acme", index.Query{Text: "word1199"}), "report://acme/p1199")
	wantSet(t, "a document Apply deleted", uris(t, x, "acme", index.Query{Text: "cherry"}))
	for _, bad := range [][]index.Change{
		{{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "../x"}}},
		{{Doc: doc("ACME!", "report", "a", "x")}},
		{{Doc: &index.Document{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "neg"}, Size: -1}}},
	} {
		if err := x.Apply(ctx, bad); !errors.Is(err, index.ErrInvalid) {
			t.Errorf("Apply(%+v) = %v, want ErrInvalid", bad[0], err)
		}
	}
	if err := x.Apply(ctx, nil); err != nil {
		t.Errorf("Apply of nothing = %v", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Apply(ctx, cs[:1]); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Apply after Close = %v, want ErrClosed", err)
	}
}

func testTenantIsolation(t *testing.T, x *index.Index) {
	shared := doc("t10", "report", "shared", "secret words")
	shared.Shared = true
	put(t, x,
		doc("t1", "report", "mine", "secret words"),
		doc("t10", "report", "private", "secret words"),
		shared,
		doc("t", "report", "x", "secret words"),
	)
	wantSet(t, "t1", uris(t, x, "t1", index.Query{Text: "secret"}), "report://t1/mine", "report://t10/shared")
	wantSet(t, "t10", uris(t, x, "t10", index.Query{Text: "secret"}), "report://t10/private", "report://t10/shared")
	wantSet(t, "t", uris(t, x, "t", index.Query{}), "report://t/x", "report://t10/shared")
	wantSet(t, "a tenant with nothing", uris(t, x, "t2", index.Query{Text: "secret"}), "report://t10/shared")
	wantSet(t, "a prefix naming another tenant", uris(t, x, "t1", index.Query{Prefix: "t10"}))
	p, err := x.Search(context.Background(), "t1", index.Query{Text: "secret"})
	if err != nil || p.Total != 2 {
		t.Errorf("Total for t1 = %d, %v; want 2 (never counting others' private documents)", p.Total, err)
	}
}

// testCrossTenantRandomized checks Search against a model: random
// documents of look-alike tenants, some shared, replaced and deleted at
// random, and random one- and two-word queries; the hits must be exactly
// the model's, so no private document of another tenant ever appears.
func testCrossTenantRandomized(t *testing.T, x *index.Index) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	tenants := []string{"a", "a1", "a10", "b"}
	vocab := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"}
	words := func() string {
		n := 1 + rng.IntN(4)
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	model := map[string]*index.Document{}
	for step := range 300 {
		tenant := tenants[rng.IntN(len(tenants))]
		path := fmt.Sprintf("p%d", rng.IntN(20))
		ref := index.Ref{Tenant: tenant, Scheme: []string{"report", "search"}[rng.IntN(2)], Path: path}
		if rng.IntN(5) == 0 {
			if err := x.Delete(ctx, ref); err != nil {
				t.Fatal(err)
			}
			delete(model, ref.URI())
		} else {
			d := doc(ref.Tenant, ref.Scheme, ref.Path, words())
			d.Shared = rng.IntN(3) == 0
			d.Title = words()
			put(t, x, d)
			model[ref.URI()] = d
		}
		if step%10 != 9 {
			continue
		}
		for _, reader := range tenants {
			q := vocab[rng.IntN(len(vocab))]
			two := rng.IntN(2) == 0
			q2 := vocab[rng.IntN(len(vocab))]
			var want []string
			for uri, d := range model {
				if d.Tenant != reader && !d.Shared {
					continue
				}
				has := func(w string) bool {
					return slices.Contains(index.Tokens(d.Text), w) || slices.Contains(index.Tokens(d.Title), w)
				}
				if has(q) && (!two || has(q2)) {
					want = append(want, uri)
				}
			}
			text := q
			if two {
				text += " " + q2
			}
			got := uris(t, x, reader, index.Query{Text: text, Limit: 7})
			if g, w := sorted(got), sorted(want); !slices.Equal(g, w) {
				t.Fatalf("step %d: Search(%q, %q) = %v, want %v (seed %d)", step, reader, text, g, w, seed)
			}
		}
	}
}

func testRanking(t *testing.T, x *index.Index) {
	titled := doc("acme", "report", "titled", "a short body")
	titled.Title = "Kubernetes upgrade"
	body := doc("acme", "report", "body", strings.Repeat("lorem ipsum dolor ", 40)+"kubernetes "+strings.Repeat("sit amet ", 40))
	put(t, x, body, titled)
	p, err := x.Search(context.Background(), "acme", index.Query{Text: "kubernetes"})
	if err != nil || len(p.Hits) != 2 {
		t.Fatalf("Search: %+v, %v", p, err)
	}
	if p.Hits[0].URI() != titled.URI() || p.Hits[0].Score <= p.Hits[1].Score {
		t.Errorf("ranking = %s (%v), %s (%v); want the title match first with a higher score",
			p.Hits[0].URI(), p.Hits[0].Score, p.Hits[1].URI(), p.Hits[1].Score)
	}
}

func testSnippetAndLines(t *testing.T, x *index.Index) {
	d := doc("acme", "report", "log", "start\nno error here\nERROR: disk full\nok\nanother error\n")
	d.Title, d.Size, d.MediaType = "Nightly log", 1234, "text/plain"
	put(t, x, d)
	p, err := x.Search(context.Background(), "acme", index.Query{Text: "error"})
	if err != nil || len(p.Hits) != 1 {
		t.Fatalf("Search: %+v, %v", p, err)
	}
	h := p.Hits[0]
	if !slices.Equal(h.Lines, []int{2, 3, 5}) {
		t.Errorf("Lines = %v, want [2 3 5]", h.Lines)
	}
	if !strings.Contains(h.Snippet, index.HighlightStart+"ERROR"+index.HighlightEnd) {
		t.Errorf("Snippet = %q, want ERROR highlighted", h.Snippet)
	}
	// The text's own asterisks are escaped: `**` is only ever a mark.
	put(t, x, doc("acme", "report", "stars", "**secretword** and one error"))
	p, err = x.Search(context.Background(), "acme", index.Query{Text: "secretword"})
	if err != nil || len(p.Hits) != 1 {
		t.Fatalf("Search(secretword): %+v, %v", p, err)
	}
	if want := `\*\*` + index.HighlightStart + "secretword" + index.HighlightEnd + `\*\* and one error`; p.Hits[0].Snippet != want {
		t.Errorf("Snippet = %q, want %q", p.Hits[0].Snippet, want)
	}
	if h.Text != "" || h.Title != "Nightly log" || h.Size != 1234 || h.MediaType != "text/plain" || h.SHA256 != d.SHA256 ||
		!h.Created.Equal(d.Created) || h.Tenant != "acme" || h.Score <= 0 {
		t.Errorf("hit = %+v, want the document's metadata without its text and a positive score", h)
	}
}

func testBadQueries(t *testing.T, x *index.Index) {
	put(t, x, doc("acme", "report", "a", "x"))
	many := strings.Repeat("w ", index.MaxTerms+1)
	for _, tc := range []struct {
		tenant string
		q      index.Query
		want   error
	}{
		{"Acme", index.Query{Text: "x"}, index.ErrInvalid},
		{"", index.Query{Text: "x"}, index.ErrInvalid},
		{"acme", index.Query{Text: "-x"}, index.ErrInvalid},
		{"acme", index.Query{Text: "\xff"}, index.ErrInvalid},
		// No word to search for: refused like exclusions only, never
		// read as a query that matches every document.
		{"acme", index.Query{Text: "or"}, index.ErrInvalid},
		{"acme", index.Query{Text: "OR"}, index.ErrInvalid},
		{"acme", index.Query{Text: `""`}, index.ErrInvalid},
		{"acme", index.Query{Text: `"" or ""`}, index.ErrInvalid},
		{"acme", index.Query{Text: "-"}, index.ErrInvalid},
		{"acme", index.Query{Text: `-""`}, index.ErrInvalid},
		{"acme", index.Query{Text: " , ; "}, index.ErrInvalid},
		{"acme", index.Query{Scheme: "Report"}, index.ErrInvalid},
		{"acme", index.Query{Prefix: "a b"}, index.ErrInvalid},
		{"acme", index.Query{Prefix: "%"}, index.ErrInvalid},
		{"acme", index.Query{MediaType: "text"}, index.ErrInvalid},
		{"acme", index.Query{MediaType: "*/*x/"}, index.ErrInvalid},
		{"acme", index.Query{MediaType: "*/*"}, index.ErrInvalid},
		{"acme", index.Query{MediaType: "*/plain"}, index.ErrInvalid},
		{"acme", index.Query{MediaType: "text/pl*"}, index.ErrInvalid},
		{"acme", index.Query{Limit: -1}, index.ErrInvalid},
		{"acme", index.Query{Labels: []string{""}}, index.ErrInvalid},
		{"acme", index.Query{Labels: []string{"*"}}, index.ErrInvalid},
		{"acme", index.Query{CreatedAfter: epoch, CreatedBefore: epoch}, index.ErrInvalid},
		{"acme", index.Query{ExpiresAfter: epoch.Add(time.Hour), ExpiresBefore: epoch}, index.ErrInvalid},
		{"acme", index.Query{Text: many}, index.ErrTooCostly},
		{"acme", index.Query{Text: strings.Repeat("x", index.MaxQueryBytes+1)}, index.ErrTooCostly},
		{"acme", index.Query{Labels: make([]string, index.MaxLabels+1)}, index.ErrTooCostly},
	} {
		_, err := x.Search(context.Background(), tc.tenant, tc.q)
		if !errors.Is(err, tc.want) {
			t.Errorf("Search(%q, %.60v) = %v, want %v", tc.tenant, tc.q, err, tc.want)
		}
	}
	for _, d := range []*index.Document{doc("Acme", "report", "a", "x"), doc("acme", "report", "../a", "x"), doc("acme", "", "a", "x")} {
		if err := x.Put(context.Background(), d); !errors.Is(err, index.ErrInvalid) {
			t.Errorf("Put(%+v) = %v, want ErrInvalid", d.Ref, err)
		}
	}
	if err := x.Delete(context.Background(), index.Ref{Tenant: "acme", Scheme: "report", Path: "/"}); !errors.Is(err, index.ErrInvalid) {
		t.Errorf("Delete of an invalid ref = %v, want ErrInvalid", err)
	}
	wantSet(t, "after refused calls", uris(t, x, "acme", index.Query{}), "report://acme/a")
	wantSet(t, "a blank query (no query)", uris(t, x, "acme", index.Query{Text: " \t "}), "report://acme/a")
}

func testWalkAndCount(t *testing.T, x *index.Index) {
	ctx := context.Background()
	var want []string
	for i := range 30 {
		d := doc([]string{"a", "b", "c"}[i%3], "report", fmt.Sprintf("w/%d", i), "body")
		d.SHA256 = fmt.Sprintf("%064x", i)
		put(t, x, d)
		want = append(want, d.URI()+" "+d.SHA256)
	}
	var got []string
	if err := x.Walk(ctx, func(e index.Entry) error {
		got = append(got, e.URI()+" "+e.SHA256)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantSet(t, "Walk", got, want...)
	stop := errors.New("stop")
	n := 0
	if err := x.Walk(ctx, func(index.Entry) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Walk whose fn fails = %v after %d calls, want stop after 1", err, n)
	}
	for tenant, want := range map[string]int64{"": 30, "a": 10, "c": 10, "d": 0} {
		if n, err := x.Count(ctx, tenant); err != nil || n != want {
			t.Errorf("Count(%q) = %d, %v; want %d", tenant, n, err, want)
		}
	}
}

func testCanceledContext(t *testing.T, x *index.Index) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := doc("acme", "report", "a", "x")
	if err := x.Put(ctx, d); !errors.Is(err, context.Canceled) {
		t.Errorf("Put = %v, want context.Canceled", err)
	}
	if _, err := x.Search(ctx, "acme", index.Query{Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Search = %v, want context.Canceled", err)
	}
	wantSet(t, "after a canceled Put", uris(t, x, "acme", index.Query{}))
}

func testClosed(t *testing.T, x *index.Index) {
	put(t, x, doc("acme", "report", "a", "x"))
	ctx := context.Background()
	ran := 0
	x.BeforeClose(func() {
		ran++
		if err := x.Put(ctx, doc("acme", "report", "last", "x")); err != nil {
			t.Errorf("Put in a BeforeClose function = %v, want the index still serving", err)
		}
	})
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil || ran != 1 {
		t.Errorf("a second Close = %v, BeforeClose functions run %d times; want nil, once", err, ran)
	}
	if _, err := x.Search(ctx, "acme", index.Query{}); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Search after Close = %v", err)
	}
	if err := x.Put(ctx, doc("acme", "report", "b", "x")); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Put after Close = %v", err)
	}
	if _, err := x.Count(ctx, ""); !errors.Is(err, index.ErrClosed) {
		t.Errorf("Count after Close = %v", err)
	}
}
