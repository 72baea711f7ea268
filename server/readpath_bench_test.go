package server

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// BenchmarkWriteJSONString measures the escaper of the fast read path on
// 256 KiB of plain text (the eight-byte skip: about 1.5 GB/s here, 0.55
// GB/s byte by byte).
func BenchmarkWriteJSONString(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog, 1234567890. ", 4600)[:256<<10]
	bw := bufio.NewWriterSize(io.Discard, 32<<10)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		writeJSONString(bw, s)
	}
}
