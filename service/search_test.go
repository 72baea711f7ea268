package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
)

const bob = "bob"

func ip(n int) *int      { return &n }
func i64(n int64) *int64 { return &n }
func save(t *testing.T, e *env, path, mime, body string, o toolapi.SaveOptions) string {
	t.Helper()
	r, f := e.svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: path, MIMEType: mime, Text: &body, SaveOptions: o})
	if f != nil {
		t.Fatal(f)
	}
	return r.Value.URI
}

func grepOK(t *testing.T, e *env, a toolapi.GrepArgs) *toolapi.GrepResult {
	t.Helper()
	r, f := e.svc.Grep(context.Background(), alice, &a)
	if f != nil {
		t.Fatalf("Grep(%+v) = %v", a, f)
	}
	return r
}

const lines = "alpha\nbeta one\ngamma\nbeta two\ndelta\nbeta three"

func TestGrepMatchesWithLinesOffsetsAndContext(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "g", "text/plain", lines, toolapi.SaveOptions{})
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `beta (\w+)`, Context: ip(1)})
	want := []toolapi.GrepMatch{
		{Line: 2, Offset: 6, Length: 8, Text: "beta one", Before: []string{"alpha"}, After: []string{"gamma"}},
		{Line: 4, Offset: 21, Length: 8, Text: "beta two", Before: []string{"gamma"}, After: []string{"delta"}},
		{Line: 6, Offset: 36, Length: 10, Text: "beta three", Before: []string{"delta"}},
	}
	if diff := cmp.Diff(want, r.Matches); diff != "" {
		t.Fatalf("matches (-want +got):\n%s", diff)
	}
	for _, m := range r.Matches {
		if got := lines[m.Offset : m.Offset+m.Length]; !strings.HasPrefix(got, "beta") {
			t.Errorf("offset %d holds %q", m.Offset, got)
		}
	}
	if r.Truncated || r.NextAfterOffset != nil || r.NextAfterLine != nil || r.TotalSize != int64(len(lines)) {
		t.Fatalf("result %+v", r)
	}
}

func TestGrepLiteralVersusRegex(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "g", "text/plain", "a.c\nabc\n(x\n", toolapi.SaveOptions{})
	if r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "a.c"}); len(r.Matches) != 2 {
		t.Fatalf("regex a.c: %+v", r.Matches)
	}
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "a.c", Literal: true})
	if len(r.Matches) != 1 || r.Matches[0].Line != 1 {
		t.Fatalf("literal a.c: %+v", r.Matches)
	}
	r = grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "(x", Literal: true})
	if len(r.Matches) != 1 || r.Matches[0].Line != 3 || r.Matches[0].Offset != 8 {
		t.Fatalf("literal (x: %+v", r.Matches)
	}
	r = grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "nowhere"})
	if b, _ := json.Marshal(r); !strings.Contains(string(b), `"matches":[]`) {
		t.Fatalf("no match: %s, want an empty matches list", b)
	}
}

func TestGrepInvalidRegexNamesTheField(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "g", "text/plain", lines, toolapi.SaveOptions{})
	_, f := e.svc.Grep(context.Background(), alice, &toolapi.GrepArgs{URI: u, Pattern: "(beta"})
	if f == nil || f.ErrorKind != KindValidation || len(f.FieldErrors) != 1 || f.FieldErrors[0].Field != "pattern" ||
		!strings.Contains(f.Message, "missing closing )") || strings.Contains(f.Message, "syntax.") || strings.Contains(f.Message, "*") {
		t.Fatalf("invalid regex: %+v", f)
	}
	for _, a := range []toolapi.GrepArgs{
		{URI: u, Pattern: "x", Context: ip(11)},
		{URI: u, Pattern: "x", MaxMatches: ip(0)},
		{URI: u, Pattern: "x", MaxMatches: ip(1001)},
		{URI: u, Pattern: ""},
		{URI: u, Pattern: "x", AfterLine: i64(-1)},
	} {
		if _, f := e.svc.Grep(context.Background(), alice, &a); f == nil || f.ErrorKind != KindValidation {
			t.Errorf("Grep(%+v) = %v, want validation_error", a, f)
		}
	}
}

