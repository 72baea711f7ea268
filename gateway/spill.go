package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// Spilling (docs/gateway.md, "What the gateway holds"): the large strings
// of a tool result — a content item's text, data or blob, an embedded
// resource's text or blob, and any string inside structuredContent —
// are taken out of the upstream's message as it is read, kept once as
// bytes, and replaced in the message go-sdk decodes by a placeholder. So
// go-sdk decodes a small message, and the front saves the large parts
// from those bytes (resolve.go) without a decode of the whole result into
// Go values, a copy per stage, and a peak many times the answer's size.
// Only a call made with a ticket (budget.go) is spilled: the ticket is
// where its spilled strings wait for the front.
//
// A placeholder is 44 characters of standard base64 (33 bytes: 16 of the
// pool's secret, 8 of a counter, 9 zero), valid as a text and as base64
// data, and unguessable by an upstream, which never sees one.

// placeholderLen is the length of a placeholder.
const placeholderLen = 44

// defaultSpillAt is the string length (as sent, escapes included) above
// which a candidate string is spilled; it is above every offload
// threshold's default, so a spilled part is nearly always saved.
const defaultSpillAt = 64 << 10

// spillKind is how a spilled string is kept.
type spillKind uint8

const (
	spillText   spillKind = iota // a text: unescaped, as UTF-8 bytes
	spillBase64                  // data or blob: the base64 as sent (escapes checked)
	spillJSON                    // a string of structuredContent: as sent, escapes kept, for splicing back
)

// spill is one string taken out of a message.
type spill struct {
	key  string // its placeholder
	kind spillKind
	raw  []byte
}

// placeholders makes the pool's placeholders.
type placeholders struct {
	secret [16]byte
	seq    atomic.Uint64
}

func newPlaceholders() *placeholders {
	p := &placeholders{}
	_, _ = rand.Read(p.secret[:])
	return p
}

func (p *placeholders) next() string {
	var b [33]byte
	copy(b[:], p.secret[:])
	binary.BigEndian.PutUint64(b[16:], p.seq.Add(1))
	return base64.StdEncoding.EncodeToString(b[:])
}

// frame is one open object or array of the message being scanned.
type frame struct {
	obj       bool
	expectKey bool   // an object's next string is a key
	key       string // an object's last key (at most 32 bytes kept)
}

// maxTracked is how deep the scanner keeps frames; deeper strings are
// not spilled (they stay in the message).
const maxTracked = 64

// frameScanner reads one JSON-RPC message as it arrives, in chunks, and
// writes it to out with its candidate strings longer than spillAt
// replaced by placeholders. It also finds the message's top-level id and
// whether it is a request. It checks structure only as far as it needs
// to; the message that comes out is checked whole (finish).
type frameScanner struct {
	spillAt int // 0: spill nothing
	keys    *placeholders

	out     []byte
	spills  []*spill
	discard bool // keep nothing but the id (a message being dropped)

	stack []frame
	depth int

	inString bool
	bsRun    int // backslashes ending the string so far
	strKind  uint8
	key      []byte
	keyLong  bool
	cand     []byte
	candKind spillKind
	sp       *spill

	started, topObject, hasMethod bool
	idState                       uint8
	id                            []byte
	idBad                         bool
}

// String kinds.
const (
	strValue uint8 = iota
	strKey
	strCand
)

// id capture states.
const (
	idNone uint8 = iota
	idPending
	idScalar
	idString
	idDone
)

func (s *frameScanner) reset() {
	out := s.out[:0]
	if cap(out) > 1<<20 {
		out = nil // do not keep a large message's buffer
	}
	*s = frameScanner{spillAt: s.spillAt, keys: s.keys, out: out, stack: s.stack[:0], key: s.key[:0], id: s.id[:0]}
}

// drop makes the scanner keep nothing more of the message (and drop what
// it spilled), while it still finds the id.
func (s *frameScanner) drop() {
	s.discard = true
	s.out, s.spills, s.cand, s.sp = nil, nil, nil, nil
	if s.inString && s.strKind == strCand {
		s.strKind = strValue
	}
}

// responseID is the raw id of a response message, or nil.
func (s *frameScanner) responseID() []byte {
	if !s.topObject || s.hasMethod || s.idBad || s.idState != idDone || !json.Valid(s.id) {
		return nil
	}
	return s.id
}

