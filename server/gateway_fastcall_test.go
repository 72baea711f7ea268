package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/gateway"
)

// countingExt is an Extension that counts the requests its Middleware
// sees from the fast call path (whose context carries callState).
type countingExt struct {
	Extension
	fast *atomic.Int64
}

func (c countingExt) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	h := c.Extension.Middleware(next)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ctx.Value(callStateKey{}) != nil {
			c.fast.Add(1)
		}
		return h(ctx, method, req)
	}
}

// addDiffTools gives a test upstream the tools only the differential test
// calls: results of every shape a pass-through carries.
func addDiffTools(s *mcp.Server) {
	obj := map[string]any{"type": "object"}
	add := func(name string, h mcp.ToolHandler) { s.AddTool(&mcp.Tool{Name: name, InputSchema: obj}, h) }
	add("meta", func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// What reached the upstream: the forwarded _meta and arguments.
		b, _ := json.Marshal(map[string]any{"meta": r.Params.Meta, "args": r.Params.Arguments})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	add("small_structured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1.5,"s":"é <&>"}`}},
			StructuredContent: map[string]any{"n": 1.5, "s": "é <&>", "list": []any{1, "two", nil, true}}}, nil
	})
	add("is_error", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool failed: \"x\" <y>"}}}, nil
	})
	add("with_meta", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Meta: mcp.Meta{"z/key": "v", "a": map[string]any{"n": 2.0}, "io.modelcontextprotocol/serverInfo": "upstream's"},
			Content: []mcp.Content{&mcp.TextContent{Text: "with _meta"}}}, nil
	})
	add("empty", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	add("not_found", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no such thing"}
	})
	add("invalid", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad arguments", Data: json.RawMessage(`{"field":"x"}`)}
	})
	add("plain_error", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("a plain Go error")
	})
}

