package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// callRaw sends tools/call with args as raw bytes (which may hold invalid
// UTF-8) speaking 2025-11-25, and returns the result and the JSON-RPC error.
func (e *linkEnv) callRaw(t *testing.T, tool string, args []byte) (map[string]any, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	body.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`)
	name, _ := json.Marshal(tool)
	body.Write(name)
	body.WriteString(`,"arguments":`)
	body.Write(args)
	body.WriteString(`}}`)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", &body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: HTTP %d, not JSON: %s", tool, resp.StatusCode, b)
	}
	return env.Result, env.Error
}

// structured returns the structuredContent of a tool result.
func structured(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("result without structuredContent: %v", res)
	}
	return sc
}
