package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// Protocol versions the tool speaks.
const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

// mcpRequest builds raw JSON-RPC requests for one protocol version, exactly as
// the server expects them:
//
//   - 2026-07-28: params._meta carries io.modelcontextprotocol/protocolVersion,
//     clientInfo and clientCapabilities, and the headers MCP-Protocol-Version,
//     Mcp-Method and Mcp-Name (the URI of resources/read, the tool name of
//     tools/call) are set;
//   - 2025-11-25: only MCP-Protocol-Version; the server is stateless, so no
//     initialize is needed first.
//
// Bodies are appended to a caller-owned buffer with no reflection, so that
// building a request costs little next to sending it.
type mcpRequest struct {
	version string
	token   string
	// meta is `,"_meta":{...}` for 2026-07-28, empty otherwise.
	meta string
}

func newMCPRequest(version, token string) (*mcpRequest, error) {
	r := &mcpRequest{version: version, token: token}
	switch version {
	case v2026:
		r.meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v2026 +
			`","io.modelcontextprotocol/clientInfo":{"name":"resourced-bench","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{}}`
	case v2025:
	default:
		return nil, fmt.Errorf("-protocol: want %s or %s, not %q", v2026, v2025, version)
	}
	return r, nil
}

// header returns the headers of one request. name is the Mcp-Name value (a
// URI or a tool name); it is only sent with 2026-07-28.
func (r *mcpRequest) header(method, name string) http.Header {
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {r.version},
	}
	if r.token != "" {
		h["Authorization"] = []string{"Bearer " + r.token}
	}
	if r.version == v2026 {
		h["Mcp-Method"] = []string{method}
		h["Mcp-Name"] = []string{headerValue(name)}
	}
	return h
}

// headerValue encodes an Mcp-Name value: base64 when it is not plain
// printable ASCII (SEP-2243). Benchmark URIs and tool names always are.
func headerValue(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
		}
	}
	return s
}

// appendRead appends a resources/read request for uri (which must need no
// JSON escaping: canonical resource URIs never do).
func (r *mcpRequest) appendRead(b []byte, id int64, uri string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"resources/read","params":{"uri":"`...)
	b = append(b, uri...)
	b = append(b, '"')
	b = append(b, r.meta...)
	return append(b, "}}"...)
}

// appendCall appends a tools/call request; args is the JSON object of the
// arguments.
func (r *mcpRequest) appendCall(b []byte, id int64, tool string, args []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"`...)
	b = append(b, tool...)
	b = append(b, `","arguments":`...)
	b = append(b, args...)
	b = append(b, r.meta...)
	return append(b, "}}"...)
}

// reportArgs returns the arguments of a save_report of text at path. With
// overwrite it creates or replaces; without it the path must be new.
func reportArgs(path, mimeType string, text []byte, overwrite bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"path":`)
	writeJSONString(&b, path)
	b.WriteString(`,"mimeType":`)
	writeJSONString(&b, mimeType)
	b.WriteString(`,"text":`)
	writeJSONString(&b, string(text))
	if overwrite {
		b.WriteString(`,"overwrite":true`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// snapshotArgs returns the arguments of a save_search_snapshot whose stored
// JSON document ({query,total,hits}) is about size bytes.
func snapshotArgs(size int) []byte {
	type hit struct {
		ID      string `json:"id"`
		Title   string `json:"title"`
		Snippet string `json:"snippet"`
		URL     string `json:"url"`
	}
	doc := struct {
		Query string `json:"query"`
		Total int    `json:"total"`
		Hits  []hit  `json:"hits"`
	}{Query: "resourced bench"}
	// Each hit is about 200 bytes of JSON; the last snippet pads to size.
	for {
		n := len(doc.Hits)
		doc.Hits = append(doc.Hits, hit{
			ID: "h" + strconv.Itoa(n), Title: "Result " + strconv.Itoa(n),
			Snippet: strings.Repeat("lorem ipsum ", 8), URL: "https://example.com/r/" + strconv.Itoa(n),
		})
		doc.Total = len(doc.Hits)
		b, _ := json.Marshal(doc)
		if len(b) >= size {
			over := len(b) - size
			last := &doc.Hits[len(doc.Hits)-1]
			last.Snippet = last.Snippet[:max(1, len(last.Snippet)-over)]
			break
		}
	}
	args := struct {
		Query string `json:"query"`
		Hits  []hit  `json:"hits"`
	}{doc.Query, doc.Hits}
	b, _ := json.Marshal(args)
	return b
}

func writeJSONString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// bodyText returns size bytes of printable ASCII that needs no JSON escaping,
// a stand-in for a Markdown or CSV report.
func bodyText(size int) []byte {
	const line = "| 2026-11-30 | acme | import-dry-run | 1234 rows | ok |\n"
	b := make([]byte, size)
	for i := range b {
		b[i] = line[i%len(line)]
	}
	return b
}

// Response classification. A JSON-RPC response of this server starts with
// {"jsonrpc":"2.0","id":N, followed by "result" or "error", and a tool
// result ends with "isError":true}} when the tool failed, or on 2026-07-28
// with "isError":true,"resultType":"complete"}}. Only these fixed
// positions are inspected, so checking a response costs nothing next to
// reading it.
var (
	resultKey = []byte(`"result":`)
	errorKey  = []byte(`"error":`)
	isError   = [][]byte{[]byte(`"isError":true}}`), []byte(`"isError":true,"resultType":"complete"}}`)}
)

// classify returns "" for a successful response body, or why it is not.
func classify(status int, body []byte, tool bool) string {
	if status != http.StatusOK {
		return "HTTP " + strconv.Itoa(status) + ": " + snippet(body)
	}
	head := body[:min(len(body), 64)]
	if !bytes.Contains(head, resultKey) {
		if i := bytes.Index(head, errorKey); i >= 0 {
			return "JSON-RPC error: " + snippet(body[i:])
		}
		return "unexpected response: " + snippet(body)
	}
	if tool {
		tail := bytes.TrimRight(body, " \t\r\n")
		for _, suffix := range isError {
			if bytes.HasSuffix(tail, suffix) {
				return "tool isError: " + snippet(body)
			}
		}
	}
	return ""
}

func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tokenTenant returns the tenant claim of a JWT without verifying it (the
// server does that); "" if it cannot be read.
func tokenTenant(token, claim string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	t, _ := claims[claim].(string)
	return t
}

// randomHex returns n random bytes as hex, for run-unique paths.
func randomHex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 2*n)
	for i := range b {
		b[i] = digits[rand.IntN(16)]
	}
	return string(b)
}
