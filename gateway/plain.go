package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
)

// The plain answer: a tools/call to an HTTP upstream without a progress
// token is read on the calling goroutine. go-sdk's streamable client
// POSTs a call on the caller's goroutine, then reads the answer on one
// of its own and hands it on through its session's reader to the waiting
// caller: two goroutines and three wake-ups per call, the largest cost of
// the gateway's hop in the profiles (bench/README.md, issue 25). So the
// front marks such a call (withPlain) and limitTransport, which go-sdk's
// POST goes through, reads the answer before returning: when it is what a
// plain call gets (2xx; a JSON body, or an event stream whose first
// message, past events without data, is the call's result, no error), it
// keeps the decoded result for the front and fails go-sdk's POST, which
// go-sdk reports to the caller at once without breaking the session
// (errPlainAnswered). Anything else — another status, a notification or
// request before the answer, an error answer, the stream ending first,
// an answer that does not decode, a session id that changed — goes to
// go-sdk as the response it would have had, the bytes already read put
// back in front of the rest, and go-sdk does with it what it does today.
// The request is go-sdk's in every case (its id, headers and _meta), sent
// once.

// plainAnswer is one marked call's result, when limitTransport read it.
type plainAnswer struct {
	taken bool // the call's POST was seen: later requests are not it
	res   *mcp.CallToolResult
}

type plainKey struct{}

// withPlain marks ctx's tools/call for a plain answer, kept in a.
func withPlain(ctx context.Context, a *plainAnswer) context.Context {
	return context.WithValue(ctx, plainKey{}, a)
}

// errPlainAnswered fails go-sdk's POST of a call whose answer was read
// for the front (the front takes the answer, not this error).
var errPlainAnswered = errors.New("gateway: the answer was read on the calling goroutine")

// plainPOST reports the answer that req (a POST with JSON-RPC id) marks
// for a plain answer, or nil.
func plainPOST(req *http.Request, id []byte) *plainAnswer {
	a, _ := req.Context().Value(plainKey{}).(*plainAnswer)
	if a == nil || a.taken || req.Method != http.MethodPost || id == nil {
		return nil
	}
	a.taken = true // the call's own POST comes first: a cancellation has no id
	return a
}

// readPlain reads resp's answer to the call with id into a and reports
// whether it did; when not, resp's body is replaced by the bytes read
// followed by the rest, for go-sdk. resp is a 2xx response of mt.
func readPlain(req *http.Request, resp *http.Response, mt string, id []byte, a *plainAnswer) bool {
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && sid != req.Header.Get("Mcp-Session-Id") {
		return false
	}
	switch mt {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err == nil && a.take(b, id) {
			resp.Body.Close()
			return true
		}
		resp.Body = replay(b, errReader{err}, resp.Body)
	case "text/event-stream":
		var read bytes.Buffer
		br := bufio.NewReaderSize(resp.Body, 4<<10)
		for {
			data, ok := nextEvent(br, &read)
			if !ok {
				break
			}
			if data == nil {
				continue // no data: go-sdk skips it too
			}
			if !a.take(data, id) {
				break
			}
			// As go-sdk does after the answer, read the rest so that the
			// connection is used again; not on the caller's time.
			body := resp.Body
			go func() {
				_, _ = io.Copy(io.Discard, br)
				body.Close()
			}()
			return true
		}
		resp.Body = replay(read.Bytes(), br, resp.Body)
	}
	return false
}

