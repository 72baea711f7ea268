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
