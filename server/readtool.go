package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// read_resource: the body of a resource as a tool result, one window at a
// time, for hosts that show tool results to the model but cannot read
// resources. A window is chosen in bytes (offset, length) or, for textual
// bodies, in lines (startLine, lineCount). The whole result never exceeds
// Limits.MaxReadChars characters: the window text (or the base64 of a
// binary window) plus the JSON of the metadata value. Text windows never
// split a UTF-8 character.
//
// The result's content is the metadata value as JSON text (also its
// structuredContent), then the window: a text item for a textual body, an
// embedded resource with a base64 blob for anything else (including text
// windows that are not valid UTF-8).

type (
	readArgs  = toolapi.ReadArgs
	readRange = toolapi.ReadRange
	readValue = toolapi.ReadResult
)

func (s *Server) readResourceToolDef(limits map[string]int) toolDef {
	boolp := func(b bool) *bool { return &b }
	return toolDef{
		scope: auth.ScopeRead,
		fn:    s.readResourceTool,
		tool: &mcp.Tool{
			Name:  "read_resource",
			Title: "Read a stored resource in windows",
			Description: fmt.Sprintf("Returns part of a resource's body as a tool result, for hosts that cannot read resources: "+
				"the window as text (or as an embedded base64 blob for binary bodies), after a JSON item with totalSize, sha256, range, "+
				"nextOffset/nextLine and truncated. Choose the window in bytes (offset, length) or, for text, in lines (startLine, lineCount; "+
				"lines end with \\n); without them it starts at the beginning. A result holds at most %d characters: a longer window is cut "+
				"(truncated: true) and you continue with offset: nextOffset or startLine: nextLine; both are absent at the end. "+
				"A single line longer than the limit comes in parts with nextOffset only. Text windows never split a UTF-8 character.", s.limits.MaxReadChars),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
			InputSchema:  inputSchemaOf[readArgs](limits),
			OutputSchema: outputSchemaOf(successSchema[readValue](limits, []string{"ok"})),
		},
	}
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

func (s *Server) readResourceTool(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a readArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	lineMode := a.StartLine != nil || a.LineCount != nil
	switch {
	case lineMode && (a.Offset != nil || a.Length != nil):
		return nil, failure(kindValidation, "choose the window in bytes (offset, length) or in lines (startLine, lineCount), not both",
			fieldError{Field: "offset", Message: "conflicts with startLine/lineCount"}, fieldError{Field: "startLine", Message: "conflicts with offset/length"})
	case a.Offset != nil && *a.Offset < 0:
		return nil, invalidField("offset", "must be 0 or more")
	case a.Length != nil && *a.Length < 1:
		return nil, invalidField("length", "must be at least 1")
	case a.StartLine != nil && *a.StartLine < 1:
		return nil, invalidField("startLine", "must be at least 1 (the first line is 1)")
	case a.LineCount != nil && *a.LineCount < 1:
		return nil, invalidField("lineCount", "must be at least 1")
	}
	ttl, terr := s.linkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if terr != nil {
		return nil, terr
	}
	k, terr := s.svc.ParseURI(a.URI)
	if terr != nil {
		return nil, terr
	}
	m, body, err := s.openBody(ctx, k)
	if isNotFound(err) {
		return nil, service.NotFound(a.URI)
	}
	if err != nil {
		return nil, s.storeFailure(ctx, "read_resource open", err)
	}
	defer body.Close()
	if !readableBy(p, &m) {
		return nil, service.NotFound(a.URI)
	}
	textual := jsonwire.TextType(m.MIMEType)
	if lineMode && !textual {
		return nil, invalidField("startLine", fmt.Sprintf("line windows need a textual body; this one is %s: use offset and length", m.MIMEType))
	}

	v := readValue{
		Status: "ok", URI: a.URI, MIMEType: m.MIMEType, Encoding: "text", TotalSize: m.Size, SHA256: m.SHA256,
		LastModified: formatTime(m.Modified),
	}
	if ttl > 0 {
		url, exp := s.downloadURL(&m, p.Tenant, ttl)
		v.DownloadURL, v.DownloadURLExpiresAt = url, formatTime(exp)
	}
	budget := s.readBudget(v)
	if budget < 64 {
		return nil, failure(kindTooLarge, fmt.Sprintf("the metadata of %s alone fills the %d-character result limit of this server", a.URI, s.limits.MaxReadChars))
	}

	win, terr := s.window(ctx, &a, &m, body, lineMode, textual, budget)
	if terr != nil {
		return nil, terr
	}
	end := win.start + int64(len(win.data))
	v.Range = readRange{Offset: win.start, Length: int64(len(win.data))}
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
	var item mcp.Content
	if win.text {
		item = &mcp.TextContent{Text: string(win.data)}
	} else {
		v.Encoding = "base64"
		item = &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a.URI, MIMEType: m.MIMEType, Blob: win.data}}
	}
	s.metrics.bytesRead.WithLabelValues(k.Scheme()).Add(float64(len(win.data)))
	return &toolValue{value: v, extra: []mcp.Content{item}}, nil
}

