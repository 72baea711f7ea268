package index

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want *Expr
		ws   string
	}{
		{"", nil, ""},
		{" \t\n ", nil, ""},
		{"Acme invoice", &Expr{All: []Group{{{"acme"}}, {{"invoice"}}}}, `"acme" "invoice"`},
		{`"march report" -draft`, &Expr{All: []Group{{{"march", "report"}}}, Not: []Phrase{{"draft"}}}, `"march report" -"draft"`},
		{"a or b c", &Expr{All: []Group{{{"a"}, {"b"}}, {{"c"}}}}, `"a" or "b" "c"`},
		{"or a or", &Expr{All: []Group{{{"a"}}}}, `"a"`},
		{`"or" a`, &Expr{All: []Group{{{"or"}}, {{"a"}}}}, `"or" "a"`},
		{"foo-bar example.com", &Expr{All: []Group{{{"foo", "bar"}}, {{"example", "com"}}}}, `"foo bar" "example com"`},
		{"a - b", &Expr{All: []Group{{{"a"}}, {{"b"}}}}, `"a" "b"`},
		{`-"x y" z`, &Expr{All: []Group{{{"z"}}}, Not: []Phrase{{"x", "y"}}}, `"z" -"x y"`},
		{`"unterminated phrase`, &Expr{All: []Group{{{"unterminated", "phrase"}}}}, `"unterminated phrase"`},
		{`'; DROP TABLE x; --`, &Expr{All: []Group{{{"drop"}}, {{"table"}}, {{"x"}}}}, `"drop" "table" "x"`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, d)
		}
		if got != nil {
			var ws []string
			for _, g := range got.All {
				ws = append(ws, g.Websearch())
			}
			for _, p := range got.Not {
				ws = append(ws, "-"+p.Websearch())
			}
			if strings.Join(ws, " ") != tt.ws {
				t.Errorf("Parse(%q) in websearch syntax = %q, want %q", tt.in, strings.Join(ws, " "), tt.ws)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	long := make([]byte, MaxQueryBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		in   string
		want error
	}{
		{"-only -exclusions", ErrInvalid},
		// Text with no word to search for: operators, empty phrases, lone
		// dashes and punctuation are refused, not read as "match all".
		{"or", ErrInvalid},
		{"OR", ErrInvalid},
		{"or or", ErrInvalid},
		{`""`, ErrInvalid},
		{`"" or ""`, ErrInvalid},
		{`-""`, ErrInvalid},
		{"-", ErrInvalid},
		{" - - ", ErrInvalid},
		{"  ,;  ", ErrInvalid},
		{"a or -b", ErrInvalid},
		{"\xff", ErrInvalid},
		{string(long[:MaxTokenBytes+1]), ErrInvalid},
		{string(long), ErrTooCostly},
	}
	for _, tt := range tests {
		if _, err := Parse(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("Parse(%.30q) = %v, want %v", tt.in, err, tt.want)
		}
	}
}

func TestCursorBoundToTenantAndQuery(t *testing.T) {
	q := Query{Text: "x", Scheme: "report", CreatedAfter: time.UnixMilli(5)}
	c := encodeCursor("acme", q, 10)
	if off, err := decodeCursor(c, "acme", q); err != nil || off != 10 {
		t.Fatalf("decodeCursor of its own query = %d, %v", off, err)
	}
	q.Limit = 3 // the page size may change between pages
	if _, err := decodeCursor(c, "acme", q); err != nil {
		t.Errorf("decodeCursor after a new limit: %v", err)
	}
	other := q
	other.Text = "y"
	for _, tc := range []struct {
		tenant string
		q      Query
		c      string
	}{{"acme2", q, c}, {"acme", other, c}, {"acme", q, "!!"}, {"acme", q, c[:len(c)-2]}} {
		if _, err := decodeCursor(tc.c, tc.tenant, tc.q); !errors.Is(err, ErrInvalid) {
			t.Errorf("decodeCursor(%q, %q, %+v) = %v, want ErrInvalid", tc.c, tc.tenant, tc.q, err)
		}
	}
}

func TestSnippet(t *testing.T) {
	e, _ := Parse("invoice")
	p := &Plan{Match: e}
	text := "line one\nthe Invoice of March\nnothing\nINVOICE again, invoices not\n"
	snip, lines := Snippet("T", text, p)
	if want := "line one the **Invoice** of March nothing **INVOICE** again, invoices not"; snip != want {
		t.Errorf("snippet = %q, want %q", snip, want)
	}
	if d := cmp.Diff([]int{2, 4}, lines); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	// A match far into the text: the snippet starts near it.
	long := strings.Repeat("filler ", 200) + "target word" + strings.Repeat(" tail", 100)
	e, _ = Parse("target")
	snip, lines = Snippet("T", long, &Plan{Match: e})
	if len(snip) > SnippetBytes+20 || !strings.Contains(snip, "**target**") || snip[:3] != "…" {
		t.Errorf("snippet of a late match = %q", snip)
	}
	if len(lines) != 1 || lines[0] != 1 {
		t.Errorf("lines = %v, want [1]", lines)
	}
	if snip, lines := Snippet("The title", "", p); snip != "The title" || lines != nil {
		t.Errorf("snippet without text = %q, %v", snip, lines)
	}
}

// TestQueryErrorNamesItsField: a refused field is a QueryError whose
// text says the field once: "cursor: invalid: not a cursor…", never
// "query: query: invalid: …" or "invalid: cursor: cursor: …".
func TestQueryErrorNamesItsField(t *testing.T) {
	x := New(&recorder{}, Options{})
	for _, tc := range []struct {
		q     Query
		field string
		kind  error
	}{
		{Query{Text: "-only"}, "query", ErrInvalid},
		{Query{Text: "or"}, "query", ErrInvalid},
		{Query{Text: strings.Repeat("w ", MaxTerms+1)}, "query", ErrTooCostly},
		{Query{Text: "x", Cursor: "x"}, "cursor", ErrInvalid},
		{Query{MediaType: "text"}, "mediaType", ErrInvalid},
		{Query{Labels: []string{"a", "b or -c"}}, "labels[1]", ErrInvalid},
		{Query{Labels: []string{"a", "*"}}, "labels[1]", ErrInvalid},
		{Query{Limit: -1}, "limit", ErrInvalid},
	} {
		_, err := x.plan("acme", tc.q)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Field != tc.field || !errors.Is(err, tc.kind) {
			t.Errorf("plan(%+v) = %v, want a QueryError of %s (%v)", tc.q, err, tc.field, tc.kind)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.field+": "+tc.kind.Error()+": ") || strings.Count(err.Error(), tc.field+":") != 1 ||
			strings.Contains(qe.Reason, tc.kind.Error()+":") {
			t.Errorf("plan(%+v) = %q: want its field and kind said once, in front", tc.q, err)
		}
	}
}
