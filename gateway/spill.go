package gateway

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/resourced/resourced/internal/jsonwire"
)

// Spilling (docs/gateway.md, "What the gateway holds"): the large strings
// of a tool result — a content item's text, data or blob, an embedded
// resource's text or blob, and any string inside structuredContent — and
// of a resources/read answer (a content's text or blob)
// are taken out of the upstream's message as it is read, kept once as
// bytes, and replaced in the message go-sdk decodes by a placeholder. So
// go-sdk decodes a small message, and the front saves the large parts
// from those bytes (resolve.go) without a decode of the whole result into
// Go values, a copy per stage, and a peak many times the answer's size.
// Only a call made with a ticket (budget.go) is spilled: the ticket is
// where its spilled strings wait for the front.
//
// A placeholder is 44 characters of standard base64 (33 random bytes),
// valid as a text and as base64 data, and unguessable.

// placeholderLen is the length of a placeholder.
const placeholderLen = 44

// defaultSpillAt is the string length (as sent, escapes included) above
// which a candidate string is spilled; it is above every offload
// threshold's default, so a spilled part is nearly always saved.
const defaultSpillAt = 64 << 10

// spillKind is what a spilled string is: how it is read (spill.open).
type spillKind uint8

const (
	spillText   spillKind = iota // a text: read decoded
	spillBase64                  // data or blob: read decoded from its base64
	spillJSON                    // a string of structuredContent: read as sent, for splicing back
)

// spill is one string taken out of a message: its bytes as sent, JSON
// escapes kept. Its first bytes are kept in memory, in chunks (a large
// string is never copied to grow it); past spillFiles.at the rest goes
// to an unlinked temporary file, so that the gateway's memory holds a
// bounded head of each string however large the answer (issue 24: the
// budget bounds the bytes, this their cost in memory). A file that cannot
// be written keeps the rest in memory (tail): the budget still bounds it.
type spill struct {
	key    string // its placeholder
	kind   spillKind
	chunks [][]byte // the head, in memory
	n      int      // bytes in all
	files  *spillFiles

	file  *os.File // the bytes after the head (nil: none)
	fileN int64    // written to file
	wbuf  []byte   // written next to file
	tail  [][]byte // after the file, once writing it failed
	bad   bool     // the file failed: the rest stays in memory

	measured bool // measure ran: the fields below hold
	size     int64
	sum      [32]byte
	err      error
}

// spillFiles is where spills go past their head: a directory (the
// gateway's own, under the data directory; "" is os.TempDir()) and the
// head's size. A nil *spillFiles keeps spills in memory.
type spillFiles struct {
	dir string
	at  int
}

// spillFileAt is the head kept in memory of a spill that goes to a file.
const spillFileAt = 1 << 20

// spillWriteBuf is what a spill buffers before writing to its file (a
// string with many escapes arrives in many short pieces).
const spillWriteBuf = 64 << 10

// write appends b to sp.
func (sp *spill) write(b []byte) {
	sp.n += len(b)
	if sp.file == nil && !sp.bad && sp.files != nil && sp.n > sp.files.at {
		f, err := os.CreateTemp(sp.files.dir, ".resourced-spill-*")
		if err != nil {
			sp.bad = true
		} else {
			if os.Remove(f.Name()) != nil {
				// Kept only until Close, on systems that cannot
				// unlink an open file.
				sp.bad = true
				f.Close()
				_ = os.Remove(f.Name())
			} else {
				sp.file, sp.wbuf = f, make([]byte, 0, spillWriteBuf)
			}
		}
	}
	switch {
	case sp.file != nil && !sp.bad:
		for len(b) > 0 {
			k := copy(sp.wbuf[len(sp.wbuf):cap(sp.wbuf)], b)
			sp.wbuf, b = sp.wbuf[:len(sp.wbuf)+k], b[k:]
			if len(sp.wbuf) == cap(sp.wbuf) {
				sp.flush()
				if sp.bad {
					appendChunks(&sp.tail, b)
					return
				}
			}
		}
	case sp.file != nil:
		appendChunks(&sp.tail, b)
	default:
		appendChunks(&sp.chunks, b)
	}
}