func (s *frameScanner) write(p []byte) {
	from := 0 // p[from:i] is still to be written to out
	emit := func(to int) {
		if !s.discard && to > from {
			s.out = append(s.out, p[from:to]...)
		}
		from = to
	}
	for i := 0; i < len(p); {
		if s.inString {
			j := bytes.IndexByte(p[i:], '"')
			if j < 0 {
				run := s.trailingBackslashes(p[i:])
				s.stringBytes(p[i:], &from, len(p))
				s.bsRun = run
				i = len(p)
				continue
			}
			end := i + j
			if s.trailingBackslashes(p[i:end])%2 == 1 {
				// An escaped quote: the string's, and it goes on.
				s.stringBytes(p[i:end+1], &from, end+1)
				s.bsRun = 0
				i = end + 1
				continue
			}
			s.stringBytes(p[i:end], &from, end)
			s.bsRun, s.inString = 0, false
			i = end + 1
			s.endString(&from, i)
			continue
		}
		c := p[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			if s.idState == idScalar {
				s.idState = idDone
			}
		case '"':
			s.startString(i, &from, emit)
			i++
			continue
		case '{', '[':
			if !s.started {
				s.started, s.topObject = true, c == '{'
			}
			if s.idState == idPending {
				s.idState, s.idBad = idDone, true
			}
			s.depth++
			if len(s.stack) < maxTracked {
				s.stack = append(s.stack, frame{obj: c == '{', expectKey: c == '{'})
			}
		case '}', ']':
			if s.idState == idScalar && s.depth == 1 {
				s.idState = idDone
			}
			if s.depth > 0 && s.depth <= len(s.stack) {
				s.stack = s.stack[:s.depth-1]
			}
			s.depth--
		case ',':
			if s.idState == idScalar && s.depth == 1 {
				s.idState = idDone
			}
			if f := s.top(); f != nil && f.obj {
				f.expectKey = true
			}
		case ':':
			if f := s.top(); f != nil && f.obj {
				f.expectKey = false
				if s.depth == 1 && f.key == "id" && s.idState == idNone {
					s.idState = idPending
				}
			}
		default:
			if !s.started {
				s.started = true
			}
			switch s.idState {
			case idPending:
				s.idState = idScalar
				fallthrough
			case idScalar:
				s.keepID(c)
			}
		}
		i++
	}
	emit(len(p))
}

