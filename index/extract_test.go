package index

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name, mt, body string
		max            int
		want           string
		complete       bool
	}{
		{"markdown", "text/markdown", "# Hello\nworld\n", 100, "# Hello\nworld\n", true},
		{"text cut at a character", "text/plain; charset=utf-8", "aé", 2, "a", false},
		{"json strings on their lines", "application/json",
			"{\n  \"query\": \"acme billing\",\n  \"total\": 2,\n  \"hits\": [\n    {\"id\": \"a\", \"title\": \"Invoice\\nMarch\"}\n  ]\n}",
			1000, "\nacme billing\n\n\na Invoice March", true},
		{"json keys, numbers and literals are not text", "application/vnd.x+json",
			`{"secretKey": 1, "ok": true, "n": null, "list": ["x", {"k": "v"}]}`, 1000, "x v", true},
		{"json cut", "application/json", `["aaaa", "bbbb", "cccc"]`, 7, "aaaa bb", false},
		{"json that does not parse is text", "application/json", `{"a": `, 100, `{"a": `, true},
		{"a stream of json values is text", "application/json", "{\"a\": \"x\"}\n{\"a\": \"y\"}", 100, "{\"a\": \"x\"}\n{\"a\": \"y\"}", true},
		{"binary", "application/octet-stream", "\x00\x01", 100, "", false},
		{"text that is not UTF-8", "text/plain", "a\xffb", 100, "", false},
		{"image", "image/png", "PNG", 100, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := Extract(tt.mt, []byte(tt.body), tt.max)
			if got != tt.want || complete != tt.complete {
				t.Errorf("Extract(%q, %q, %d) = %q, %v; want %q, %v", tt.mt, tt.body, tt.max, got, complete, tt.want, tt.complete)
			}
		})
	}
}

func TestExtractJSONLinesMatchBody(t *testing.T) {
	body := "[\n\"alpha\",\n\n\"beta gamma\",\n4,\n\"delta\"\n]\n"
	text, _ := Extract("application/json", []byte(body), 1000)
	bodyLines := strings.Split(body, "\n")
	for i, l := range strings.Split(text, "\n") {
		for _, w := range Tokens(l) {
			if !strings.Contains(bodyLines[i], w) {
				t.Errorf("text line %d holds %q, body line %d is %q", i+1, w, i+1, bodyLines[i])
			}
		}
	}
}

func TestTokens(t *testing.T) {
	got := Tokens("Foo-bar, ÉCOLE_1.5 naïve x" + strings.Repeat("z", MaxTokenBytes+1) + " 東京")
	want := []string{"foo", "bar", "école", "1", "5", "naïve", "東京"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Tokens (-want +got):\n%s", d)
	}
}

// oldJSONStrings is jsonStrings as it was, on encoding/json's Decoder
// (which holds a whole string token, however large): the oracle of
// FuzzJSONStrings.
func oldJSONStrings(body []byte, max int) (text string, ok, done bool) {
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

// jsonStrings gives what the Decoder-based walk gave for every body that
// is one JSON value, cut or not.
func FuzzJSONStrings(f *testing.F) {
	for _, s := range []string{
		"{\n  \"query\": \"acme billing\",\n  \"total\": 2,\n  \"hits\": [\n    {\"id\": \"a\", \"title\": \"Invoice\\nMarch\"}\n  ]\n}",
		`{"secretKey": 1, "ok": true, "n": null, "list": ["x", {"k": "v"}]}`,
		`["aaaa", "bbbb", "cccc"]`, `"top"`, `[1e400, -0.5, "a\u00e9\ud83d\ude00 \ud800 \udc00x \\ \/ \" \b\f\n\r\t"]`,
		`{"a": {"b": "c"}, "d": ["e", {"f": "g"}], "h": "é✓𝄞"}`, "[\n\n\"x\"\n,\n\"y\"]\n\n",
	} {
		f.Add([]byte(s), uint16(1000))
		f.Add([]byte(s), uint16(5))
	}
	f.Fuzz(func(t *testing.T, body []byte, max uint16) {
		if !json.Valid(body) || !utf8.Valid(body) || max == 0 {
			return
		}
		got, gotOK, gotDone := jsonStrings(body, int(max))
		want, wantOK, wantDone := oldJSONStrings(body, int(max))
		if got != want || gotOK != wantOK || gotDone != wantDone {
			t.Fatalf("jsonStrings(%q, %d) = %q, %v, %v; the Decoder's walk %q, %v, %v", body, max, got, gotOK, gotDone, want, wantOK, wantDone)
		}
	})
}

// A large string is decoded no further than the text needs.
func TestJSONStringsLargeStringAllocatesItsCut(t *testing.T) {
	body := []byte(`{"content":"` + strings.Repeat(`line \"q\" \\ é\n`, 1<<20) + `"}`) // ~17 MiB
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if text, _, done := jsonStrings(body, 1<<20); done || len(text) > 1<<20 {
				b.Fatalf("%d bytes of text, done %v", len(text), done)
			}
		}
	})
	if per := allocs.AllocedBytesPerOp(); per > 8<<20 {
		t.Errorf("%d bytes allocated for 1 MiB of text from a %d-byte body", per, len(body))
	}
}

