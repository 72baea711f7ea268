package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// read_resource's windows: the body of a resource one window at a time,
// for hosts that show tool results to the model but cannot read
// resources. A window is chosen in bytes (offset, length) or, for textual
// bodies, in lines (startLine, lineCount). Text windows never split a
// UTF-8 character. The value holds the window itself (text, or blob in
// base64) and the transport shows it once more as an item of its own, so
// the content never exceeds Limits.MaxReadChars characters: the value as
// JSON, window included (each character counted as JSON escapes it), plus
// the window item.

// Window is one window of read_resource: its value and the window's bytes.
type Window struct {
	Value toolapi.ReadResult
	Meta  store.Meta
	Data  []byte
	Text  bool // Data is valid UTF-8 text of a textual body
}

// ReadWindow is read_resource for tenant: the window a asks for of the
// resource a.URI names, if tenant may read it. link signs the download
// link a may ask for (nil: links are off).
func (s *Service) ReadWindow(ctx context.Context, tenant string, a *toolapi.ReadArgs, link func(m *store.Meta, ttl time.Duration) toolapi.DownloadLink) (*Window, *Failure) {
	lineMode := a.StartLine != nil || a.LineCount != nil
	switch {
	case lineMode && (a.Offset != nil || a.Length != nil):
		return nil, Fail(KindValidation, "choose the window in bytes (offset, length) or in lines (startLine, lineCount), not both",
			FieldError{Field: "offset", Message: "conflicts with startLine/lineCount"}, FieldError{Field: "startLine", Message: "conflicts with offset/length"})
	case a.Offset != nil && *a.Offset < 0:
		return nil, InvalidField("offset", "must be 0 or more")
	case a.Length != nil && *a.Length < 1:
		return nil, InvalidField("length", "must be at least 1")
	case a.StartLine != nil && *a.StartLine < 1:
		return nil, InvalidField("startLine", "must be at least 1 (the first line is 1)")
	case a.LineCount != nil && *a.LineCount < 1:
		return nil, InvalidField("lineCount", "must be at least 1")
	}
	ttl, terr := s.LinkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if terr != nil {
		return nil, terr
	}
	m, body, terr := s.Open(ctx, tenant, a.URI)
	if terr != nil {
		return nil, terr
	}
	defer body.Close()
	textual := jsonwire.TextType(m.MIMEType)
	if lineMode && !textual {
		return nil, InvalidField("startLine", fmt.Sprintf("line windows need a textual body; this one is %s: use offset and length", m.MIMEType))
	}

	v := toolapi.ReadResult{
		Status: "ok", URI: a.URI, MIMEType: m.MIMEType, Encoding: "text", TotalSize: m.Size, SHA256: m.SHA256,
		LastModified: jsonwire.FormatTime(m.Modified),
	}
	if ttl > 0 && link != nil {
		v.DownloadLink = link(&m, ttl)
	}
	budget := s.readBudget(v)
	if budget < 64 {
		return nil, Fail(KindTooLarge, fmt.Sprintf("the metadata of %s alone fills the %d-character result limit of this server", a.URI, s.limits.MaxReadChars))
	}

	win, terr := s.window(ctx, a, &m, body, lineMode, textual, budget)
	if terr != nil {
		return nil, terr
	}
	end := win.start + int64(len(win.data))
	v.Range = toolapi.ReadRange{Offset: win.start, Length: int64(len(win.data))}
	v.Truncated = win.truncated
	if end < m.Size {
		v.NextOffset = &end
	}
	if lineMode {
		first := int64(1)
		if a.StartLine != nil {
			first = *a.StartLine
		}
		v.Range.StartLine, v.Range.LineCount = &first, &win.lines
		if end < m.Size && win.complete > 0 {
			next := first + win.complete
			v.NextLine = &next
		}
	}
	if win.text {
		text := string(win.data)
		v.Text = &text
	} else {
		v.Encoding = "base64"
		v.Blob = win.data
	}
	return &Window{Value: v, Meta: m, Data: win.data, Text: win.text}, nil
}

