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
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/toolapi"
)

// Search bounds of grep_resource and query_resource. The characters of a
// result are bounded by Limits.MaxReadChars, like read_resource's.
const (
	DefaultSearchMatches = 50
	MaxSearchMatches     = 1000
	MaxGrepContext       = 10
	MaxPatternChars      = 4096 // characters, as the schemas' maxLength counts
	// MaxLineChars is the most characters of one line a match shows (the
	// part around the match) and of one context line (its start).
	MaxLineChars = 400
	// SearchTimeout bounds the work of one grep_resource or query_resource
	// call. A grep that reaches it returns the matches found so far,
	// truncated, with where to go on (stopped); a query fails.
	SearchTimeout = 10 * time.Second
	// MaxGrepLineWork bounds the regular expression's work on one line:
	// the instructions of the compiled pattern times the bytes of the line
	// (RE2 takes time linear in both). A line beyond it is refused up
	// front, since no time limit can stop a match inside one line.
	MaxGrepLineWork = 1 << 30
	// MaxQueryDepth and MaxQueryValues bound the JSON bodies
	// query_resource evaluates: a query selects nodes with their whole
	// normalized paths, so memory grows with values times depth.
	MaxQueryDepth  = 64
	MaxQueryValues = 250_000
	// querySlots is how many queries that may do more than one pass over
	// their body evaluate at once in one Service, and queryTenantSlots
	// how many of them one tenant may hold (tenantSlots).
	querySlots       = 2
	queryTenantSlots = 1
)

// searchTimeout is SearchTimeout; tests shorten it.
var searchTimeout = SearchTimeout

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
func (s *Service) Grep(ctx context.Context, tenant string, a *toolapi.GrepArgs) (*toolapi.GrepResult, *Failure) {
	re, steps, ctxLines, maxMatches, f := checkGrep(a)
	if f != nil {
		return nil, f
	}
	m, body, f := s.Open(ctx, tenant, a.URI)
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
	g := grep{re: re, steps: steps, ctx: ctxLines, max: maxMatches, budget: budget, afterLine: -1, afterOffset: -1}
	if a.AfterLine != nil {
		g.afterLine = *a.AfterLine
	}
	if a.AfterOffset != nil {
		g.afterOffset = *a.AfterOffset
	}
	sctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	if err := g.scan(sctx, body, m.Size); err != nil {
		var lc *lineTooCostly
		switch {
		case errors.As(err, &lc):
			return nil, InvalidField("pattern", fmt.Sprintf("line %d of %s is %d bytes, too long for this pattern (%d steps a byte) to be searched in time: "+
				"search with a simpler pattern or literal: true, or read that part with read_resource", lc.line, a.URI, lc.bytes, steps))
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			// Our own time limit: what was found so far, and where to go on.
			g.more, g.nextLine, g.stopped = true, g.scanned+1, true
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil, s.Unavailable(ctx, "grep read", err)
		default:
			return nil, s.readFailure(ctx, a.URI, err)
		}
	}
	return g.result(v)
}

// lineTooCostly is a line on which the pattern's work would exceed
// MaxGrepLineWork.
type lineTooCostly struct{ line, bytes int64 }

func (e *lineTooCostly) Error() string { return fmt.Sprintf("line %d too costly", e.line) }

// progSteps is the number of instructions of expr compiled as Go's regexp
// compiles it: the per-byte work of a match is at most proportional to it.
func progSteps(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return max(len(prog.Inst), 1)
}

func checkGrep(a *toolapi.GrepArgs) (*regexp.Regexp, int, int, int, *Failure) {
	switch {
	case a.Pattern == "":
		return nil, 0, 0, 0, InvalidField("pattern", "is required: a regular expression, or a literal with literal: true")
	case utf8.RuneCountInString(a.Pattern) > MaxPatternChars:
		return nil, 0, 0, 0, InvalidField("pattern", fmt.Sprintf("is longer than %d characters", MaxPatternChars))
	case a.AfterLine != nil && *a.AfterLine < 0:
		return nil, 0, 0, 0, InvalidField("afterLine", "must be 0 or more")
	case a.AfterOffset != nil && *a.AfterOffset < 0:
		return nil, 0, 0, 0, InvalidField("afterOffset", "must be 0 or more")
	}
	ctxLines, f := checkCount("context", a.Context, 0, 0, MaxGrepContext)
	if f != nil {
		return nil, 0, 0, 0, f
	}
	maxMatches, f := checkCount("maxMatches", a.MaxMatches, DefaultSearchMatches, 1, MaxSearchMatches)
	if f != nil {
		return nil, 0, 0, 0, f
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, 0, 0, 0, InvalidField("pattern", "is not a valid RE2 regular expression: "+msg+" (pass literal: true to search for the text as it is)")
	}
	return re, progSteps(expr), ctxLines, maxMatches, nil
}

