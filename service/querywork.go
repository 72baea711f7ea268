package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/registry"
	"github.com/theory/jsonpath/spec"
)

// MaxQueryWork bounds the work of one query_resource evaluation, in units
// of about one node visited: every node a segment or a filter looks at,
// every value a deep comparison walks, and a regular expression's
// instructions times the bytes it matches (queryRegexBytes to the unit).
// An evaluation that reaches it stops there and the call is refused; on
// this project's reference machine the whole budget is under a second of
// CPU (docs/decisions.md, "query work").
const MaxQueryWork = 5_000_000

const (
	// queryCtxEvery is how many units of work pass between two looks at
	// the context.
	queryCtxEvery = 4096
	// queryRegexBytes is how many instruction-bytes of a match() or
	// search() make one unit of work.
	queryRegexBytes = 32
)

// maxQueryWork is MaxQueryWork; tests lower it.
var maxQueryWork int64 = MaxQueryWork

// errQueryWork is an evaluation stopped by its work budget.
var errQueryWork = errors.New("query work budget reached")

// builtins are the RFC 9535 functions, the ones jsonpath.Parse knows.
var builtins = registry.New()

// querySpec is a parsed query ready for a bounded evaluation: every
// filter's comparisons and function calls taken apart, so that the
// evaluator, not the jsonpath package, walks every query inside them.
//
// The jsonpath package evaluates a query as one uninterruptible call and
// keeps the operands of a comparison and the arguments of a function
// unexported. The evaluator walks segments, selectors and the logical
// structure of filters itself, through the package's exported types, and
// reads comparisons and calls from their canonical text (what String
// prints, the form jsonpath.Path.MarshalText promises to parse back):
// their queries are parsed back with jsonpath.Parse and walked like any
// other, their literals decoded. The package still decides what one
// selector selects from one node, what a comparison of two values is, and
// what a function returns for its arguments, so the results are its own.
type querySpec struct {
	q       *spec.PathQuery
	rooted  map[*spec.PathQuery]bool // whether the query starts at $
	leaves  map[spec.BasicExpr]*leaf // comparisons and function tests
	cheap   bool                     // no descendant segment and no filter
	filters int
}

// leaf is a comparison (cmp) or a function used as a test (fn, not).
type leaf struct {
	cmp  bool
	op   spec.CompOp
	l, r operand
	fn   *call
	not  bool
}

// operand is a literal, a query or a function call.
type operand struct {
	lit      spec.PathValue
	isLit    bool
	q        *spec.PathQuery
	relative bool
	singular bool
	fn       *call
}

// call is a function call with its arguments.
type call struct {
	name string
	ext  *spec.FuncExtension
	args []operand
}

// compileQuery takes path apart for evaluateQuery.
func compileQuery(path *jsonpath.Path) (*querySpec, error) {
	qs := &querySpec{q: path.Query(), rooted: map[*spec.PathQuery]bool{}, leaves: map[spec.BasicExpr]*leaf{}, cheap: true}
	if err := qs.query(qs.q, true); err != nil {
		return nil, err
	}
	for _, seg := range qs.q.Segments() {
		if seg.IsDescendant() {
			qs.cheap = false
		}
	}
	qs.cheap = qs.cheap && qs.filters == 0
	return qs, nil
}

