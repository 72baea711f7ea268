package index

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestTokensFold: words match in any case and any Unicode normalization
// (full case folding and NFKC), the issue 27 review's four cases first.
func TestTokensFold(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"ΣΊΣΥΦΟΣ", "σίσυφος"}, // final sigma
		{"cafe\u0301", "café"}, // NFD and NFC
		{"STRASSE", "straße"},  // ß folds to ss
		{"file", "ﬁle"},        // ligature
		{"ẞ", "ss"},            // capital sharp s
		{"ＡＢＣ１２", "abc12"},     // full width
		{"\u212a", "k"},        // Kelvin sign
		{"Ω", "ω"},             // Ohm sign
		{"ǅ", "dž"},            // title case digraph
		{"Hello", "hello"},
		{"東京", "東京"},
		{"İSTANBUL", "İstanbul"},
	} {
		ta, tb := Tokens(tc.a), Tokens(tc.b)
		if len(ta) != 1 || !slices.Equal(ta, tb) {
			t.Errorf("Tokens(%+q) = %+q, Tokens(%+q) = %+q, want the same one word", tc.a, ta, tc.b, tb)
		}
	}
	// Folding is not accent removal, nor Turkic (docs/decisions.md).
	for _, tc := range []struct{ a, b string }{{"cafe", "café"}, {"istanbul", "İstanbul"}} {
		if ta, tb := Tokens(tc.a), Tokens(tc.b); slices.Equal(ta, tb) {
			t.Errorf("Tokens(%+q) = Tokens(%+q) = %+q, want them apart", tc.a, tc.b, ta)
		}
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Acme™ x² ①", []string{"acme", "x"}},                        // symbols are not word characters, even those NFKC makes letters
		{"ﷺ", []string{"صلى", "الله", "عليه", "وسلم"}},               // a letter whose NFKC form is four words
		{"\u0301 x", []string{"x"}},                                  // a mark alone is no word
		{"हिन्दी भाषा", []string{"हिन्दी", "भाषा"}},                  // spacing marks (Mc) belong to their word
		{strings.Repeat("𝐀", 30), []string{strings.Repeat("a", 30)}}, // 120 bytes, 30 once normalized
		{strings.Repeat("ŉ", 40), nil},                               // 80 bytes, 120 once normalized: past MaxTokenBytes, dropped
		{"Ꭰꭰ", []string{"ᎠᎠ"}},                                       // Cherokee folds to capitals
	} {
		if got := Tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

// checkTokens checks Tokens' invariants on s: idempotent (the indexed
// text tokenizes to itself), the same for s in NFC and NFD, and every
// word is letters and digits of at most MaxTokenBytes.
func checkTokens(t *testing.T, s string) {
	t.Helper()
	got := Tokens(s)
	if again := Tokens(strings.Join(got, " ")); !slices.Equal(got, again) {
		t.Fatalf("Tokens(%+q) = %+q, but Tokens of that joined = %+q", s, got, again)
	}
	if nfd := Tokens(norm.NFD.String(s)); !slices.Equal(got, nfd) {
		t.Fatalf("Tokens(%+q) = %+q, Tokens of its NFD = %+q", s, got, nfd)
	}
	if nfc := Tokens(norm.NFC.String(s)); !slices.Equal(got, nfc) {
		t.Fatalf("Tokens(%+q) = %+q, Tokens of its NFC = %+q", s, got, nfc)
	}
	for _, w := range got {
		if w == "" || len(w) > MaxTokenBytes || !utf8.ValidString(w) || strings.ContainsFunc(w, func(r rune) bool { return !wordRune(r) }) {
			t.Fatalf("Tokens(%+q) has the word %+q", s, w)
		}
	}
}

// TestTokensEveryRune checks the invariants on every assigned code point, alone,
// inside a word and after a letter with a combining mark.
func TestTokensEveryRune(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf) {
			continue // unassigned, private use, surrogate: never a word character
		}
		c := string(r)
		checkTokens(t, c)
		checkTokens(t, "a"+c+"b")
		checkTokens(t, "Σ"+c+"\u0301Σ")
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"ΣΊΣΥΦΟΣ σίσυφος", "cafe\u0301 café", "STRASSE straße", "ﬁle ﬃ", "Acme™ ①", "ﷺ", "İstanbul ǅ", "a\u0345\u0301", "ᾲ ῼ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		checkTokens(t, s)
	})
}