// top is the innermost tracked frame when it is the innermost one.
func (s *frameScanner) top() *frame {
	if s.depth == 0 || s.depth != len(s.stack) {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

func (s *frameScanner) keepID(c byte) {
	if len(s.id) >= maxIDBytes {
		s.idBad = true
		return
	}
	s.id = append(s.id, c)
}

// startString reads the opening quote at p[i].
func (s *frameScanner) startString(i int, from *int, emit func(int)) {
	s.inString, s.bsRun, s.strKind = true, 0, strValue
	f := s.top()
	switch {
	case f != nil && f.obj && f.expectKey:
		s.strKind, s.key, s.keyLong = strKey, s.key[:0], false
		return
	case s.idState == idPending && s.depth == 1:
		s.idState = idString
		s.keepID('"')
		return
	}
	if s.discard || s.spillAt <= 0 {
		return
	}
	if kind, ok := s.candidate(); ok {
		emit(i) // up to the quote, which waits for the string's end
		*from = i + 1
		s.strKind, s.candKind, s.cand, s.sp = strCand, kind, s.cand[:0], nil
	}
}

// candidate reports whether a string value starting now is one to spill,
// and how it would be kept.
func (s *frameScanner) candidate() (spillKind, bool) {
	st := s.stack
	if s.depth != len(st) || len(st) < 2 || !st[0].obj || st[0].key != "result" || !st[1].obj {
		return 0, false
	}
	if st[1].key == "structuredContent" {
		return spillJSON, true
	}
	if st[1].key != "content" || len(st) < 4 || st[2].obj || !st[3].obj {
		return 0, false
	}
	switch {
	case len(st) == 4 && st[3].key == "text":
		return spillText, true
	case len(st) == 4 && st[3].key == "data":
		return spillBase64, true
	case len(st) == 5 && st[3].key == "resource" && st[4].obj && st[4].key == "text":
		return spillText, true
	case len(st) == 5 && st[3].key == "resource" && st[4].obj && st[4].key == "blob":
		return spillBase64, true
	}
	return 0, false
}

// stringBytes reads b, bytes inside the string ending at p[end] (b is
// p[end-len(b):end]).
func (s *frameScanner) stringBytes(b []byte, from *int, end int) {
	switch s.strKind {
	case strKey:
		if len(s.key)+len(b) <= 32 {
			s.key = append(s.key, b...)
		} else {
			s.keyLong = true
		}
	case strCand:
		*from = end
		if s.sp != nil {
			s.sp.raw = append(s.sp.raw, b...)
			return
		}
		s.cand = append(s.cand, b...)
		if len(s.cand) > s.spillAt {
			s.sp = &spill{key: s.keys.next(), kind: s.candKind, raw: s.cand}
			s.cand = nil
		}
	default:
		if s.idState == idString {
			for _, c := range b {
				s.keepID(c)
			}
		}
	}
}

// endString reads the closing quote (p[i-1]).
func (s *frameScanner) endString(from *int, i int) {
	switch s.strKind {
	case strKey:
		if f := s.top(); f != nil {
			f.key = ""
			if !s.keyLong {
				f.key = string(s.key)
			}
			if s.depth == 1 && f.key == "method" {
				s.hasMethod = true
			}
		}
	case strCand:
		*from = i
		if s.discard {
			break
		}
		s.out = append(s.out, '"')
		if s.sp != nil {
			s.out = append(s.out, s.sp.key...)
			s.spills = append(s.spills, s.sp)
		} else {
			s.out = append(s.out, s.cand...)
		}
		s.out = append(s.out, '"')
		s.cand, s.sp = nil, nil
	default:
		if s.idState == idString {
			s.keepID('"')
			s.idState = idDone
		}
	}
	s.strKind = strValue
}

// trailingBackslashes is how many backslashes end the string so far,
// seg being its latest bytes: an odd number escapes a quote after them.
func (s *frameScanner) trailingBackslashes(seg []byte) int {
	n := 0
	for n < len(seg) && seg[len(seg)-1-n] == '\\' {
		n++
	}
	if n == len(seg) {
		return n + s.bsRun
	}
	return n
}

// finish checks the spilled strings of a whole message (and unescapes
// the texts in place); false: the message is not valid JSON.
func (s *frameScanner) finish() bool {
	for _, sp := range s.spills {
		if sp.kind == spillText {
			n, ok := unescapeInPlace(sp.raw)
			if !ok {
				return false
			}
			sp.raw = sp.raw[:n]
		} else if !validEscapes(sp.raw) {
			return false
		}
	}
	return true
}

// validEscapes reports whether b is the inside of a valid JSON string.
func validEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x20 {
			return false
		}
		if c != '\\' {
			continue
		}
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 >= len(b) || !isHex4(b[i+2:i+6]) {
				return false
			}
			i += 5
		default:
			return false
		}
	}
	return true
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// unescapeInPlace decodes b, the inside of a JSON string, into its UTF-8
// bytes at b's start, as encoding/json does (a lone surrogate becomes
// U+FFFD), and returns their length; false: b is not a valid JSON string.
// Raw bytes that are not UTF-8 would decode longer than they are (U+FFFD
// each), so b with any is decoded by encoding/json into a new buffer.
func unescapeInPlace(b []byte) (int, bool) {
	if !validEscapes(b) {
		return 0, false
	}
	if !utf8.Valid(b) {
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, b...), '"'), &s) != nil {
			return 0, false
		}
		if len(s) > len(b) {
			return 0, false // cannot be kept in place; not a text the gateway offloads
		}
		return copy(b, s), true
	}
	r, w := 0, 0
	for r < len(b) {
		k := bytes.IndexByte(b[r:], '\\')
		if k < 0 {
			k = len(b) - r
		}
		if w != r {
			copy(b[w:], b[r:r+k])
		}
		w, r = w+k, r+k
		if r >= len(b) {
			break
		}
		switch c := b[r+1]; c {
		case 'u':
			ru := hex4(b[r+2:])
			r += 6
			if utf16.IsSurrogate(ru) {
				ru2 := utf8.RuneError
				if r+5 < len(b) && b[r] == '\\' && b[r+1] == 'u' {
					if dec := utf16.DecodeRune(ru, hex4(b[r+2:])); dec != utf8.RuneError {
						ru2 = dec
						r += 6
					}
				}
				ru = ru2
			}
			w += utf8.EncodeRune(b[w:], ru)
		default:
			b[w] = unescapeByte(c)
			w, r = w+1, r+2
		}
	}
	return w, true
}

func unescapeByte(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\', '/'
}
