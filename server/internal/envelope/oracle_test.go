package envelope

// The checks the walk (walk.go) replaced, kept as its oracle: json.Valid,
// jsonwire's UniqueMembers and Shallow, the message parse, Check's kind
// checks and the fast paths' own parse of a body, as they were at 2c34f44.
// FuzzParse holds the walk to them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
)

// oldParse checks body and returns its messages. jsonwire.ErrSyntax means the
// body is not one JSON value; *errEnvelope that it is not valid JSON-RPC;
// ErrTooDeep that it is otherwise fine but nested deeper than go-sdk takes.
func oldParse(body []byte) ([]Message, error) {
	msgs, err := oldParseEnvelope(body)
	if err == nil && !oldShallow(body, sdkMaxDepth) {
		return nil, ErrTooDeep // go-sdk's limit, checked last (walk.go)
	}
	return msgs, err
}

// oldParseEnvelope is the envelope check the walk replaced.
func oldParseEnvelope(body []byte) ([]Message, error) {
	if !json.Valid(body) || !utf8.Valid(body) { // RFC 8259 §8.1, since 2c34f44
		return nil, jsonwire.ErrSyntax
	}
	if err := oldUniqueMembers(body); err != nil {
		var de *oldDuplicateError
		if errors.As(err, &de) {
			return nil, &Error{de.Error()}
		}
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var msgs []Message
		err := jsonwire.Elements(body, func(_ int, v []byte) error {
			m, err := oldParseMessage(v)
			m.inBatch = true
			msgs = append(msgs, m)
			return err
		})
		if err != nil {
			return nil, err
		}
		return msgs, nil
	}
	m, err := oldParseMessage(body)
	if err != nil {
		return nil, err
	}
	return []Message{m}, nil
}

