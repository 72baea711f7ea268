package mcptool

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// SchemaProblems lists what makes a tool schema unportable, one line per
// problem naming its JSON path: the rules of the MCP Inspector CLI's
// --strict lint (scripts/inspector-strict.sh runs the real one), so that
// `go test` catches a regression without Node. A host that maps tool
// schemas onto a single-type dialect (the OpenAPI subset of Gemini
// function declarations, for one) refuses or silently weakens:
//
//   - a `type` that is an array ("type": ["string", "number"]): use one
//     type, or anyOf branches of one type each;
//   - a $ref outside the document;
//   - a schema that constrains nothing ({} or only a description),
//     except under `not`;
//   - a bare true or false where a schema object is expected.
//
// It returns an error only when raw is not JSON.
func SchemaProblems(raw []byte) ([]string, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("mcptool: schema is not JSON: %w", err)
	}
	var out []string
	lintSchema(doc, "", "", 0, &out)
	return out, nil
}

// Keywords whose values are schemas, by shape.
var (
	schemaMapKeywords   = []string{"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaKeywords      = []string{"items", "contains", "not", "propertyNames", "if", "then", "else",
		"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"}
	// booleanKeywords may hold true or false instead of a schema.
	booleanKeywords = map[string]bool{"additionalProperties": true, "unevaluatedProperties": true,
		"additionalItems": true, "unevaluatedItems": true, "items": true}
	// constraining are the keywords that make a schema refuse something.
	constraining = keywordSet(`type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum
		maxLength minLength pattern format contentMediaType contentEncoding contentSchema maxItems minItems uniqueItems
		maxContains minContains maxProperties minProperties required dependentRequired allOf anyOf oneOf not
		items prefixItems contains additionalItems unevaluatedItems properties patternProperties additionalProperties
		unevaluatedProperties propertyNames dependentSchemas dependencies $ref $dynamicRef $recursiveRef`)
)

func keywordSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, k := range strings.Fields(list) {
		set[k] = true
	}
	return set
}

func lintSchema(node any, path, keyword string, depth int, out *[]string) {
	if depth > 64 {
		return
	}
	at := path
	if at == "" {
		at = "(root)"
	}
	switch n := node.(type) {
	case bool:
		if !booleanKeywords[keyword] {
			*out = append(*out, fmt.Sprintf("%s: bare %v where a schema object is expected", at, n))
		}
		return
	case map[string]any:
		if t, ok := n["type"].([]any); ok {
			*out = append(*out, fmt.Sprintf("%s: type is an array %v (a union of types); use one type or anyOf branches", at, t))
		}
		if ref, ok := n["$ref"].(string); ok && ref != "" && !strings.HasPrefix(ref, "#") {
			*out = append(*out, fmt.Sprintf("%s: $ref %q points outside the document", at, ref))
		}
		constrains := false
		for k := range n {
			constrains = constrains || constraining[k]
		}
		_, hasIf := n["if"]
		_, hasThen := n["then"]
		_, hasElse := n["else"]
		constrains = constrains || hasIf && (hasThen || hasElse)
		if !constrains && keyword != "not" {
			*out = append(*out, fmt.Sprintf("%s: the schema constrains nothing (it accepts any value); say what the value is", at))
		}
		child := func(k string) string {
			if path == "" {
				return k
			}
			return path + "." + k
		}
		for _, k := range schemaMapKeywords {
			m, _ := n[k].(map[string]any)
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				lintSchema(m[name], child(k+"."+name), k, depth+1, out)
			}
		}
		for _, k := range schemaArrayKeywords {
			a, _ := n[k].([]any)
			for i, sub := range a {
				lintSchema(sub, fmt.Sprintf("%s[%d]", child(k), i), k, depth+1, out)
			}
		}
		for _, k := range schemaKeywords {
			v, ok := n[k]
			if !ok {
				continue
			}
			if a, isArray := v.([]any); isArray && k == "items" {
				for i, sub := range a {
					lintSchema(sub, fmt.Sprintf("%s[%d]", child(k), i), k, depth+1, out)
				}
				continue
			}
			lintSchema(v, child(k), k, depth+1, out)
		}
	}
}
