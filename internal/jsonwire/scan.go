// Package jsonwire is resourced's small JSON toolkit for the wire: a
// scanner that walks a document member by member without decoding values,
// an escaper that writes strings exactly as encoding/json does, and the
// stored form of a body as a resources/read response carries it.
//
// It owns byte-level JSON only: it imports nothing of the module and knows
// nothing of MCP, tenants or stores. server (the read path, the envelope
// check, the tools' argument walk) and resourced fsck (which verifies stored
// forms) use it.
package jsonwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// ErrSyntax reports a document that is not the JSON a function expected.
var ErrSyntax = errors.New("not JSON")

// Members calls f with each member of the JSON object data: its exact
// name and its value. It stops at f's first error, and returns ErrSyntax
// for a malformed object; data that is not an object is no error (the
// decoder reports it). The name shares data's memory (View): data must not
// change while f, or whatever f kept, uses it.
func Members(data []byte, f func(name string, value []byte) error) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	i := 1
	for {
		i = SkipSpace(data, i)
		if i >= len(data) || data[i] == '}' {
			return nil
		}
		if data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
		end := SkipValue(data, i)
		if end < 0 || data[i] != '"' {
			return ErrSyntax
		}
		name, ok := View(data[i:end])
		if !ok {
			return ErrSyntax
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return ErrSyntax
		}
		vstart := SkipSpace(data, i+1)
		vend := SkipValue(data, vstart)
		if vend < 0 {
			return ErrSyntax
		}
		if err := f(name, data[vstart:vend]); err != nil {
			return err
		}
		i = vend
	}
}

// String returns the JSON string raw decoded; ok is false when raw is
// not a string. Strings without escapes (nearly all names) are sliced,
// not decoded.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	return decodeString(raw)
}

// decodeString decodes a JSON string with escapes. It is its own function
// so that its result escaping to the heap (json.Unmarshal takes its
// address) costs only the strings that need it.
func decodeString(raw []byte) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// View is String without the copy: a string without escapes shares raw's
// memory, so raw must not change while the string is in use (a request
// body, read once and never written, qualifies). It saves an allocation
// per member name on the request path.
func View(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if len(raw) == 2 {
		return "", true
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return unsafe.String(&raw[1], len(raw)-2), true
	}
	return decodeString(raw)
}

// Elements calls f with each element of the JSON array data, like Members.
func Elements(data []byte, f func(i int, value []byte) error) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '[' {
		return nil
	}
	i, n := 1, 0
	for {
		i = SkipSpace(data, i)
		if i >= len(data) || data[i] == ']' {
			return nil
		}
		if data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
		end := SkipValue(data, i)
		if end < 0 {
			return ErrSyntax
		}
		if err := f(n, data[i:end]); err != nil {
			return err
		}
		i, n = end, n+1
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// SkipValue returns the end of the JSON value starting at data[i], or -1.
// Nesting is counted, not recursed, so deep documents cannot exhaust the
// stack.
func SkipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				if i = skipString(data, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // number, true, false, null
		for i < len(data) && !strings.ContainsRune(" \t\r\n,}]:", rune(data[i])) {
			i++
		}
		return i
	}
}

// skipString returns the end of the JSON string starting at data[i], or -1.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// Shallow reports whether data, valid JSON, nests arrays and objects at
// most max deep.
func Shallow(data []byte, max int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// DuplicateError names a member that appears twice in one object.
type DuplicateError struct {
	Path string // where the object is: "" at the top, "params.arguments", "hits[2]"
	Name string // the member name given twice
}

func (e *DuplicateError) Error() string {
	if e.Path == "" {
		return "member " + strconv.Quote(e.Name) + " appears twice"
	}
	return "member " + strconv.Quote(e.Name) + " appears twice in " + e.Path
}

// container is one open object or array of UniqueMembers' walk.
type container struct {
	object bool
	name   string // the member or element this container is the value of
	index  int    // arrays: the current element
	n      int    // objects: member names seen, in few while n <= len(few)
	few    [8]string
	set    map[string]struct{}
}

func (c *container) add(name string) bool {
	if c.set != nil {
		if _, dup := c.set[name]; dup {
			return false
		}
		c.set[name] = struct{}{}
		return true
	}
	for _, n := range c.few[:c.n] {
		if n == name {
			return false
		}
	}
	if c.n < len(c.few) {
		c.few[c.n] = name
		c.n++
		return true
	}
	c.set = make(map[string]struct{}, 4*len(c.few))
	for _, n := range c.few {
		c.set[n] = struct{}{}
	}
	c.set[name] = struct{}{}
	return true
}

// UniqueMembers checks that no object of data, valid JSON, at any depth,
// names a member twice (RFC 8259 says names SHOULD be unique; encoding/json
// would silently keep the last one). It walks data once, without recursion
// and without decoding values, and returns a *DuplicateError for the first
// duplicate. Names are compared after decoding, so "a" and "\u0061" are
// the same name.
func UniqueMembers(data []byte) error {
	var buf [8]container // a request nests a few levels: no allocation
	stack := buf[:0]
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			end := skipString(data, i)
			if end < 0 {
				return ErrSyntax
			}
			if expectKey && len(stack) > 0 {
				top := &stack[len(stack)-1]
				name, ok := View(data[i:end])
				if !ok {
					return ErrSyntax
				}
				if !top.add(name) {
					return &DuplicateError{Path: containerPath(stack), Name: name}
				}
				top.name = name
				expectKey = false
			}
			i = end - 1
		case '{':
			stack = append(stack, container{object: true})
			expectKey = true
		case '[':
			stack = append(stack, container{})
		case '}', ']':
			if len(stack) == 0 {
				return ErrSyntax
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				expectKey = top.object
				if !top.object {
					top.index++
				}
			}
		}
	}
	return nil
}

// containerPath names the innermost open object of stack, e.g.
// params.arguments or hits[2].
func containerPath(stack []container) string {
	var b strings.Builder
	for i := 0; i < len(stack)-1; i++ {
		if stack[i].object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(stack[i].name)
		} else {
			b.WriteString("[" + strconv.Itoa(stack[i].index) + "]")
		}
	}
	return b.String()
}
