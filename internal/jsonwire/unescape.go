package jsonwire

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unescape decodes the JSON escape at the start of e (e[0] is the
// backslash) as encoding/json does, and returns its rune and length; a
// length of 0: e holds no whole valid escape. A lone surrogate decodes
// to U+FFFD.
func Unescape(e []byte) (rune, int) {
	if len(e) < 2 {
		return 0, 0
	}
	switch c := e[1]; c {
	case '"', '\\', '/':
		return rune(c), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(e[2:])
		if !ok {
			return 0, 0
		}
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		if len(e) >= 12 && e[6] == '\\' && e[7] == 'u' {
			if lo, ok := hex4(e[8:]); ok {
				if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
					return dec, 12
				}
			}
		}
		return utf8.RuneError, 6
	}
	return 0, 0
}

// hex4 is the value of the four hex digits that start b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