// TestGatewayFastCallMatchesSDK sends the same tools/call requests of
// upstream tools, on both protocol versions and with one upstream and two,
// to a gateway whose fast call path answers them and to one where go-sdk
// answers every call, and requires the same status, headers and bytes;
// for a variety of upstream results (small text, structuredContent,
// isError, an upstream's JSON-RPC errors, an unreachable upstream, an
// offloaded result) and of requests (ids, arguments, _meta).
func TestGatewayFastCallMatchesSDK(t *testing.T) {
	for _, ups := range [][]string{{"fs"}, {"fs", "web"}} {
		t.Run(strings.Join(ups, "+"), func(t *testing.T) {
			var fast atomic.Int64
			counting := func(o *Options) {
				inner := o.Extension
				o.Extension = func(d ExtensionDeps) (Extension, error) {
					x, err := inner(d)
					if err != nil {
						return nil, err
					}
					return countingExt{Extension: x, fast: &fast}, nil
				}
			}
			mk := func() *gwEnv {
				var us []gateway.Upstream
				for _, n := range ups {
					u := fsUpstream()
					u.Name = n
					u.Offload.Tools = nil
					us = append(us, u)
				}
				e := newGWEnvWith(t, 8<<20, counting, us...)
				for _, u := range e.ups {
					addDiffTools(u.server)
				}
				return e
			}
			fe, se := mk(), mk()
			se.srv.noFastCall = true
			prefix := ""
			if len(ups) > 1 {
				prefix = "fs__"
			}
			type tc struct {
				tool, args, meta, id string
				fast                 bool // the fast path must answer it
				fastLegacy           bool // ... on 2025-11-25 (go-sdk decodes 2026-07-28 arguments)
			}
			modernMeta := `"` + metaProtocolVersion + `":"2026-07-28","` + metaClientCapabilities + `":{}`
			cases := []tc{
				{tool: "echo", args: `{"message":"ping"}`, id: "1", fast: true},
				{tool: "echo", args: `{}`, id: `"str-id"`, fast: true},
				{tool: "echo", args: `{"n":[1,2.5,-3e2,{"deep":{"x":null}}],"s":"é\u00e9\n<&>"}`, id: "7", fast: true},
				{tool: "meta", args: `{"a":1}`, meta: `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","custom":{"k":[1,"v",true],"n":12.5},"io.modelcontextprotocol/other":"x"`, id: "2", fast: true},
				{tool: "echo", args: `{}`, meta: `,"progressToken":"p1"`, id: "3"},
				// Hostile: a lone surrogate and escapes in _meta, an id
				// beyond int64, numbers at float64's ends, a null _meta
				// member, a name that is only a prefix.
				{tool: "meta", args: `{"z":"\ud800\u0000"}`, meta: `,"k\u00e9":"\ud800 \u2028","n":null,"deep":[[[[{"a":[]}]]]]`, id: "123456789012345678901234567890"}, // the walk leaves this one to go-sdk
				{tool: "meta", args: `{"x":1.7976931348623157e308,"y":-4.9e-324}`, id: "19", fastLegacy: true},
				{tool: "echo", args: `{"message":"ping"}`, meta: `,"progressToken":null`, id: `"p"`},
				// go-sdk's: its session carries progress
				{tool: "mix", args: `{}`, id: "4", fast: true},
				{tool: "small_structured", args: `{}`, id: "5", fast: true},
				{tool: "is_error", args: `{}`, id: "6", fast: true},
				{tool: "with_meta", args: `{}`, id: "8", fast: true},
				{tool: "empty", args: `{}`, id: "9", fast: true},
				{tool: "not_found", args: `{}`, id: "10", fast: true},
				{tool: "invalid", args: `{}`, id: "11", fast: true},
				{tool: "plain_error", args: `{}`, id: "12", fast: true},
				{tool: "rpcfail", args: `{}`, id: "13", fast: true},
				{tool: "toolarge", args: `{}`, id: "14", fast: true},
				{tool: "no_such_tool", args: `{}`, id: "15", fast: true},
				{tool: "big", args: `{}`, id: "16", fast: true}, // offloaded
				{tool: "structured", args: `{}`, id: "17", fast: true},
				{tool: "embedded", args: `{}`, id: "18", fast: true},
			}
			for _, version := range versions {
				modern := version == "2026-07-28"
				for _, c := range cases {
					name := prefix + c.tool
					meta := c.meta
					if modern {
						meta = "," + modernMeta + meta
					}
					params := `{"name":"` + name + `","arguments":` + c.args
					if meta != "" {
						params += `,"_meta":{` + meta[1:] + `}`
					}
					params += "}"
					body := []byte(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":` + params + `}`)
					what := fmt.Sprintf("%s %s %s", version, name, body)
					before := fast.Load()
					compareGatewayCall(t, what, fe.url, se.url, callHeaders(version, name), body)
					if took, want := fast.Load() != before, c.fast || c.fastLegacy && !modern; took != want {
						t.Fatalf("%s: fast path answered: %v, want %v", what, took, want)
					}
				}
				// An unreachable upstream: isError unavailable.
				fe.sessions.setDown("fs", true)
				se.sessions.setDown("fs", true)
				body := callBody("20", prefix+"echo", `{}`, modern)
				compareGatewayCall(t, version+" upstream down", fe.url, se.url, callHeaders(version, prefix+"echo"), body)
				fe.sessions.setDown("fs", false)
				se.sessions.setDown("fs", false)
			}
			if fast.Load() == 0 {
				t.Fatal("the fast path answered nothing")
			}
			// Not the gateway's: resourced's own read tool, and a call
			// without the read scope, which the front refuses.
			for _, version := range versions {
				body := callBody("30", "read_resource", `{"uri":"result://t1/nothing"}`, version == "2026-07-28")
				compareGatewayCall(t, version+" own tool", fe.url, se.url, callHeaders(version, "read_resource"), body)
				h := callHeaders(version, prefix+"echo")
				h.Set("X-No-Scope", "1")
				compareGatewayCall(t, version+" no scope", fe.url, se.url, h, callBody("31", prefix+"echo", `{}`, version == "2026-07-28"))
			}
		})
	}
}

// compareGatewayCall posts body to both gateways and requires the same
// status, Content-Type, Cache-Control and body bytes (go-sdk ends a
// JSON body with a newline, an event with two).
func compareGatewayCall(t *testing.T, what, fastURL, sdkURL string, hdr http.Header, body []byte) {
	t.Helper()
	fs, fh, fb := post(t, fastURL, hdr, body)
	ss, sh, sb := post(t, sdkURL, hdr, body)
	fb, sb = bytes.TrimRight(fb, "\n"), bytes.TrimRight(sb, "\n")
	if fs != ss || fh.Get("Content-Type") != sh.Get("Content-Type") || fh.Get("Cache-Control") != sh.Get("Cache-Control") || !bytes.Equal(fb, sb) {
		t.Fatalf("%s\nfast: %d %v %.2000s\nsdk:  %d %v %.2000s", what, fs, fh, fb, ss, sh, sb)
	}
}