func oldParseMessage(data []byte) (Message, error) {
	var m Message
	if d := bytes.TrimLeft(data, " \t\r\n"); len(d) == 0 || d[0] != '{' {
		return m, &Error{"a JSON-RPC message is an object (a batch, an array of them)"}
	}
	var hasMethod, hasResult, versionOK bool
	err := jsonwire.Members(data, func(name string, v []byte) error {
		switch name {
		case "jsonrpc":
			versionOK = string(v) == `"2.0"` || v[0] == '"' && oldMustString(v) == "2.0"
		case "id":
			if string(v) == "null" {
				return nil // go-sdk answers a null id itself
			}
			m.HasID, m.ID = true, v
			if v[0] == '"' {
				if esc := oldLoneSurrogate(v); esc != "" { // since 2c34f44
					return &Error{"the id must be a Unicode string: its escape " + esc + " is half of a UTF-16 surrogate pair"}
				}
				return nil
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n > maxSafeID || n < -maxSafeID {
				return &Error{"the id must be a string or an integer between -(2^53-1) and 2^53-1, got " + service.Truncate(string(v), 40)}
			}
		case "method":
			hasMethod, m.HasMethod = true, true
			var ok bool
			if m.Method, ok = jsonwire.View(v); !ok {
				return &Error{"the method must be a string"}
			}
		case "result", "error":
			hasResult = true
		case "params":
			m.Params = v
			return jsonwire.Members(v, func(name string, pv []byte) error {
				if name == "name" {
					m.Tool, _ = jsonwire.View(pv)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	if !versionOK {
		return m, &Error{`the jsonrpc member must be "2.0"`}
	}
	if m.HasID && !hasMethod && !hasResult {
		return m, &Error{"a message with an id needs a method (a request) or a result or error (a response)"}
	}
	return m, nil
}

// oldLoneSurrogate returns the first escape of the JSON string raw that is
// a UTF-16 surrogate without its other half, or "": the string read as
// UTF-16 code units, each escape one unit, every other character its own.
func oldLoneSurrogate(raw []byte) string {
	type unit struct {
		u   uint16
		esc string // the escape as sent, or ""
	}
	var units []unit
	s := string(raw[1 : len(raw)-1])
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && s[i+1] == 'u':
			n, _ := strconv.ParseUint(s[i+2:i+6], 16, 16)
			units = append(units, unit{uint16(n), s[i : i+6]})
			i += 6
		case s[i] == '\\':
			units = append(units, unit{u: uint16(s[i+1])})
			i += 2
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			for _, u := range utf16.Encode([]rune{r}) {
				units = append(units, unit{u: u})
			}
			i += n
		}
	}
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case utf16.IsSurrogate(rune(u.u)) && u.u >= 0xDC00:
			return u.esc
		case utf16.IsSurrogate(rune(u.u)):
			if i+1 == len(units) || units[i+1].u < 0xDC00 || units[i+1].u > 0xDFFF {
				return u.esc
			}
			i++
		}
	}
	return ""
}

func oldMustString(v []byte) string {
	s, _ := jsonwire.String(v)
	return s
}

// oldCheck checks the method and params of a request or notification
// (responses pass): *errMethod for a method go-sdk does not serve,
// *errParams for params it would refuse.
func oldCheck(m *Message) error {
	if !m.HasMethod {
		return nil // a response: go-sdk takes it as one
	}
	newParams, known := serverMethods[m.Method]
	if !known {
		return &MethodError{m.Method}
	}
	p := bytes.TrimSpace(m.Params)
	if len(p) == 0 || string(p) == "null" {
		// Since 2c34f44: a request alone whose method requires params
		// and has none is refused; go-sdk's plain text stays for the rest.
		if m.HasID && !m.inBatch && oldParamsRequired[m.Method] {
			return &ParamsError{`Invalid params: missing required "params"`}
		}
		return nil
	}
	if p[0] != '{' {
		return &ParamsError{"Invalid params: params must be an object"}
	}
	if newParams == nil {
		return oldCheckKinds(p, oldKindsOf[m.Method]) // inputResponses too, in the same pass
	}
	if oldInputResponsesOf[m.Method] {
		if err := oldCheckInputResponses(p); err != nil {
			return err
		}
	}
	err := json.Unmarshal(p, newParams())
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return &ParamsError{"Invalid params: " + te.Field + " must be " + mcptool.DescribeType(te.Type)}
	case errors.As(err, &te):
		return &ParamsError{"Invalid params: a value must be " + mcptool.DescribeType(te.Type)}
	default:
		return &ParamsError{"Invalid params: they do not fit " + m.Method}
	}
}

// oldParamsRequired are the methods go-sdk v1.8.0 registers without
// missingParamsOK (its serverMethodInfos).
var oldParamsRequired = map[string]bool{"completion/complete": true, "initialize": true, "prompts/get": true,
	"tools/call": true, "resources/read": true, "logging/setLevel": true, "resources/subscribe": true,
	"subscriptions/listen": true, "resources/unsubscribe": true}

// oldKindsOf are the JSON kinds of the params members of the methods checked
// by kind only (oldCheckKinds): tools/call, whose arguments (possibly
// megabytes) are the tool's to check, answered with a validation_error
// result; resources/read, the hottest path, which has only these two.
var oldKindsOf = map[string]map[string]byte{
	"tools/call":     {"name": '"', "_meta": '{'},
	"resources/read": {"uri": '"', "_meta": '{'},
}

// oldInputResponsesOf are the methods whose params may carry the
// inputResponses of a multi-round-trip request (SEP-2322).
var oldInputResponsesOf = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// oldCheckInputResponses refuses an inputResponses member that is not an
// object of objects (each an elicitation, sampling or roots result):
// null, a number, an array, or a response that is not an object are
// protocol errors, answered -32602 before any tool or upstream runs.
func oldCheckInputResponses(p []byte) error {
	return jsonwire.Members(p, func(name string, v []byte) error {
		if !strings.EqualFold(name, "inputResponses") {
			return nil
		}
		return oldCheckInputResponsesValue(v)
	})
}

var oldErrInputResponses = &ParamsError{"Invalid params: inputResponses must be an object whose values are input responses (objects)"}

// oldCheckInputResponsesValue checks the value of an inputResponses member.
func oldCheckInputResponsesValue(v []byte) error {
	if v[0] != '{' {
		return oldErrInputResponses
	}
	return jsonwire.Members(v, func(_ string, r []byte) error {
		if r[0] != '{' {
			return oldErrInputResponses
		}
		return nil
	})
}

// oldCheckKinds checks that the members of params named in kinds (compared
// as go-sdk's decoder compares them, ignoring case) hold a value of that
// kind or null, without decoding them, and an inputResponses member as
// oldCheckInputResponses does, in the same pass.
func oldCheckKinds(p []byte, kinds map[string]byte) error {
	return jsonwire.Members(p, func(name string, v []byte) error {
		if strings.EqualFold(name, "inputResponses") {
			return oldCheckInputResponsesValue(v) // both methods take them (SEP-2322)
		}
		if name == "_meta" && v[0] == '{' && oldBeyondFloat64(v) {
			return &ParamsError{"Invalid params: a number in _meta is beyond float64's range"}
		}
		for want, kind := range kinds {
			if !strings.EqualFold(name, want) || v[0] == kind || string(v) == "null" {
				continue
			}
			what := "an object"
			if kind == '"' {
				what = "a string"
			}
			return &ParamsError{"Invalid params: " + want + " must be " + what}
		}
		return nil
	})
}

// oldBeyondFloat64 reports whether a number in the JSON value v overflows
// a float64.
func oldBeyondFloat64(v []byte) bool {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); errors.Is(err, strconv.ErrRange) {
				return true
			}
		}
	}
}