// TestSnippetFolded: a snippet highlights the text's own words that match
// once folded, whatever their bytes.
func TestSnippetFolded(t *testing.T) {
	e, err := Parse("ΣΊΣΥΦΟΣ cafe\u0301 STRASSE file")
	if err != nil {
		t.Fatal(err)
	}
	text := "ο σίσυφος στο café\nτης straße με ﬁle, Straße."
	snip, lines := Snippet("T", text, &Plan{Match: e})
	want := "ο **σίσυφος** στο **café** της **straße** με **ﬁle**, **Straße**."
	if snip != want {
		t.Errorf("snippet = %q, want %q", snip, want)
	}
	if !slices.Equal(lines, []int{1, 2}) {
		t.Errorf("lines = %v, want [1 2]", lines)
	}
}

// TestSnippetEscapes: the text's own `*` and `\` are escaped, so `**` in
// a snippet is always a highlight mark.
func TestSnippetEscapes(t *testing.T) {
	e, _ := Parse("report")
	p := &Plan{Match: e}
	for _, tc := range []struct{ text, want string }{
		{"**secretword** in the report", `\*\*secretword\*\* in the **report**`},
		{`a \*report\* b`, `a \\\***report**\\\* b`},
		{"no match **here**", `no match \*\*here\*\*`},
		{"*report*", `\***report**\*`},
	} {
		if snip, _ := Snippet("T", tc.text, p); snip != tc.want {
			t.Errorf("Snippet(%q) = %q, want %q", tc.text, snip, tc.want)
		}
	}
	if snip, _ := Snippet("**bold** title", "", p); snip != `\*\*bold\*\* title` {
		t.Errorf("Snippet of a title = %q", snip)
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("**secret** report\nREPORT", "report")
	f.Add("ΣΊΣΥΦΟΣ \\* σίσυφος", "σίσυφος")
	f.Fuzz(func(t *testing.T, text, q string) {
		if !utf8.ValidString(text) {
			return
		}
		e, err := Parse(q)
		if err != nil || e == nil {
			return
		}
		words := e.Words()
		snip, _ := Snippet("T", text, &Plan{Match: e})
		// Read the snippet back: `\` escapes the next byte, `**` toggles
		// a mark; each marked part is one word of the query.
		var plain, mark strings.Builder
		in := false
		for i := 0; i < len(snip); i++ {
			switch {
			case snip[i] == '\\' && i+1 < len(snip) && (snip[i+1] == '\\' || snip[i+1] == '*'):
				i++
				(map[bool]*strings.Builder{false: &plain, true: &mark})[in].WriteByte(snip[i])
			case snip[i] == '\\' || snip[i] == '*' && (i+1 >= len(snip) || snip[i+1] != '*'):
				t.Fatalf("Snippet(%q, %q) = %q: an unescaped %q at %d", text, q, snip, snip[i], i)
			case snip[i] == '*':
				i++
				if in {
					tok := Tokens(mark.String())
					if len(tok) == 0 || !slices.ContainsFunc(tok, func(w string) bool { return slices.Contains(words, w) }) {
						t.Fatalf("Snippet(%q, %q) = %q: %q is marked", text, q, snip, mark.String())
					}
					plain.WriteString(mark.String())
					mark.Reset()
				}
				in = !in
			default:
				(map[bool]*strings.Builder{false: &plain, true: &mark})[in].WriteByte(snip[i])
			}
		}
		if in {
			t.Fatalf("Snippet(%q, %q) = %q: a mark is not closed", text, q, snip)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(plain.String(), "…"), "…")
		if strings.TrimSpace(text) != "" && !strings.Contains(oneLine(text), body) {
			t.Fatalf("Snippet(%q, %q) = %q: %q is not the text's", text, q, snip, body)
		}
	})
}

// TestLabelWithoutWord: a label of punctuation only says what a label is.
func TestLabelWithoutWord(t *testing.T) {
	x := New(&recorder{}, Options{})
	for _, l := range []string{"*", "", " - "} {
		_, err := x.plan("acme", Query{Labels: []string{"a", l}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "labels[1]: invalid: has no word: labels are words of letters and digits") {
			t.Errorf("plan with the label %q: %v", l, err)
		}
	}
}
