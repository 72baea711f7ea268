package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// maxStderrLine caps one logged line of an upstream's stderr, in bytes;
// the rest of a longer line is dropped and the entry says so.
const maxStderrLine = 2048

// The stderr of an upstream is logged at most stderrRate lines a second
// (bursts of stderrBurst), so at most about 40 KiB/s of log per process
// whatever it writes; the lines over it are read and dropped, counted,
// and summed up in one entry stderrSummary after the first of them.
const (
	stderrRate    = 20
	stderrBurst   = 200
	stderrSummary = 10 * time.Second
)

// logStderr logs each line read from r (a stdio upstream's stderr) as one
// entry of log (which names the upstream), at most maxStderrLine bytes of
// it and at most stderrRate lines a second, until r ends: when the
// process and every child holding its stderr have exited. dropped counts
// the lines not logged (nil: none counted).
func logStderr(r io.Reader, log *slog.Logger, dropped func()) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	var (
		mu                    sync.Mutex
		skipped, skippedBytes int64
		timer                 *time.Timer
	)
	// summary logs what was dropped since the last one: stderrSummary
	// after the first drop (a timer, so that a process that floods and
	// then goes quiet is still reported), and at the end.
	summary := func() {
		mu.Lock()
		defer mu.Unlock()
		if skipped > 0 {
			log.Warn("upstream stderr lines dropped: over the gateway's rate", "lines", skipped, "bytes", skippedBytes, "linesPerSecond", stderrRate)
		}
		skipped, skippedBytes, timer = 0, 0, nil
	}
	emit := func(line []byte, truncated bool) {
		if !lim.Allow() {
			mu.Lock()
			skipped++
			skippedBytes += int64(len(line))
			if timer == nil {
				timer = time.AfterFunc(stderrSummary, summary)
			}
			mu.Unlock()
			if dropped != nil {
				dropped()
			}
			return
		}
		if truncated {
			log.Info("upstream stderr", "line", string(trimPartialRune(line)), "truncated", true)
			return
		}
		log.Info("upstream stderr", "line", string(bytes.TrimRight(line, "\r\n")))
	}
	defer func() {
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		summary()
	}()
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			emit(line, true)
			for errors.Is(err, bufio.ErrBufferFull) { // drop the rest of the line
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		case len(line) > 0:
			emit(line, false)
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
