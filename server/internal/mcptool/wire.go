package mcptool

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
)

// The results of the server's own tools, written as go-sdk writes them
// without its generic marshalling (server's fast call path; the bytes are
// compared with go-sdk's by server's TestFastCallMatchesSDK and
// TestOwnResultMatchesSDK).

// PlainResult reports whether res has only the members the server's own
// tools set (content, structuredContent, isError), so that AppendResponse
// writes it as its MarshalJSON does.
func PlainResult(res *mcp.CallToolResult) bool {
	return len(res.Meta) == 0 && res.InputRequests == nil && res.RequestState == ""
}

// AppendResponse appends the JSON-RPC response carrying res, a
// PlainResult of one of the server's own tools, as go-sdk writes it: the
// result's members straight into the response (appendResultMembers), in a
// buffer sized for them once, the id written back as go-sdk does. On
// 2026-07-28 (modern) the result begins with serverInfoMeta (the
// `"_meta":{...}` member go-sdk's annotateServerInfo adds) and, when the
// tool returned it (not recoverMCP), ends with resultType "complete"
// (handleMultiRoundTripResult).
func AppendResponse(dst []byte, id []byte, serverInfoMeta []byte, res *mcp.CallToolResult, modern, returned bool) ([]byte, error) {
	n := 128 + len(id) + len(serverInfoMeta)
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t != nil {
			n += len(t.Text) + len(t.Text)/8 + 32
		} else {
			n += 512
		}
	}
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		n += len(raw)
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = jsonwire.AppendID(dst, id)
	dst = append(dst, `,"result":{`...)
	if modern {
		dst = append(append(dst, serverInfoMeta...), ',')
	}
	dst, err := appendResultMembers(dst, res)
	if err != nil {
		return nil, err
	}
	if modern && returned {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, "}}"...), nil
}

// appendResultMembers appends the members of res, a PlainResult, as its
// MarshalJSON writes them inside its braces (go-sdk's
// CallToolResult.MarshalJSON: encoding/json over the result's members,
// each content item through its own MarshalJSON and then compacted). A
// save's result was 4 % of the server's CPU per save in go-sdk's
// marshalling (bench/README.md, "Issue 25: saves against the write
// ceiling"): the wrapper's reflection, the text item's JSON made by its
// MarshalJSON and compacted again, structuredContent compacted once more,
// and a copy of the whole. Here a plain text item (no _meta, no
// annotations) is written at once with encoding/json's escaping
// (jsonwire.AppendString); every other item and structuredContent go
// through json.Marshal, which is what encoding/json does with them inside
// the result. TestFastCallMatchesSDK compares the bytes with go-sdk's.
func appendResultMembers(dst []byte, res *mcp.CallToolResult) ([]byte, error) {
	dst = append(dst, `"content":`...)
	if res.Content == nil {
		dst = append(dst, "null"...) // as encoding/json writes a nil slice (callTool leaves none)
	} else {
		dst = append(dst, '[')
		for i, c := range res.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			if t, ok := c.(*mcp.TextContent); ok && t != nil && t.Meta == nil && t.Annotations == nil {
				dst = append(dst, `{"type":"text","text":`...)
				dst = jsonwire.AppendString(dst, t.Text)
				dst = append(dst, '}')
				continue
			}
			b, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			dst = append(dst, b...)
		}
		dst = append(dst, ']')
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, `,"structuredContent":`...), b...)
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return dst, nil
}
