package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
)

func TestResultTypeFollowsTheCallersProtocol(t *testing.T) {
	modern := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Meta: mcp.Meta{protocolVersionKey: "2026-07-28"}}}
	legacy := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}
	wire := func(r mcp.Result) string {
		t.Helper()
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plain := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}
	got, err := completed(modern)(plain, nil)
	if err != nil || !strings.Contains(wire(got), `"resultType":"complete"`) || !strings.Contains(wire(got), `"text":"hi"`) {
		t.Fatalf("modern caller: %s, %v; want the content with resultType complete", wire(got), err)
	}
	var pending mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"input_required"}`), &pending); err != nil {
		t.Fatal(err)
	}
	if got, _ := completed(modern)(&pending, nil); !strings.Contains(wire(got), `"resultType":"input_required"`) {
		t.Fatalf("an upstream's input_required became %s", wire(got))
	}
	if got, _ := completed(legacy)(&pending, nil); strings.Contains(wire(got), "resultType") {
		t.Fatalf("a 2025-11-25 caller got %s, with a resultType its protocol has not", wire(got))
	}
	// A nested "resultType" (a tool's own structured value) is not the result's.
	nested := &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"resultType": "mine"}}
	if got, _ := completed(modern)(nested, nil); !strings.Contains(wire(got), `"resultType":"complete"`) || !strings.Contains(wire(got), `"resultType":"mine"`) {
		t.Fatalf("a result with a nested resultType became %s", wire(got))
	}
	for _, r := range []mcp.Result{&mcp.GetPromptResult{}, &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "a://b", Text: "t"}}}} {
		if got, _ := completed(modern)(r, nil); !strings.Contains(wire(got), `"resultType":"complete"`) {
			t.Fatalf("%T for a modern caller: %s", r, wire(got))
		}
	}
}

// TestResultTypeMatchesRoundTrip: withResultType answers what the first
// design (the result through its JSON and back) answered, for results as
// an upstream's answer decodes (the same bytes) and as the front builds
// them (the same JSON; a Go struct's fields keep their order now).
func TestResultTypeMatchesRoundTrip(t *testing.T) {
	modern := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Meta: mcp.Meta{protocolVersionKey: "2026-07-28"}}}
	legacy := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}
	decoded := map[string]func() mcp.Result{
		"call":   func() mcp.Result { return new(mcp.CallToolResult) },
		"prompt": func() mcp.Result { return new(mcp.GetPromptResult) },
		"read":   func() mcp.Result { return new(mcp.ReadResourceResult) },
	}
	wires := map[string][]string{
		"call": {
			`{"content":[{"type":"text","text":"hi <&> é"}]}`,
			`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`,
			`{"content":[],"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}}}`,
			`{"_meta":{"z":1,"a":{"b":[1,2.5]}},"content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"},{"type":"resource_link","uri":"file:///a","name":"a","size":12},{"type":"resource","resource":{"uri":"file:///b","mimeType":"text/plain","text":"t"}}],"structuredContent":{"z":[1,"two",null,true],"a":{"resultType":"mine"}},"isError":true}`,
			`{"content":[],"structuredContent":{"n":1e21,"m":-0.000001,"s":"\u2028"},"resultType":"odd"}`,
		},
		"prompt": {
			`{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}]}`,
			`{"description":"d","messages":[],"resultType":"complete"}`,
		},
		"read": {
			`{"contents":[{"uri":"a://b","text":"t"}]}`,
			`{"contents":[{"uri":"a://b","blob":"AAE="}],"resultType":"complete","_meta":{"k":"v"}}`,
		},
	}
	for kind, list := range wires {
		for _, w := range list {
			for _, req := range []mcp.Request{modern, legacy} {
				a, b := decoded[kind](), decoded[kind]()
				if err := json.Unmarshal([]byte(w), a); err != nil {
					t.Fatalf("%s: %v", w, err)
				}
				if err := json.Unmarshal([]byte(w), b); err != nil {
					t.Fatal(err)
				}
				got, err := withResultType(req, a, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := roundTripResultType(req, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(want)
				if !bytes.Equal(gb, wb) {
					t.Errorf("%s, %s caller:\n got %s\nwant %s", w, modernName(req), gb, wb)
				}
			}
		}
	}
	// Results the front builds: a rendered failure (a struct) and an
	// offloaded part's pointer (maps).
	built := []*mcp.CallToolResult{
		{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "unavailable: x"}}, StructuredContent: service.Fail(service.KindUnavailable, "x")},
		{Content: []mcp.Content{&mcp.TextContent{Text: "note"}}, StructuredContent: map[string]any{"resourced": map[string]any{"uri": "result://t/a", "size": int64(3), "sha256": "ab", "mimeType": "application/json"}}},
	}
	for _, r := range built {
		for _, req := range []mcp.Request{modern, legacy} {
			got, err := withResultType(req, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := roundTripResultType(req, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonValue(t, got), jsonValue(t, want); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s caller:\n got %v\nwant %v", modernName(req), g, w)
			}
		}
	}
}

func modernName(req mcp.Request) string {
	if modernRequest(req) {
		return "2026-07-28"
	}
	return "2025-11-25"
}

// jsonValue is r's JSON decoded (maps print sorted).
func jsonValue(t *testing.T, r mcp.Result) any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// roundTripResultType is the first design of withResultType, the result
// through its JSON and back: the oracle of TestResultTypeMatchesRoundTrip.
func roundTripResultType(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
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
