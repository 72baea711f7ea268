package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// Search bounds of grep_resource and query_resource. The characters of a
// result are bounded by Limits.MaxReadChars, like read_resource's.
const (
	DefaultSearchMatches = 50
	MaxSearchMatches     = 1000
	MaxGrepContext       = 10
	MaxPatternBytes      = 4096
	// MaxLineChars is the most characters of one line a match shows (the
	// part around the match) and of one context line (its start).
	MaxLineChars = 400
)

// openReadable opens the body of the resource raw names for p, deciding
// readability from the metadata before any body byte is read: through the
// backend's streaming reader when it has one, else by Stat then Get.
// Unreadable, missing and expired are the one NotFound.
func (s *Service) openReadable(ctx context.Context, p auth.Principal, raw string) (store.Meta, io.ReadCloser, *Failure) {
	k, f := s.ParseURI(raw)
	if f != nil {
		return store.Meta{}, nil, f
	}
	if st, ok := s.store.(store.Streamer); ok {
		m, r, err := st.Open(ctx, k)
		if IsNotFound(err) {
			return store.Meta{}, nil, NotFound(raw)
		}
		if err != nil {
			return store.Meta{}, nil, s.Unavailable(ctx, "store open", err)
		}
		if !Readable(p, m.Key.Tenant(), m.Visibility) {
			r.Close()
			return store.Meta{}, nil, NotFound(raw)
		}
		return m, r, nil
	}
	m, err := s.store.Stat(ctx, k)
	if IsNotFound(err) || err == nil && !Readable(p, m.Key.Tenant(), m.Visibility) {
		return store.Meta{}, nil, NotFound(raw)
	}
	if err != nil {
		return store.Meta{}, nil, s.Unavailable(ctx, "store stat", err)
	}
	obj, err := s.store.Get(ctx, k)
	if IsNotFound(err) || err == nil && !Readable(p, obj.Meta.Key.Tenant(), obj.Meta.Visibility) {
		return store.Meta{}, nil, NotFound(raw)
	}
	if err != nil {
		return store.Meta{}, nil, s.Unavailable(ctx, "store get", err)
	}
	return obj.Meta, io.NopCloser(bytes.NewReader(obj.Body)), nil
}

// readFailure maps an error met while reading an opened body.
func (s *Service) readFailure(ctx context.Context, raw string, err error) *Failure {
	if IsNotFound(err) {
		return NotFound(raw)
	}
	return s.Unavailable(ctx, "store read", err)
}

func checkCount(field string, v *int, def, lo, hi int) (int, *Failure) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, InvalidField(field, fmt.Sprintf("must be between %d and %d", lo, hi))
	}
	return *v, nil
}

// budget is how many characters of the result the matches may take: the
// limit less the JSON of the rest of the value, measured with the widest
// numbers it can hold.
func (s *Service) budget(rest any) int {
	b, _ := json.Marshal(rest)
	return s.limits.MaxReadChars - utf8.RuneCount(b) - 64
}

// cost is the characters v adds to a JSON array of matches.
func cost(v any) int {
	b, _ := json.Marshal(v)
	return utf8.RuneCount(b) + 1
}

// Grep finds the matches of a.Pattern, a regular expression or a literal,
// in the lines of the textual body a.URI names, within the caps on
// matches and characters.
func (s *Service) Grep(ctx context.Context, p auth.Principal, a *toolapi.GrepArgs) (*toolapi.GrepResult, *Failure) {
	re, ctxLines, maxMatches, f := checkGrep(a)
	if f != nil {
		return nil, f
	}
	m, body, f := s.openReadable(ctx, p, a.URI)
	if f != nil {
		return nil, f
	}
	defer body.Close()
	if !jsonwire.TextType(m.MIMEType) {
		return nil, InvalidField("uri", fmt.Sprintf("%s has a binary body (%s): grep_resource searches text only; use read_resource to read it", a.URI, m.MIMEType))
	}
	wide := int64(1<<62 - 1)
	v := &toolapi.GrepResult{Status: "ok", URI: a.URI, MIMEType: m.MIMEType, TotalSize: m.Size, SHA256: m.SHA256, Matches: []toolapi.GrepMatch{}}
	budget := s.budget(toolapi.GrepResult{Status: v.Status, URI: v.URI, MIMEType: v.MIMEType, TotalSize: wide, SHA256: v.SHA256,
		Matches: []toolapi.GrepMatch{}, Truncated: true, NextAfterOffset: &wide, NextAfterLine: &wide})
	if budget < 64 {
		return nil, Fail(KindTooLarge, fmt.Sprintf("the metadata of %s alone fills the %d-character result limit of this server", a.URI, s.limits.MaxReadChars))
	}
	g := grep{re: re, ctx: ctxLines, max: maxMatches, budget: budget, afterLine: -1, afterOffset: -1}
	if a.AfterLine != nil {
		g.afterLine = *a.AfterLine
	}
	if a.AfterOffset != nil {
		g.afterOffset = *a.AfterOffset
	}
	if err := g.scan(ctx, body, m.Size); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, s.Unavailable(ctx, "grep read", err)
		}
		return nil, s.readFailure(ctx, a.URI, err)
	}
	return g.result(v)
}

