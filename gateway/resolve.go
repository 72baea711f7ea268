package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front's side of spilling (spill.go): a result's placeholders found
// in the call's ticket are its spilled strings. The offloader saves a
// spilled part as a stream from its chunks (payload); whatever is
// returned inline gets its strings back first (restore), so a caller
// never sees a placeholder.

// spilledText is the spilled text content string s stands for, or nil.
func spilledText(t *ticket, s string) *spill {
	if sp := t.spilled(s); sp != nil && sp.kind == spillText {
		return sp
	}
	return nil
}

// spilledData is the spill that decoded base64 data b stands for, or nil:
// a placeholder decodes to 33 bytes.
func spilledData(t *ticket, b []byte) *spill {
	if t == nil || len(b) != 33 {
		return nil
	}
	if sp := t.spilled(base64.StdEncoding.EncodeToString(b)); sp != nil && sp.kind == spillBase64 {
		return sp
	}
	return nil
}

// sizeOf is the decoded size of a spill (as sent, when it does not
// decode: the save then fails on it).
func sizeOf(sp *spill) int {
	if sp.measure() != nil {
		return sp.n
	}
	return int(sp.size)
}

// textLen is the byte length of what s stands for.
func textLen(t *ticket, s string) int {
	if sp := spilledText(t, s); sp != nil {
		return sizeOf(sp)
	}
	return len(s)
}

// dataLen is the decoded length of the data b stands for.
func dataLen(t *ticket, b []byte) int {
	if sp := spilledData(t, b); sp != nil {
		return sizeOf(sp)
	}
	return len(b)
}

// payload is a part's bytes: in memory, or read as a stream (a spill, or
// a structuredContent with spills spliced back), never copied whole.
type payload struct {
	body []byte
	size int64
	sum  [32]byte
	open func() io.Reader // nil: body
	done func()           // the payload is saved: what holds it may go (nil: nothing to do)
}

func bytesPayload(b []byte) payload {
	return payload{body: b, size: int64(len(b)), sum: sha256.Sum256(b)}
}

func spillPayload(sp *spill) (payload, error) {
	if err := sp.measure(); err != nil {
		return payload{}, err
	}
	return payload{size: sp.size, sum: sp.sum, open: sp.open, done: sp.drop}, nil
}

// head is at most the first n bytes of p (for a preview).
func (p payload) head(n int) []byte {
	if p.open == nil {
		return p.body[:min(n, len(p.body))]
	}
	b, _ := io.ReadAll(io.LimitReader(p.open(), int64(n)))
	return b
}

