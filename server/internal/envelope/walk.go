package envelope

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
)

// The walk: Parse reads a body once and learns in that one pass everything
// the stages before go-sdk ask of it: whether it is one JSON value (as
// json.Valid decides, nesting limit included), the first member named twice
// in any object, each message's envelope, the kinds of the params members
// Check looks at, and what the fast paths take (Fast). Its errors come out
// in the order the separate checks it replaced gave them (not JSON, then a
// duplicate, then the first message that is not JSON-RPC), whatever their
// places in the body; FuzzParse holds it to those checks, kept in
// oracle_test.go. Measurements: docs/decisions.md, "One walk over a
// request".

// maxDepth is encoding/json's nesting limit (its scanner's maxNestingDepth):
// a deeper body is not one JSON value to it.
const maxDepth = 10000

// maxFastDepth is the deepest nesting of arrays and objects the fast paths
// take; Parse refuses bodies nested deeper than sdkMaxDepth, encoding/json
// only beyond maxDepth.
const maxFastDepth = 64

// sdkMaxDepth is go-sdk v1.8.0's nesting limit (its internal/json
// defaultMaxDepth): it refuses a body nested deeper, before dispatch, with
// a text/plain 400 ("malformed payload: json: exceeded maximum nesting
// depth of 1000"). Parse refuses it first, with ErrTooDeep, so that every
// depth beyond the limit gets a JSON-RPC -32700, as a body beyond
// encoding/json's maxDepth does (not one JSON value to it).
const sdkMaxDepth = 1000

// ErrTooDeep is a body, one JSON value and acceptable JSON-RPC otherwise,
// that nests arrays and objects deeper than sdkMaxDepth.
var ErrTooDeep = errors.New("the body nests arrays and objects deeper than " + strconv.Itoa(sdkMaxDepth) + " levels")

// Fast is what the fast paths (server/readpath.go, server/callpath.go)
// read of a message, set only when the body is that message alone, an
// object nested at most maxFastDepth deep, whose members are jsonrpc
// (exactly "2.0"), id, method and params (an object), each name spelled
// exactly. Anything else is go-sdk's, which is never wrong.
type Fast struct {
	// Read: params hold a uri (a string without escapes) and at most a
	// _meta object. Call: params hold a name (a non-empty string without
	// escapes, equal to Tool), arguments (an object) and at most a _meta
	// object. Either way every number of the _meta surely decodes into a
	// float64 (go-sdk decodes _meta into a map of any).
	Read, Call bool
	URI, Name  string // params.uri, params.name, as sent
	Args       []byte // params.arguments, raw
	// ArgsFit: every number of Args surely decodes into a float64 (go-sdk
	// decodes a call's arguments into an any on 2026-07-28: numberFits).
	ArgsFit bool
	// The members of params._meta go-sdk checks, raw; nil when absent.
	ProtocolVersion, ClientInfo, ClientCapabilities, LogLevel []byte
	// TraceParent and TraceState are params._meta's W3C trace context,
	// raw; nil when absent (internal/telemetry reads them).
	TraceParent, TraceState []byte
}

// role is what an open object or array is to the envelope.
type role uint8

const (
	roleOther   role = iota
	roleBatch        // the body, an array of messages
	roleMessage      // a message
	roleParams       // a message's params
	roleMeta         // params._meta
	roleInputs       // params.inputResponses (any case, as Check compares)
)

// zone says in which part of params a number is, for numberFits.
type zone uint8

const (
	zoneNone zone = iota
	zoneMeta
	zoneArgs
)

// frame is one open object or array of the walk.
type frame struct {
	object bool
	role   role
	zone   zone
	start  int    // where the current member's value or element starts
	name   string // objects: the member being read
	index  int    // arrays: the element being read
	n      int    // member names seen, in few while n <= len(few)
	few    [8]string
	set    map[string]struct{}
}

