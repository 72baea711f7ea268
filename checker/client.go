package checker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/resourced/resourced/internal/wwwauth"
	"github.com/resourced/resourced/mcpschema"
)

// maxResponseBytes caps one HTTP response body (or SSE stream) the
// checker reads.
const maxResponseBytes = 64 << 20

// client speaks raw JSON-RPC over Streamable HTTP, so that every response
// is seen byte for byte and validated against the official schema of the
// negotiated protocol version.
type client struct {
	url     string
	header  http.Header // the user's --header values: sent, never printed
	hc      *http.Client
	version string // negotiated protocol version; "" before the handshake
	info    map[string]any

	mu        sync.Mutex
	nextID    int64
	sessionID string // Mcp-Session-Id of a stateful 2025-11-25 server
	log       []*exchange
}

// rpcError is a JSON-RPC error object as received.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	raw     json.RawMessage // the error member exactly as sent
}

// exchange is one request and its response.
type exchange struct {
	Method      string
	Name        string // tool name or resource URI, when the method has one
	HTTPStatus  int
	ContentType string // media type of the HTTP response
	Message     []byte // the JSON-RPC response message, raw
	Result      json.RawMessage
	Err         *rpcError
	// SchemaErr says how the response fails the official schema; nil if
	// it validates.
	SchemaErr error
	// ResultType is the result's resultType ("" when absent or an error).
	ResultType string
}

// transportError is a failure to get a JSON-RPC answer at all: the
// connection, an HTTP status without a JSON-RPC body, a body that is not
// JSON-RPC. It ends the check (exit code 2).
type transportError struct {
	msg    string
	status int  // HTTP status, when one arrived
	conn   bool // no HTTP response at all
}

func (e *transportError) Error() string { return e.msg }

func transportErrorf(format string, args ...any) error {
	return &transportError{msg: fmt.Sprintf(format, args...)}
}

// headerValue encodes a header value as SEP-2243 asks: as is when it is
// printable ASCII, otherwise =?base64?…?=.
func headerValue(s string) string {
	if strings.TrimSpace(s) != s {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
		}
	}
	return s
}