// window reads the window a asks for from body, within budget characters.
func (s *Server) window(ctx context.Context, a *readArgs, m *store.Meta, body bodyReader, lineMode, textual bool, budget int64) (readWindow, *toolError) {
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
		win, err = lineWindow(body, m.Size, start, count, budget)
		if errors.Is(err, errPastEnd) {
			return win, invalidField("startLine", err.Error())
		}
		if fit := budget / 4 * 3; err == nil && !win.text && int64(len(win.data)) > fit {
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
			return win, invalidField("offset", fmt.Sprintf("%d is past the end of the body (%d bytes); the last window starts before %d", off, m.Size, m.Size))
		}
		if textual {
			win, err = textWindow(body, m.Size, off, length, budget)
		}
		if !textual || err == nil && !win.text {
			win, err = binaryWindow(body, m.Size, off, length, budget)
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return win, s.storeFailure(ctx, "read_resource read", err)
		}
		if isNotFound(err) {
			return win, service.NotFound(a.URI)
		}
		return win, s.storeFailure(ctx, "read_resource read", err)
	}

	return win, nil
}

// readBudget is how many characters of the result the window may take:
// the limit less the JSON of the metadata value, measured with the widest
// numbers it can hold.
func (s *Server) readBudget(v readValue) int64 {
	wide := int64(1<<62 - 1)
	one := wide
	v.Range = readRange{Offset: wide, Length: wide, StartLine: &one, LineCount: &one}
	v.NextOffset, v.NextLine, v.Truncated, v.Encoding = &wide, &one, false, "base64"
	b, _ := json.Marshal(v)
	return int64(s.limits.MaxReadChars - utf8.RuneCount(b) - 16)
}

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
// end), at most budget characters, never ending inside a character (a
// character the requested end cuts is left for the next window, unless
// the window would be empty). The window is marked text only when it is
// valid UTF-8.
func textWindow(body io.ReadSeeker, size, off, length, budget int64) (readWindow, error) {
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
	i, chars := s, int64(0)
	for i < end && i < len(buf) && chars < budget {
		_, w := utf8.DecodeRune(buf[i:])
		if i+w > end && chars > 0 {
			break // a character the requested end cuts: next window
		}
		i += w
		chars++
	}
	data := buf[s:i]
	return readWindow{
		start:     lo + int64(s),
		data:      data,
		text:      utf8.Valid(data),
		truncated: i < end && chars == budget,
	}, nil
}

// binaryWindow picks a byte window for a base64 blob: exactly from off,
// for length bytes (-1: to the end), as many as budget characters of
// base64 hold.
func binaryWindow(body io.ReadSeeker, size, off, length, budget int64) (readWindow, error) {
	want := size - off
	if length >= 0 {
		want = min(want, length)
	}
	fit := budget / 4 * 3
	n := min(want, fit)
	buf, err := readAt(body, off, n)
	if err != nil {
		return readWindow{}, err
	}
	return readWindow{start: off, data: buf, truncated: want > fit}, nil
}

// lineWindow picks a window of whole lines of a textual body: from line
// startLine (1-based; lines end with "\n"), count lines (-1: as many as
// fit), at most budget characters. When the budget cuts the window, it
// ends after the last whole line; if not even the first line fits, the
// window is the start of that line, cut at a character boundary.
func lineWindow(body io.ReadSeeker, size, startLine, count, budget int64) (readWindow, error) {
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
	i, chars, complete, lastNL := 0, int64(0), int64(0), -1
	for i < len(buf) && chars < budget && (count < 0 || complete < count) {
		r, w := utf8.DecodeRune(buf[i:])
		if i+w > len(buf) {
			break
		}
		i += w
		chars++
		if r == '\n' {
			complete++
			lastNL = i
		}
	}
	atEnd := start+int64(i) >= size
	wantMore := count < 0 || complete < count
	cut := !atEnd && wantMore && chars == budget
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
