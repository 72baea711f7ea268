package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"unicode/utf8"
)

// maxStderrLine caps one logged line of an upstream's stderr, in bytes;
// the rest of a longer line is dropped and the entry says so.
const maxStderrLine = 2048

// logStderr logs each line read from r (a stdio upstream's stderr) as one
// entry of log (which names the upstream), at most maxStderrLine bytes of
// it, until r ends: when the process and every child holding its stderr
// have exited.
func logStderr(r io.Reader, log *slog.Logger) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			log.Info("upstream stderr", "line", string(trimPartialRune(line)), "truncated", true)
			for errors.Is(err, bufio.ErrBufferFull) { // drop the rest of the line
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		case len(line) > 0:
			log.Info("upstream stderr", "line", string(bytes.TrimRight(line, "\r\n")))
		}
		if err != nil {
			return
		}
	}
}

// trimPartialRune drops the start of a UTF-8 character that a cut left at
// the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
