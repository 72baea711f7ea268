package index

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// What a snippet is made of.
const (
	// SnippetBytes bounds a snippet's text around its first match
	// (highlight marks not counted).
	SnippetBytes = 200
	// MaxLines bounds Hit.Lines.
	MaxLines = 20
	// HighlightStart and HighlightEnd enclose each match in a snippet
	// (Markdown bold, which the hosts render or read as emphasis).
	HighlightStart, HighlightEnd = "**", "**"
)

// Snippet cuts the snippet and the matching line numbers of one hit from
// its title and text: the words p's text and labels ask for, found with
// Tokens' rule (a word of the text matches when one of its folded words
// is asked for, and the text's own word is highlighted). The snippet is
// about SnippetBytes of text around the first match, each match
// highlighted; without a match in the text it is the text's start, or the
// title for a document without text. The text's own `\` and `*` are
// escaped as `\\` and `\*` (Markdown), so an unescaped HighlightStart
// is always a mark.
func Snippet(title, text string, p *Plan) (string, []int) {
	var words []string
	words = append(words, p.Match.Words()...)
	for _, l := range p.Labels {
		words = append(words, l.Words()...)
	}
	slices.Sort(words)
	words = slices.Compact(words)
	var lines []int
	first, line := -1, 1
	lastLine, counted := 0, 0
	type span struct{ start, end int }
	var spans []span
	var f folder
	var folded []string
	if len(words) > 0 {
		eachRun(text, func(start, end int, ascii bool) {
			folded = f.words(folded[:0], text[start:end], ascii, false)
			if !slices.ContainsFunc(folded, func(w string) bool { _, ok := slices.BinarySearch(words, w); return ok }) {
				return
			}
			line += strings.Count(text[counted:start], "\n")
			counted = start
			if first < 0 {
				first = start
			}
			if line != lastLine && len(lines) < MaxLines {
				lines = append(lines, line)
				lastLine = line
			}
			if start-first < SnippetBytes {
				spans = append(spans, span{start, end})
			}
		})
	}
	if strings.TrimSpace(text) == "" {
		return oneLine(escapeMarks(cutUTF8(title, SnippetBytes))), nil
	}
	from := 0
	if first > SnippetBytes/4 {
		// Start a little before the first match, at a word boundary.
		from = first - SnippetBytes/4
		for from < first && from > 0 && wordRune(runeAt(text, from-1)) {
			from++
		}
		for from < len(text) && !utf8.RuneStart(text[from]) {
			from++
		}
	}
	to := min(len(text), from+SnippetBytes)
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	at := from
	for _, s := range spans {
		if s.start < from || s.end > to {
			continue
		}
		b.WriteString(escapeMarks(text[at:s.start]))
		b.WriteString(HighlightStart)
		b.WriteString(text[s.start:s.end]) // letters, digits and marks: nothing to escape
		b.WriteString(HighlightEnd)
		at = s.end
	}
	b.WriteString(escapeMarks(text[at:to]))
	if to < len(text) {
		b.WriteString("…")
	}
	return oneLine(b.String()), lines
}

// markEscaper writes `\` and `*` as Markdown backslash escapes.
var markEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`)

// escapeMarks escapes s for a snippet: no `*` of s is left bare, so none
// reads as HighlightStart or HighlightEnd.
func escapeMarks(s string) string { return markEscaper.Replace(s) }

func runeAt(s string, i int) rune {
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r
}

// oneLine folds runs of white space (newlines included) into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