func checkGrep(a *toolapi.GrepArgs) (*regexp.Regexp, int, int, *Failure) {
	switch {
	case a.Pattern == "":
		return nil, 0, 0, InvalidField("pattern", "is required: a regular expression, or a literal with literal: true")
	case len(a.Pattern) > MaxPatternBytes:
		return nil, 0, 0, InvalidField("pattern", fmt.Sprintf("is longer than %d bytes", MaxPatternBytes))
	case a.AfterLine != nil && *a.AfterLine < 0:
		return nil, 0, 0, InvalidField("afterLine", "must be 0 or more")
	case a.AfterOffset != nil && *a.AfterOffset < 0:
		return nil, 0, 0, InvalidField("afterOffset", "must be 0 or more")
	}
	ctxLines, f := checkCount("context", a.Context, 0, 0, MaxGrepContext)
	if f != nil {
		return nil, 0, 0, f
	}
	maxMatches, f := checkCount("maxMatches", a.MaxMatches, DefaultSearchMatches, 1, MaxSearchMatches)
	if f != nil {
		return nil, 0, 0, f
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, 0, 0, InvalidField("pattern", "is not a valid RE2 regular expression: "+msg+" (pass literal: true to search for the text as it is)")
	}
	return re, ctxLines, maxMatches, nil
}

// grep is one scan of a body: the matches found so far, each waiting for
// its lines of context after, and whether more were left behind.
type grep struct {
	re               *regexp.Regexp
	ctx, max, budget int
	afterLine        int64
	afterOffset      int64
	found            []toolapi.GrepMatch
	known            int   // characters of found, context after excluded
	more             bool  // a match was found beyond found
	nextLine         int64 // line of the first match left behind
	before           []string
}

// full reports whether no further match could be returned.
func (g *grep) full() bool { return len(g.found) >= g.max || g.known > g.budget }

func (g *grep) scan(ctx context.Context, body io.Reader, size int64) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, min(64<<10, size+1)), int(size)+64)
	sc.Split(splitLines)
	var (
		start int64 // offset of the line
		line  int64
	)
	for sc.Scan() {
		if line&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tok := sc.Bytes()
		line++
		g.addAfter(tok)
		if g.more {
			if g.pending() == 0 {
				return nil
			}
		} else if line > g.afterLine {
			for _, loc := range g.re.FindAllIndex(tok, -1) {
				off := start + int64(loc[0])
				if off <= g.afterOffset {
					continue
				}
				if g.full() {
					g.more, g.nextLine = true, line
					break
				}
				mt := toolapi.GrepMatch{Line: line, Offset: off, Length: int64(loc[1] - loc[0]), Before: slices.Clone(g.before)}
				mt.Text, mt.TextCut = around(tok, loc[0])
				g.found = append(g.found, mt)
				g.known += cost(mt)
			}
		}
		if g.ctx > 0 {
			if len(g.before) == g.ctx {
				g.before = g.before[1:]
			}
			g.before = append(g.before, prefix(tok))
		}
		start += int64(len(tok))
		if start < size {
			start++ // the "\n"
		}
	}
	return sc.Err()
}

// pending is how many found matches still wait for context after.
func (g *grep) pending() int {
	n := 0
	for i := len(g.found) - 1; i >= 0 && len(g.found[i].After) < g.ctx; i-- {
		n++
	}
	return n
}

// addAfter gives the line tok as context after to the matches on earlier
// lines that still want some.
func (g *grep) addAfter(tok []byte) {
	if g.ctx == 0 || len(g.found) == 0 {
		return
	}
	for i := len(g.found) - 1; i >= 0; i-- {
		mt := &g.found[i]
		if len(mt.After) >= g.ctx {
			break // and so did every earlier match
		}
		mt.After = append(mt.After, prefix(tok))
	}
}

// result fits the matches found into the budget and says how to go on.
func (g *grep) result(v *toolapi.GrepResult) (*toolapi.GrepResult, *Failure) {
	used, n := 0, 0
	for ; n < len(g.found); n++ {
		c := cost(g.found[n])
		if used+c > g.budget {
			break
		}
		used += c
	}
	if n == 0 && len(g.found) > 0 {
		// Not even the first match fits with its context: without it.
		mt := g.found[0]
		mt.Before, mt.After = nil, nil
		if cost(mt) > g.budget {
			return nil, Fail(KindTooLarge, fmt.Sprintf("one match alone exceeds the %d-character result limit of this server", g.budget))
		}
		g.found[0], n = mt, 1
	}
	if n > 0 {
		v.Matches = g.found[:n] // else the empty list, never null
	}
	if n < len(g.found) || g.more {
		v.Truncated = true
		last := v.Matches[n-1]
		v.NextAfterOffset = &last.Offset
		next := g.nextLine
		if n < len(g.found) {
			next = g.found[n].Line
		}
		if next > last.Line {
			v.NextAfterLine = &last.Line
		}
	}
	return v, nil
}

