package service

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/resourced/resourced/toolapi"
)

// TestDeepSearchAndFetch: search finds by the query, falls back to any of
// a question's words, and never shows another tenant's private report;
// fetch returns the text whole and is the one not_found for an unknown id
// and another tenant's private one.
func TestDeepSearchAndFetch(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	ctx := context.Background()
	save := func(tenant, path, body string, o toolapi.SaveOptions) {
		t.Helper()
		if _, f := svc.SaveReport(ctx, tenant, &toolapi.ReportArgs{Path: path, MIMEType: "text/markdown", Text: text(body), Title: "T " + path, SaveOptions: o}); f != nil {
			t.Fatal(f)
		}
	}
	save(alice, "plan", "# Quarterly plan\n\nship the invoice export\n", toolapi.SaveOptions{})
	save("bob", "secret", "bob's quarterly invoice numbers", toolapi.SaveOptions{})
	save("bob", "pub", "a public quarterly digest", toolapi.SaveOptions{Visibility: "public", Listed: true})

	ids := func(q string) []string {
		t.Helper()
		r, f := svc.DeepSearch(ctx, alice, &toolapi.DeepSearchArgs{Query: q})
		if f != nil {
			t.Fatalf("DeepSearch(%q): %v", q, f)
		}
		var out []string
		for _, h := range r.Results {
			if h.ID != h.URL || h.Title == "" {
				t.Errorf("DeepSearch(%q) result %+v: want id = url and a title", q, h)
			}
			out = append(out, h.ID)
		}
		return out
	}
	if got := ids("invoice export"); len(got) != 1 || got[0] != "report://alice/plan" {
		t.Errorf("search invoice export = %v, want alice's plan", got)
	}
	// A question whose words do not all match: any of them, best first.
	got := ids("What is the quarterly plan?")
	if len(got) != 2 || got[0] != "report://alice/plan" || got[1] != "report://bob/pub" {
		t.Errorf("search of a question = %v, want alice's plan first, then bob's public digest", got)
	}
	// A query search_resources refuses (too many words) is still answered.
	if got := ids(strings.Repeat("quarterly ", 40)); len(got) != 2 {
		t.Errorf("search of 40 words = %v, want the two quarterly reports", got)
	}

	v, f := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://alice/plan"})
	if f != nil {
		t.Fatal(f)
	}
	if v.Text != "# Quarterly plan\n\nship the invoice export\n" || v.Title != "T plan" || v.URL != v.ID || v.Metadata.Truncated || v.Metadata.NextOffset != nil {
		t.Errorf("Fetch = %+v", v)
	}
	unknown, f1 := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://bob/nope"})
	private, f2 := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://bob/secret"})
	if unknown != nil || private != nil || f1 == nil || f2 == nil || f1.ErrorKind != KindNotFound {
		t.Fatalf("Fetch of unknown = %v %v, of another tenant's private = %v %v: want not_found", unknown, f1, private, f2)
	}
	b1, _ := json.Marshal(f1)
	b2, _ := json.Marshal(f2)
	if strings.ReplaceAll(string(b1), "nope", "secret") != string(b2) {
		t.Errorf("unknown and private differ beyond the id:\n%s\n%s", b1, b2)
	}
	if _, f := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://alice/a/../b"}); f == nil || f.ErrorKind != KindValidation || f.FieldErrors[0].Field != "id" {
		t.Errorf("Fetch of a malformed id = %v, want a validation_error of id", f)
	}
	if _, f := svc.Fetch(ctx, alice, &toolapi.FetchArgs{}); f == nil || f.ErrorKind != KindValidation {
		t.Errorf("Fetch without id = %v, want a validation_error", f)
	}
}

