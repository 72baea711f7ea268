package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// resultDefs maps a method to the $defs entry its result must satisfy.
var resultDefs = map[string]string{
	"initialize":               "InitializeResult",
	"server/discover":          "DiscoverResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"prompts/list":             "ListPromptsResult",
	"ping":                     "EmptyResult",
}

type schemaSet struct {
	once    sync.Once
	err     error
	schemas map[string]*jsonschema.Schema // "<version>#<def>"
}

var schemas schemaSet

func (s *schemaSet) get(version, def string) (*jsonschema.Schema, error) {
	s.once.Do(func() {
		s.schemas = map[string]*jsonschema.Schema{}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		for _, v := range versions {
			f, err := os.ReadFile("testdata/mcp-schema/" + v + ".json")
			if err != nil {
				s.err = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(f))
			if err != nil {
				s.err = err
				return
			}
			if err := c.AddResource("https://mcp.test/"+v+".json", doc); err != nil {
				s.err = err
				return
			}
		}
		for _, v := range versions {
			for _, d := range append([]string{"JSONRPCResultResponse", "JSONRPCErrorResponse"}, values(resultDefs)...) {
				sch, err := c.Compile("https://mcp.test/" + v + ".json#/$defs/" + d)
				if err != nil {
					continue // a def this version does not have
				}
				s.schemas[v+"#"+d] = sch
			}
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	sch, ok := s.schemas[version+"#"+def]
	if !ok {
		return nil, fmt.Errorf("no schema %s in %s", def, version)
	}
	return sch, nil
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// validateResponse checks a raw JSON-RPC response body against the official
// schema of version: the envelope, and the result against its method's
// result type. 2026-07-28 results must also carry resultType "complete".
func validateResponse(t *testing.T, version, method string, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
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
		sch, err := schemas.get(version, def)
		if err != nil {
			t.Fatalf("schema: %v", err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s response does not validate against %s %s: %v\n%s", method, version, def, err, truncateBytes(body, 2000))
		}
	}
	check(envDef, inst)
	if env.Error != nil {
		return
	}
	def, ok := resultDefs[method]
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
		sch, err := schemas.get(b.version, b.def)
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(b.doc)))
		if err := sch.Validate(inst); err == nil {
			t.Errorf("%s %s accepted %s", b.version, b.def, b.doc)
		}
	}
}
