package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/time/rate"
)

// The message limit (docs/gateway.md, "What the gateway reads"): the pool
// reads at most PoolOptions.MaxMessageBytes of one upstream message — a
// stdio line, an HTTP JSON body, one server-sent event or a whole event
// stream — which is what the gateway can keep: twice the offload scheme's
// maxBytes (a blob's base64, a text's JSON escapes) and 1 MiB. A message
// over it is not read into memory: its call is answered, in the
// upstream's place, by a JSON-RPC error of the gateway's (tooLargeCode,
// with tooLargeData), which the front turns into too_large with retrySafe
// false, and the upstream session goes on serving. go-sdk alone would have
// ended the session (its stdio frame limit is a fixed 16 MiB) and the
// caller would have been told to retry, which would end it again.

// DefaultMaxMessageBytes is the limit of a pool whose options set none:
// 2 × 64 MiB (the default offload scheme's maxBytes) + 1 MiB.
const DefaultMaxMessageBytes = 2*(64<<20) + 1<<20

// tooLargeCode is the code of the error the gateway answers in an
// upstream's place for a message over the limit; tooLargeMarker is the
// member of its data that tells it from an upstream's own error.
const (
	tooLargeCode   = -32090
	tooLargeMarker = "resourcedGatewayTooLarge"
)

// tooLargeData is the data of that error: the message's size when it is
// known (a stdio line is read to its end; an HTTP body is not), and the
// limit.
type tooLargeData struct {
	Marker bool  `json:"resourcedGatewayTooLarge"`
	Size   int64 `json:"size,omitempty"`
	Limit  int64 `json:"limit"`
}

// tooLargeResponse is the JSON-RPC error response for id (raw JSON)
// standing in for an upstream message over limit.
func tooLargeResponse(id []byte, size, limit int64) []byte {
	data, _ := json.Marshal(tooLargeData{Marker: true, Size: size, Limit: limit})
	msg := "the upstream's message is over the gateway's limit of " + strconv.FormatInt(limit, 10) + " bytes"
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": tooLargeCode, "message": msg, "data": json.RawMessage(data)},
	})
	return b
}

// asTooLarge reports whether code and data are the gateway's own
// too-large error, and its data.
func asTooLarge(code int64, data []byte) (tooLargeData, bool) {
	var d tooLargeData
	if code != tooLargeCode || json.Unmarshal(data, &d) != nil || !d.Marker || d.Limit <= 0 {
		return tooLargeData{}, false
	}
	return d, true
}

// idScanner finds, in a JSON-RPC message read byte by byte, the raw value
// of its top-level "id" member and whether it has a "method" (a request or
// notification, not a response). It keeps nothing else of the message.
type idScanner struct {
	depth    int
	inString bool
	escape   bool
	topLevel bool // the message is an object (a batch is not answered)
	started  bool

	expectKey bool   // at depth 1, the next string is a key
	key       []byte // the key being read (at most 8 bytes kept)
	keyLong   bool
	lastKey   string
	inKey     bool

	capturing bool // reading the value of "id"
	id        []byte
	idDone    bool
	bad       bool // the id is not a scalar, or too long
	hasMethod bool
}

const maxIDBytes = 256

func (s *idScanner) write(p []byte) {
	for _, c := range p {
		s.step(c)
	}
}

// step reads one byte: the id's bytes while capturing, then either a byte
// inside a string or a structural one.
func (s *idScanner) step(c byte) {
	s.capture(c)
	if s.inString {
		s.stringByte(c)
		return
	}
	s.structural(c)
}

// capture keeps the bytes of the id's value, and sees where it ends.
func (s *idScanner) capture(c byte) {
	if s.capturing && !s.inString && s.depth == 1 && (c == ',' || c == '}' || len(s.id) > 0 && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
		s.capturing, s.idDone = false, true
	}
	if s.capturing && !(len(s.id) == 0 && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
		if len(s.id) < maxIDBytes {
			s.id = append(s.id, c)
		} else {
			s.bad = true
		}
	}
}