// take decodes msg as the answer to the call with id and keeps its
// result; false if it is anything else.
func (a *plainAnswer) take(msg, id []byte) bool {
	if res, ok := textResult(msg, id); ok {
		a.res = res
		return true
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return false
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error != nil || !sameID(r.ID, id) {
		return false
	}
	res := new(mcp.CallToolResult)
	if json.Unmarshal(r.Result, res) != nil {
		return false
	}
	a.res = res
	return true
}

// textResult decodes the commonest answer, a result of text items and
// isError, without go-sdk's decoder (32 KiB of buffer for every value it
// decodes: most of the garbage of a pass-through call); false for
// anything else, which go-sdk's decoder then reads. It takes only what
// go-sdk decodes to the same result: valid JSON, no member twice, none
// but "jsonrpc":"2.0", the id and "result"; a result of "content" (one
// or more items, each exactly "type":"text" and a "text" in valid UTF-8
// without escaped surrogates) and "isError" (true or false).
func textResult(msg, id []byte) (*mcp.CallToolResult, bool) {
	if !json.Valid(msg) {
		return nil, false
	}
	var raw []byte
	ok, n := true, 0
	members(msg, func(name string, v []byte) {
		switch {
		case name == "jsonrpc" && string(v) == `"2.0"`, name == "id" && bytes.Equal(v, id):
			n++
		case name == "result":
			raw = v
		default:
			ok = false
		}
	}, &ok)
	if !ok || n != 2 || raw == nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	var content []byte
	members(raw, func(name string, v []byte) {
		switch {
		case name == "content":
			content = v
		case name == "isError" && (string(v) == "true" || string(v) == "false"):
			res.IsError = string(v) == "true"
		default:
			ok = false
		}
	}, &ok)
	if !ok || len(content) == 0 || content[0] != '[' {
		return nil, false
	}
	_ = jsonwire.Elements(content, func(_ int, item []byte) error {
		var text []byte
		typed := false
		members(item, func(name string, v []byte) {
			switch {
			case name == "type" && string(v) == `"text"`:
				typed = true
			case name == "text":
				text = v
			default:
				ok = false
			}
		}, &ok)
		if !ok || !typed || text == nil || !utf8.Valid(text) || bytes.Contains(bytes.ToLower(text), []byte(`\ud`)) {
			ok = false
			return errStop
		}
		s, isString := jsonwire.String(text)
		if !isString {
			ok = false
			return errStop
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
		return nil
	})
	if !ok || len(res.Content) == 0 {
		return nil, false
	}
	return res, true
}

// members calls f with each member of the object v (valid JSON) and
// clears ok when v is not an object or names a member twice.
func members(v []byte, f func(name string, value []byte), ok *bool) {
	if len(v) == 0 || v[0] != '{' {
		*ok = false
		return
	}
	var seen []string
	_ = jsonwire.Members(v, func(name string, value []byte) error {
		if slices.Contains(seen, name) {
			*ok = false
			return errStop
		}
		seen = append(seen, name)
		f(name, value)
		return nil
	})
}

var errStop = errors.New("stop")

// sameID reports whether id is the raw JSON id raw (go-sdk's ids are
// integers).
func sameID(id jsonrpc.ID, raw []byte) bool {
	switch v := id.Raw().(type) {
	case int64:
		return string(raw) == strconv.FormatInt(v, 10)
	case string:
		b, err := json.Marshal(v)
		return err == nil && bytes.Equal(b, raw)
	}
	return false
}

// nextEvent reads one event of an event stream as go-sdk's reader does
// and returns its data (nil: none, or an event name go-sdk skips);
// false at the end, on an error, or on a line go-sdk would find
// malformed. Every byte read is added to read; one data line's value is
// returned in place there, not copied.
func nextEvent(br *bufio.Reader, read *bytes.Buffer) ([]byte, bool) {
	var data []byte
	lines, named := 0, false // data lines
	for {
		start := read.Len()
		for {
			chunk, err := br.ReadSlice('\n')
			read.Write(chunk)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				return nil, false // the end or an error: go-sdk's to report
			}
			break
		}
		line := bytes.TrimRight(read.Bytes()[start:], "\r\n")
		if len(line) == 0 {
			if lines == 0 || named || len(data) == 0 {
				return nil, true
			}
			return data, true
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			return nil, false
		}
		switch string(field) {
		case "data":
			value = bytes.TrimSpace(value)
			switch lines++; lines {
			case 1:
				data = value
			case 2:
				data = append(append(bytes.Clone(data), '\n'), value...)
			default:
				data = append(append(data, '\n'), value...)
			}
		case "event":
			v := string(bytes.TrimSpace(value))
			named = v != "" && v != "message"
		}
	}
}

// replay is a body that reads b, then rest, and closes body.
func replay(b []byte, rest io.Reader, body io.Closer) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), body}
}

// errReader fails every read with err (io.EOF when nil).
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	return 0, r.err
}
