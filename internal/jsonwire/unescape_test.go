package jsonwire

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Unescape decodes every escape as encoding/json does, and refuses what
// is not a whole valid one.
func TestUnescape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
		n    int
	}{
		{`\"`, '"', 2}, {`\\`, '\\', 2}, {`\/`, '/', 2},
		{`\b`, '\b', 2}, {`\f`, '\f', 2}, {`\n`, '\n', 2}, {`\r`, '\r', 2}, {`\t`, '\t', 2},
		{`\u00e9x`, 'é', 6}, {`\u00E9`, 'é', 6},
		{`\ud83d\ude00`, '😀', 12},
		{`\ud83dx`, utf8.RuneError, 6},      // lone high surrogate
		{`\ude00`, utf8.RuneError, 6},       // lone low surrogate
		{`\ud83d\u0041`, utf8.RuneError, 6}, // high surrogate, then no low one
		{`\ud83d\uzzzz`, utf8.RuneError, 6}, // high surrogate, then no hex
		{`\u12`, 0, 0}, {`\u12g4`, 0, 0}, {`\x`, 0, 0}, {`\`, 0, 0}, {``, 0, 0},
	} {
		r, n := Unescape([]byte(tc.in))
		if r != tc.want || n != tc.n {
			t.Errorf("Unescape(%s) = %q, %d; want %q, %d", tc.in, r, n, tc.want, tc.n)
		}
	}
}

// FuzzUnescape compares Unescape with encoding/json on one escape in a
// string.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`\n`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\ud83d\u0041`, `\q`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, e []byte) {
		if len(e) == 0 || e[0] != '\\' {
			return
		}
		r, n := Unescape(e)
		var want string
		quoted := append(append([]byte{'"'}, e...), '"')
		if err := json.Unmarshal(quoted, &want); err != nil {
			// Not a valid string as a whole: only the first escape can
			// be compared, when it is whole and valid.
			if n == 0 {
				return
			}
			quoted = append(append([]byte{'"'}, e[:n]...), '"')
			if err := json.Unmarshal(quoted, &want); err != nil {
				t.Fatalf("Unescape(%q) took %d bytes that encoding/json refuses: %v", e, n, err)
			}
		} else if n == 0 {
			t.Fatalf("Unescape(%q) refused what encoding/json decodes to %q", e, want)
		}
		if got, _ := utf8.DecodeRuneInString(want); got != r {
			t.Fatalf("Unescape(%q) = %q, encoding/json %q", e, r, got)
		}
	})
}
