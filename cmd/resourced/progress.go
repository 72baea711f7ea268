package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressEvery is how often a long operator command (backup, fsck,
// reindex, reconcile) writes a plain progress line when stderr is not a
// terminal.
const progressEvery = 5 * time.Second

// progress reports a long operator command's progress on stderr, never on
// stdout (scripts parse stdout): on a terminal a progressbar with counts
// and rate, otherwise a plain line every progressEvery; and, from finish,
// one summary line. A command's work comes in steps (fsck: the database,
// then the search index); each step counts one unit, objects or bytes,
// against a total that may be unknown (-1: a spinner and a count, no
// percentage). A nil *progress (--quiet) reports nothing.
type progress struct {
	w     io.Writer
	cmd   string // the command, first on every line
	start time.Time
	tty   bool

	mu    sync.Mutex // guards the step's fields (and the bar, which add reads)
	step  string
	unit  string
	total int64
	bar   *progressbar.ProgressBar
	since time.Time

	n        atomic.Int64 // done in this step
	stop     chan struct{}
	finished chan struct{}
}

// Test hooks: whether w is a terminal, and the ticker of plain lines.
var (
	isTerminal = func(w io.Writer) bool {
		f, ok := w.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	progressTicker = func() (<-chan time.Time, func()) {
		t := time.NewTicker(progressEvery)
		return t.C, t.Stop
	}
)

const (
	unitObjects = "objects"
	unitBytes   = "bytes"
)

// startProgress starts reporting cmd's progress on stderr; nil when quiet.
func startProgress(stderr io.Writer, quiet bool, cmd string) *progress {
	if quiet {
		return nil
	}
	p := &progress{w: stderr, cmd: cmd, start: time.Now(), tty: isTerminal(stderr), total: -1}
	if !p.tty {
		p.stop, p.finished = make(chan struct{}), make(chan struct{})
		tick, stop := progressTicker()
		go func() {
			defer close(p.finished)
			defer stop()
			for {
				select {
				case <-p.stop:
					return
				case <-tick:
					fmt.Fprintln(p.w, p.line())
				}
			}
		}()
	}
	return p
}

// begin starts a step: what it does, the unit it counts and its total
// (-1 when unknown).
func (p *progress) begin(step, unit string, total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
	p.step, p.unit, p.total, p.since = step, unit, total, time.Now()
	p.n.Store(0)
	if p.tty {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.cmd + ": " + step),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionUseIECUnits(true),
		}
		switch unit {
		case unitBytes:
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionShowBytes(true))
		case "": // a step that counts nothing: a spinner and the time
		default:
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
		}
		max := total
		if max == 0 { // the library takes 0 for an error; nothing to do is a spinner's job
			max = -1
		}
		p.bar = progressbar.NewOptions64(max, opts...)
		_ = p.bar.RenderBlank()
	}
}

// add counts n more units of the current step done.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.n.Add(n)
	p.mu.Lock()
	bar := p.bar
	p.mu.Unlock()
	if bar != nil {
		_ = bar.Add64(n)
	}
}

// writer counts the bytes written through it as done.
func (p *progress) writer(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return progressWriter{w, p}
}

type progressWriter struct {
	w io.Writer
	p *progress
}

func (w progressWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.p.add(int64(n))
	return n, err
}

// line is the plain progress line of the current step, such as
// "reindex: indexing: 1200 of 5000 objects (24%), 300 objects/s, 4s".
func (p *progress) line() string {
	p.mu.Lock()
	step, unit, total, since := p.step, p.unit, p.total, p.since
	p.mu.Unlock()
	n := p.n.Load()
	s := p.cmd + ": "
	if step != "" {
		s += step + ": "
	}
	if unit == "" { // a step that counts nothing: the time only
		return s + "running, " + time.Since(p.start).Round(time.Second).String()
	}
	switch {
	case total < 0:
		s += amount(unit, n)
	case unit == unitBytes:
		s += humanBytes(n) + " of " + humanBytes(total)
	default:
		s += fmt.Sprintf("%d of %d %s", n, total, unit)
	}
	if total > 0 {
		s = fmt.Sprintf("%s (%d%%)", s, min(n*100/total, 100)) // a file that grew past its total
	}
	if d := time.Since(since).Seconds(); d > 0 {
		r := float64(n) / d
		if unit == unitBytes {
			s += ", " + humanBytes(int64(r)) + "/s"
		} else {
			s += fmt.Sprintf(", %.0f %s/s", r, unit)
		}
	}
	return s + ", " + time.Since(p.start).Round(time.Second).String()
}

// finish stops reporting and writes the summary line: outcome, the
// objects and the bytes (-1 leaves one out: not known), and the time, as
// in "backup: wrote 16.0 MiB in 1.2s". ok is false when the command
// failed: a terminal's bar stops where it was instead of filling up.
func (p *progress) finish(ok bool, outcome string, objects, bytes int64) {
	if p == nil {
		return
	}
	if p.tty {
		p.mu.Lock()
		if p.bar != nil {
			if ok {
				_ = p.bar.Finish()
			} else {
				_ = p.bar.Exit()
			}
			fmt.Fprintln(p.w)
		}
		p.mu.Unlock()
	} else {
		close(p.stop)
		<-p.finished
	}
	s := p.cmd + ": " + outcome
	var parts []string
	if objects >= 0 {
		parts = append(parts, amount(unitObjects, objects))
	}
	if bytes >= 0 {
		parts = append(parts, humanBytes(bytes))
	}
	for i, part := range parts {
		if i == 0 {
			s += " "
		} else {
			s += ", "
		}
		s += part
	}
	fmt.Fprintf(p.w, "%s in %s\n", s, time.Since(p.start).Round(time.Millisecond))
}

func amount(unit string, n int64) string {
	switch unit {
	case unitBytes:
		return humanBytes(n)
	default:
		return fmt.Sprintf("%d %s", n, unit)
	}
}

// humanBytes is n in IEC units: "512 B", "16.0 MiB".
func humanBytes(n int64) string {
	const k = 1024
	if n < k {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/k, 0
	for v >= k && i < 5 {
		v /= k
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}
