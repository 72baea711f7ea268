package mcptool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The tools' JSON Schemas are generated from their argument and result
// structs (jsonschema.For), so a schema cannot drift from what the
// decoder accepts. The structs carry the whole contract in their tags:
//
//   - json: the property name; a field without omitempty is required.
//   - jsonschema: the property's description (go-sdk's convention).
//   - schema: further keywords, ';'-separated: minLength, maxLength,
//     minimum, maximum, maxItems, default (a JSON literal, else a string),
//     enum ('|'-separated strings), pattern, format, contentEncoding. A
//     number may be the name of a limit (the server's limit names), filled in from the
//     server's configuration when the tools are registered.
//
// Input schemas admit no unknown property, like DecodeArgs; output schemas
// stay open. An outputSchema is an anyOf of the success value and the
// failure value; a tool's own status value is set by toolDefs.

// durationSchema is the advertised schema of a duration argument
// (service.ParseDuration): an ISO-8601 string of weeks, days, hours,
// minutes and seconds. The parser still takes a JSON number of seconds,
// the form documented before, but the schema offers one type only: a
// type array ("type": ["string", "number"]) is refused or weakened by
// hosts that map schemas onto a single-type dialect (SchemaProblems).
var durationSchema = &jsonschema.Schema{
	Type:      "string",
	MinLength: jsonschema.Ptr(2),
	Pattern:   `^P(?:[0-9]+W)?(?:[0-9]+D)?(?:T(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?$`,
}

// anyValueSchema is the schema of a field that holds any JSON value
// (query_resource's values): anyOf branches of one type each, since a
// schema with no type at all constrains nothing and single-type dialects
// cannot hold a type array.
func anyValueSchema() []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
		out = append(out, &jsonschema.Schema{Type: t})
	}
	return out
}

// schemaOf generates the schema of values of type t, with the keywords of
// its schema tags and the limits filled in. It panics on a struct the
// generator cannot describe or a malformed tag: both are programming
// errors that every test run would hit.
func schemaOf(t reflect.Type, limits map[string]int, input bool) *jsonschema.Schema {
	sch, err := jsonschema.ForType(t, &jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{
			RawMessageType: durationSchema,
			// encoding/json writes []byte as a base64 string.
			reflect.TypeFor[[]byte](): {Type: "string", ContentEncoding: "base64"},
		},
	})
	if err != nil {
		panic(fmt.Sprintf("mcptool: schema of %v: %v", t, err))
	}
	refine(sch, t, limits, input)
	return sch
}

// refine walks the schema generated for t next to t: it drops the "null"
// jsonschema.For allows for pointers and slices (the decoder takes null
// as absent; the hand-written schemas before never offered it), opens
// output objects, and applies each field's schema tag.
func refine(sch *jsonschema.Schema, t reflect.Type, limits map[string]int, input bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if i := indexOf(sch.Types, "null"); i >= 0 {
		sch.Types = append(sch.Types[:i:i], sch.Types[i+1:]...)
		if len(sch.Types) == 1 {
			sch.Type, sch.Types = sch.Types[0], nil
		}
	}
	switch {
	case t == RawMessageType, t == reflect.TypeFor[[]byte]():
	case t.Kind() == reflect.Interface && sch.Type == "" && len(sch.Types) == 0 && len(sch.AnyOf) == 0:
		sch.AnyOf = anyValueSchema()
	case t.Kind() == reflect.Slice && sch.Items != nil:
		refine(sch.Items, t.Elem(), limits, input)
	case t.Kind() == reflect.Struct:
		if !input {
			sch.AdditionalProperties = nil
		}
		for _, f := range reflect.VisibleFields(t) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := sch.Properties[name]
			if f.Anonymous || p == nil {
				continue
			}
			refine(p, f.Type, limits, input)
			if tag, ok := f.Tag.Lookup("schema"); ok {
				applyTag(p, t.Name()+"."+f.Name, tag, limits)
			}
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// applyTag sets the keywords of one schema tag on p.
func applyTag(p *jsonschema.Schema, field, tag string, limits map[string]int) {
	for kv := range strings.SplitSeq(tag, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			panic(fmt.Sprintf("mcptool: schema tag of %s: %q has no value", field, kv))
		}
		num := func() int {
			if n, ok := limits[v]; ok {
				return n
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				panic(fmt.Sprintf("mcptool: schema tag of %s: %s=%q is neither a number nor a limit", field, k, v))
			}
			return n
		}
		switch k {
		case "minLength":
			p.MinLength = jsonschema.Ptr(num())
		case "maxLength":
			p.MaxLength = jsonschema.Ptr(num())
		case "maxItems":
			p.MaxItems = jsonschema.Ptr(num())
		case "minimum":
			p.Minimum = jsonschema.Ptr(float64(num()))
		case "maximum":
			p.Maximum = jsonschema.Ptr(float64(num()))
		case "default":
			if n, ok := limits[v]; ok {
				v = strconv.Itoa(n)
			}
			if json.Valid([]byte(v)) {
				p.Default = json.RawMessage(v)
			} else {
				p.Default, _ = json.Marshal(v)
			}
		case "enum":
			p.Enum = nil
			for e := range strings.SplitSeq(v, "|") {
				p.Enum = append(p.Enum, e)
			}
		case "pattern":
			p.Pattern = v
		case "format":
			p.Format = v
		case "contentEncoding":
			p.ContentEncoding = v
		default:
			panic(fmt.Sprintf("mcptool: schema tag of %s: unknown keyword %q", field, k))
		}
	}
}

// InputSchema is the inputSchema of the arguments of type T.
func InputSchema[T any](limits map[string]int) json.RawMessage {
	return mustMarshal(schemaOf(reflect.TypeFor[T](), limits, true))
}

// SuccessSchema is the schema of a success value of type T whose status
// is one of statuses, with extra required properties.
func SuccessSchema[T any](limits map[string]int, statuses []string, required ...string) *jsonschema.Schema {
	sch := schemaOf(reflect.TypeFor[T](), limits, false)
	if st := sch.Properties["status"]; st != nil {
		st.Type = ""
		if len(statuses) == 1 {
			c := any(statuses[0])
			st.Const = &c
		} else {
			st.Enum = nil
			for _, v := range statuses {
				st.Enum = append(st.Enum, v)
			}
		}
		required = append([]string{"status"}, required...)
	}
	for _, r := range required {
		if indexOf(sch.Required, r) < 0 {
			sch.Required = append(sch.Required, r)
		}
	}
	return sch
}

func mustMarshal(sch *jsonschema.Schema) json.RawMessage {
	b, err := json.Marshal(sch)
	if err != nil {
		panic(fmt.Sprintf("mcptool: marshalling a schema: %v", err))
	}
	return b
}

// OutputSchemaOf is the outputSchema of a generated success schema.
func OutputSchemaOf(success *jsonschema.Schema) json.RawMessage {
	return OutputSchema(string(mustMarshal(success)))
}