// stringByte reads a byte inside a string: a key's, the id's, any other.
func (s *idScanner) stringByte(c byte) {
	switch {
	case s.escape:
		s.escape = false
	case c == '\\':
		s.escape = true
	case c == '"':
		s.inString = false
		if s.inKey {
			s.inKey = false
			s.lastKey = ""
			if !s.keyLong {
				s.lastKey = string(s.key)
			}
			if s.lastKey == "method" {
				s.hasMethod = true
			}
		} else if s.capturing && s.depth == 1 {
			s.capturing, s.idDone = false, true
		}
		return
	}
	if s.inKey {
		if len(s.key) < 8 {
			s.key = append(s.key, c)
		} else {
			s.keyLong = true
		}
	}
}

// structural reads a byte outside strings: nesting, members, the id's start.
func (s *idScanner) structural(c byte) {
	switch c {
	case ' ', '\t', '\r', '\n':
		return
	case '"':
		s.inString = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.expectKey, s.key, s.keyLong = true, false, s.key[:0], false
		}
		return
	case '{', '[':
		if !s.started {
			s.started, s.topLevel = true, c == '{'
		}
		if s.capturing {
			s.capturing, s.bad = false, true // an id is never an object or array
		}
		s.depth++
		if s.depth == 1 && c == '{' {
			s.expectKey = true
		}
		return
	case '}', ']':
		s.depth--
		return
	case ',':
		if s.depth == 1 {
			s.expectKey = true
		}
		return
	case ':':
		if s.depth == 1 && s.lastKey == "id" && !s.idDone {
			s.capturing, s.id = true, s.id[:0]
		}
		return
	}
	if !s.started {
		s.started = true // a scalar message: not an object
	}
}

// Write feeds p to the scanner (io.Copy into it reads a body without
// keeping it).
func (s *idScanner) Write(p []byte) (int, error) {
	s.write(p)
	return len(p), nil
}

// request is the raw id of a request message, or nil (a notification, a
// response, a batch).
func (s *idScanner) request() []byte {
	if !s.topLevel || !s.hasMethod || s.bad || !s.idDone || !json.Valid(s.id) || string(s.id) == "null" {
		return nil
	}
	return s.id
}

// response is the raw id of a response message (one to answer in its
// place), or nil: a request, a notification, a batch, an id that is not
// one.
func (s *idScanner) response() []byte {
	if !s.topLevel || s.hasMethod || s.bad || !s.idDone || !json.Valid(s.id) {
		return nil
	}
	return s.id
}

// lineGuard sits between a stdio upstream's stdout and go-sdk's reader:
// it hands go-sdk whole lines of at most limit bytes, charged to the
// in-flight budget as they are read (budget.go), with the large strings
// of the answers to ticketed calls spilled (spill.go). A line it cannot
// hand on is replaced by the gateway's error for its id (nothing when
// the line is not a response), read to its end without keeping it:
//   - longer than limit: the too-large error (dropped is called);
//   - over the budget: the busy error;
//   - not JSON: the bad-message error, so one broken line fails its own
//     call and not the session every call shares.
type lineGuard struct {
	r       *bufio.Reader
	limit   int64
	dropped func(size int64, answered bool)
	// refused is told of a line that was over the budget ("busy") or not
	// JSON ("bad"), and whether its call was answered.
	refused func(why string, answered bool)

	budget  *budget
	tenant  string   // the session's tenant (perTenant), "" when shared
	tickets *tickets // the connection's ticketed calls; nil: spill nothing
	spillAt int

	// notes bounds the notifications passed on (nil: all); the rest are
	// dropped and counted ("noisy"), before go-sdk decodes them.
	notes *rate.Limiter
	// progress is told of every message passed on (nil: not).
	progress *ProgressRouter

	sc      frameScanner
	pending charge // the last line's, when no ticket took it: released at the next
	out     []byte // what Read hands out next
	err     error
}

