package index

import (
	"bytes"
	"encoding/json"
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
func Extract(mediaType string, body []byte, max int) (text string, complete bool) {
	if !jsonwire.Textual(mediaType, body) {
		return "", len(body) == 0
	}
	if isJSON(mediaType) {
		if t, ok, done := jsonStrings(body, max); ok {
			return t, done
		}
	}
	t := cutUTF8(string(body[:min(len(body), max+utf8.UTFMax)]), max)
	return t, len(t) == len(body)
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
// whose contents start at body[i], and the index after it.
func stringEnd(body []byte, i int) (int, int) {
	for {
		j := bytes.IndexAny(body[i:], `"\`)
		if body[i+j] == '"' {
			return i + j, i + j + 1
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
		r, n := jsonwire.Unescape(body[i:end])
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		b.WriteRune(r)
		i += n
	}
	return next, b.Len() >= limit
}
