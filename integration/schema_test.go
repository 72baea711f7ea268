package integration

import (
	"encoding/json"
	"testing"

	"github.com/resourced/resourced/mcpschema"
)

// validateResponse checks a raw JSON-RPC response body against the official
// schema of version: the envelope, and the result against its method's
// result type. 2026-07-28 results must also carry resultType "complete".
func validateResponse(t *testing.T, version, method string, body []byte) {
	t.Helper()
	inst, err := mcpschema.Decode(body)
	if err != nil {
		t.Fatalf("%s response is not JSON: %v\n%s", method, err, body)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	envDef := "JSONRPCResultResponse"
	if env.Error != nil {
		envDef = "JSONRPCErrorResponse"
	}
	check := func(def string, v any) {
		if err := mcpschema.Validate(version, def, v); err != nil {
			t.Errorf("%s response does not validate against %s %s: %v\n%s", method, version, def, err, truncateBytes(body, 2000))
		}
	}
	check(envDef, inst)
	if env.Error != nil {
		return
	}
	def, ok := mcpschema.ResultDef(method)
	if !ok {
		t.Fatalf("no result schema known for %s", method)
	}
	result := inst.(map[string]any)["result"]
	check(def, result)
	if version >= v2026 {
		if rt := result.(map[string]any)["resultType"]; rt != "complete" {
			t.Errorf("%s result has resultType %v, want \"complete\"", method, rt)
		}
	}
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], "…"...)
}

// TestSchemaValidatorRejects proves the validator can fail: a read result
// without ttlMs/cacheScope and a resource link without a uri must not pass.
func TestSchemaValidatorRejects(t *testing.T) {
	bad := []struct{ version, def, doc string }{
		{v2026, "ReadResourceResult", `{"resultType":"complete","contents":[{"uri":"report://a/b","text":"x"}]}`},
		{v2026, "ReadResourceResult", `{"resultType":"complete","ttlMs":0,"cacheScope":"shared","contents":[]}`},
		{v2025, "CallToolResult", `{"content":[{"type":"resource_link","name":"x"}]}`},
		{v2025, "JSONRPCErrorResponse", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`},
	}
	for _, b := range bad {
		if err := mcpschema.ValidateJSON(b.version, b.def, []byte(b.doc)); err == nil {
			t.Errorf("%s %s accepted %s", b.version, b.def, b.doc)
		}
	}
}