// TestDeepSearchQueries: search keeps a question's exclusions and its
// telling words past the 32nd, and refuses what its input schema refuses
// (no query, a query over 1024 bytes, exclusions only, no word) instead of
// searching something else.
func TestDeepSearchQueries(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	ctx := context.Background()
	for path, body := range map[string]string{"zebra": "the zebra report", "horse": "the horse report", "bulk": "a bulkword inventory"} {
		if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text(body)}); f != nil {
			t.Fatal(f)
		}
	}
	search := func(q string) ([]string, *Failure) {
		r, f := svc.DeepSearch(ctx, alice, &toolapi.DeepSearchArgs{Query: q})
		if f != nil {
			return nil, f
		}
		var out []string
		for _, h := range r.Results {
			out = append(out, h.ID)
		}
		slices.Sort(out)
		return out, nil
	}
	for _, q := range []string{"", "   ", "-zebra", "-zebra -horse", "or", `""`, "-", strings.Repeat("word ", 250)} {
		if got, f := search(q); f == nil || f.ErrorKind != KindValidation {
			t.Errorf("search %.40q = %v, %v: want a validation_error", q, got, f)
		}
	}
	// 32 short words, then the one that tells.
	var filler []string
	for i := range 32 {
		filler = append(filler, fmt.Sprintf("w%d", i))
	}
	if got, f := search(strings.Join(filler, " ") + " bulkword"); f != nil || !slices.Equal(got, []string{"report://alice/bulk"}) {
		t.Errorf("search of 32 words and bulkword = %v, %v: want the bulk report", got, f)
	}
	// A question that matches as a whole nowhere: any of its words, but
	// never what it excludes.
	if got, f := search("which report is about the zebra or the horse -zebra"); f != nil || !slices.Equal(got, []string{"report://alice/horse"}) {
		t.Errorf("search with an exclusion = %v, %v: want the horse report only", got, f)
	}
	if got, f := search("-zebra report"); f != nil || !slices.Equal(got, []string{"report://alice/horse"}) {
		t.Errorf("search report -zebra = %v, %v: want the horse report only", got, f)
	}
}

// TestFetchSaysWhenTextIsNotTheBody: a text body that is not UTF-8
// (latin-1 under text/plain) comes with U+FFFD in text and howToRead
// naming resources/read for the exact bytes; a UTF-8 body does not.
func TestFetchSaysWhenTextIsNotTheBody(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	ctx := context.Background()
	for path, body := range map[string]string{"latin1": "caf\xe9 cr\xe8me", "utf8": "café crème"} {
		if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text(body)}); f != nil {
			t.Fatal(f)
		}
		v, f := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://alice/" + path})
		if f != nil {
			t.Fatal(f)
		}
		said := strings.Contains(v.Metadata.HowToRead, "not valid UTF-8") && strings.Contains(v.Metadata.HowToRead, "resources/read")
		if want := path == "latin1"; said != want || !utf8.ValidString(v.Text) {
			t.Errorf("Fetch(%s): text %q, howToRead %q; want the not-UTF-8 note %v", path, v.Text, v.Metadata.HowToRead, want)
		}
	}
}

// TestFetchCutsAtTheLimit: a body longer than the result limit comes cut
// at a character, with where read_resource reads on, and the value's JSON
// within the limit.
func TestFetchCutsAtTheLimit(t *testing.T) {
	svc, _, _ := newSearchEnv(t)
	ctx := context.Background()
	body := strings.Repeat("ünïcode \"quoted\" <line>\n", 5000) // ~120 KB, escapes included
	if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "big", MIMEType: "text/plain", Text: text(body)}); f != nil {
		t.Fatal(f)
	}
	v, f := svc.Fetch(ctx, alice, &toolapi.FetchArgs{ID: "report://alice/big"})
	if f != nil {
		t.Fatal(f)
	}
	b, _ := json.Marshal(v)
	if n := utf8.RuneCount(b); n > svc.Limits().MaxReadChars {
		t.Errorf("the value is %d characters, over the limit %d", n, svc.Limits().MaxReadChars)
	}
	if !v.Metadata.Truncated || v.Metadata.NextOffset == nil || int(*v.Metadata.NextOffset) != len(v.Text) || !strings.HasPrefix(body, v.Text) {
		t.Fatalf("Fetch of a long body: truncated %v, nextOffset %v, text %d bytes", v.Metadata.Truncated, v.Metadata.NextOffset, len(v.Text))
	}
	if len(v.Text) < svc.Limits().MaxReadChars/3 {
		t.Errorf("text is only %d bytes of a %d-character limit", len(v.Text), svc.Limits().MaxReadChars)
	}
	if !strings.Contains(v.Metadata.HowToRead, "read_resource") || !strings.Contains(v.Metadata.HowToRead, `"offset": `) {
		t.Errorf("howToRead = %q", v.Metadata.HowToRead)
	}
	// Reading on from nextOffset gives the rest.
	w, f := svc.ReadWindow(ctx, alice, &toolapi.ReadArgs{URI: "report://alice/big", Offset: v.Metadata.NextOffset}, nil)
	if f != nil {
		t.Fatal(f)
	}
	if !strings.HasPrefix(body[len(v.Text):], string(w.Data)) {
		t.Errorf("read_resource at nextOffset does not continue the text")
	}
}