func TestGrepCapsAndContinuation(t *testing.T) {
	e := newEnv(t, store.Quota{})
	var b strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "row %d hit hit\n", i) // two matches per line
	}
	u := save(t, e, "g", "text/plain", b.String(), toolapi.SaveOptions{})
	var all []toolapi.GrepMatch
	a := toolapi.GrepArgs{URI: u, Pattern: "hit", MaxMatches: ip(7)}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("does not end")
		}
		r := grepOK(t, e, a)
		all = append(all, r.Matches...)
		if !r.Truncated {
			if r.NextAfterOffset != nil {
				t.Fatal("nextAfterOffset at the end")
			}
			break
		}
		if len(r.Matches) != 7 || *r.NextAfterOffset != r.Matches[6].Offset {
			t.Fatalf("page %+v", r)
		}
		// 7 matches end in the middle of a line: no afterLine then.
		if odd := len(all)%2 == 1; odd != (r.NextAfterLine == nil) {
			t.Fatalf("after %d matches nextAfterLine %v", len(all), r.NextAfterLine)
		}
		a.AfterOffset = r.NextAfterOffset
	}
	if len(all) != 50 {
		t.Fatalf("%d matches over all pages, want 50", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Offset <= all[i-1].Offset {
			t.Fatalf("match %d at %d after %d", i, all[i].Offset, all[i-1].Offset)
		}
	}
	// afterLine continues by lines.
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "hit", AfterLine: i64(24)})
	if len(r.Matches) != 2 || r.Matches[0].Line != 25 {
		t.Fatalf("afterLine 24: %+v", r.Matches)
	}
}

func TestGrepCharacterCap(t *testing.T) {
	e := newEnv(t, store.Quota{})
	e.svc.limits.MaxReadChars = 2000
	line := strings.Repeat("x", 100) + " needle"
	body := strings.Repeat(line+"\n", 100)
	u := save(t, e, "g", "text/plain", body, toolapi.SaveOptions{})
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "needle", MaxMatches: ip(1000)})
	if !r.Truncated || len(r.Matches) == 0 || len(r.Matches) >= 100 || r.NextAfterLine == nil {
		t.Fatalf("truncated %v, %d matches", r.Truncated, len(r.Matches))
	}
	b, _ := json.Marshal(r)
	if n := len([]rune(string(b))); n > 2000 {
		t.Fatalf("result of %d characters, limit 2000", n)
	}
	// A long line shows the part around its match.
	long := strings.Repeat("y", 5000) + "needle" + strings.Repeat("z", 5000)
	u = save(t, e, "long", "text/plain", long, toolapi.SaveOptions{})
	r = grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: "needle"})
	if len(r.Matches) != 1 || !r.Matches[0].TextCut || !strings.Contains(r.Matches[0].Text, "needle") || len([]rune(r.Matches[0].Text)) != MaxLineChars || r.Matches[0].Offset != 5000 {
		t.Fatalf("long line: %+v", r.Matches)
	}
}

func TestGrepRefusesBinary(t *testing.T) {
	e := newEnv(t, store.Quota{})
	blob := "AAEC"
	r, f := e.svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: "bin", MIMEType: "application/octet-stream", BlobBase64: &blob})
	if f != nil {
		t.Fatal(f)
	}
	_, f = e.svc.Grep(context.Background(), alice, &toolapi.GrepArgs{URI: r.Value.URI, Pattern: "x"})
	if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "read_resource") {
		t.Fatalf("binary body: %v", f)
	}
}

// streaming is a backend with the streaming reader, over one without.
type streaming struct{ store.Backend }

func (b streaming) PutStream(context.Context, *store.Meta, io.Reader, store.Cond) (store.Meta, bool, error) {
	panic("not used")
}

func (b streaming) Open(ctx context.Context, k store.Key) (store.Meta, io.ReadSeekCloser, error) {
	obj, err := b.Get(ctx, k)
	if err != nil {
		return store.Meta{}, nil, err
	}
	return obj.Meta, nopSeekCloser{bytes.NewReader(obj.Body)}, nil
}

