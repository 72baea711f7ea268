// Package mcpschema holds the official JSON Schemas of the MCP protocol
// versions resourced speaks, embedded in the binary, and validates JSON
// values against their definitions.
//
// The files are the specification's data, copied unchanged (see README.md
// for the commit). Nothing is fetched at run time: the schemas, and the
// JSON Schema 2020-12 meta-schemas the validator needs, are all embedded.
package mcpschema

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The protocol versions whose schemas are embedded.
const (
	V2025_11_25 = "2025-11-25"
	V2026_07_28 = "2026-07-28"
)

//go:embed 2025-11-25.json 2026-07-28.json
var files embed.FS

// Versions returns the protocol versions whose schemas are embedded,
// newest first.
func Versions() []string { return []string{V2026_07_28, V2025_11_25} }

// resultDefs maps a request method to the $defs entry its result must
// satisfy.
var resultDefs = map[string]string{
	"initialize":               "InitializeResult",
	"server/discover":          "DiscoverResult",
	"ping":                     "EmptyResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"resources/subscribe":      "EmptyResult",
	"resources/unsubscribe":    "EmptyResult",
	"prompts/list":             "ListPromptsResult",
	"prompts/get":              "GetPromptResult",
	"completion/complete":      "CompleteResult",
	"logging/setLevel":         "EmptyResult",
}

// ResultDef returns the name of the $defs entry that the result of method
// must satisfy, and whether the method is known.
func ResultDef(method string) (string, bool) {
	d, ok := resultDefs[method]
	return d, ok
}

// Has reports whether the schema of version defines def.
func Has(version, def string) bool {
	doc, err := document(version)
	if err != nil {
		return false
	}
	defs, _ := doc["$defs"].(map[string]any)
	_, ok := defs[def]
	return ok
}

// Validate checks instance, a decoded JSON value, against the $defs entry
// def of the official schema of protocol version. Decode instance with
// [Decode] (or encoding/json with UseNumber) so numbers keep their exact
// value. The error, if any, says every place where instance fails.
func Validate(version, def string, instance any) error {
	sch, err := compiled(version, def)
	if err != nil {
		return err
	}
	return sch.Validate(instance)
}

// ValidateJSON is [Validate] for raw JSON.
func ValidateJSON(version, def string, data []byte) error {
	v, err := Decode(data)
	if err != nil {
		return err
	}
	return Validate(version, def, v)
}

// Decode parses JSON into the generic form Validate expects: maps, slices,
// strings, bools, nil and json.Number.
func Decode(data []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// Compiled schemas are built on first use and kept: one compiler per
// version (a jsonschema.Compiler is not safe for concurrent use, hence the
// mutex) and one *jsonschema.Schema per definition (safe for concurrent
// validation).
var (
	mu        sync.Mutex
	compilers = map[string]*jsonschema.Compiler{}
	schemas   = map[string]*jsonschema.Schema{} // "<version>#<def>"
	docs      = map[string]map[string]any{}
)

func resourceURL(version string) string {
	return "https://schema.modelcontextprotocol.io/" + version + "/schema.json"
}

// document returns the parsed schema of version.
func document(version string) (map[string]any, error) {
	mu.Lock()
	defer mu.Unlock()
	return documentLocked(version)
}

func documentLocked(version string) (map[string]any, error) {
	if d, ok := docs[version]; ok {
		return d, nil
	}
	if !slices.Contains(Versions(), version) {
		return nil, fmt.Errorf("mcpschema: no schema for protocol version %q (have %v)", version, Versions())
	}
	b, err := files.ReadFile(version + ".json")
	if err != nil {
		return nil, fmt.Errorf("mcpschema: %w", err)
	}
	v, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("mcpschema: %s.json: %w", version, err)
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("mcpschema: %s.json is not an object", version)
	}
	docs[version] = d
	return d, nil
}

func compiled(version, def string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	key := version + "#" + def
	if s, ok := schemas[key]; ok {
		return s, nil
	}
	c, ok := compilers[version]
	if !ok {
		doc, err := documentLocked(version)
		if err != nil {
			return nil, err
		}
		c = jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noLoader{})
		if err := c.AddResource(resourceURL(version), doc); err != nil {
			return nil, fmt.Errorf("mcpschema: %s: %w", version, err)
		}
		compilers[version] = c
	}
	defs, _ := docs[version]["$defs"].(map[string]any)
	if _, ok := defs[def]; !ok {
		return nil, fmt.Errorf("mcpschema: the %s schema has no definition %q", version, def)
	}
	s, err := c.Compile(resourceURL(version) + "#/$defs/" + def)
	if err != nil {
		return nil, fmt.Errorf("mcpschema: compiling %s %s: %w", version, def, err)
	}
	schemas[key] = s
	return s, nil
}

// noLoader refuses every external reference: the embedded schemas are
// self-contained and validation never touches the network or the disk.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %s refused", url)
}

// CompileSchema compiles a JSON Schema found in the wild (a tool's
// inputSchema or outputSchema) as draft 2020-12 unless it names another
// draft with $schema. The schema is checked against its meta-schema;
// references outside the document are refused, never fetched.
func CompileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := Decode(schema)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const loc = "urn:mcpschema:tool-schema"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}
