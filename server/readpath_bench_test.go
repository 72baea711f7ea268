package server

import (
	"strings"
	"testing"
)

// BenchmarkAppendJSONString measures the escaper of the read path (used
// when a body is saved, and when a read finds no stored encoded form) on
// 256 KiB of plain text (the eight-byte skip).
func BenchmarkAppendJSONString(b *testing.B) {
	s := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog, 1234567890. ", 4600)[:256<<10])
	buf := make([]byte, 0, 300<<10)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendJSONString(buf[:0], s)
	}
}
