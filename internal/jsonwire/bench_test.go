package jsonwire

import (
	"strings"
	"testing"
)

// BenchmarkAppendJSONString measures the escaper of the read path (used
// when a body is saved, and when a read finds no stored encoded form) on
// 256 KiB of plain ASCII text (the eight-byte skip) and of Japanese.
func BenchmarkAppendJSONString(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"ascii", "The quick brown fox jumps over the lazy dog, 1234567890. "},
		{"japanese", "検索結果のスナップショットは、後で resources/read で読みます。\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := []byte(strings.Repeat(tc.text, 256<<10/len(tc.text)+1)[:256<<10])
			buf := make([]byte, 0, 300<<10)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = AppendString(buf[:0], s)
			}
		})
	}
}
