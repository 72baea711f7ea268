package index

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/resourced/resourced/internal/jsonwire"
)

// Extract returns the searchable text of a body of mediaType, at most max
// bytes, and whether that is all of it:
//   - a JSON body (application/json, +json) by its string values: each on
//     the line of the body it is on, values of one line joined by a space,
//     so a match's line number is the body's line (for grep_resource);
//     object keys, numbers and literals are not text;
//   - another textual body (jsonwire.TextType) that is valid UTF-8 as it is;
//   - anything else (binary, or text that is not UTF-8) has no text: it is
//     found by its metadata only.
//
// A JSON body that is not one JSON value (it does not parse, or it is a
// stream of several) is indexed as text.
//
// Only the body's first bytes are read and judged (its window): max of a
// text, 2×max of a JSON body, whose keys, numbers and escapes take room.
// A body longer than its window is judged by the window, so a part of
// tens of MiB costs the indexer the window, not the part (issue 24: the
// whole part was read through bbolt's map, twice).
func Extract(mediaType string, body []byte, max int) (text string, complete bool) {
	if !jsonwire.TextType(mediaType) {
		return "", len(body) == 0
	}
	if isJSON(mediaType) {
		w := window(body, 2*max)
		if !utf8.Valid(w) {
			return "", len(body) == 0
		}
		if len(w) == len(body) {
			if t, ok, done := jsonStrings(body, max); ok {
				return t, done
			}
		} else if jsonPrefix(w) {
			t, _, _ := walkStrings(w, max)
			return t, false
		}
	}
	w := window(body, max)
	if !utf8.Valid(w) {
		return "", len(body) == 0
	}
	return string(w), len(w) == len(body)
}

// window is body's first n bytes, or fewer: it ends where a character
// starts, so a character the window would cut is left out whole.
func window(body []byte, n int) []byte {
	if n >= len(body) {
		return body
	}
	for n > 0 && !utf8.RuneStart(body[n]) {
		n--
	}
	return body[:n]
}

// jsonPrefix reports whether w is the start of one JSON value: the
// scanner finds no error before w ends, and no second value follows the
// first within w. (The Decoder scans a value whole before it decodes it,
// so io.ErrUnexpectedEOF means every byte of w was valid so far; it
// copies w once, and allocates nothing per token.)
func jsonPrefix(w []byte) bool {
	d := json.NewDecoder(bytes.NewReader(w))
	var v json.RawMessage
	switch err := d.Decode(&v); {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF): // cut in a value, or before it
		return true
	case err != nil:
		return false
	}
	// One whole value in the window: what follows is space.
	return len(bytes.TrimLeft(w[d.InputOffset():], " \t\r\n")) == 0
}

func isJSON(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// jsonStrings collects body's string values line by line; ok is false
// when body is not one JSON value, done false when max cut it. It walks
// the body once, checked by json.Valid, and decodes no more of a string
// than the text needs: a large body costs no copy of itself (issue 24: a
// 40 MiB string cost the indexer three).
func jsonStrings(body []byte, max int) (text string, ok, done bool) {
	if !json.Valid(body) {
		return "", false, false
	}
	return walkStrings(body, max)
}

// walkStrings is jsonStrings' walk over body, which json.Valid accepted
// or jsonPrefix did: a window may end inside any token, and what it cuts
// of a string is left out from the last escape that could be part of a
// longer one.
func walkStrings(body []byte, max int) (text string, ok, done bool) {
	type frame struct{ object, key bool } // key: the next string is a key
	var stack []frame
	var b strings.Builder
	lineStart := true
	for i := 0; i < len(body); {
		c := body[i]
		switch c {
		case '\n':
			b.WriteByte('\n')
			lineStart = true
			i++
			continue
		case ' ', '\t', '\r', ',', ':':
			i++
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
			i++
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch {
		case c == '"' && (top == nil || !top.object || !top.key):
			if !lineStart {
				b.WriteByte(' ')
			}
			lineStart = false
			var cut bool
			if i, cut = appendString(&b, body, i+1, max+utf8.UTFMax); cut {
				return cutUTF8(b.String(), max), true, false
			}
		case c == '"':
			_, i = stringEnd(body, i+1)
		case c == '{' || c == '[':
			i++
		default: // a number or a literal
			for i < len(body) && !strings.ContainsRune(" \t\r\n,:]}", rune(body[i])) {
				i++
			}
		}
		if top != nil && top.object {
			top.key = !top.key // keys and values alternate
		}
		if c == '{' || c == '[' {
			stack = append(stack, frame{object: c == '{', key: true})
		}
		if b.Len() >= max {
			return cutUTF8(b.String(), max), true, false
		}
	}
	return strings.TrimRight(b.String(), "\n"), true, true
}

// stringEnd is the index of the closing quote of the valid JSON string
// whose contents start at body[i], and the index after it; len(body)
// twice when body ends inside the string.
func stringEnd(body []byte, i int) (int, int) {
	for {
		j := bytes.IndexAny(body[i:], `"\`)
		if j >= 0 && body[i+j] == '"' {
			return i + j, i + j + 1
		}
		if j < 0 || i+j+2 > len(body) {
			return len(body), len(body)
		}
		i += j + 2 // an escape: \u's hex digits are no quote
	}
}

// appendString appends the valid JSON string whose contents start at
// body[i] to b, decoded as encoding/json decodes it (a lone surrogate is
// U+FFFD), with newlines, returns and tabs as spaces, until b holds
// limit bytes (cut) or the string ends; next is the index after it.
func appendString(b *strings.Builder, body []byte, i, limit int) (next int, cut bool) {
	end, next := stringEnd(body, i)
	// Cut by the window (end is len(body)): an escape in its last 12
	// bytes may be cut or be half of a surrogate pair, so the string's
	// text ends before it.
	cutByWindow := end == len(body)
	for i < end {
		if b.Len() >= limit {
			return next, true
		}
		j := bytes.IndexByte(body[i:end], '\\')
		if j < 0 {
			j = end - i
		}
		j = min(j, limit-b.Len())
		if j > 0 {
			b.Write(body[i : i+j])
			i += j
			continue
		}
		if cutByWindow && i+12 > end {
			break
		}
		r, n := jsonwire.Unescape(body[i:end])
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		b.WriteRune(r)
		i += n
	}
	return next, b.Len() >= limit
}
