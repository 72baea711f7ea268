package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
)

// protocolVersionKey is the request _meta member naming the protocol of a
// 2026-07-28 request (stateless: every request carries it).
const protocolVersionKey = "io.modelcontextprotocol/protocolVersion"

// modernRequest reports whether req speaks 2026-07-28, where the results
// of tools/call, prompts/get and resources/read carry a resultType.
func modernRequest(req mcp.Request) bool {
	p := req.GetParams()
	if p == nil {
		return false
	}
	v, _ := p.GetMeta()[protocolVersionKey].(string)
	return v >= "2026-07-28"
}

// completed gives a result the front built itself the resultType its
// caller's protocol wants. go-sdk sets "complete" only on results of its
// own handlers, which the front's middleware bypasses, and the field is
// unexported, so the result goes through its JSON: on 2026-07-28 a result
// without one (an upstream on 2025-11-25, or one the front built) gets
// "complete" and one with one keeps it (an upstream's "input_required");
// on 2025-11-25 the member is dropped, since that protocol has none.
func completed(req mcp.Request) func(mcp.Result, error) (mcp.Result, error) {
	return func(res mcp.Result, err error) (mcp.Result, error) { return withResultType(req, res, err) }
}

func withResultType(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	var fresh mcp.Result
	switch res.(type) {
	case *mcp.CallToolResult:
		fresh = new(mcp.CallToolResult)
	case *mcp.GetPromptResult:
		fresh = new(mcp.GetPromptResult)
	case *mcp.ReadResourceResult:
		fresh = new(mcp.ReadResourceResult)
	default:
		return res, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("gateway: result: %w", err)
	}
	has := false
	if err := jsonwire.Members(b, func(name string, _ []byte) error {
		has = has || name == "resultType"
		return nil
	}); err != nil {
		return nil, fmt.Errorf("gateway: result: %w", err)
	}
	modern := modernRequest(req)
	switch {
	case modern && !has:
		// The common case, on the hot path: the member spliced in, one
		// decode.
		b = bytes.TrimRight(b, " \t\r\n")
		if len(b) > 2 {
			b = append(b[:len(b)-1], `,"resultType":"complete"}`...)
		} else {
			b = []byte(`{"resultType":"complete"}`)
		}
	case !modern && has:
		var members map[string]json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil {
			return nil, fmt.Errorf("gateway: result: %w", err)
		}
		delete(members, "resultType")
		if b, err = json.Marshal(members); err != nil {
			return nil, fmt.Errorf("gateway: result: %w", err)
		}
	default:
		return res, nil
	}
	if err := json.Unmarshal(b, fresh); err != nil {
		return nil, fmt.Errorf("gateway: result: %w", err)
	}
	return fresh, nil
}