// add records a member name, reporting false when the object has it.
// Names are compared decoded, so "a" and "\u0061" are the same name.
func (f *frame) add(name string) bool {
	if f.set != nil {
		if _, dup := f.set[name]; dup {
			return false
		}
		f.set[name] = struct{}{}
		return true
	}
	for _, n := range f.few[:f.n] {
		if n == name {
			return false
		}
	}
	if f.n < len(f.few) {
		f.few[f.n] = name
		f.n++
		return true
	}
	f.set = make(map[string]struct{}, 4*len(f.few))
	for _, n := range f.few {
		f.set[n] = struct{}{}
	}
	f.set[name] = struct{}{}
	return true
}

// Members of params the fast paths know, by their exact names.
const (
	paramURI = 1 << iota
	paramName
	paramArgs
	paramMeta
	paramOther
)

// message is the state of the message being walked.
type message struct {
	Message
	versionOK, hasResult bool
	plainTop             bool // no member but jsonrpc, id, method, params; jsonrpc exactly "2.0"
	params               uint8
	uriOK, nameOK        bool
	argsObject, metaObj  bool
	paramsObject         bool
	metaFits             bool
	inputsBad            bool
	// What Check answers for params that are an object, by method: the
	// kinds of tools/call's and resources/read's members (inputResponses
	// included), and the inputResponses of the others that take them.
	callErr, readErr, inputErr error
}

// walker is one walk over a body.
type walker struct {
	data    []byte
	nested  int      // objects and arrays open
	frames  [8]frame // the first of them: a request nests a few levels
	deep    []frame  // the others
	depth   int      // the deepest nesting seen
	dup     string
	dupPath string
	hasDup  bool
	msgErr  error // the first message that is not JSON-RPC
	m       message
	str     strKind // of the last string value scanned
	msgs    []Message
}

var (
	errNotObject = &Error{"a JSON-RPC message is an object (a batch, an array of them)"}
	errMethod    = &Error{"the method must be a string"}
	errVersion   = &Error{`the jsonrpc member must be "2.0"`}
	errNoMethod  = &Error{"a message with an id needs a method (a request) or a result or error (a response)"}

	errInputResponses = &ParamsError{"Invalid params: inputResponses must be an object whose values are input responses (objects)"}
	errNameKind       = &ParamsError{"Invalid params: name must be a string"}
	errURIKind        = &ParamsError{"Invalid params: uri must be a string"}
	errMetaKind       = &ParamsError{"Invalid params: _meta must be an object"}
	// go-sdk decodes _meta into a map of any and, failing, answers an
	// error that quotes the whole params escaped twice (four times the
	// request's size): refused here, in a few words.
	errMetaRange = &ParamsError{"Invalid params: a number in _meta is beyond float64's range"}
)

// Parse checks body and returns its messages. jsonwire.ErrSyntax means the
// body is not one JSON value; *Error that it is not valid JSON-RPC (a
// member named twice included); ErrTooDeep, found only when nothing else
// is, that it nests deeper than go-sdk takes.
func Parse(body []byte) ([]Message, error) {
	w := walker{data: body}
	if !w.walk() {
		// The walk stops at a string that is not UTF-8 (scanString) or at
		// the first syntax error, whichever comes first: either way the
		// body is not JSON. Its first byte that is not UTF-8, wherever it
		// is, is the better reason to give.
		if at := notUTF8At(body); at >= 0 {
			return nil, &NotUTF8Error{Offset: at, Byte: body[at]}
		}
		return nil, jsonwire.ErrSyntax
	}
	if w.hasDup {
		return nil, &Error{duplicateReason(w.dupPath, w.dup)}
	}
	if w.msgErr != nil {
		return nil, w.msgErr
	}
	if w.depth > sdkMaxDepth {
		return nil, ErrTooDeep
	}
	return w.msgs, nil
}

func duplicateReason(path, name string) string {
	if path == "" {
		return "member " + strconv.Quote(name) + " appears twice"
	}
	return "member " + strconv.Quote(name) + " appears twice in " + path
}

