package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigRows is a structuredContent value of about 100 KB.
func bigRows() map[string]any {
	rows := make([]any, 0, 2000)
	for i := 0; i < 2000; i++ {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("row-%04d", i), "note": "ünïcode and ascii, ascii and ünïcode"})
	}
	return map[string]any{"rows": rows, "total": len(rows)}
}

// goSDKUpstream serves, over Streamable HTTP on 127.0.0.1, a go-sdk MCP
// server with the tools the npm servers cannot produce:
//
//	schema_big   an outputSchema and a ~100 KB structuredContent (and its text copy)
//	plain_big    the same value with no outputSchema
//	rpc_error    a JSON-RPC error (-32602 with data) instead of a result
//	die          the connection is dropped in the middle of the call
func goSDKUpstream(t *testing.T) string {
	t.Helper()
	return goSDKUpstreamCancel(t, nil)
}

// goSDKUpstreamCancel is goSDKUpstream with one more tool, slow, which
// waits up to 30 s for its context to end and then sends on cancelled
// (when not nil).
func goSDKUpstreamCancel(t *testing.T, cancelled chan<- struct{}) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: &jsonschema.Schema{Type: "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			if cancelled != nil {
				cancelled <- struct{}{}
			}
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not cancelled"}}}, nil
		}
	})
	obj := &jsonschema.Schema{Type: "object"}
	out := &jsonschema.Schema{Type: "object", Required: []string{"rows", "total"}, Properties: map[string]*jsonschema.Schema{
		"rows":  {Type: "array", Items: &jsonschema.Schema{Type: "object", Required: []string{"id", "name"}}},
		"total": {Type: "integer"},
	}}
	result := func() *mcp.CallToolResult {
		v := bigRows()
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
	}
	s.AddTool(&mcp.Tool{Name: "schema_big", InputSchema: obj, OutputSchema: out}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return result(), nil
	})
	s.AddTool(&mcp.Tool{Name: "plain_big", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return result(), nil
	})
	s.AddTool(&mcp.Tool{Name: "rpc_error", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "upstream says: no such widget", Data: json.RawMessage(`{"widget":"w-42"}`)}
	})
	s.AddTool(&mcp.Tool{Name: "die", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "never seen"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"name":"die"`)) {
			// Dies mid-call: the request was read, no answer comes back.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestGatewayGoSDKUpstream covers, with a go-sdk upstream built here, what
// server-filesystem and server-everything cannot produce: a tool with an
// outputSchema and a large structuredContent keeps it inline and valid for
// the schema the caller got from tools/list (its text copy is offloaded);
// without a schema the structuredContent becomes a pointer whose URI reads
// back the same JSON; an upstream JSON-RPC error comes back unchanged; an
// upstream that dies mid-call gives isError "unavailable" with retrySafe,
// and the gateway keeps serving.
func TestGatewayGoSDKUpstream(t *testing.T) {
	up := goSDKUpstream(t)
	in := startGateway(t, true, fmt.Sprintf("gateway:\n  upstreams:\n    - name: gosdk\n      url: %s\n      callTimeout: 10s\n      required: false\n", up))
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
			defer cancel()
			cs := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", in.Token, v)
			schemas := map[string]*mcp.Tool{}
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				schemas[tool.Name] = tool
			}
			want := bigRows()
			wantJSON, _ := json.Marshal(want)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schema_big", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("schema_big: %v %+v", err, res)
			}
			// The listed schema admits both the upstream's value and the
			// pointer the gateway puts in its place (docs/gateway.md).
			validateOutput(t, schemas["schema_big"], want)
			validateOutput(t, schemas["schema_big"], res.StructuredContent)
			checkPointer(t, ctx, cs, "schema_big", res.StructuredContent, wantJSON)
			if links := resourceLinks(res); len(links) != 1 {
				t.Errorf("schema_big: its 100 KB text copy should be offloaded to one link, got %d", len(links))
			}

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain_big", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("plain_big: %v %+v", err, res)
			}
			if schemas["plain_big"].OutputSchema != nil {
				t.Errorf("plain_big has no outputSchema upstream; the gateway lists %v", schemas["plain_big"].OutputSchema)
			}
			checkPointer(t, ctx, cs, "plain_big", res.StructuredContent, wantJSON)
			var sc []byte

			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "rpc_error", Arguments: map[string]any{}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != "upstream says: no such widget" || !jsonSame(werr.Data, []byte(`{"widget":"w-42"}`)) {
				t.Errorf("rpc_error: %v, want the upstream's -32602 unchanged", err)
			}

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "die", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("die: JSON-RPC error %v, want an isError result", err)
			}
			sc, _ = json.Marshal(res.StructuredContent)
			var f struct {
				ErrorKind string `json:"errorKind"`
				RetrySafe *bool  `json:"retrySafe"`
			}
			json.Unmarshal(sc, &f)
			if !res.IsError || f.ErrorKind != "unavailable" || f.RetrySafe == nil || !*f.RetrySafe {
				t.Errorf("die: isError %v structuredContent %s, want errorKind unavailable and retrySafe true", res.IsError, sc)
			}
			// And the gateway still serves the upstream afterwards.
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schema_big", Arguments: map[string]any{}}); err != nil {
				t.Errorf("schema_big after die: %v", err)
			}
		})
	}
}

// validateOutput validates structured against the outputSchema of tool as
// the caller got it in tools/list.
func validateOutput(t *testing.T, tool *mcp.Tool, structured any) {
	t.Helper()
	if tool == nil || tool.OutputSchema == nil {
		t.Fatalf("tool %v lists no outputSchema", tool)
	}
	b, _ := json.Marshal(tool.OutputSchema)
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the listed outputSchema: %v", err)
	}
	v, _ := json.Marshal(structured)
	var inst any
	json.Unmarshal(v, &inst)
	if err := rs.Validate(inst); err != nil {
		t.Errorf("structuredContent does not validate against the listed outputSchema: %v", err)
	}
}

func resourceLinks(res *mcp.CallToolResult) []*mcp.ResourceLink {
	var out []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			out = append(out, l)
		}
	}
	return out
}

// jsonSame reports whether a and b are the same JSON value.
func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return jsonEqual(x, y)
}

// checkPointer checks that structured is the gateway's pointer to an
// offloaded structuredContent and that its URI reads back want (the same
// JSON value), with the pointer's size and sha256.
func checkPointer(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, structured any, want []byte) {
	t.Helper()
	var ptr struct {
		Resourced struct {
			URI      string `json:"uri"`
			Size     int64  `json:"size"`
			SHA256   string `json:"sha256"`
			MIMEType string `json:"mimeType"`
		} `json:"resourced"`
	}
	sc, _ := json.Marshal(structured)
	if err := json.Unmarshal(sc, &ptr); err != nil || ptr.Resourced.URI == "" || ptr.Resourced.MIMEType != "application/json" {
		t.Errorf("%s: structuredContent is not the resourced pointer: %.300s", tool, sc)
		return
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ptr.Resourced.URI})
	if err != nil || len(rr.Contents) != 1 {
		t.Errorf("%s: reading the structuredContent pointer %s: %v", tool, ptr.Resourced.URI, err)
		return
	}
	body := []byte(rr.Contents[0].Text)
	sum := sha256.Sum256(body)
	if !jsonSame(body, want) || int64(len(body)) != ptr.Resourced.Size || hex.EncodeToString(sum[:]) != ptr.Resourced.SHA256 {
		t.Errorf("%s: the pointer's body (%d bytes) is not the structuredContent, or size/sha256 differ: %+v", tool, len(body), ptr.Resourced)
	}
}

// TestGatewayCancel: a caller that gives up on a call (its request ends)
// gets the call cancelled upstream: the go-sdk upstream's handler sees its
// context end within seconds, not after its 30 s.
func TestGatewayCancel(t *testing.T) {
	cancelled := make(chan struct{}, 4)
	up := goSDKUpstreamCancel(t, cancelled)
	in := startGateway(t, true, fmt.Sprintf("gateway:\n  upstreams:\n    - name: gosdk\n      url: %s\n", up))
	for _, v := range versions {
		cs := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", in.Token, v)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		cancel()
		if err == nil {
			t.Fatalf("%s: slow answered before the caller gave up", v)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the upstream call was not cancelled within 10 s of the caller giving up", v)
		}
	}
}