type nopSeekCloser struct{ *bytes.Reader }

func (nopSeekCloser) Close() error { return nil }

// TestSearchNotFoundIsIdentical: another tenant's private resource, a
// missing one and an expired one give stat_resource's very failure, on a
// backend with the streaming reader and on one without; another tenant's
// public one is readable.
func TestSearchNotFoundIsIdentical(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			now := time.Now().UTC()
			var st store.Backend = memstore.New(memstore.Options{Now: func() time.Time { return now }})
			if stream {
				st = streaming{st}
			}
			svc, err := New(Options{Store: st, Now: func() time.Time { return now },
				Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Minute, MaxRetention: time.Hour, MaxBytes: 1 << 20}}})
			if err != nil {
				t.Fatal(err)
			}
			e := &env{svc: svc, st: st}
			ctx := context.Background()
			priv := save(t, e, "priv.json", "application/json", `{"a":1}`, toolapi.SaveOptions{})
			pub := save(t, e, "pub.json", "application/json", `{"a":1}`, toolapi.SaveOptions{Visibility: "public"})
			exp := save(t, e, "exp.json", "application/json", `{"a":1}`, toolapi.SaveOptions{})
			check := func(p string, u string) {
				t.Helper()
				_, want := svc.StatResource(ctx, p, &toolapi.StatArgs{URI: u})
				_, g := svc.Grep(ctx, p, &toolapi.GrepArgs{URI: u, Pattern: "a"})
				_, q := svc.Query(ctx, p, &toolapi.QueryArgs{URI: u, Path: "$.a"})
				if want == nil || want.ErrorKind != KindNotFound || !cmp.Equal(g, want, cmpopts.IgnoreUnexported(Failure{})) || !cmp.Equal(q, want, cmpopts.IgnoreUnexported(Failure{})) {
					t.Fatalf("%s: stat %v, grep %v, query %v", u, want, g, q)
				}
			}
			check(bob, priv)
			check(bob, "report://alice/none.json")
			check(alice, "report://alice/none.json")
			if _, f := svc.Grep(ctx, bob, &toolapi.GrepArgs{URI: pub, Pattern: "a"}); f != nil {
				t.Fatalf("public: %v", f)
			}
			if _, f := svc.Query(ctx, bob, &toolapi.QueryArgs{URI: pub, Path: "$.a"}); f != nil {
				t.Fatalf("public: %v", f)
			}
			now = now.Add(2 * time.Minute)
			check(alice, exp)
		})
	}
}

const doc = `{"hits":[{"id":"a","score":0.9},{"id":"b","score":0.2},{"id":"c","score":0.7}],"query":"q","n":12345678901234567890}`

func TestQueryValuesAndNormalizedPaths(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "d.json", "application/json", doc, toolapi.SaveOptions{})
	ctx := context.Background()
	r, f := e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$.hits[?@.score > 0.5].id"})
	if f != nil {
		t.Fatal(f)
	}
	want := []toolapi.QueryMatch{{Path: "$['hits'][0]['id']", Value: "a"}, {Path: "$['hits'][2]['id']", Value: "c"}}
	if diff := cmp.Diff(want, r.Matches); diff != "" || r.Count != 2 || r.Truncated {
		t.Fatalf("matches (-want +got):\n%s", diff)
	}
	// Numbers keep their digits.
	r, f = e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$.n"})
	if f != nil {
		t.Fatal(f)
	}
	if b, _ := json.Marshal(r.Matches[0].Value); string(b) != "12345678901234567890" {
		t.Fatalf("$.n = %s", b)
	}
	// Paging with startIndex.
	r, f = e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$.hits[*].id", MaxMatches: ip(2)})
	if f != nil || !r.Truncated || r.NextIndex == nil || *r.NextIndex != 2 || len(r.Matches) != 2 || r.Count != 3 {
		t.Fatalf("page 1: %+v %v", r, f)
	}
	r, f = e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$.hits[*].id", StartIndex: r.NextIndex})
	if f != nil || r.Truncated || len(r.Matches) != 1 || r.Matches[0].Value != "c" {
		t.Fatalf("page 2: %+v %v", r, f)
	}
}