func (qs *querySpec) query(q *spec.PathQuery, rooted bool) error {
	qs.rooted[q] = rooted
	for _, seg := range q.Segments() {
		for _, sel := range seg.Selectors() {
			if f, ok := sel.(*spec.FilterSelector); ok {
				qs.filters++
				if err := qs.logical(f.LogicalOr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (qs *querySpec) logical(lo spec.LogicalOr) error {
	for _, and := range lo {
		for _, x := range and {
			if err := qs.basic(x); err != nil {
				return err
			}
		}
	}
	return nil
}

func (qs *querySpec) basic(x spec.BasicExpr) error {
	switch x := x.(type) {
	case *spec.ParenExpr:
		return qs.logical(x.LogicalOr)
	case *spec.NotParenExpr:
		return qs.logical(x.LogicalOr)
	case *spec.ExistExpr:
		return qs.query(x.PathQuery, strings.HasPrefix(x.String(), "$"))
	case *spec.NonExistExpr:
		return qs.query(x.PathQuery, strings.HasPrefix(x.PathQuery.String(), "$"))
	case spec.NonExistExpr:
		return qs.query(x.PathQuery, strings.HasPrefix(x.PathQuery.String(), "$"))
	case *spec.CompExpr, *spec.FuncExpr, spec.NotFuncExpr, *spec.NotFuncExpr:
		lf, err := qs.parseLeaf(x)
		if err != nil {
			return err
		}
		qs.leaves[x] = lf
		return nil
	default:
		return fmt.Errorf("filter expression %T", x)
	}
}

// parseLeaf reads a comparison or a function test from its canonical
// text.
func (qs *querySpec) parseLeaf(x spec.BasicExpr) (*leaf, error) {
	p := &leafText{s: x.(fmt.Stringer).String(), qs: qs}
	lf := &leaf{}
	var err error
	switch x.(type) {
	case *spec.CompExpr:
		lf.cmp = true
		if lf.l, err = p.operand(); err != nil {
			return nil, err
		}
		if lf.op, err = p.compOp(); err != nil {
			return nil, err
		}
		if lf.r, err = p.operand(); err != nil {
			return nil, err
		}
	default:
		if lf.not = strings.HasPrefix(p.s, "!"); lf.not {
			p.i++
		}
		var o operand
		if o, err = p.operand(); err != nil {
			return nil, err
		}
		if o.fn == nil {
			return nil, fmt.Errorf("%q is not a function test", p.s)
		}
		lf.fn = o.fn
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%q: unexpected %q", p.s, p.s[p.i:])
	}
	return lf, nil
}

// leafText scans the canonical text of one comparison or function test.
type leafText struct {
	s  string
	i  int
	qs *querySpec
}

var compOps = []spec.CompOp{spec.EqualTo, spec.NotEqualTo, spec.LessThanEqualTo, spec.GreaterThanEqualTo, spec.LessThan, spec.GreaterThan}

func (p *leafText) compOp() (spec.CompOp, error) {
	for _, op := range compOps {
		if t := " " + op.String() + " "; strings.HasPrefix(p.s[p.i:], t) {
			p.i += len(t)
			return op, nil
		}
	}
	return 0, fmt.Errorf("%q: no comparison at %d", p.s, p.i)
}

func (p *leafText) operand() (operand, error) {
	if p.i >= len(p.s) {
		return operand{}, fmt.Errorf("%q ends early", p.s)
	}
	switch c := p.s[p.i]; {
	case c == '"':
		j, err := stringEnd(p.s, p.i)
		if err != nil {
			return operand{}, err
		}
		str, err := strconv.Unquote(p.s[p.i:j])
		if err != nil {
			return operand{}, fmt.Errorf("%q: string %s: %w", p.s, p.s[p.i:j], err)
		}
		p.i = j
		return operand{isLit: true, lit: spec.Value(str)}, nil
	case c == '$' || c == '@':
		return p.query()
	case c == '-' || c >= '0' && c <= '9':
		j := p.i + 1
		for j < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[j]) >= 0 {
			j++
		}
		text := p.s[p.i:j]
		p.i = j
		if strings.ContainsAny(text, ".eE") {
			f, err := strconv.ParseFloat(text, 64)
			return operand{isLit: true, lit: spec.Value(f)}, err
		}
		n, err := strconv.ParseInt(text, 10, 64)
		return operand{isLit: true, lit: spec.Value(n)}, err
	case c >= 'a' && c <= 'z':
		j := p.i
		for j < len(p.s) && (p.s[j] >= 'a' && p.s[j] <= 'z' || p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '_') {
			j++
		}
		name := p.s[p.i:j]
		if j == len(p.s) || p.s[j] != '(' {
			p.i = j
			switch name {
			case "true":
				return operand{isLit: true, lit: spec.Value(true)}, nil
			case "false":
				return operand{isLit: true, lit: spec.Value(false)}, nil
			case "null":
				return operand{isLit: true, lit: spec.Value(nil)}, nil
			}
			return operand{}, fmt.Errorf("%q: unknown word %q", p.s, name)
		}
		ext := builtins.Get(name)
		if ext == nil {
			return operand{}, fmt.Errorf("%q: unknown function %q", p.s, name)
		}
		p.i = j + 1
		c := &call{name: name, ext: ext}
		for p.i < len(p.s) && p.s[p.i] != ')' {
			if len(c.args) > 0 {
				if !strings.HasPrefix(p.s[p.i:], ", ") {
					return operand{}, fmt.Errorf("%q: no argument separator at %d", p.s, p.i)
				}
				p.i += 2
			}
			a, err := p.operand()
			if err != nil {
				return operand{}, err
			}
			c.args = append(c.args, a)
		}
		if p.i >= len(p.s) {
			return operand{}, fmt.Errorf("%q: unclosed call", p.s)
		}
		p.i++
		return operand{fn: c}, nil
	}
	return operand{}, fmt.Errorf("%q: unexpected %q at %d", p.s, p.s[p.i], p.i)
}

// query reads a query ("$" or "@", then segments each in brackets, the
// descendant ones after ".."), parses it back and compiles it.
func (p *leafText) query() (operand, error) {
	rel := p.s[p.i] == '@'
	j := p.i + 1
	for j < len(p.s) {
		k := j
		if strings.HasPrefix(p.s[k:], "..") {
			k += 2
		}
		if k >= len(p.s) || p.s[k] != '[' {
			break
		}
		end, err := bracketEnd(p.s, k)
		if err != nil {
			return operand{}, err
		}
		j = end
	}
	text, err := rfcStrings(p.s[p.i+1 : j])
	if err != nil {
		return operand{}, err
	}
	path, err := jsonpath.Parse("$" + text)
	if err != nil {
		return operand{}, fmt.Errorf("%q: query %q: %w", p.s, p.s[p.i:j], err)
	}
	p.i = j
	q := path.Query()
	if err := p.qs.query(q, !rel); err != nil {
		return operand{}, err
	}
	return operand{q: q, relative: rel, singular: q.Singular() != nil}, nil
}

// stringEnd is the index after the double-quoted string starting at i.
func stringEnd(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%q: unclosed string at %d", s, i)
}

// bracketEnd is the index after the bracket that closes the one at i.
func bracketEnd(s string, i int) (int, error) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			end, err := stringEnd(s, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '[', '(':
			depth++
		case ']', ')':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%q: unclosed bracket at %d", s, i)
}

// rfcStrings rewrites the Go-quoted strings of the canonical text (which
// may hold escapes such as \x01 that RFC 9535 has not) as JSON strings,
// which RFC 9535 parses.
func rfcStrings(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			b.WriteByte(s[i])
			continue
		}
		j, err := stringEnd(s, i)
		if err != nil {
			return "", err
		}
		str, err := strconv.Unquote(s[i:j])
		if err != nil {
			return "", fmt.Errorf("string %s: %w", s[i:j], err)
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(str); err != nil {
			return "", err
		}
		b.Write(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
		i = j - 1
	}
	return b.String(), nil
}

// evaluation is one bounded evaluation of a querySpec over a document.
type evaluation struct {
	ctx   context.Context
	qs    *querySpec
	root  any
	work  int64
	limit int64
	check int64 // work at which the context is looked at next
}

// stopQuery unwinds an evaluation that reached its budget or whose
// context ended.
type stopQuery struct{ err error }

// evaluateQuery selects the nodes of qs in doc within limit units of work
// and the context. It returns errQueryWork past the budget, or the
// context's error, as soon as the evaluation reaches either: no part of it
// runs on. work is the units spent.
func evaluateQuery(ctx context.Context, qs *querySpec, doc any, limit int64) (nodes []*spec.LocatedNode, work int64, err error) {
	e := &evaluation{ctx: ctx, qs: qs, root: doc, limit: limit}
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(stopQuery)
			if !ok {
				panic(r)
			}
			nodes, work, err = nil, e.work, s.err
		}
	}()
	e.charge(0)
	found := e.query(qs.q, doc, spec.Normalized(), true)
	nodes = make([]*spec.LocatedNode, len(found))
	for i, n := range found {
		nodes[i] = &spec.LocatedNode{Node: n.v, Path: n.path}
	}
	return nodes, e.work, nil
}

func (e *evaluation) charge(n int64) {
	e.work += n
	if e.work > e.limit {
		panic(stopQuery{errQueryWork})
	}
	if e.work >= e.check {
		e.check = e.work + queryCtxEvery
		if err := e.ctx.Err(); err != nil {
			panic(stopQuery{err})
		}
	}
}

// node is a value and, when located, its normalized path.
type node struct {
	v    any
	path spec.NormalizedPath
}

func (e *evaluation) query(q *spec.PathQuery, start any, at spec.NormalizedPath, located bool) []node {
	in := []node{{v: start, path: at}}
	for _, seg := range q.Segments() {
		var out []node
		for _, n := range in {
			if seg.IsDescendant() {
				out = e.descend(seg, n, located, out)
			} else {
				out = e.selectors(seg, n, located, out)
			}
		}
		in = out
	}
	return in
}

func (e *evaluation) descend(seg *spec.Segment, n node, located bool, out []node) []node {
	out = e.selectors(seg, n, located, out)
	switch v := n.v.(type) {
	case []any:
		for i, c := range v {
			out = e.descend(seg, node{v: c, path: child(n.path, spec.Index(i), located)}, located, out)
		}
	case map[string]any:
		for k, c := range v {
			out = e.descend(seg, node{v: c, path: child(n.path, spec.Name(k), located)}, located, out)
		}
	}
	return out
}

func child(p spec.NormalizedPath, s spec.NormalSelector, located bool) spec.NormalizedPath {
	if !located {
		return nil
	}
	return append(slices.Clip(p), s)
}

func (e *evaluation) selectors(seg *spec.Segment, n node, located bool, out []node) []node {
	e.charge(1)
	for _, sel := range seg.Selectors() {
		if f, ok := sel.(*spec.FilterSelector); ok {
			out = e.filter(f, n, located, out)
			continue
		}
		if located {
			got := sel.SelectLocated(n.v, e.root, n.path)
			e.charge(int64(len(got)))
			for _, g := range got {
				out = append(out, node{v: g.Node, path: g.Path})
			}
		} else {
			got := sel.Select(n.v, e.root)
			e.charge(int64(len(got)))
			for _, g := range got {
				out = append(out, node{v: g})
			}
		}
	}
	return out
}

func (e *evaluation) filter(f *spec.FilterSelector, n node, located bool, out []node) []node {
	switch v := n.v.(type) {
	case []any:
		for i, c := range v {
			e.charge(1)
			if e.test(f.LogicalOr, c) {
				out = append(out, node{v: c, path: child(n.path, spec.Index(i), located)})
			}
		}
	case map[string]any:
		for k, c := range v {
			e.charge(1)
			if e.test(f.LogicalOr, c) {
				out = append(out, node{v: c, path: child(n.path, spec.Name(k), located)})
			}
		}
	}
	return out
}

func (e *evaluation) test(lo spec.LogicalOr, cur any) bool {
	for _, and := range lo {
		ok := true
		for _, x := range and {
			if !e.basic(x, cur) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (e *evaluation) basic(x spec.BasicExpr, cur any) bool {
	switch x := x.(type) {
	case *spec.ParenExpr:
		return e.test(x.LogicalOr, cur)
	case *spec.NotParenExpr:
		return !e.test(x.LogicalOr, cur)
	case *spec.ExistExpr:
		return e.exists(x.PathQuery, cur)
	case *spec.NonExistExpr:
		return !e.exists(x.PathQuery, cur)
	case spec.NonExistExpr:
		return !e.exists(x.PathQuery, cur)
	}
	return e.leaf(e.qs.leaves[x], cur)
}

func (e *evaluation) exists(q *spec.PathQuery, cur any) bool {
	start := cur
	if e.qs.rooted[q] {
		start = e.root
	}
	return len(e.query(q, start, nil, false)) > 0
}

// leaf evaluates a comparison or a function test: the operands here, the
// comparison or test itself by the jsonpath package.
func (e *evaluation) leaf(lf *leaf, cur any) bool {
	var x spec.BasicExpr
	if lf.cmp {
		l, r := e.operand(lf.l, cur), e.operand(lf.r, cur)
		e.chargeCompare(l, r)
		x = spec.Comparison(constant(l, spec.FuncValue), lf.op, constant(r, spec.FuncValue))
	} else {
		fe := constant(e.call(lf.fn, cur), lf.fn.ext.ReturnType())
		x = fe
		if lf.not {
			x = spec.NotFunction(fe)
		}
	}
	return spec.Filter(spec.And(x)).Eval(nil, nil)
}

// constant is a function call that returns v, so that the jsonpath
// package compares or tests a value computed here.
func constant(v spec.PathValue, t spec.FuncType) *spec.FuncExpr {
	return spec.Function(spec.Extension("constant", t, nil, func([]spec.PathValue) spec.PathValue { return v }))
}

// operand evaluates o as the jsonpath package would as an argument or
// operand: a singular query gives its value or nothing, any other query
// its nodes.
func (e *evaluation) operand(o operand, cur any) spec.PathValue {
	switch {
	case o.isLit:
		return o.lit
	case o.fn != nil:
		return e.call(o.fn, cur)
	}
	start := e.root
	if o.relative {
		start = cur
	}
	got := e.query(o.q, start, nil, false)
	if o.singular {
		if len(got) == 0 {
			return nil
		}
		return spec.Value(got[0].v)
	}
	vals := make(spec.NodesType, len(got))
	for i, g := range got {
		vals[i] = g.v
	}
	return vals
}

func (e *evaluation) call(c *call, cur any) spec.PathValue {
	args := make([]spec.PathValue, len(c.args))
	for i, a := range c.args {
		args[i] = e.operand(a, cur)
	}
	e.charge(1)
	if (c.name == "match" || c.name == "search") && len(args) == 2 {
		s, ok1 := valueOf(args[0]).(string)
		pat, ok2 := valueOf(args[1]).(string)
		if ok1 && ok2 {
			// Compiling and running the pattern (RE2: linear in both).
			steps := int64(progSteps(pat))
			e.charge(steps * (int64(len(s)) + int64(len(pat)) + 1) / queryRegexBytes)
		}
	}
	return c.ext.Evaluate(args)
}

func valueOf(v spec.PathValue) any {
	if vt, ok := v.(*spec.ValueType); ok && vt != nil {
		return vt.Value()
	}
	return nil
}

// chargeCompare charges what comparing l and r may walk: reflect.DeepEqual
// looks into two containers only when they are of one kind and length.
func (e *evaluation) chargeCompare(l, r spec.PathValue) {
	a, b := valueOf(l), valueOf(r)
	switch a := a.(type) {
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			e.walk(a)
			e.walk(b)
		}
	case map[string]any:
		if b, ok := b.(map[string]any); ok && len(a) == len(b) {
			e.walk(a)
			e.walk(b)
		}
	}
}

// walk charges one unit for every value in v.
func (e *evaluation) walk(v any) {
	e.charge(1)
	switch v := v.(type) {
	case []any:
		for _, c := range v {
			e.walk(c)
		}
	case map[string]any:
		for _, c := range v {
			e.walk(c)
		}
	}
}