// oldShallow reports whether data, valid JSON, nests arrays and objects at
// most max deep.
func oldShallow(data []byte, max int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// oldDuplicateError names a member that appears twice in one object.
type oldDuplicateError struct {
	Path string // where the object is: "" at the top, "params.arguments", "hits[2]"
	Name string // the member name given twice
}

func (e *oldDuplicateError) Error() string {
	if e.Path == "" {
		return "member " + strconv.Quote(e.Name) + " appears twice"
	}
	return "member " + strconv.Quote(e.Name) + " appears twice in " + e.Path
}

// oldContainer is one open object or array of oldUniqueMembers' walk.
type oldContainer struct {
	object bool
	name   string // the member or element this oldContainer is the value of
	index  int    // arrays: the current element
	n      int    // objects: member names seen, in few while n <= len(few)
	few    [8]string
	set    map[string]struct{}
}

func (c *oldContainer) add(name string) bool {
	if c.set != nil {
		if _, dup := c.set[name]; dup {
			return false
		}
		c.set[name] = struct{}{}
		return true
	}
	for _, n := range c.few[:c.n] {
		if n == name {
			return false
		}
	}
	if c.n < len(c.few) {
		c.few[c.n] = name
		c.n++
		return true
	}
	c.set = make(map[string]struct{}, 4*len(c.few))
	for _, n := range c.few {
		c.set[n] = struct{}{}
	}
	c.set[name] = struct{}{}
	return true
}

// oldUniqueMembers checks that no object of data, valid JSON, at any depth,
// names a member twice (RFC 8259 says names SHOULD be unique; encoding/json
// would silently keep the last one). It walks data once, without recursion
// and without decoding values, and returns a *oldDuplicateError for the first
// duplicate. Names are compared after decoding, so "a" and "\u0061" are
// the same name.
func oldUniqueMembers(data []byte) error {
	var buf [8]oldContainer // a request nests a few levels: no allocation
	stack := buf[:0]
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			end := jsonwire.SkipValue(data, i)
			if end < 0 {
				return jsonwire.ErrSyntax
			}
			if expectKey && len(stack) > 0 {
				top := &stack[len(stack)-1]
				name, ok := jsonwire.View(data[i:end])
				if !ok {
					return jsonwire.ErrSyntax
				}
				if !top.add(name) {
					return &oldDuplicateError{Path: oldContainerPath(stack), Name: name}
				}
				top.name = name
				expectKey = false
			}
			i = end - 1
		case '{':
			stack = append(stack, oldContainer{object: true})
			expectKey = true
		case '[':
			stack = append(stack, oldContainer{})
		case '}', ']':
			if len(stack) == 0 {
				return jsonwire.ErrSyntax
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				expectKey = top.object
				if !top.object {
					top.index++
				}
			}
		}
	}
	return nil
}

// oldContainerPath names the innermost open object of stack, e.g.
// params.arguments or hits[2].
func oldContainerPath(stack []oldContainer) string {
	var b strings.Builder
	for i := 0; i < len(stack)-1; i++ {
		if stack[i].object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(stack[i].name)
		} else {
			b.WriteString("[" + strconv.Itoa(stack[i].index) + "]")
		}
	}
	return b.String()
}

// fastReadRequest is what the fast path needs of a resources/read: the
// raw id, the URI, and the raw values of the _meta members go-sdk checks.
type fastReadRequest struct {
	ID                 json.RawMessage
	URI                string
	HasMeta            bool
	ProtocolVersion    []byte // raw JSON, nil when absent
	ClientInfo         []byte
	ClientCapabilities []byte
	LogLevel           []byte
}

// parseFastRead reads body, a single request whose envelope was checked
// (one valid JSON value, members at the top level unique), for the fast
// path. It accepts only the plainest form: jsonrpc exactly "2.0", params
// holding nothing but uri (a string without escapes) and _meta, and no
// member of params or _meta twice. Anything else reports false and goes to
// go-sdk, which is never wrong.
func parseFastRead(body []byte) (req fastReadRequest, ok bool) {
	req.ID, ok = parseFastEnvelope(body, func(v []byte) bool { return parseFastParams(v, &req) })
	return req, ok
}

// parseFastEnvelope walks the top level of body, a single request whose
// envelope was checked, as the fast paths take it: jsonrpc exactly "2.0",
// the id (returned raw), the method (checked by the envelope), and params,
// which params must accept; any other member reports false.
func parseFastEnvelope(body []byte, params func(v []byte) bool) (id json.RawMessage, ok bool) {
	var rpcOK, paramsOK bool
	err := jsonwire.Members(body, func(name string, v []byte) error {
		switch name {
		case "jsonrpc":
			rpcOK = string(v) == `"2.0"`
		case "id":
			id = v
		case "method":
		case "params":
			paramsOK = params(v)
		default:
			return jsonwire.ErrSyntax
		}
		return nil
	})
	return id, err == nil && rpcOK && paramsOK
}