func TestQueryCharacterCapOmitsHugeValues(t *testing.T) {
	e := newEnv(t, store.Quota{})
	e.svc.limits.MaxReadChars = 1000
	big := fmt.Sprintf(`{"big":%q,"small":[1,2,3]}`, strings.Repeat("x", 5000))
	u := save(t, e, "b.json", "application/json", big, toolapi.SaveOptions{})
	r, f := e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: u, Path: "$.*"})
	if f != nil {
		t.Fatal(f)
	}
	if len(r.Matches) != 2 || !r.Matches[0].Omitted || r.Matches[0].Value != nil || r.Matches[0].ValueChars != 5002 || r.Matches[1].Omitted {
		t.Fatalf("matches %+v", r.Matches)
	}
}

func TestQueryRefusesBadPathAndNonJSON(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	u := save(t, e, "d.json", "application/json", doc, toolapi.SaveOptions{})
	_, f := e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$.hits[?"})
	if f == nil || f.ErrorKind != KindValidation || f.FieldErrors[0].Field != "path" || !strings.Contains(f.Message, "JSONPath") {
		t.Fatalf("bad path: %v", f)
	}
	for _, body := range []string{"not json", `{"a":1} {"b":2}`, `{"a":`} {
		u := save(t, e, "t-"+fmt.Sprint(len(body)), "text/plain", body, toolapi.SaveOptions{})
		_, f := e.svc.Query(ctx, alice, &toolapi.QueryArgs{URI: u, Path: "$"})
		if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "is not JSON") {
			t.Errorf("body %q: %v", body, f)
		}
	}
}

// TestGrepRefusesALineTooCostlyForThePattern: RE2 is linear, but in the
// pattern's size too; a big pattern on a long line is refused before it
// runs, since no time limit stops a match inside one line.
func TestGrepRefusesALineTooCostlyForThePattern(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "long", "text/plain", strings.Repeat("a", 900_000), toolapi.SaveOptions{})
	_, f := e.svc.Grep(context.Background(), alice, &toolapi.GrepArgs{URI: u, Pattern: `(?:a|aa|aaa|\pL|\w){1,1000}b`})
	if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "line 1 of") {
		t.Fatalf("Grep with a costly pattern on a 900 KB line = %+v, want a validation_error naming line 1", f)
	}
	// A plain pattern on the same line is fine.
	if r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `ab`}); len(r.Matches) != 0 {
		t.Fatalf("matches %v", r.Matches)
	}
}

// TestGrepStopsAtTheTimeLimitAndGoesOn: a scan that reaches the time
// limit returns what it found, says so, and the continuation goes on
// from the first line it did not scan.
func TestGrepStopsAtTheTimeLimitAndGoesOn(t *testing.T) {
	e := newEnv(t, store.Quota{})
	body := strings.Repeat(strings.Repeat("a", 990)+"\n", 900)
	u := save(t, e, "many", "text/plain", body, toolapi.SaveOptions{})
	defer func(d time.Duration) { searchTimeout = d }(searchTimeout)
	searchTimeout = 20 * time.Millisecond
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `(?:a|aa|\w){1,200}b`})
	if r.Stopped == "" || !r.Truncated || r.NextAfterLine == nil || *r.NextAfterLine >= 900 {
		t.Fatalf("result %+v: want stopped, truncated, with nextAfterLine before the end", r)
	}
	searchTimeout = time.Minute
	rest := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `a$`, AfterLine: r.NextAfterLine})
	if len(rest.Matches) == 0 || rest.Matches[0].Line != *r.NextAfterLine+1 || rest.Stopped != "" {
		t.Fatalf("continuing after line %d: %+v, want matches from line %d on", *r.NextAfterLine, rest, *r.NextAfterLine+1)
	}
}