// grep is one scan of a body: the matches found so far, each waiting for
// its lines of context after, and whether more were left behind.
type grep struct {
	re               *regexp.Regexp
	steps            int // instructions of re (progSteps)
	ctx, max, budget int
	afterLine        int64
	afterOffset      int64
	found            []toolapi.GrepMatch
	known            int   // characters of found, context after excluded
	more             bool  // a match was found beyond found
	nextLine         int64 // line of the first match left behind
	before           []string
	scanned          int64 // lines scanned to their end
	stopped          bool  // the time limit stopped the scan
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
		if err := ctx.Err(); err != nil {
			return err
		}
		tok := sc.Bytes()
		line++
		g.addAfter(tok)
		if g.more {
			if g.pending() == 0 {
				return nil
			}
		} else if line > g.afterLine {
			if int64(g.steps)*int64(len(tok)) > MaxGrepLineWork {
				return &lineTooCostly{line: line, bytes: int64(len(tok))}
			}
			for _, loc := range g.findAll(tok, start) {
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
		g.scanned = line
	}
	return sc.Err()
}

// findAll returns the matches of tok, a line starting at offset start,
// enough of them to fill what is left of the result and one more: never
// every match of a long line (a pattern like "a*" matches at every byte).
// Matches at or before afterOffset do not count, so the limit grows until
// enough come after it or the line has no more.
func (g *grep) findAll(tok []byte, start int64) [][]int {
	want := g.max - len(g.found) + 1
	for n := want; ; n *= 2 {
		locs := g.re.FindAllIndex(tok, n)
		if len(locs) < n {
			return locs
		}
		after := 0
		for _, loc := range locs {
			if start+int64(loc[0]) > g.afterOffset {
				after++
			}
		}
		if after >= want {
			return locs
		}
	}
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
	if g.stopped {
		v.Stopped = fmt.Sprintf("the scan reached the %s time limit of one call after line %d", searchTimeout, g.scanned)
	}
	if (n < len(g.found) || g.more) && n == 0 {
		// Stopped by the time limit before any match: go on after the
		// lines scanned.
		v.Truncated, v.NextAfterLine = true, &g.scanned
		return v, nil
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
func (s *Service) Query(ctx context.Context, tenant string, a *toolapi.QueryArgs) (*toolapi.QueryResult, *Failure) {
	path, maxMatches, startIndex, f := checkQuery(a)
	if f != nil {
		return nil, f
	}
	qs, err := compileQuery(path)
	if err != nil {
		s.log.WarnContext(ctx, "query_resource: a parsed query could not be prepared for a bounded evaluation", "err", err)
		return nil, InvalidField("path", "uses a form of JSONPath this server cannot evaluate within its work bounds; rewrite it (for example without that filter)")
	}
	m, body, f := s.Open(ctx, tenant, a.URI)
	if f != nil {
		return nil, f
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, m.Size+1))
	if err != nil {
		return nil, s.readFailure(ctx, a.URI, err)
	}
	if depth, values := jsonShape(raw); depth > MaxQueryDepth || values > MaxQueryValues {
		return nil, InvalidField("uri", fmt.Sprintf("the body of %s is too deep or too large for query_resource (nesting %d, at most %d; %d values, at most %d): "+
			"use grep_resource or read_resource", a.URI, depth, MaxQueryDepth, values, MaxQueryValues))
	}
	doc, why := decodeJSON(raw)
	if why != "" {
		return nil, InvalidField("uri", fmt.Sprintf("the body of %s (%s) is not JSON: %s; query_resource needs a JSON body (use grep_resource or read_resource)", a.URI, m.MIMEType, why))
	}
	nodes, f := s.selectNodes(ctx, tenant, qs, doc)
	if f != nil {
		return nil, f
	}

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

// selectNodes evaluates qs over doc, sorted by normalized path, within
// maxQueryWork units of work and SearchTimeout, both checked inside the
// evaluation, so a refused query stops at once. A query that may do more
// than one pass over the body (a descendant segment or a filter) first
// takes one of the tenant's query slots (tenantSlots).
func (s *Service) selectNodes(ctx context.Context, tenant string, qs *querySpec, doc any) ([]*spec.LocatedNode, *Failure) {
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	if !qs.cheap {
		release, err := s.queries.acquire(ctx, tenant)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, Fail(KindUnavailable, "this tenant's query slots are busy with its other queries; retry the same call later")
			}
			return nil, s.Unavailable(ctx, "query", err)
		}
		defer release()
	}
	nodes, _, err := evaluateQuery(ctx, qs, doc, maxQueryWork)
	switch {
	case errors.Is(err, errQueryWork):
		return nil, InvalidField("path", fmt.Sprintf("the query needs more than the %d units of work one call may do over this body (about one a node it looks at): "+
			"narrow it (fewer descendant segments, no query over the whole document inside a filter), or use grep_resource", maxQueryWork))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return nil, InvalidField("path", fmt.Sprintf("the query did not finish within the %s limit of one call: "+
			"narrow it (fewer descendants, simpler filters or regular expressions), or use grep_resource", searchTimeout))
	case err != nil:
		return nil, s.Unavailable(ctx, "query", err)
	}
	slices.SortStableFunc(nodes, func(x, y *spec.LocatedNode) int { return x.Path.Compare(y.Path) })
	return nodes, nil
}

// jsonShape returns the deepest nesting of the JSON text raw and how many
// values it holds (object keys included), counting without decoding. raw
// need not be valid JSON: decodeJSON judges that.
func jsonShape(raw []byte) (depth, values int) {
	d := 0
	expect := true // a value may start here
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			if expect {
				values++
			}
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
			expect = false
		case '[', '{':
			values++
			d++
			depth = max(depth, d)
			expect = true
		case ']', '}':
			d--
			expect = false
		case ',', ':':
			expect = true
		case ' ', '\t', '\n', '\r':
		default:
			if expect {
				values++
				expect = false
			}
		}
	}
	return depth, values
}

func checkQuery(a *toolapi.QueryArgs) (*jsonpath.Path, int, int, *Failure) {
	switch {
	case a.Path == "":
		return nil, 0, 0, InvalidField("path", "is required: an RFC 9535 JSONPath query such as $.hits[0]")
	case utf8.RuneCountInString(a.Path) > MaxPatternChars:
		return nil, 0, 0, InvalidField("path", fmt.Sprintf("is longer than %d characters", MaxPatternChars))
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
