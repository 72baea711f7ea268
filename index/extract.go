package index

import (
	"bytes"
	"encoding/json"
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
// JSON that does not parse is indexed as text.
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
// when body is not JSON, done false when max cut it.
func jsonStrings(body []byte, max int) (text string, ok, done bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct{ object, key bool } // key: the next string is a key
	var stack []frame
	var b strings.Builder
	lineStart, last := true, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 && last > 0 {
			break
		}
		if err != nil {
			return "", false, false
		}
		off := int(dec.InputOffset())
		for _, c := range body[last:off] {
			if c == '\n' {
				b.WriteByte('\n')
				lineStart = true
			}
		}
		last = off
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if s, isString := tok.(string); isString && (top == nil || !top.object || !top.key) {
			if !lineStart {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Map(func(r rune) rune {
				if r == '\n' || r == '\r' || r == '\t' {
					return ' '
				}
				return r
			}, s))
			lineStart = false
		}
		if top != nil && top.object {
			top.key = !top.key // keys and values alternate
		}
		if d, isDelim := tok.(json.Delim); isDelim {
			stack = append(stack, frame{object: d == '{', key: true})
		}
		if b.Len() >= max {
			return cutUTF8(b.String(), max), true, false
		}
	}
	return strings.TrimRight(b.String(), "\n"), true, true
}
