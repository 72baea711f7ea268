package jsonwire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendID appends a request's id as go-sdk writes it back: a string id
// holding escapes or non-ASCII text is decoded and encoded again as
// encoding/json does without HTML escaping ("a\u0062c" becomes "abc"), an
// integer is written in its shortest form (-0 becomes 0), other strings are
// copied as they came.
func AppendID(dst []byte, id []byte) []byte {
	if len(id) > 0 && id[0] != '"' {
		// An integer (the envelope allows no other number): go-sdk reads it
		// as a float64 and writes it back, so -0 becomes 0.
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			return strconv.AppendInt(dst, n, 10)
		}
		return append(dst, id...)
	}
	if len(id) == 0 || bytes.IndexByte(id, '\\') < 0 && isASCII(id) {
		return append(dst, id...)
	}
	var s string
	if json.Unmarshal(id, &s) != nil {
		return append(dst, id...) // cannot happen: the envelope checked it
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return append(dst, id...)
	}
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

const (
	lo7 = 0x0101010101010101
	hi7 = 0x8080808080808080
)

// hasByte reports whether any byte of x equals b (SWAR).
func hasByte(x uint64, b byte) bool {
	v := x ^ (lo7 * uint64(b))
	return (v-lo7)&^v&hi7 != 0
}

// plain8 reports whether the eight bytes of s need no escaping: ASCII,
// not a control character, not '"', '\\', '<', '>' or '&'.
func plain8[T string | []byte](s T) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	if x&hi7 != 0 || (x-lo7*0x20)&^x&hi7 != 0 {
		return false // non-ASCII, or a byte below 0x20
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// AppendString appends s as a JSON string, escaped exactly as
// encoding/json escapes it.
func AppendString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends the inside of s as a JSON string, as encoding/json
// writes it: quotes, backslashes, control characters, <, >, &, U+2028 and
// U+2029 escaped, each byte of invalid UTF-8 written as \ufffd, runs of
// other bytes copied at once.
func AppendEscaped[T string | []byte](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time (most report text).
		for i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			// The common valid sequences inline (Latin, Cyrillic, ...: two
			// bytes; Japanese, Chinese, Korean: three), the rest decoded.
			if n := validMultibyte(s, i); n > 0 {
				for i += n; i < len(s) && s[i] >= utf8.RuneSelf; i += n {
					if n = validMultibyte(s, i); n == 0 {
						break
					}
				}
				continue
			}
			r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\u202`...)
				dst = append(dst, hexDigits[r&0xf])
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		default:
			dst = append(dst, `\u00`...)
			dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// validMultibyte returns the length of the valid two- or three-byte UTF-8
// sequence at s[i] that needs no escaping, or 0 for anything else (four
// bytes, invalid, U+2028, U+2029), which the caller decodes.
func validMultibyte[T string | []byte](s T, i int) int {
	c := s[i]
	switch {
	case c >= 0xc2 && c <= 0xdf:
		if i+1 < len(s) && s[i+1]&0xc0 == 0x80 {
			return 2
		}
	case c >= 0xe0 && c <= 0xef:
		if i+2 >= len(s) || s[i+2]&0xc0 != 0x80 {
			return 0
		}
		c1 := s[i+1]
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xe0:
			lo = 0xa0 // no overlong forms
		case 0xed:
			hi = 0x9f // no surrogates
		case 0xe2:
			if c1 == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
				return 0 // U+2028, U+2029: escaped
			}
		}
		if c1 >= lo && c1 <= hi {
			return 3
		}
	}
	return 0
}