func parseFastParams(v []byte, req *fastReadRequest) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	var haveURI bool
	err := jsonwire.Members(v, func(name string, pv []byte) error {
		switch name {
		case "uri":
			if haveURI || len(pv) < 2 || pv[0] != '"' || bytes.IndexByte(pv, '\\') >= 0 {
				return jsonwire.ErrSyntax
			}
			haveURI, req.URI = true, string(pv[1:len(pv)-1])
		case "_meta":
			// go-sdk decodes _meta into a map of any: a number beyond
			// float64 fails there (oldNumbersFit, callpath.go).
			if req.HasMeta || !parseFastMeta(pv, req) || !oldNumbersFit(pv) {
				return jsonwire.ErrSyntax
			}
		default:
			return jsonwire.ErrSyntax
		}
		return nil
	})
	return err == nil && haveURI
}

// fastCallRequest is what the fast path needs of a tools/call: the raw id,
// the tool's name and raw arguments, and the _meta members go-sdk checks
// (in fastReadRequest's slots; its URI is unused).
type fastCallRequest struct {
	ID      json.RawMessage
	Name    string
	Args    json.RawMessage
	Meta    fastReadRequest
	RawMeta []byte // the _meta object as sent, nil when absent
}

// parseFastCall reads body, a single request whose envelope was checked,
// for the fast path. It accepts only jsonrpc exactly "2.0" and params
// holding nothing but name (a string without escapes), arguments (an
// object) and _meta (an object); anything else reports false.
func parseFastCall(body []byte) (req fastCallRequest, ok bool) {
	req.ID, ok = parseFastEnvelope(body, func(v []byte) bool { return parseFastCallParams(v, &req) })
	return req, ok
}

func parseFastCallParams(v []byte, req *fastCallRequest) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	var haveName bool
	err := jsonwire.Members(v, func(name string, pv []byte) error {
		switch name {
		case "name":
			if haveName || len(pv) < 3 || pv[0] != '"' || bytes.IndexByte(pv, '\\') >= 0 {
				return jsonwire.ErrSyntax
			}
			haveName, req.Name = true, string(pv[1:len(pv)-1])
		case "arguments":
			if req.Args != nil || len(pv) == 0 || pv[0] != '{' {
				return jsonwire.ErrSyntax
			}
			req.Args = pv
		case "_meta":
			if req.Meta.HasMeta || !parseFastMeta(pv, &req.Meta) {
				return jsonwire.ErrSyntax
			}
			req.RawMeta = pv
		default:
			// inputResponses, requestState (go-sdk's multi-round-trip),
			// and anything unknown: go-sdk's.
			return jsonwire.ErrSyntax
		}
		return nil
	})
	return err == nil && haveName && req.Args != nil
}

// parseFastMeta reads a params _meta object into the slots of m, as
// parseFastParams does for a read: each member go-sdk checks at most once.
func parseFastMeta(v []byte, m *fastReadRequest) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	m.HasMeta = true
	err := jsonwire.Members(v, func(name string, mv []byte) error {
		var slot *[]byte
		switch name {
		case mcp.MetaKeyProtocolVersion:
			slot = &m.ProtocolVersion
		case mcp.MetaKeyClientInfo:
			slot = &m.ClientInfo
		case mcp.MetaKeyClientCapabilities:
			slot = &m.ClientCapabilities
		//lint:ignore SA1019 still served to 2025-11-25 clients during the deprecation window (SEP-2577)
		case mcp.MetaKeyLogLevel:
			slot = &m.LogLevel
		default:
			return nil
		}
		if *slot != nil {
			return jsonwire.ErrSyntax
		}
		*slot = mv
		return nil
	})
	return err == nil
}

// oldNumbersFit reports whether every number in the JSON value v surely
// decodes into a float64. go-sdk decodes a call's _meta into a map of any
// (CallToolParamsRaw), and on 2026-07-28 its arguments into an any too, to
// compare the tool's name with Mcp-Name (extractName); a number beyond
// float64 (1e400) fails that decoding, and the request is refused before
// any tool runs (-32020 for the arguments), not given to the tool. Numbers
// near either end of the range (above 1e300, or below 1e-300 but not
// zero) go to go-sdk too, which decides; short ones without an exponent
// cannot be near it.
func oldNumbersFit(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			start, exp := i, false
			for ; i < len(v) && strings.IndexByte("0123456789+-.eE", v[i]) >= 0; i++ {
				exp = exp || v[i] == 'e' || v[i] == 'E'
			}
			if !oldNumberFits(v[start:i], exp) {
				return false
			}
			i--
		}
	}
	return true
}

func oldNumberFits(tok []byte, exp bool) bool {
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
