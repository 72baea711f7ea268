package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/toolapi"
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
//     number may be the name of a limit (schemaLimits), filled in from the
//     server's configuration when the tools are registered.
//
// Input schemas admit no unknown property, like decodeArgs; output schemas
// stay open. An outputSchema is an anyOf of the success value and the
// failure value; a tool's own status value is set by toolDefs.

// failureSchema is the failure value of every tool (toolError); it is
// mcptool's, which the fixtures share.
const failureSchema = mcptool.FailureSchema

// schemaLimits are the limit names a schema tag may use.
func (s *Server) schemaLimits() map[string]int {
	return map[string]int{
		"maxHits":             s.limits.MaxHits,
		"maxTitleBytes":       s.limits.MaxTitleBytes,
		"maxDescriptionBytes": s.limits.MaxDescriptionBytes,
		"maxPathBytes":        s.limits.MaxPathBytes,
		"maxListLimit":        service.MaxListLimit,
		"defaultListLimit":    service.DefaultListLimit,
	}
}

// durationSchema is the advertised schema of a duration argument
// (service.ParseDuration): an ISO-8601 string of weeks, days, hours,
// minutes and seconds. The parser still takes a JSON number of seconds,
// the form documented before, but the schema offers one type only: a
// type array ("type": ["string", "number"]) is refused or weakened by
// hosts that map schemas onto a single-type dialect (mcptool.SchemaProblems).
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
			mcptool.RawMessageType: durationSchema,
			// encoding/json writes []byte as a base64 string.
			reflect.TypeFor[[]byte](): {Type: "string", ContentEncoding: "base64"},
		},
	})
	if err != nil {
		panic(fmt.Sprintf("server: schema of %v: %v", t, err))
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
	case t == mcptool.RawMessageType, t == reflect.TypeFor[[]byte]():
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
			panic(fmt.Sprintf("server: schema tag of %s: %q has no value", field, kv))
		}
		num := func() int {
			if n, ok := limits[v]; ok {
				return n
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				panic(fmt.Sprintf("server: schema tag of %s: %s=%q is neither a number nor a limit", field, k, v))
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
			panic(fmt.Sprintf("server: schema tag of %s: unknown keyword %q", field, k))
		}
	}
}

// inputSchemaOf is the inputSchema of the arguments of type T.
func inputSchemaOf[T any](limits map[string]int) json.RawMessage {
	return mustMarshal(schemaOf(reflect.TypeFor[T](), limits, true))
}

// successSchema is the schema of a success value of type T whose status
// is one of statuses, with extra required properties.
func successSchema[T any](limits map[string]int, statuses []string, required ...string) *jsonschema.Schema {
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
		panic(fmt.Sprintf("server: marshalling a schema: %v", err))
	}
	return b
}

// outputSchemaOf is outputSchema of a generated success schema.
func outputSchemaOf(success *jsonschema.Schema) json.RawMessage {
	return mcptool.OutputSchema(string(mustMarshal(success)))
}

type toolDef struct {
	tool  *mcp.Tool
	scope string
	fn    toolFunc
}

func (s *Server) toolDefs() []toolDef {
	lim := s.schemaLimits()
	boolp := func(b bool) *bool { return &b }
	list := successSchema[toolapi.ListResult](lim, []string{"ok"})
	delete(list.Properties["items"].Items.Properties, "status") // items carry no status
	return append([]toolDef{
		{
			scope: auth.ScopeWrite,
			fn:    savedTool(s, (*service.Service).SaveSnapshot),
			tool: &mcp.Tool{
				Name:  "save_search_snapshot",
				Title: "Save a search result snapshot",
				Description: "Stores search hits as an immutable JSON snapshot {query,total,hits} and returns a resource_link to it. " +
					"Return that link instead of the hits when they are too large to inline; the client reads it with resources/read.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(false), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchemaOf[toolapi.SearchSnapshotArgs](lim),
				OutputSchema: outputSchemaOf(successSchema[toolapi.Metadata](lim, []string{"created"}, "total", "expiresAt")),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    savedTool(s, (*service.Service).SaveReport),
			tool: &mcp.Tool{
				Name:  "save_report",
				Title: "Save a report",
				Description: "Stores a report (text or binary) at a path you choose and returns a resource_link to it. " +
					"Create-only by default; to replace pass ifMatch with the current sha256, or overwrite: true.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: false, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchemaOf[toolapi.ReportArgs](lim),
				OutputSchema: outputSchemaOf(successSchema[toolapi.Metadata](lim, []string{"created", "replaced"}, "expiresAt")),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    savedTool(s, (*service.Service).StatResource),
			tool: &mcp.Tool{
				Name:         "stat_resource",
				Title:        "Describe a stored resource",
				Description:  "Returns the metadata of a resource (size, sha256, dates, visibility) without its body.",
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchemaOf[toolapi.StatArgs](lim),
				OutputSchema: outputSchemaOf(successSchema[toolapi.Metadata](lim, []string{"found"})),
			},
		},
		{
			scope: auth.ScopeRead,
			fn:    tool(s.listTool),
			tool: &mcp.Tool{
				Name:  "list_resources",
				Title: "List your stored resources",
				Description: "Lists all of your resources, listed or not, in URI order, with metadata and a resource_link each. " +
					"Page with nextCursor.",
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchemaOf[toolapi.ListArgs](lim),
				OutputSchema: outputSchemaOf(list),
			},
		},
		{
			scope: auth.ScopeWrite,
			fn:    valueTool(s, (*service.Service).Delete),
			tool: &mcp.Tool{
				Name:         "delete_resource",
				Title:        "Delete a stored resource",
				Description:  "Deletes one of your resources; with ifMatch only if its body still has that sha256.",
				Annotations:  &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
				InputSchema:  inputSchemaOf[toolapi.DeleteArgs](lim),
				OutputSchema: outputSchemaOf(successSchema[toolapi.DeleteResult](lim, []string{"deleted"})),
			},
		},
		s.readResourceToolDef(lim),
	}, s.searchToolDefs(lim)...)
}