// structured is a structuredContent's JSON: the JSON of the value go-sdk
// decoded, with the spilled strings of t spliced back decoded and escaped
// again as json.Marshal escapes them: the bytes json.Marshal gives the
// whole value.
func structured(t *ticket, v any) (payload, error) {
	skel, err := json.Marshal(v)
	if err != nil || t == nil {
		return bytesPayload(skel), err
	}
	type at struct {
		i  int
		sp *spill
	}
	var found []at
	t.mu.Lock()
	for key, sp := range t.spills {
		if sp.kind != spillJSON {
			continue
		}
		if i := bytes.Index(skel, []byte(`"`+key+`"`)); i >= 0 {
			found = append(found, at{i + 1, sp})
		}
	}
	t.mu.Unlock()
	if len(found) == 0 {
		return bytesPayload(skel), nil
	}
	slices.SortFunc(found, func(a, b at) int { return a.i - b.i })
	open := func() io.Reader {
		rs := make([]io.Reader, 0, 2*len(found)+1)
		last := 0
		for _, f := range found {
			rs = append(rs, bytes.NewReader(skel[last:f.i]), newJSONEscaper(newUnescaper(f.sp.raw())))
			last = f.i + placeholderLen
		}
		return io.MultiReader(append(rs, bytes.NewReader(skel[last:]))...)
	}
	for _, f := range found {
		if err := f.sp.measure(); err != nil { // checks its escapes
			return payload{}, err
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, open())
	if err != nil {
		return payload{}, err
	}
	p := payload{size: n, open: open}
	h.Sum(p.sum[:0])
	return p, nil
}

// restore gives res back every spilled string of t, in place: what is
// returned inline is what the upstream sent.
func restore(t *ticket, res *mcp.CallToolResult) error {
	if t == nil {
		return nil
	}
	text := func(s *string) error {
		if sp := spilledText(t, *s); sp != nil {
			b, err := sp.bytes()
			if err != nil {
				return err
			}
			*s = string(b)
		}
		return nil
	}
	data := func(d *[]byte) error {
		if sp := spilledData(t, *d); sp != nil {
			b, err := sp.bytes()
			if err != nil {
				return err
			}
			*d = b
		}
		return nil
	}
	for _, c := range res.Content {
		var err error
		switch c := c.(type) {
		case *mcp.TextContent:
			err = text(&c.Text)
		case *mcp.ImageContent:
			err = data(&c.Data)
		case *mcp.AudioContent:
			err = data(&c.Data)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				if err = text(&r.Text); err == nil && r.Blob != nil {
					err = data(&r.Blob)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if res.StructuredContent != nil {
		v, err := restoreValue(t, res.StructuredContent)
		if err != nil {
			return err
		}
		res.StructuredContent = v
	}
	return nil
}

// restoreValue is v (decoded JSON) with its placeholder strings replaced
// by the strings they stand for.
func restoreValue(t *ticket, v any) (any, error) {
	switch v := v.(type) {
	case string:
		if sp := t.spilled(v); sp != nil && sp.kind == spillJSON {
			b, err := io.ReadAll(newUnescaper(sp.raw()))
			if err != nil {
				return nil, err
			}
			return string(b), nil
		}
	case map[string]any:
		for k, e := range v {
			r, err := restoreValue(t, e)
			if err != nil {
				return nil, err
			}
			v[k] = r
		}
	case []any:
		for i, e := range v {
			r, err := restoreValue(t, e)
			if err != nil {
				return nil, err
			}
			v[i] = r
		}
	}
	return v, nil
}

// restoreContents gives the contents of a resources/read answer their
// spilled strings back.
func restoreContents(t *ticket, contents []*mcp.ResourceContents) error {
	for _, c := range contents {
		if c == nil {
			continue
		}
		if sp := spilledText(t, c.Text); sp != nil {
			b, err := sp.bytes()
			if err != nil {
				return err
			}
			c.Text = string(b)
		}
		if sp := spilledData(t, c.Blob); sp != nil {
			b, err := sp.bytes()
			if err != nil {
				return err
			}
			c.Blob = b
		}
	}
	return nil
}

// jsonEscaper reads the UTF-8 text read from src as the inside of a JSON
// string, escaped as encoding/json escapes it (HTML characters, U+2028
// and U+2029 included), so that a spliced structuredContent has the bytes
// json.Marshal would give its decoded value.
type jsonEscaper struct {
	src   io.Reader
	in    []byte
	carry int // bytes of an incomplete rune at the start of in
	buf   []byte
	out   []byte // the unread end of buf
	err   error
}

func newJSONEscaper(src io.Reader) *jsonEscaper {
	return &jsonEscaper{src: src, in: make([]byte, 32<<10)}
}

func (e *jsonEscaper) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		n, err := e.src.Read(e.in[e.carry:])
		n += e.carry
		chunk := e.in[:n]
		end := n
		if err == nil {
			// Keep a rune cut by the read for the next one.
			for k := 1; k < utf8.UTFMax && k <= n; k++ {
				if utf8.RuneStart(chunk[n-k]) {
					if !utf8.FullRune(chunk[n-k:]) {
						end = n - k
					}
					break
				}
			}
		}
		// One buffer, reused: out is a window on it (issue 24: a new
		// one per read was 1.4 GB of garbage for a 40 MiB file).
		e.buf = appendJSONEscaped(e.buf[:0], chunk[:end])
		e.out = e.buf
		e.carry = copy(e.in, chunk[end:])
		e.err = err
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

const hexDigits = "0123456789abcdef"

// appendJSONEscaped appends b (UTF-8) escaped as encoding/json escapes a
// string's characters.
func appendJSONEscaped(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, b[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, b[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, b[start:]...)
}
