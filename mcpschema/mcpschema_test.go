package mcpschema

import (
	"encoding/json"
	"sync"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		version, def, doc string
		ok                bool
	}{
		{V2026_07_28, "ReadResourceResult", `{"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[{"uri":"report://a/b","text":"x"}]}`, true},
		{V2026_07_28, "ReadResourceResult", `{"resultType":"complete","contents":[{"uri":"report://a/b","text":"x"}]}`, false},
		{V2026_07_28, "ReadResourceResult", `{"resultType":"complete","ttlMs":0,"cacheScope":"shared","contents":[]}`, false},
		{V2026_07_28, "ReadResourceResult", `{"resultType":"complete","ttlMs":-1,"cacheScope":"public","contents":[]}`, false},
		{V2025_11_25, "ReadResourceResult", `{"contents":[{"uri":"report://a/b","text":"x"}]}`, true},
		{V2025_11_25, "CallToolResult", `{"content":[{"type":"resource_link","name":"x"}]}`, false},
		{V2025_11_25, "CallToolResult", `{"content":[{"type":"resource_link","name":"x","uri":"report://a/b"}]}`, true},
		{V2025_11_25, "CallToolResult", `{"content":[],"structuredContent":[1]}`, false},
		{V2026_07_28, "CallToolResult", `{"resultType":"complete","content":[],"structuredContent":[1]}`, true},
		{V2025_11_25, "JSONRPCErrorResponse", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`, false},
		{V2025_11_25, "JSONRPCErrorResponse", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m","data":{"uri":"x"}}}`, true},
	}
	for _, tt := range tests {
		err := ValidateJSON(tt.version, tt.def, []byte(tt.doc))
		if (err == nil) != tt.ok {
			t.Errorf("ValidateJSON(%s, %s, %s) = %v, want ok=%v", tt.version, tt.def, tt.doc, err, tt.ok)
		}
	}
}

func TestUnknown(t *testing.T) {
	if err := Validate("2024-01-01", "Result", map[string]any{}); err == nil {
		t.Error("Validate of an unknown version succeeded")
	}
	if err := Validate(V2026_07_28, "NoSuchDef", map[string]any{}); err == nil {
		t.Error("Validate of an unknown definition succeeded")
	}
	if Has(V2026_07_28, "InitializeResult") {
		t.Error("2026-07-28 has InitializeResult; it replaced initialize with server/discover")
	}
	if !Has(V2026_07_28, "DiscoverResult") || !Has(V2025_11_25, "InitializeResult") {
		t.Error("Has misses a definition")
	}
}

func TestResultDefsExist(t *testing.T) {
	for m, d := range resultDefs {
		if !Has(V2026_07_28, d) && !Has(V2025_11_25, d) {
			t.Errorf("ResultDef(%q) = %q, in no embedded schema", m, d)
		}
	}
}

func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, v := range Versions() {
				if err := ValidateJSON(v, "JSONRPCErrorResponse", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestCompileSchema(t *testing.T) {
	sch, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"total":{"type":"integer"}},"required":["total"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, ok := range map[string]bool{`{"total":2}`: true, `{"total":"2"}`: false, `{}`: false} {
		v, _ := Decode([]byte(doc))
		if err := sch.Validate(v); (err == nil) != ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", doc, err, ok)
		}
	}
	for _, bad := range []string{
		`{"type":"objekt"}`,
		`{"$ref":"https://example.com/schema.json"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`not json`,
	} {
		if _, err := CompileSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("CompileSchema(%s) succeeded", bad)
		}
	}
}