func newLineGuard(r io.Reader, limit int64, dropped func(int64, bool)) *lineGuard {
	return &lineGuard{r: bufio.NewReaderSize(r, 64<<10), limit: limit, dropped: dropped}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.next()
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	if len(g.out) == 0 && cap(g.sc.out) > 1<<20 {
		// Handed on whole: a large line's buffer is not kept until the
		// upstream's next line.
		g.out, g.sc.out = nil, nil
	}
	return n, nil
}

// next reads one line into out.
func (g *lineGuard) next() {
	g.pending.release() // go-sdk has the last line: it read all of out
	g.sc.reset()
	ch := charge{b: g.budget, tenant: g.tenant}
	var (
		size   int64
		over   bool
		busy   *busyData
		peeked bool
	)
	for first := true; ; first = false {
		chunk, err := g.r.ReadSlice('\n')
		if first {
			// Decided once the line has begun: a ticketed call's request
			// was registered before it was written.
			g.sc.spillAt = 0
			if g.tickets.waiting() {
				g.sc.spillAt = g.spillAt
			}
		}
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1] // the newline is not the message's
		}
		size += int64(len(body))
		if !over && size > g.limit {
			over = true
			g.sc.drop()
			ch.release()
		}
		if !over && busy == nil {
			if d, ok := ch.add(int64(len(body))); !ok {
				busy = &d
				g.sc.drop()
				ch.release()
			}
		}
		g.sc.write(body)
		if !peeked && busy == nil && !over && g.sc.idState == idDone {
			// The call is known: charge its tenant from here on.
			peeked = true
			if t := g.tickets.peek(g.sc.responseID()); t != nil {
				if d, ok := ch.attribute(t.tenant); !ok {
					busy = &d
					g.sc.drop()
					ch.release()
				}
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		g.err = err
		break
	}
	id := g.sc.responseID()
	switch {
	case over:
		if g.dropped != nil {
			g.dropped(size, id != nil)
		}
		g.answer(id, func() []byte { return tooLargeResponse(id, size, g.limit) })
		return
	case busy != nil:
		g.refuse("busy", id)
		g.answer(id, func() []byte { return busyResponse(id, *busy) })
		return
	}
	msg := g.sc.out
	if len(msg) == 0 && size == 0 {
		return // end of stream, or an empty line
	}
	// go-sdk's reader ends the session at a message it cannot decode: such
	// a line fails its own call (when its id can be read) or is dropped.
	// The decode is go-sdk's own, of the message without its spills.
	msgs, err := decodeLine(msg)
	if err != nil {
		dropAll(g.sc.spills)
		ch.release()
		g.refuse("bad", id)
		g.answer(id, func() []byte { return badMessageResponse(id) })
		return
	}
	var t *ticket
	if len(msgs) == 1 {
		switch m := msgs[0].(type) {
		case *jsonrpc.Request:
			// Notifications and server requests alike: each costs a
			// decode (and a request an answer).
			if g.notes != nil && !g.notes.Allow() {
				dropAll(g.sc.spills)
				g.refuse("noisy", nil)
				g.pending = ch
				return
			}
		case *jsonrpc.Response:
			t = g.tickets.takeID(m.ID) // the call go-sdk hands the answer to
		}
	}
	for _, m := range msgs {
		g.progress.Passed(m)
	}
	if t != nil {
		if d, ok := ch.attributeTo(t.tenant); !ok {
			// Over the tenant's share only now that its call is known
			// (an answer whose id comes last).
			dropAll(g.sc.spills)
			ch.release()
			g.refuse("busy", id)
			g.answer(id, func() []byte { return busyResponse(id, d) })
			return
		}
		t.hold(ch, g.sc.spills)
	} else {
		msg = unspill(msg, g.sc.spills)
		dropAll(g.sc.spills)
		g.pending = ch
	}
	if g.err == nil {
		msg = append(msg, '\n')
	}
	g.out = msg
}

