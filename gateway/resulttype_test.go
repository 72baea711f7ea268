package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
