package index

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Bounds of a query's text.
const (
	// MaxQueryBytes bounds Query.Text and each label.
	MaxQueryBytes = 1024
	// MaxTerms bounds the words of a query and its labels together.
	MaxTerms = 32
	// MaxLabels bounds Query.Labels.
	MaxLabels = 8
	// MaxTokenBytes is the longest word the index keeps; longer runs of
	// letters and digits are not words (base64, hashes) and are skipped.
	MaxTokenBytes = 100
)

// Expr is a parsed query: every group of All must match (one of its
// alternatives), and no phrase of Not.
type Expr struct {
	All []Group
	Not []Phrase
}

// Group is a set of alternatives joined by `or`.
type Group []Phrase

// Phrase is a run of words that must appear in this order, next to each
// other; a phrase of one word is a word.
type Phrase []string

// Terms counts the words of e (0 for nil).
func (e *Expr) Terms() int {
	if e == nil {
		return 0
	}
	n := 0
	for _, g := range e.All {
		for _, p := range g {
			n += len(p)
		}
	}
	for _, p := range e.Not {
		n += len(p)
	}
	return n
}

// Words returns the distinct words e requires or offers (not the
// excluded ones): what a snippet highlights.
func (e *Expr) Words() []string {
	if e == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, g := range e.All {
		for _, p := range g {
			for _, w := range p {
				if !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// Websearch writes g in the syntax of PostgreSQL's websearch_to_tsquery:
// every phrase quoted, `or` between them. Words are letters and digits
// only (Tokens), so the text needs no escaping. (A whole Expr is not one
// websearch text: PostgreSQL binds `a b or c` as (a & b) | c, Parse as
// a & (b | c); a driver joins the groups itself.)
func (g Group) Websearch() string {
	var b strings.Builder
	for i, p := range g {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString(p.Websearch())
	}
	return b.String()
}

// Websearch writes p as a quoted websearch_to_tsquery phrase.
func (p Phrase) Websearch() string { return `"` + strings.Join(p, " ") + `"` }

// Parse parses web-search syntax: words that all must match, "a quoted
// phrase", `or` between two alternatives, and -word or -"a phrase" to
// exclude. Words are cut as Tokens cuts text, so `foo-bar` is the phrase
// "foo bar". Empty (or only white space) gives nil, matching everything.
// A query of exclusions only, one with no word at all (only `or`, `-`,
// empty phrases or punctuation: errNoWord), an `or` next to an exclusion
// and a word longer than MaxTokenBytes are invalid. Its errors are
// *QueryError of the field "query".
func Parse(s string) (*Expr, error) {
	if len(s) > MaxQueryBytes {
		return nil, queryErr("query", ErrTooCostly, "%d bytes, at most %d", len(s), MaxQueryBytes)
	}
	if !utf8.ValidString(s) {
		return nil, queryErr("query", ErrInvalid, "not valid UTF-8")
	}
	type item struct {
		words  Phrase
		neg    bool
		or     bool // the bare word `or`
		quoted bool
	}
	var items []item
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		neg := false
		if r == '-' && i+1 < len(s) {
			if r2, _ := utf8.DecodeRuneInString(s[i+1:]); !unicode.IsSpace(r2) {
				neg = true
				i++
			}
		}
		var text string
		quoted := i < len(s) && s[i] == '"'
		if quoted {
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				text, i = s[i+1:], len(s)
			} else {
				text, i = s[i+1:i+1+end], i+2+end
			}
		} else {
			end := strings.IndexFunc(s[i:], unicode.IsSpace)
			if end < 0 {
				end = len(s) - i
			}
			text, i = s[i:i+end], i+end
		}
		it := item{neg: neg, quoted: quoted}
		if !neg && !quoted && strings.EqualFold(text, "or") {
			it.or = true
		} else {
			for _, t := range tokens(text, true) {
				if len(t) > MaxTokenBytes {
					return nil, queryErr("query", ErrInvalid, "the word %q is longer than %d bytes", cutUTF8(t, 20)+"…", MaxTokenBytes)
				}
				it.words = append(it.words, t)
			}
			if len(it.words) == 0 {
				continue // punctuation only
			}
		}
		items = append(items, it)
	}
	e := &Expr{}
	joinNext := false
	for i, it := range items {
		switch {
		case it.or:
			prev := i > 0 && !items[i-1].or
			next := i+1 < len(items) && !items[i+1].or
			if prev && next {
				if items[i-1].neg || items[i+1].neg {
					return nil, queryErr("query", ErrInvalid, "`or` cannot join an excluded term (-word)")
				}
				joinNext = true
			}
		case it.neg:
			e.Not = append(e.Not, it.words)
		case joinNext:
			last := &e.All[len(e.All)-1]
			*last = append(*last, it.words)
			joinNext = false
		default:
			e.All = append(e.All, Group{it.words})
		}
	}
	if len(e.All) == 0 {
		if len(e.Not) > 0 {
			return nil, queryErr("query", ErrInvalid, "a query needs a word that is not excluded (-word)")
		}
		if strings.TrimSpace(s) != "" {
			return nil, &QueryError{Field: "query", Kind: ErrInvalid, Reason: errNoWord.Error(), cause: errNoWord}
		}
		return nil, nil
	}
	return e, nil
}

// errNoWord is Parse's refusal of a text that is not blank but has no
// word to search for: read as no query it would match every document,
// which is never what `or`, `""` or `-` alone asked for.
var errNoWord = errors.New("a query needs a word of letters or digits to search for; `or`, `-`, quotes and punctuation alone are not words (to match every resource the filters keep, leave the query out)")

// wordRune reports whether r is part of a word: letters, digits and the
// marks that combine with them (a word does not start with a mark).
func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || markRune(r)
}

// markRune reports whether r is a combining mark, spacing or not (Mn, Mc):
// part of a word only after a letter or digit.
func markRune(r rune) bool { return r >= utf8.RuneSelf && unicode.In(r, unicode.Mn, unicode.Mc) }

// eachRun calls fn with the bounds of each word run of text, in order:
// a maximal run of wordRune characters that does not start with a mark;
// ascii says the run is ASCII only.
func eachRun(text string, fn func(start, end int, ascii bool)) {
	start, ascii := -1, true
	for i, r := range text {
		switch {
		case start >= 0 && !wordRune(r):
			fn(start, i, ascii)
			start = -1
		case start < 0 && wordRune(r) && !markRune(r):
			start, ascii = i, r < utf8.RuneSelf
		case start >= 0 && r >= utf8.RuneSelf:
			ascii = false
		}
	}
	if start >= 0 {
		fn(start, len(text), ascii)
	}
}

// folder turns a run of text into its words: NFKC, full Unicode case
// folding, NFKC again (compatibility caseless matching, Unicode §3.13: the
// fold sees what NFKC makes, ＡＢＣ → ABC → abc, and the second NFKC
// recomposes what the fold takes apart, ǰ → j and a caron), cut again into
// runs (ﷺ is four words once normalized). A folder is not safe for
// concurrent use (cases.Caser is not); docs/decisions.md, "Words fold".
type folder struct {
	caser cases.Caser
	buf   []byte // Span's input
}

// words appends the words of the run w (ascii: w is ASCII only) to out;
// keepLong keeps those longer than MaxTokenBytes once folded (Parse
// refuses them).
func (f *folder) words(out []string, w string, ascii, keepLong bool) []string {
	if ascii { // letters and digits: NFKC changes nothing, folding is lowering
		if keepLong || len(w) <= MaxTokenBytes {
			out = append(out, strings.ToLower(w))
		}
		return out
	}
	if f.caser == (cases.Caser{}) {
		f.caser = cases.Fold()
	}
	nfkc := norm.NFKC.String(w)
	folded := nfkc
	f.buf = append(f.buf[:0], nfkc...)
	f.caser.Reset()
	if n, err := f.caser.Span(f.buf, true); n < len(nfkc) || err != nil { // String allocates even when it changes nothing
		folded = f.caser.String(nfkc)
	}
	folded = strings.Map(cherokee, folded)
	if folded != nfkc {
		folded = norm.NFKC.String(folded)
	}
	if folded == w { // a run that NFKC and folding keep is one word
		if keepLong || len(w) <= MaxTokenBytes {
			out = append(out, w)
		}
		return out
	}
	eachRun(folded, func(start, end int, _ bool) {
		if keepLong || end-start <= MaxTokenBytes {
			out = append(out, folded[start:end])
		}
	})
	return out
}

// cherokee folds a Cherokee letter to its capital, as Unicode's
// CaseFolding.txt does: x/text's cases.Fold (v0.42.0) swaps the two cases
// instead, so folding twice would undo it (TestTokensEveryRune).
func cherokee(r rune) rune {
	if 0x13a0 <= r && r <= 0x13ff || 0xab70 <= r && r <= 0xabbf { // the Cherokee blocks
		return unicode.ToUpper(r)
	}
	return r
}

// Tokens cuts text into its words, in order: maximal runs of letters,
// digits and the combining marks that follow them, each in NFKC with its
// case folded (so ΣΊΣΥΦΟΣ, σίσυφος; STRASSE, straße; file, ﬁle and an
// NFD café and an NFC one are each one word); words longer than
// MaxTokenBytes once folded are skipped. It is the one tokenizer: drivers
// index its output joined by spaces, queries are parsed with it and
// snippets find matches with it. Tokens(strings.Join(Tokens(s), " ")) is
// Tokens(s).
func Tokens(text string) []string { return tokens(text, false) }

// tokens is Tokens; keepLong keeps the long words (Parse refuses them).
func tokens(text string, keepLong bool) []string {
	var out []string
	var f folder
	eachRun(text, func(start, end int, ascii bool) { out = f.words(out, text[start:end], ascii, keepLong) })
	return out
}

// TokenText is Tokens joined by single spaces: what a driver indexes.
func TokenText(text string) string { return strings.Join(Tokens(text), " ") }

// cursor is what a Page.Next holds: the offset of the next page and a
// hash of the tenant and query it belongs to.
type cursor struct {
	Offset int    `json:"o"`
	Query  string `json:"q"`
}

// queryHash binds a cursor to tenant and the query without its paging.
func queryHash(tenant string, q Query) string {
	h := sha256.New()
	field := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	ms := func(t time.Time) string { return strconv.FormatInt(msUTC(t).UnixMilli(), 10) }
	field(tenant)
	field(q.Text)
	field(q.Scheme)
	field(q.Prefix)
	field(q.MediaType)
	field(strconv.Itoa(len(q.Labels)))
	for _, l := range q.Labels {
		field(l)
	}
	field(ms(q.CreatedAfter))
	field(ms(q.CreatedBefore))
	field(ms(q.ExpiresAfter))
	field(ms(q.ExpiresBefore))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

func encodeCursor(tenant string, q Query, offset int) string {
	b, _ := json.Marshal(cursor{Offset: offset, Query: queryHash(tenant, q)})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, tenant string, q Query) (int, error) {
	bad := queryErr("cursor", ErrInvalid, "not a cursor of this query (pass the nextCursor of the same query, or none)")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(s) > 200 {
		return 0, bad
	}
	var c cursor
	if json.Unmarshal(b, &c) != nil || c.Query != queryHash(tenant, q) || c.Offset <= 0 {
		return 0, bad
	}
	return c.Offset, nil
}

// cutUTF8 returns at most max bytes of s, cut at a character boundary.
func cutUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || n > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