// readWindow is the window chosen, before it is rendered.
type readWindow struct {
	start     int64
	data      []byte
	text      bool
	truncated bool
	lines     int64 // line windows: lines touched
	complete  int64 // line windows: lines held whole
}

var errPastEnd = errors.New("past the end")

// window reads the window a asks for from body, within budget characters.
func (s *Service) window(ctx context.Context, a *toolapi.ReadArgs, m *store.Meta, body io.ReadSeeker, lineMode, textual bool, budget int64) (readWindow, *Failure) {
	var (
		win readWindow
		err error
	)
	if lineMode {
		start, count := int64(1), int64(-1)
		if a.StartLine != nil {
			start = *a.StartLine
		}
		if a.LineCount != nil {
			count = *a.LineCount
		}
		win, err = lineWindow(body, m.Size, start, count, budget, textCost)
		if errors.Is(err, errPastEnd) {
			return win, InvalidField("startLine", err.Error())
		}
		if fit := blobFit(budget); err == nil && !win.text && int64(len(win.data)) > fit {
			// Not UTF-8 after all: it goes out as base64, which is longer.
			win.data, win.truncated = win.data[:fit], true
			win.complete = int64(bytes.Count(win.data, []byte("\n")))
			win.lines = win.complete + b2i(win.data[len(win.data)-1] != '\n')
		}
	} else {
		off, length := int64(0), int64(-1)
		if a.Offset != nil {
			off = *a.Offset
		}
		if a.Length != nil {
			length = *a.Length
		}
		if off > m.Size {
			return win, InvalidField("offset", fmt.Sprintf("%d is past the end of the body (%d bytes); the last window starts before %d", off, m.Size, m.Size))
		}
		if textual {
			win, err = textWindow(body, m.Size, off, length, budget, textCost)
		}
		if !textual || err == nil && !win.text {
			win, err = binaryWindow(body, m.Size, off, length, blobFit(budget))
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return win, s.Unavailable(ctx, "read_resource read", err)
		}
		if IsNotFound(err) {
			return win, NotFound(a.URI)
		}
		return win, s.Unavailable(ctx, "read_resource read", err)
	}

	return win, nil
}

// readBudget is how many characters of the content the window may take:
// the limit less the JSON of the value without its window, measured with
// the widest numbers and the longer of the two window members it can hold.
// The window spends the budget twice, in the JSON item and in its own item
// (textCost, blobFit).
func (s *Service) readBudget(v toolapi.ReadResult) int64 {
	wide := int64(1<<62 - 1)
	one := wide
	v.Range = toolapi.ReadRange{Offset: wide, Length: wide, StartLine: &one, LineCount: &one}
	v.NextOffset, v.NextLine, v.Truncated, v.Encoding = &wide, &one, false, "base64"
	empty := ""
	v.Text, v.Blob = &empty, []byte{}
	b, _ := json.Marshal(v)
	return int64(s.limits.MaxReadChars - utf8.RuneCount(b) - 16)
}

// textCost is what one character of a text window costs of the budget: one
// in the window item, and its length inside the JSON string of the value
// as encoding/json writes it (HTML characters and U+2028/U+2029 escaped).
func textCost(r rune) int64 {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 1 + 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 1 + 6
	}
	return 1 + 1
}

// unitCost counts characters only (the windows' own tests).
func unitCost(rune) int64 { return 1 }

// blobFit is how many bytes of a binary window a budget holds: their
// base64 goes into the value's blob and into the embedded resource.
func blobFit(budget int64) int64 { return budget / 2 / 4 * 3 }