// flush writes the buffered bytes to the file; what a failed write left
// goes to the tail, and the file takes no more.
func (sp *spill) flush() {
	if sp.file == nil || sp.bad || len(sp.wbuf) == 0 {
		return
	}
	k, err := sp.file.Write(sp.wbuf)
	sp.fileN += int64(k)
	if err != nil {
		sp.bad = true
		appendChunks(&sp.tail, sp.wbuf[k:])
	}
	sp.wbuf = sp.wbuf[:0]
}

// done ends the writing: the string is whole.
func (sp *spill) done() {
	sp.flush()
	sp.wbuf = nil
}

// appendChunks appends b to chunks that double up to 1 MiB.
func appendChunks(chunks *[][]byte, b []byte) {
	for len(b) > 0 {
		cs := *chunks
		if len(cs) == 0 || len(cs[len(cs)-1]) == cap(cs[len(cs)-1]) {
			held := 0
			for _, c := range cs {
				held += len(c)
			}
			*chunks = append(cs, make([]byte, 0, min(1<<20, max(64<<10, held))))
			cs = *chunks
		}
		last := &cs[len(cs)-1]
		k := min(len(b), cap(*last)-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

// raw reads sp's bytes as sent.
func (sp *spill) raw() io.Reader {
	if sp.file == nil {
		return &chunkReader{chunks: sp.chunks}
	}
	return io.MultiReader(&chunkReader{chunks: sp.chunks}, io.NewSectionReader(sp.file, 0, sp.fileN), &chunkReader{chunks: sp.tail})
}

// chunkReader reads chunks in order.
type chunkReader struct {
	chunks [][]byte
	off    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && r.off == len(r.chunks[0]) {
		r.chunks, r.off = r.chunks[1:], 0
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0][r.off:])
	r.off += n
	return n, nil
}

// WriteTo writes the chunks without an intermediate buffer.
func (r *chunkReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.chunks) > 0 {
		n, err := w.Write(r.chunks[0][r.off:])
		total += int64(n)
		if err != nil {
			return total, err
		}
		r.chunks, r.off = r.chunks[1:], 0
	}
	return total, nil
}

// open reads what sp stands for: a text decoded, data decoded from its
// base64, a string of structuredContent as sent.
func (sp *spill) open() io.Reader {
	switch sp.kind {
	case spillText:
		return newUnescaper(sp.raw())
	case spillBase64:
		return base64.NewDecoder(base64.StdEncoding, newUnescaper(sp.raw()))
	}
	return sp.raw()
}

// measure reads what sp stands for once: its size and sha256, or why it
// does not decode (a bad escape, a control character, bad base64). A
// string of structuredContent is checked, and its size is as sent.
func (sp *spill) measure() error {
	if sp.measured {
		return sp.err
	}
	sp.measured = true
	h := sha256.New()
	var r io.Reader = sp.open()
	if sp.kind == spillJSON {
		if _, err := io.Copy(io.Discard, newUnescaper(sp.raw())); err != nil {
			sp.err = err
			return err
		}
	}
	n, err := io.Copy(h, r)
	if err != nil {
		sp.err = fmt.Errorf("the upstream's answer holds a string that does not decode: %w", err)
		return sp.err
	}
	sp.size = n
	h.Sum(sp.sum[:0])
	return nil
}

// drop lets sp's bytes go (its chunks, its file) once they are saved or
// no longer wanted; sp keeps its size and sum, and reads nothing after.
// An *os.File nobody closes is closed when it is collected: drop is the
// prompt way, not the only one.
func (sp *spill) drop() {
	sp.chunks, sp.tail, sp.wbuf = nil, nil, nil
	if sp.file != nil {
		sp.file.Close()
		sp.file, sp.fileN = nil, 0
	}
}

// dropAll drops each of spills.
func dropAll(spills []*spill) {
	for _, sp := range spills {
		sp.drop()
	}
}

// bytes is what sp stands for, whole (for a result returned inline).
func (sp *spill) bytes() ([]byte, error) {
	if err := sp.measure(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, sp.size)
	buf := bytes.NewBuffer(b)
	if _, err := io.Copy(buf, sp.open()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// placeholders makes the pool's placeholders: each 33 bytes from
// crypto/rand, so that one seen (never by an upstream, which is not sent
// any; a bug's leak to a caller) tells nothing of the others.
type placeholders struct{}

func newPlaceholders() *placeholders { return &placeholders{} }

func (*placeholders) next() string {
	var b [33]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
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
	files   *spillFiles // where spills go past their head (nil: memory)

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
	*s = frameScanner{spillAt: s.spillAt, keys: s.keys, files: s.files, out: out, stack: s.stack[:0], key: s.key[:0], id: s.id[:0]}
}

// drop makes the scanner keep nothing more of the message (and drop what
// it spilled), while it still finds the id.
func (s *frameScanner) drop() {
	s.discard = true
	dropAll(s.spills)
	if s.sp != nil {
		s.sp.drop()
	}
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
				// The last "id" and "jsonrpc" count, as in go-sdk's decode.
				if s.depth == 1 && f.key == "id" {
					s.idState, s.id, s.idBad = idPending, s.id[:0], false
				}
			}
		default:
			s.started = true
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
	s.started = true
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
	if st[1].key == "contents" && len(st) == 4 && !st[2].obj && st[3].obj { // resources/read
		switch st[3].key {
		case "text":
			return spillText, true
		case "blob":
			return spillBase64, true
		}
		return 0, false
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
			s.sp.write(b)
			return
		}
		s.cand = append(s.cand, b...)
		if len(s.cand) > s.spillAt {
			s.sp = &spill{key: s.keys.next(), kind: s.candKind, chunks: [][]byte{s.cand}, n: len(s.cand), files: s.files}
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
			s.sp.done()
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

// errBadString is a spilled string that is not the inside of a JSON
// string.
var errBadString = errors.New("not a valid JSON string")

// unescaper decodes the inside of a JSON string, read from r, into its
// UTF-8 bytes as encoding/json does: escapes decoded, a lone surrogate
// and each byte that is not UTF-8 turned U+FFFD; a bad escape or a
// control character is errBadString.
type unescaper struct {
	r    *bufio.Reader
	err  error
	left []byte // of a rune decoded for a Read shorter than utf8.UTFMax
}

func newUnescaper(r io.Reader) *unescaper { return &unescaper{r: bufio.NewReaderSize(r, 64<<10)} }

func (u *unescaper) Read(p []byte) (int, error) {
	if len(u.left) > 0 {
		n := copy(p, u.left)
		u.left = u.left[n:]
		return n, nil
	}
	if len(p) < utf8.UTFMax && len(p) > 0 {
		var tmp [utf8.UTFMax]byte
		n, err := u.Read(tmp[:])
		k := copy(p, tmp[:n])
		u.left = append(u.left[:0], tmp[k:n]...)
		return k, err
	}
	if u.err != nil {
		return 0, u.err
	}
	n := 0
	for n+utf8.UTFMax <= len(p) {
		if u.r.Buffered() == 0 {
			if _, err := u.r.Peek(1); err != nil {
				u.err = err
				break
			}
		}
		buf, _ := u.r.Peek(u.r.Buffered())
		k := 0
		for k < len(buf) && n+k < len(p) {
			if c := buf[k]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			k++
		}
		if k > 0 {
			copy(p[n:], buf[:k])
			n += k
			_, _ = u.r.Discard(k)
			continue
		}
		switch c := buf[0]; {
		case c < 0x20:
			u.err = errBadString
		case c == '\\':
			e, _ := u.r.Peek(12) // the longest escape: a surrogate pair
			r, size := jsonwire.Unescape(e)
			if size == 0 {
				u.err = errBadString
				break
			}
			n += utf8.EncodeRune(p[n:], r)
			_, _ = u.r.Discard(size)
		default:
			e, _ := u.r.Peek(utf8.UTFMax)
			r, size := utf8.DecodeRune(e)
			n += utf8.EncodeRune(p[n:], r) // RuneError for a byte that is not UTF-8
			_, _ = u.r.Discard(size)
		}
		if u.err != nil {
			break
		}
	}
	if n > 0 {
		return n, nil
	}
	if u.err == nil {
		return 0, nil
	}
	return 0, u.err
}