func (w *walker) fail(err error) {
	if w.msgErr == nil {
		w.msgErr = err
	}
}

// walk reads w.data, reporting false when it is not one JSON value.
// Nesting is a stack, not recursion, so deep documents cannot exhaust the
// goroutine's stack.
func (w *walker) walk() bool {
	data := w.data
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if !w.open(c == '{') {
				return false
			}
			j := skipSpace(data, i+1)
			if j < len(data) && (data[j] == '}' && c == '{' || data[j] == ']' && c == '[') {
				i = j + 1
				w.close()
				break
			}
			if c == '{' {
				if i = w.key(j); i < 0 {
					return false
				}
			} else {
				w.top().start = j
				i = j
			}
			continue
		case c == '"':
			if i, w.str = scanString(data, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literal(data, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literal(data, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literal(data, i, "null"); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			start := i
			exp := false
			if i, exp = scanNumber(data, i); i < 0 {
				return false
			}
			if z := w.zone(); z != zoneNone && !numberFits(data[start:i], exp) {
				if z == zoneMeta {
					w.m.metaFits = false
					if beyondFloat64(data[start:i]) {
						setFirst(&w.m.callErr, errMetaRange)
						setFirst(&w.m.readErr, errMetaRange)
					}
				} else {
					w.m.Fast.ArgsFit = false
				}
			}
		default:
			return false
		}
		// A value ended at i: go on after it, closing what ends there.
		for {
			if w.nested == 0 {
				if skipSpace(data, i) != len(data) {
					return false
				}
				if c := data[skipSpace(data, 0)]; c != '{' && c != '[' {
					w.fail(errNotObject) // a scalar body
				}
				return true
			}
			top := w.top()
			w.valueDone(top, i)
			i = skipSpace(data, i)
			if i >= len(data) {
				return false
			}
			c := data[i]
			if c == ',' {
				if top.object {
					if i = w.key(skipSpace(data, i+1)); i < 0 {
						return false
					}
				} else {
					top.index++
					i = skipSpace(data, i+1)
					top.start = i
				}
				break
			}
			if top.object && c != '}' || !top.object && c != ']' {
				return false
			}
			i++
			w.close()
		}
	}
}

// frame is the i-th open object or array, the body's at 0.
func (w *walker) frame(i int) *frame {
	if i < len(w.frames) {
		return &w.frames[i]
	}
	return &w.deep[i-len(w.frames)]
}

// top is the innermost open object or array.
func (w *walker) top() *frame { return w.frame(w.nested - 1) }

// zone is where in params the walk is.
func (w *walker) zone() zone {
	if w.nested == 0 {
		return zoneNone
	}
	return w.top().zone
}

// open pushes an object or array, giving it its role.
func (w *walker) open(object bool) bool {
	if w.nested >= maxDepth {
		return false
	}
	f := frame{object: object}
	if w.nested == 0 {
		if object {
			f.role = roleMessage
		} else {
			f.role = roleBatch
		}
	} else {
		parent := w.top()
		f.zone = parent.zone
		switch parent.role {
		case roleBatch:
			if object {
				f.role = roleMessage
			}
		case roleMessage:
			if object && parent.name == "params" {
				f.role = roleParams
			}
		case roleParams:
			switch {
			case parent.name == "_meta":
				f.zone = zoneMeta
				if object {
					f.role = roleMeta
				}
			case parent.name == "arguments":
				f.zone = zoneArgs
			}
			if object && strings.EqualFold(parent.name, "inputResponses") {
				f.role = roleInputs
			}
		}
	}
	if f.role == roleMessage {
		w.m = message{plainTop: true, metaFits: true}
		w.m.Fast.ArgsFit = true
	}
	if w.nested < len(w.frames) {
		w.frames[w.nested] = f
	} else {
		w.deep = append(w.deep[:w.nested-len(w.frames)], f)
	}
	w.nested++
	w.depth = max(w.depth, w.nested)
	return true
}

// key reads the member name at i of the innermost object, and the colon
// after it, and returns where its value starts (or -1).
func (w *walker) key(i int) int {
	data := w.data
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	end, kind := scanString(data, i)
	if end < 0 {
		return -1
	}
	top := w.top()
	name := stringOf(data[i:end], kind)
	if !top.add(name) && !w.hasDup {
		w.hasDup, w.dup, w.dupPath = true, name, w.path()
	}
	top.name = name
	i = skipSpace(data, end)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	i = skipSpace(data, i+1)
	top.start = i
	return i
}

// path names the innermost open object, e.g. params.arguments or hits[2].
func (w *walker) path() string {
	var b strings.Builder
	for i := range w.nested - 1 {
		f := w.frame(i)
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.name)
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// valueDone takes the value of top's current member or element, which
// ended at end.
func (w *walker) valueDone(top *frame, end int) {
	v := w.data[top.start:end]
	m := &w.m
	switch top.role {
	case roleBatch:
		if v[0] != '{' {
			w.fail(errNotObject)
		}
	case roleMessage:
		w.messageMember(top.name, v)
	case roleParams:
		w.paramsMember(top.name, v)
	case roleMeta:
		switch top.name {
		case mcp.MetaKeyProtocolVersion:
			m.Fast.ProtocolVersion = v
		case mcp.MetaKeyClientInfo:
			m.Fast.ClientInfo = v
		case mcp.MetaKeyClientCapabilities:
			m.Fast.ClientCapabilities = v
		//lint:ignore SA1019 still served to 2025-11-25 clients during the deprecation window (SEP-2577)
		case mcp.MetaKeyLogLevel:
			m.Fast.LogLevel = v
		case "traceparent":
			m.Fast.TraceParent = v
		case "tracestate":
			m.Fast.TraceState = v
		}
	case roleInputs:
		if v[0] != '{' {
			m.inputsBad = true
		}
	}
}

// messageMember reads a member of a message as go-sdk will: names exactly
// as sent (encoding/json would match "METHOD" too).
func (w *walker) messageMember(name string, v []byte) {
	m := &w.m
	switch name {
	case "jsonrpc":
		m.versionOK = string(v) == `"2.0"` || v[0] == '"' && decoded(v) == "2.0"
		m.plainTop = m.plainTop && string(v) == `"2.0"`
	case "id":
		if string(v) == "null" {
			return // go-sdk answers a null id itself
		}
		m.HasID, m.ID = true, v
		if v[0] == '"' {
			if w.str&escaped != 0 {
				if esc := loneSurrogate(v); esc != "" {
					w.fail(&Error{"the id must be a Unicode string: its escape " + esc + " is half of a UTF-16 surrogate pair"})
				}
			}
			return
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			w.fail(&Error{"the id must be a string or an integer between -(2^53-1) and 2^53-1, got " + service.Truncate(string(v), 40)})
		}
	case "method":
		m.HasMethod = true
		var ok bool
		if m.Method, ok = w.value(v); !ok {
			w.fail(errMethod)
		}
	case "result", "error":
		m.hasResult = true
		m.plainTop = false
	case "params":
		m.Params = v
		m.paramsObject = v[0] == '{'
	default:
		m.plainTop = false
	}
}

// paramsMember reads a member of a message's params: the tool's name, the
// kinds Check asks about (names compared as go-sdk's decoder compares
// them, ignoring case), and what the fast paths take (exact names).
func (w *walker) paramsMember(name string, v []byte) {
	m := &w.m
	switch name {
	case "name":
		m.Tool, _ = w.value(v)
		m.params |= paramName
		m.nameOK = len(v) >= 3 && v[0] == '"' && w.str&escaped == 0
		if m.nameOK {
			m.Fast.Name = unsafeString(v[1 : len(v)-1])
		}
	case "uri":
		m.params |= paramURI
		m.uriOK = v[0] == '"' && w.str&escaped == 0
		if m.uriOK {
			m.Fast.URI = unsafeString(v[1 : len(v)-1])
		}
	case "arguments":
		m.params |= paramArgs
		m.argsObject = v[0] == '{'
		m.Fast.Args = v
	case "_meta":
		m.params |= paramMeta
		m.metaObj = v[0] == '{'
	default:
		m.params |= paramOther
	}
	null := string(v) == "null"
	switch {
	case strings.EqualFold(name, "inputResponses"):
		if v[0] != '{' || m.inputsBad {
			m.inputsBad = false // the next such member is judged on its own
			setFirst(&m.callErr, errInputResponses)
			setFirst(&m.readErr, errInputResponses)
			setFirst(&m.inputErr, errInputResponses)
		}
	case strings.EqualFold(name, "name"):
		if v[0] != '"' && !null {
			setFirst(&m.callErr, errNameKind)
		}
	case strings.EqualFold(name, "uri"):
		if v[0] != '"' && !null {
			setFirst(&m.readErr, errURIKind)
		}
	case strings.EqualFold(name, "_meta"):
		if v[0] != '{' && !null {
			setFirst(&m.callErr, errMetaKind)
			setFirst(&m.readErr, errMetaKind)
		}
	}
}

func setFirst(slot *error, err error) {
	if *slot == nil {
		*slot = err
	}
}

// close pops the innermost object or array.
func (w *walker) close() {
	f := w.top()
	if f.role == roleMessage {
		w.endMessage(w.nested == 1)
	}
	w.nested--
}

// endMessage checks the message just walked as a whole and keeps it;
// alone says whether it is the whole body.
func (w *walker) endMessage(alone bool) {
	m := &w.m
	if !m.versionOK {
		w.fail(errVersion)
	} else if m.HasID && !m.HasMethod && !m.hasResult {
		w.fail(errNoMethod)
	}
	if alone && m.plainTop && m.paramsObject && w.depth <= maxFastDepth {
		meta := m.params&paramMeta == 0 || m.metaObj && m.metaFits
		m.Fast.Read = meta && m.uriOK && m.params&^(paramURI|paramMeta) == 0
		m.Fast.Call = meta && m.nameOK && m.argsObject && m.params&^(paramName|paramArgs|paramMeta) == 0 &&
			m.Fast.Name == m.Tool
	}
	if !m.Fast.Read {
		m.Fast.URI = ""
	}
	if !m.Fast.Read && !m.Fast.Call {
		m.Fast = Fast{}
	}
	m.inBatch = !alone
	switch m.Method {
	case "tools/call":
		m.paramsErr = m.callErr
	case "resources/read":
		m.paramsErr = m.readErr
	default:
		m.paramsErr = m.inputErr
	}
	w.msgs = append(w.msgs, m.Message)
}

func decoded(v []byte) string {
	s, _ := jsonwire.String(v)
	return s
}

// stringOf is the JSON string raw, of that kind, as a Go string: shared
// with the body when it is ASCII without escapes, decoded otherwise.
func stringOf(raw []byte, kind strKind) string {
	if kind == 0 {
		return unsafeString(raw[1 : len(raw)-1])
	}
	s, _ := jsonwire.View(raw)
	return s
}

// value is stringOf the value that just ended, and false when it is not
// a string.
func (w *walker) value(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	return stringOf(v, w.str), true
}

// unsafeString shares b's memory, as jsonwire.View does: the body is read
// once and never written.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// strKind says what a JSON string holds beyond ASCII characters.
type strKind uint8

const (
	escaped  strKind = 1 << iota // a backslash escape
	nonASCII                     // a byte from 0x80 up
)

// scanString returns the end of the JSON string starting at data[i], or -1
// when it is not one (unterminated, a control character, a bad escape,
// bytes that are not UTF-8), and its kind. Eight bytes at a time where
// none of them ends the string or needs a look.
func scanString(data []byte, i int) (int, strKind) {
	var kind strKind
	start := i
	for i++; ; {
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			if hasByte(x, '"') || hasByte(x, '\\') || (x-lo*0x20)&^x&hi != 0 {
				break // a quote, a backslash or a byte below 0x20
			}
			if x&hi != 0 {
				kind |= nonASCII
			}
			i += 8
		}
		if i >= len(data) {
			return -1, 0
		}
		switch c := data[i]; {
		case c == '"':
			if kind&nonASCII != 0 && !utf8.Valid(data[start+1:i]) {
				return -1, 0
			}
			return i + 1, kind
		case c < 0x20:
			return -1, 0
		case c == '\\':
			kind |= escaped
			i++
			if i >= len(data) {
				return -1, 0
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return -1, 0
				}
				i += 4
			default:
				return -1, 0
			}
		case c >= 0x80:
			kind |= nonASCII
		}
		i++
	}
}