// answer hands go-sdk the gateway's error for id in place of a line, when
// there is an id and go-sdk can decode the answer (an id such as 1e400
// cannot be answered: the line is then only dropped).
func (g *lineGuard) answer(id []byte, resp func() []byte) {
	if id == nil {
		return
	}
	b := resp()
	if _, err := jsonrpc.DecodeMessage(b); err != nil {
		return
	}
	g.out = append(b, '\n')
}

// decodeLine decodes a line as go-sdk's stdio reader does (a batch, or one
// message), so that a line it would fail on is known before it is handed
// on.
func decodeLine(b []byte) ([]jsonrpc.Message, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, err
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

func (g *lineGuard) refuse(why string, id []byte) {
	if g.refused != nil {
		g.refused(why, id != nil)
	}
}

// unspill puts spilled strings back in place of their placeholders (a
// message no ticket took: its call was made without one).
func unspill(msg []byte, spills []*spill) []byte {
	if len(spills) == 0 {
		return msg
	}
	n := len(msg)
	for _, sp := range spills {
		n += sp.n
	}
	out := bytes.NewBuffer(make([]byte, 0, n))
	rest := msg
	for _, sp := range spills {
		i := bytes.Index(rest, []byte(sp.key))
		if i < 0 {
			continue
		}
		out.Write(rest[:i])
		_, _ = io.Copy(out, sp.raw())
		rest = rest[i+len(sp.key):]
	}
	out.Write(rest)
	return out.Bytes()
}

// An upstream session passes on at most notificationRate notifications a
// second (bursts of notificationBurst): progress, log messages, list
// changes. More is a flood (100 000 cost about 13 CPU-seconds of go-sdk
// decoding, queued past the end of their call); the excess is dropped as
// it is read.
const (
	notificationRate  = 200
	notificationBurst = 1000
)

// badMessageCode is the code of the error the gateway answers in an
// upstream's place for an answer that is not JSON.
const (
	badMessageCode   = -32092
	badMessageMarker = "resourcedGatewayBadMessage"
)

func badMessageResponse(id []byte) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": badMessageCode, "message": "the upstream's answer is not valid JSON",
			"data": map[string]bool{badMessageMarker: true}},
	})
	return b
}

// isBadMessage reports whether code and data are the gateway's own
// bad-message error.
func isBadMessage(code int64, data []byte) bool {
	var d map[string]bool
	return code == badMessageCode && json.Unmarshal(data, &d) == nil && d[badMessageMarker]
}

// limitedJSON is an HTTP upstream's application/json response body: the
// body itself when it has at most limit bytes, else the gateway's
// too-large error for the request's id, without reading the rest.
func limitedJSON(body io.ReadCloser, id []byte, limit int64) (io.ReadCloser, int64, bool) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return &errBody{body: body, err: err}, 0, false
	}
	if int64(len(b)) <= limit {
		body.Close()
		return io.NopCloser(bytes.NewReader(b)), int64(len(b)), false
	}
	body.Close()
	return io.NopCloser(bytes.NewReader(tooLargeResponse(id, 0, limit))), 0, true
}

type errBody struct {
	body io.ReadCloser
	err  error
}

func (b *errBody) Read([]byte) (int, error) { return 0, b.err }
func (b *errBody) Close() error             { return b.body.Close() }

// sseGuard is an HTTP upstream's text/event-stream response body: it
// hands go-sdk whole events of at most limit bytes, and at most limit
// bytes in all; an event, or the stream, over it ends the stream with an
// event holding the gateway's too-large error for the request's id,
// without reading the rest.
type sseGuard struct {
	body    io.ReadCloser
	r       *bufio.Reader
	id      []byte
	limit   int64
	total   int64
	dropped func()
	ch      *charge // the stream's bytes are charged here (nil: not)
	refused func(why string, answered bool)
	// progress is told of every event's message passed on (nil: not).
	progress *ProgressRouter

	event []byte
	out   []byte
	err   error
}

