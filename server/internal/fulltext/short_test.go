package fulltext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShortSnippetKeepsItsSyntax: a snippet cut to shortText never ends
// inside an escape, never leaves a match open, and stays valid UTF-8,
// wherever the cut falls.
func TestShortSnippetKeepsItsSyntax(t *testing.T) {
	parts := []string{`\*`, `\\`, "**", "ü", "word", " ", "€", "x"}
	for seed := range 5000 {
		var b strings.Builder
		open := false
		for i, r := 0, uint32(seed)*2654435761; b.Len() < 3*shortText; i++ {
			r = r*1664525 + 1013904223
			p := parts[r>>16%uint32(len(parts))]
			if p == "**" {
				open = !open
			}
			b.WriteString(p)
		}
		if open {
			b.WriteString("**")
		}
		s := b.String()
		got := shortSnippet(s)
		body := strings.TrimSuffix(got, "…")
		if len(body) > shortText || !utf8.ValidString(got) || body == got {
			t.Fatalf("shortSnippet(%q) = %q: want at most %d bytes, valid UTF-8, ending in …", s, got, shortText)
		}
		// Read it as a snippet: escapes whole, marks paired.
		marks := 0
		for i := 0; i < len(body); i++ {
			switch {
			case body[i] == '\\':
				if i+1 == len(body) || body[i+1] != '*' && body[i+1] != '\\' {
					t.Fatalf("shortSnippet(%q) = %q: a cut escape at %d", s, got, i)
				}
				i++
			case strings.HasPrefix(body[i:], "**"):
				marks++
				i++
			}
		}
		if marks%2 != 0 {
			t.Fatalf("shortSnippet(%q) = %q: a match left open", s, got)
		}
	}
	if s := "short **x** \\*"; shortSnippet(s) != s {
		t.Errorf("a snippet within the limit changed: %q", shortSnippet(s))
	}
}