// splitLines splits at "\n", which the lines do not hold.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// prefix is the start of a line as context shows it.
func prefix(line []byte) string {
	if utf8.RuneCount(line) <= MaxLineChars {
		return string(line)
	}
	i := 0
	for n := 0; n < MaxLineChars; n++ {
		_, w := utf8.DecodeRune(line[i:])
		i += w
	}
	return string(line[:i]) + "…"
}

// around is the line of a match at byte at, or when it is long a part of
// it of MaxLineChars characters starting a quarter of them before the
// match, never splitting a character.
func around(line []byte, at int) (string, bool) {
	if utf8.RuneCount(line) <= MaxLineChars {
		return string(line), false
	}
	lo := at
	for n := 0; n < MaxLineChars/4 && lo > 0; n++ {
		_, w := utf8.DecodeLastRune(line[:lo])
		lo -= w
	}
	hi := lo
	for n := 0; n < MaxLineChars && hi < len(line); n++ {
		_, w := utf8.DecodeRune(line[hi:])
		hi += w
	}
	return string(line[lo:hi]), true
}

// Query selects the values of the RFC 9535 JSONPath a.Path in the JSON
// body a.URI names, in normalized path order, within the caps on matches
// and characters.
func (s *Service) Query(ctx context.Context, p auth.Principal, a *toolapi.QueryArgs) (*toolapi.QueryResult, *Failure) {
	path, maxMatches, startIndex, f := checkQuery(a)
	if f != nil {
		return nil, f
	}
	m, body, f := s.openReadable(ctx, p, a.URI)
	if f != nil {
		return nil, f
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, m.Size+1))
	if err != nil {
		return nil, s.readFailure(ctx, a.URI, err)
	}
	doc, why := decodeJSON(raw)
	if why != "" {
		return nil, InvalidField("uri", fmt.Sprintf("the body of %s (%s) is not JSON: %s; query_resource needs a JSON body (use grep_resource or read_resource)", a.URI, m.MIMEType, why))
	}
	nodes := path.SelectLocated(doc)
	slices.SortStableFunc(nodes, func(x, y *spec.LocatedNode) int { return x.Path.Compare(y.Path) })

	wide := 1<<62 - 1
	v := &toolapi.QueryResult{Status: "ok", URI: a.URI, MIMEType: m.MIMEType, TotalSize: m.Size, SHA256: m.SHA256, Count: len(nodes), Matches: []toolapi.QueryMatch{}}
	budget := s.budget(toolapi.QueryResult{Status: v.Status, URI: v.URI, MIMEType: v.MIMEType, TotalSize: int64(wide), SHA256: v.SHA256, Count: wide,
		Matches: []toolapi.QueryMatch{}, Truncated: true, NextIndex: &wide})
	if budget < 64 {
		return nil, Fail(KindTooLarge, fmt.Sprintf("the metadata of %s alone fills the %d-character result limit of this server", a.URI, s.limits.MaxReadChars))
	}
	i, used := min(startIndex, len(nodes)), 0
	for ; i < len(nodes) && len(v.Matches) < maxMatches; i++ {
		mt := toolapi.QueryMatch{Path: nodes[i].Path.String(), Value: nodes[i].Node}
		c := cost(mt)
		if c > budget {
			mt = toolapi.QueryMatch{Path: mt.Path, Omitted: true, ValueChars: cost(nodes[i].Node) - 1}
			c = cost(mt)
		}
		if used+c > budget {
			break
		}
		used += c
		v.Matches = append(v.Matches, mt)
	}
	if i < len(nodes) {
		v.Truncated, v.NextIndex = true, &i
	}
	return v, nil
}

func checkQuery(a *toolapi.QueryArgs) (*jsonpath.Path, int, int, *Failure) {
	switch {
	case a.Path == "":
		return nil, 0, 0, InvalidField("path", "is required: an RFC 9535 JSONPath query such as $.hits[0]")
	case len(a.Path) > MaxPatternBytes:
		return nil, 0, 0, InvalidField("path", fmt.Sprintf("is longer than %d bytes", MaxPatternBytes))
	}
	maxMatches, f := checkCount("maxMatches", a.MaxMatches, DefaultSearchMatches, 1, MaxSearchMatches)
	if f != nil {
		return nil, 0, 0, f
	}
	start := 0
	if a.StartIndex != nil {
		if *a.StartIndex < 0 {
			return nil, 0, 0, InvalidField("startIndex", "must be 0 or more")
		}
		start = *a.StartIndex
	}
	path, err := jsonpath.Parse(a.Path)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonpath: ")
		return nil, 0, 0, InvalidField("path", "is not a valid RFC 9535 JSONPath: "+msg)
	}
	return path, maxMatches, start, nil
}

// decodeJSON decodes one JSON value, numbers kept as written; why says
// what is wrong with a body that is not one.
func decodeJSON(raw []byte) (any, string) {
	if !utf8.Valid(raw) {
		return nil, "it is not valid UTF-8"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Sprintf("%s at byte %d", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "it ends before its value does"
		}
		return nil, "it does not decode"
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Sprintf("more follows its value at byte %d", dec.InputOffset())
	}
	return doc, ""
}