// readAt reads up to n bytes of body from off.
func readAt(body io.ReadSeeker, off, n int64) ([]byte, error) {
	if _, err := body.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	got, err := io.ReadFull(body, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return buf[:got], err
}

// textWindow picks a byte window of a textual body: from off (moved back
// to the start of the character it falls in) for length bytes (-1: to the
// end), characters costing at most budget in all, never ending inside a
// character (a character the requested end cuts is left for the next
// window, unless the window would be empty). The window is marked text
// only when it is valid UTF-8.
func textWindow(body io.ReadSeeker, size, off, length, budget int64, cost func(rune) int64) (readWindow, error) {
	lo := max(0, off-(utf8.UTFMax-1))
	want := size - off
	if length >= 0 {
		want = min(want, length)
	}
	n := min(size-lo, (off-lo)+min(want, budget*utf8.UTFMax)+utf8.UTFMax)
	buf, err := readAt(body, lo, n)
	if err != nil {
		return readWindow{}, err
	}
	s := int(off - lo)
	for i := 0; i < utf8.UTFMax-1 && s > 0 && s < len(buf) && !utf8.RuneStart(buf[s]); i++ {
		s--
	}
	if s < len(buf) && !utf8.RuneStart(buf[s]) {
		s = int(off - lo) // not UTF-8 here: keep the offset as asked
	}
	end := int(off - lo + want)
	i, spent, full := s, int64(0), false
	for i < end && i < len(buf) {
		r, w := utf8.DecodeRune(buf[i:])
		if i+w > end && i > s {
			break // a character the requested end cuts: next window
		}
		c := cost(r)
		if spent+c > budget {
			full = true
			break
		}
		spent += c
		i += w
	}
	data := buf[s:i]
	return readWindow{
		start:     lo + int64(s),
		data:      data,
		text:      utf8.Valid(data),
		truncated: i < end && full,
	}, nil
}

// binaryWindow picks a byte window for a base64 blob: exactly from off,
// for length bytes (-1: to the end), at most fit bytes.
func binaryWindow(body io.ReadSeeker, size, off, length, fit int64) (readWindow, error) {
	want := size - off
	if length >= 0 {
		want = min(want, length)
	}
	n := min(want, fit)
	buf, err := readAt(body, off, n)
	if err != nil {
		return readWindow{}, err
	}
	return readWindow{start: off, data: buf, truncated: want > fit}, nil
}

// lineWindow picks a window of whole lines of a textual body: from line
// startLine (1-based; lines end with "\n"), count lines (-1: as many as
// fit), characters costing at most budget in all. When the budget cuts
// the window, it ends after the last whole line; if not even the first
// line fits, the window is the start of that line, cut at a character
// boundary.
func lineWindow(body io.ReadSeeker, size, startLine, count, budget int64, cost func(rune) int64) (readWindow, error) {
	// Find the byte offset of startLine.
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return readWindow{}, err
	}
	br := bufio.NewReaderSize(body, 64<<10)
	var seen, start int64
	tail := false // the body ends with a line without "\n"
	for seen < startLine-1 {
		line, err := br.ReadSlice('\n')
		start += int64(len(line))
		switch {
		case err == nil:
			seen++
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			tail = len(line) > 0
			return readWindow{}, fmt.Errorf("%w: line %d is past the end: the body has %d lines", errPastEnd, startLine, seen+b2i(tail))
		default:
			return readWindow{}, err
		}
	}
	if startLine > 1 && start >= size {
		return readWindow{}, fmt.Errorf("%w: line %d is past the end: the body has %d lines", errPastEnd, startLine, seen)
	}
	buf, err := readAt(body, start, min(size-start, budget*utf8.UTFMax+utf8.UTFMax))
	if err != nil {
		return readWindow{}, err
	}
	i, spent, complete, lastNL, full := 0, int64(0), int64(0), -1, false
	for i < len(buf) && (count < 0 || complete < count) {
		r, w := utf8.DecodeRune(buf[i:])
		if i+w > len(buf) {
			break
		}
		c := cost(r)
		if spent+c > budget {
			full = true
			break
		}
		spent += c
		i += w
		if r == '\n' {
			complete++
			lastNL = i
		}
	}
	atEnd := start+int64(i) >= size
	wantMore := count < 0 || complete < count
	cut := !atEnd && wantMore && full
	if cut && lastNL > 0 {
		i = lastNL // end after the last whole line
	}
	data := buf[:i]
	lines := complete
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++ // a line held in part (the last one, or one cut)
	}
	return readWindow{
		start:     start,
		data:      data,
		text:      utf8.Valid(data),
		truncated: cut,
		lines:     lines,
		complete:  complete,
	}, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