// sseGuard reads through a small buffer first, the size of a typical
// answer's event (every call to an HTTP upstream that answers with an
// event stream makes one guard), and a larger one from the first line
// that does not fit, so that a large event is read in large reads.
const (
	sseSmallBuf = 4 << 10
	sseLargeBuf = 64 << 10
)

func newSSEGuard(body io.ReadCloser, id []byte, limit int64, dropped func()) *sseGuard {
	return &sseGuard{body: body, r: bufio.NewReaderSize(body, sseSmallBuf), id: id, limit: limit, dropped: dropped}
}

func (g *sseGuard) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.next()
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

func (g *sseGuard) Close() error { return g.body.Close() }

// next reads one event (lines up to an empty one) into out.
func (g *sseGuard) next() {
	if cap(g.event) > 1<<20 {
		g.event = nil
	}
	g.event = g.event[:0]
	lineStart := 0
	for {
		chunk, err := g.r.ReadSlice('\n')
		if int64(len(g.event)+len(chunk)) > g.limit || g.total+int64(len(g.event)+len(chunk)) > g.limit {
			g.event = nil
			g.body.Close() // the rest is not read
			if g.dropped != nil {
				g.dropped()
			}
			g.err = io.EOF
			if g.id != nil {
				g.out = []byte("event: message\ndata: " + string(tooLargeResponse(g.id, 0, g.limit)) + "\n\n")
			}
			return
		}
		if g.ch != nil {
			if d, ok := g.ch.add(int64(len(chunk))); !ok {
				g.ch.release() // nothing of the stream is kept
				g.event = nil
				g.body.Close() // the rest is not read
				if g.refused != nil {
					g.refused("busy", g.id != nil)
				}
				g.err = io.EOF
				if g.id != nil {
					g.out = []byte("event: message\ndata: " + string(busyResponse(g.id, d)) + "\n\n")
				}
				return
			}
		}
		g.event = append(g.event, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if g.r.Size() < sseLargeBuf {
				// A full buffer was handed out whole: nothing is
				// buffered, so a larger reader can take over the body.
				g.r = bufio.NewReaderSize(g.body, sseLargeBuf)
			}
			continue
		}
		if err != nil {
			g.out, g.err = g.event, err
			g.total += int64(len(g.event))
			return
		}
		line := g.event[lineStart:]
		lineStart = len(g.event)
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') { // an empty line ends the event
			g.out = g.event
			g.total += int64(len(g.event))
			// A progress notification is small: a large answer is not
			// decoded a second time.
			if g.progress != nil && len(g.event) <= 64<<10 && bytes.Contains(g.event, []byte("notifications/progress")) {
				if m, err := jsonrpc.DecodeMessage(eventData(g.event)); err == nil {
					g.progress.Passed(m)
				}
			}
			return
		}
	}
}

// eventData is the data of an event as go-sdk reads it: its data fields'
// values (one leading space dropped) joined by newlines.
func eventData(event []byte) []byte {
	var data []byte
	for line := range bytes.Lines(event) {
		v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		if data != nil {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
	}
	return data
}

// requestID is the raw id of the JSON-RPC request read from body, or nil
// (a notification, a response, a batch); the body is not kept.
func requestID(body io.Reader) []byte {
	var s idScanner
	if _, err := io.Copy(&s, body); err != nil {
		return nil
	}
	return s.request()
}

// sizeOrMore is a too-large message's size in words: its size when known,
// else "more than" the limit.
func (d tooLargeData) sizeOrMore() string {
	if d.Size > 0 {
		return sizeWords(d.Size)
	}
	return fmt.Sprintf("more than %s", sizeWords(d.Limit))
}