// A body longer than its window is judged and read by the window only:
// what follows it (here bytes that are not UTF-8, and JSON that does not
// parse) is never read.
func TestExtractReadsOnlyTheWindow(t *testing.T) {
	tail := "\xff\xfe not json {{{"
	tests := []struct {
		name, mt, body string
		max            int
		want           string
	}{
		{"text", "text/plain", "hello world" + tail, 5, "hello"},
		{"text cut at a character", "text/plain", "abcdé" + tail, 5, "abcd"},
		{"json string cut by the window", "application/json", `{"k": "abcdefghijklmnopqrstuvwxyz` + tail, 10, "abcdefghij"},
		{"json values before the window's end", "application/json", `["ab", "cd", "ef"` + strings.Repeat(" ", 20) + tail, 16, "ab cd ef"},
		{"json escape cut by the window", "application/json", `["ab\ud83d\ude00` + tail, 7, "ab"},
		{"json pair whole in the window", "application/json", `["ab\ud83d\ude00cdefghijklmnop` + tail, 12, "ab😀cdefgh"},
		{"a second json value in the window is text", "application/json", `{"a":"b"} {"c":"d"}` + strings.Repeat(" ", 10) + tail, 12, `{"a":"b"} {"`},
		{"json that does not parse in the window is text", "application/json", `{"a" "b", "c": "defghijk"` + tail, 12, `{"a" "b", "c`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := Extract(tt.mt, []byte(tt.body), tt.max)
			if got != tt.want || complete {
				t.Errorf("Extract(%q, %q, %d) = %q, %v; want %q, false", tt.mt, tt.body, tt.max, got, complete, tt.want)
			}
		})
	}
}

// The text a window gives is the start of the text of the whole body.
func FuzzExtractWindow(f *testing.F) {
	for _, s := range []string{
		`{"content": "line \"q\" \\ é\n ✓ \ud83d\ude00 \ud800 x", "n": [1, 2.5e3, true, null, "y"]}`,
		"[\n\"alpha\",\n\n\"beta gamma\",\n4,\n\"delta\"\n]\n", `"top level string \u00e9"`,
	} {
		f.Add([]byte(s), uint16(3))
		f.Add([]byte(s), uint16(10))
	}
	f.Fuzz(func(t *testing.T, body []byte, max uint16) {
		if !json.Valid(body) || !utf8.Valid(body) || max == 0 || len(body) <= 2*int(max) {
			return
		}
		whole, ok, _ := jsonStrings(body, len(body)+1)
		if !ok {
			t.Fatalf("jsonStrings(%q) not ok", body)
		}
		got, complete := Extract("application/json", body, int(max))
		if complete || len(got) > int(max) || !utf8.ValidString(got) || !strings.HasPrefix(whole, strings.TrimRight(got, "\n")) {
			t.Fatalf("Extract(%q, %d) = %q, %v; the whole body's text is %q", body, max, got, complete, whole)
		}
	})
}

// A large JSON part costs the indexer its window, not its size.
func TestExtractLargeJSONAllocatesItsWindow(t *testing.T) {
	body := []byte(`{"content":"` + strings.Repeat(`line \"q\" \\ é\n`, 1<<20) + `"}`) // ~17 MiB
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if text, complete := Extract("application/json", body, 64<<10); complete || len(text) == 0 {
				b.Fatalf("%d bytes of text, complete %v", len(text), complete)
			}
		}
	})
	if per := allocs.AllocedBytesPerOp(); per > 1<<20 {
		t.Errorf("%d bytes allocated for 64 KiB of text from a %d-byte body", per, len(body))
	}
}
