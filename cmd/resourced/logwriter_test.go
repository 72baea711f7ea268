package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the flush timer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestLogger(out *syncBuffer, delay time.Duration) (*slog.Logger, *logWriter) {
	lw := newLogWriter(out, delay)
	return slog.New(flushingHandler{slog.NewJSONHandler(lw, nil), lw}), lw
}

func TestLogWriterFlushesAfterDelay(t *testing.T) {
	var out syncBuffer
	const delay = 50 * time.Millisecond
	log, _ := newTestLogger(&out, delay)
	start := time.Now()
	log.Info("request", "n", 1)
	// Written already is a failure only if the delay has not passed: a
	// loaded machine may stall this goroutine past it before it looks.
	if got := out.String(); got != "" && time.Since(start) < delay {
		t.Fatalf("an info line was written at once: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), `"n":1`) {
		if time.Now().After(deadline) {
			t.Fatal("the info line was not flushed after the delay")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLogWriterWarnFlushesAtOnce(t *testing.T) {
	var out syncBuffer
	log, lw := newTestLogger(&out, time.Hour)
	log.Info("first")
	log.With("component", "x").Warn("trouble")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"msg":"first"`) || !strings.Contains(lines[1], `"msg":"trouble"`) {
		t.Fatalf("after a warning the log holds %q, want the info line then the warning", lines)
	}
	log.WithGroup("g").Error("bad", "k", "v")
	if !strings.Contains(out.String(), `"g":{"k":"v"}`) {
		t.Fatalf("an error record of a grouped logger was not flushed: %q", out.String())
	}
	log.Debug("not at this level")
	log.Info("last")
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), `"msg":"last"}`) {
		t.Fatalf("Flush did not write the last line: %q", out.String())
	}
}

func TestLogWriterConcurrentLinesStayWhole(t *testing.T) {
	var out syncBuffer
	log, lw := newTestLogger(&out, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				log.Info("request", "g", g, "i", i, "pad", strings.Repeat("x", i%300))
			}
		})
	}
	wg.Wait()
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct{ G, I int }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line is not one JSON record: %q: %v", line, err)
		}
		seen[fmt.Sprint(rec.G, "/", rec.I)] = true
	}
	if len(seen) != 8*500 {
		t.Fatalf("%d distinct lines, want %d", len(seen), 8*500)
	}
}