// TestGrepLongLineFewMatches: a pattern matching at every byte of a long
// line collects only the matches the result can hold.
func TestGrepLongLineFewMatches(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "z", "text/plain", strings.Repeat("z", 900_000), toolapi.SaveOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `a*`, MaxMatches: ip(1)})
	runtime.ReadMemStats(&after)
	if len(r.Matches) != 1 || !r.Truncated {
		t.Fatalf("result %+v", r)
	}
	// Every match of the line would be 900 000 of them (tens of MB).
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("one match allocated %d bytes", n)
	}
	// Continuing inside the line still works.
	next := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: `a*`, MaxMatches: ip(2), AfterOffset: r.NextAfterOffset})
	if len(next.Matches) != 2 || next.Matches[0].Offset != *r.NextAfterOffset+1 {
		t.Fatalf("continuation %+v after offset %d", next.Matches, *r.NextAfterOffset)
	}
}

// TestQueryBoundsTheBody: bodies nested deeper than MaxQueryDepth or with
// more than MaxQueryValues values are refused before they are decoded.
func TestQueryBoundsTheBody(t *testing.T) {
	e := newEnv(t, store.Quota{})
	deep := save(t, e, "deep.json", "application/json", strings.Repeat("[", 100)+strings.Repeat("]", 100), toolapi.SaveOptions{})
	wide := save(t, e, "wide.json", "application/json", "["+strings.Repeat("0,", MaxQueryValues)+"0]", toolapi.SaveOptions{})
	for _, u := range []string{deep, wide} {
		_, f := e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: u, Path: "$..*", MaxMatches: ip(1)})
		if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "too deep or too large") {
			t.Fatalf("Query of %s = %+v, want a validation_error", u, f)
		}
	}
	ok := save(t, e, "ok.json", "application/json", `{"a":[{"b":"x,[{"},{"b":2}]}`, toolapi.SaveOptions{})
	r, f := e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: ok, Path: "$..b"})
	if f != nil || r.Count != 2 {
		t.Fatalf("Query of a small body = %+v, %v", r, f)
	}
}

func TestJSONShape(t *testing.T) {
	for _, tc := range []struct {
		in            string
		depth, values int
	}{
		{`0`, 0, 1},
		{`[]`, 1, 1},
		{`[1,[2,"]]]"],{"k":{"x":null}}]`, 3, 10}, // keys count too
		{`"a\"[[["`, 0, 1},
	} {
		if d, v := jsonShape([]byte(tc.in)); d != tc.depth || v != tc.values {
			t.Errorf("jsonShape(%s) = %d, %d; want %d, %d", tc.in, d, v, tc.depth, tc.values)
		}
	}
}

// TestQueryTimeLimit: a query that does not finish in time fails, and
// its evaluation does not run on after the call returned.
func TestQueryTimeLimit(t *testing.T) {
	e := newEnv(t, store.Quota{})
	var b strings.Builder
	b.WriteString("[")
	for i := range 20000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + strings.Repeat("a", 40) + `"`)
	}
	b.WriteString("]")
	u := save(t, e, "strings.json", "application/json", b.String(), toolapi.SaveOptions{})
	defer func(d time.Duration) { searchTimeout = d }(searchTimeout)
	searchTimeout = time.Millisecond
	_, f := e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: u, Path: `$[?search(@, "(a|aa|aaa){1,100}z")]`})
	if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "did not finish") {
		t.Fatalf("Query past the time limit = %+v, want a validation_error", f)
	}
	if n := evaluating(); n != 0 {
		t.Fatalf("%d evaluations still run after the call returned", n)
	}
}

// TestPatternLimitCountsCharacters: the limit is the schemas' maxLength,
// which counts characters, not bytes.
func TestPatternLimitCountsCharacters(t *testing.T) {
	e := newEnv(t, store.Quota{})
	u := save(t, e, "p", "text/plain", "é", toolapi.SaveOptions{})
	if r := grepOK(t, e, toolapi.GrepArgs{URI: u, Pattern: strings.Repeat("é", 3000), Literal: true}); len(r.Matches) != 0 {
		t.Fatalf("matches %v", r.Matches)
	}
	_, f := e.svc.Grep(context.Background(), alice, &toolapi.GrepArgs{URI: u, Pattern: strings.Repeat("é", MaxPatternChars+1), Literal: true})
	if f == nil || !strings.Contains(f.Message, "characters") {
		t.Fatalf("a pattern of %d characters = %+v", MaxPatternChars+1, f)
	}
}