// notUTF8At is the offset of the first byte of data that is not part of a
// UTF-8 character, or -1.
func notUTF8At(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate returns the first \uD800-\uDFFF escape of the JSON string
// raw that is not half of a pair (a high one followed by a low one), as
// sent, or "".
func loneSurrogate(raw []byte) string {
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue // a one-letter escape, \\ included
		}
		r := hexValue(raw[i+1 : i+5])
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return string(raw[i-1 : i+5])
		case r >= 0xD800 && r <= 0xDBFF:
			if i+10 >= len(raw) || raw[i+5] != '\\' || raw[i+6] != 'u' {
				return string(raw[i-1 : i+5])
			}
			if low := hexValue(raw[i+7 : i+11]); low < 0xDC00 || low > 0xDFFF {
				return string(raw[i-1 : i+5])
			}
			i += 6
		}
		i += 4
	}
	return ""
}

// hexValue is the value of four hex digits (scanString checked them).
func hexValue(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// hasByte reports whether one of the eight bytes of x is b.
func hasByte(x uint64, b byte) bool {
	y := x ^ lo*uint64(b)
	return (y-lo)&^y&hi != 0
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber returns the end of the JSON number starting at data[i], or
// -1, and whether it has an exponent.
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i++; i < len(data) && isDigit(data[i]); i++ {
		}
	default:
		return -1, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return -1, false
		}
		for i++; i < len(data) && isDigit(data[i]); i++ {
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1, false
		}
		for i++; i < len(data) && isDigit(data[i]); i++ {
		}
		return i, true
	}
	return i, false
}

// literal returns the end of word at data[i], or -1.
func literal(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// beyondFloat64 reports whether the JSON number tok overflows a float64,
// which no decoding into an any survives (one below its smallest becomes
// 0).
func beyondFloat64(tok []byte) bool {
	_, err := strconv.ParseFloat(string(tok), 64)
	return errors.Is(err, strconv.ErrRange)
}

// numberFits reports whether the JSON number tok surely decodes into a
// float64. go-sdk decodes a call's _meta into a map of any
// (CallToolParamsRaw), and on 2026-07-28 its arguments into an any too, to
// compare the tool's name with Mcp-Name (extractName); a number beyond
// float64 (1e400) fails that decoding, and the request is refused before
// any tool runs (-32020 for the arguments), not given to the tool. Numbers
// near either end of the range (above 1e300, or below 1e-300 but not
// zero) go to go-sdk too, which decides; short ones without an exponent
// cannot be near it.
func numberFits(tok []byte, exp bool) bool {
	if !exp && len(tok) <= 20 {
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	if f == 0 {
		// Zero only when every digit before the exponent is.
		for _, c := range tok {
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return false
			}
		}
		return true
	}
	return math.Abs(f) > 1e-300 && math.Abs(f) < 1e300
}