// call sends one request and returns its exchange. A JSON-RPC error is not
// an error of call: it is in exchange.Err.
func (c *client) call(ctx context.Context, method string, params map[string]any) (*exchange, error) {
	if params == nil {
		params = map[string]any{}
	}
	x := &exchange{Method: method}
	switch method {
	case "tools/call", "prompts/get":
		x.Name, _ = params["name"].(string)
	case "resources/read":
		x.Name, _ = params["uri"].(string)
	}
	hdr := http.Header{}
	if c.version != "" && method != "initialize" {
		hdr.Set("MCP-Protocol-Version", c.version)
	}
	if c.version >= mcpschema.V2026_07_28 {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = c.version
		meta["io.modelcontextprotocol/clientInfo"] = c.info
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		params["_meta"] = meta
		hdr.Set("Mcp-Method", method)
		if x.Name != "" {
			hdr.Set("Mcp-Name", headerValue(x.Name))
		}
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, hdr, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	x.HTTPStatus = resp.StatusCode
	x.ContentType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && method == "initialize" {
		c.mu.Lock()
		c.sessionID = sid
		c.mu.Unlock()
	}
	switch x.ContentType {
	case "application/json":
		x.Message, err = io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	case "text/event-stream":
		x.Message, err = readSSEResponse(resp.Body, id)
	default:
		err = transportErrorf("%s: HTTP %d with Content-Type %q, not a JSON-RPC response", method, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err != nil {
		return nil, httpStatusError(method, resp, err)
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(x.Message, &env); err != nil || (env.Result == nil && env.Error == nil) {
		return nil, httpStatusError(method, resp, fmt.Errorf("the body is not a JSON-RPC response: %.200q", x.Message))
	}
	if string(env.ID) != fmt.Sprint(id) {
		x.SchemaErr = fmt.Errorf("response id %s, want %d", env.ID, id)
	}
	x.Result = env.Result
	if env.Error != nil {
		x.Err = &rpcError{}
		if err := json.Unmarshal(env.Error, x.Err); err != nil {
			x.Err = &rpcError{Code: 0, Message: "(unparseable error member)"}
		}
		x.Err.raw = env.Error
		x.Result = nil
	}
	c.validate(x)
	c.mu.Lock()
	c.log = append(c.log, x)
	c.mu.Unlock()
	return x, nil
}

// httpStatusError explains a response that carried no JSON-RPC answer,
// naming the HTTP status.
func httpStatusError(method string, resp *http.Response, err error) error {
	// RFC 6750's error_description, when the server says why.
	why := ""
	if d := wwwauth.Params(resp.Header.Get("WWW-Authenticate"))["error_description"]; d != "" {
		why = " (the server says: " + d + ")"
	}
	var te *transportError
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		te = &transportError{msg: method + ": HTTP 401 Unauthorized" + why + ": the server wants credentials it accepts (pass them with --header \"Authorization: Bearer …\")"}
	case resp.StatusCode == http.StatusForbidden:
		te = &transportError{msg: method + ": HTTP 403 Forbidden" + why + ": the credentials lack a scope this request needs, or the server refused the Origin/Host"}
	case errors.As(err, &te):
	default:
		te = &transportError{msg: fmt.Sprintf("%s: HTTP %d: %v", method, resp.StatusCode, err)}
	}
	te.status = resp.StatusCode
	return te
}

// notify sends a notification and expects 202 Accepted.
func (c *client) notify(ctx context.Context, method string) (int, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	hdr := http.Header{}
	hdr.Set("MCP-Protocol-Version", c.version)
	resp, err := c.post(ctx, hdr, body)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (c *client) post(ctx context.Context, hdr http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, transportErrorf("bad --url: %v", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	c.mu.Unlock()
	resp, err := c.hc.Do(req)
	if err != nil {
		// url.Error names the URL and the cause; it never holds header values.
		return nil, &transportError{msg: fmt.Sprintf("POST %s: %v", redactURL(c.url), unwrapURLError(err)), conn: true}
	}
	return resp, nil
}

// close ends a stateful session (DELETE with Mcp-Session-Id), if any.
func (c *client) close(ctx context.Context) {
	c.mu.Lock()
	sid := c.sessionID
	c.mu.Unlock()
	if sid == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", c.version)
	if resp, err := c.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// readSSEResponse reads server-sent events until the JSON-RPC response
// with id arrives, and returns its data. Other messages on the stream
// (notifications, server requests) are skipped.
func readSSEResponse(r io.Reader, id int64) ([]byte, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxResponseBytes))
	sc.Buffer(make([]byte, 64<<10), maxResponseBytes)
	var data bytes.Buffer
	want := fmt.Sprint(id)
	dispatch := func() []byte {
		defer data.Reset()
		if data.Len() == 0 {
			return nil
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data.Bytes(), &m) != nil || m.Method != "" || string(m.ID) != want {
			return nil
		}
		return bytes.Clone(data.Bytes())
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if msg := dispatch(); msg != nil {
				return msg, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if field == "data" {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		}
	}
	if msg := dispatch(); msg != nil {
		return msg, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the event stream: %w", err)
	}
	return nil, fmt.Errorf("the event stream ended without the response to request %d", id)
}

// validate checks x against the official schema of the negotiated version:
// the envelope, then the result against its method's result type.
func (c *client) validate(x *exchange) {
	version := c.version
	if version == "" {
		return
	}
	inst, err := mcpschema.Decode(x.Message)
	if err != nil {
		x.SchemaErr = err
		return
	}
	var problems []string
	if x.SchemaErr != nil {
		problems = append(problems, x.SchemaErr.Error())
	}
	env := "JSONRPCResultResponse"
	if x.Err != nil {
		env = "JSONRPCErrorResponse"
	}
	if err := mcpschema.Validate(version, env, inst); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", env, err))
	}
	if x.Err == nil {
		result := inst.(map[string]any)["result"]
		if rm, ok := result.(map[string]any); ok {
			x.ResultType, _ = rm["resultType"].(string)
		}
		if def, ok := mcpschema.ResultDef(x.Method); ok && mcpschema.Has(version, def) {
			if err := mcpschema.Validate(version, def, result); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", def, err))
			}
		}
	}
	if len(problems) > 0 {
		// Shorten the validator's references into the embedded schema.
		msg := strings.Join(problems, "; ")
		msg = strings.ReplaceAll(msg, "jsonschema validation failed with ", "")
		msg = strings.ReplaceAll(msg, "https://schema.modelcontextprotocol.io/"+version+"/schema.json#", "#")
		x.SchemaErr = errors.New(msg)
	}
}

// exchanges returns every exchange so far.
func (c *client) exchanges() []*exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*exchange(nil), c.log...)
}
