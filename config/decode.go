package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkDocument walks the parsed document root against the type of
// Config before it is decoded, so that every problem names its key path:
// an unknown key ("store.bbolt.pth: unknown key; did you mean path?") and a
// value of the wrong kind ("limits.maxHits: want an integer, got "lots"").
// go-yaml's own errors name only a line and Go types ("cannot unmarshal
// !!str `lots` into int", "field pth not found in type config.Bbolt").
// Every problem is reported, in document order; nil when there is none.
func checkDocument(root *yaml.Node) error {
	if root == nil || len(root.Content) == 0 {
		return nil
	}
	var p problems
	checkNode(root.Content[0], reflect.TypeFor[Config](), "", &p)
	return errors.Join(p...)
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// checkNode checks n as a value of type t at path.
func checkNode(n *yaml.Node, t reflect.Type, path string, p *problems) {
	n = deref(n)
	if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // null is every type's zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// The type decodes itself (Duration, Size, HeaderValue,
		// ToolOffload): keys first where it is a mapping of tagged
		// fields, then its own rules.
		if t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode && allTagged(t) {
			if !checkKeys(n, t, path, p) {
				return
			}
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			p.at(n, path, kindError(err, n, t))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			p.at(n, path, "want a mapping of keys, got "+describeNode(n))
			return
		}
		checkKeys(n, t, path, p)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.at(n, path, "want a mapping, got "+describeNode(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkNode(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), p)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.at(n, path, "want a list, got "+describeNode(n))
			return
		}
		for i, e := range n.Content {
			checkNode(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), p)
		}
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			p.at(n, path, kindError(err, n, t))
		}
	}
}

// checkKeys checks the keys of the mapping n against the fields of the
// struct t and recurses into the known ones; false when a key is unknown.
func checkKeys(n *yaml.Node, t reflect.Type, path string, p *problems) bool {
	fields := yamlFields(t)
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, known := fields[k.Value]
		if !known {
			ok = false
			p.at(k, join(path, k.Value), unknownKey(k.Value, path, fields))
			continue
		}
		checkNode(v, f.Type, join(path, k.Value), p)
	}
	return ok
}

// at records a problem of the node n at path: "line 3: limits.maxHits: ...".
func (p *problems) at(n *yaml.Node, path, msg string) {
	if path == "" {
		path = "(top level)"
	}
	*p = append(*p, fmt.Errorf("line %d: %s: %s", n.Line, path, msg))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the YAML key of every decoded field of t to it.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name) // go-yaml's default key
		}
		out[name] = f
	}
	return out
}

func allTagged(t reflect.Type) bool {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("yaml") == "" {
			return false
		}
	}
	return true
}

// unknownKey says what is wrong with key in the section at path: the
// closest known key when there is one, else the known keys.
func unknownKey(key, path string, fields map[string]reflect.StructField) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	if s := closest(key, names); s != "" {
		return fmt.Sprintf("unknown key; did you mean %s?", s)
	}
	where := "here"
	if path != "" {
		where = "under " + path
	}
	if len(names) > 12 {
		return "unknown key (every key is in configs/resourced.example.yaml)"
	}
	return fmt.Sprintf("unknown key; %s: %s", where, strings.Join(names, ", "))
}

// closest is the name nearest to key (the same but for case, or within an
// edit distance of a third of its length, at least 2), or "".
func closest(key string, names []string) string {
	best, bestD := "", 0
	for _, name := range names {
		if strings.EqualFold(name, key) {
			return name
		}
		d := editDistance(strings.ToLower(key), strings.ToLower(name))
		if limit := max(2, len(name)/3); d <= limit && (best == "" || d < bestD) {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var lineRE = regexp.MustCompile(`^line \d+: `)

// kindError is the message of err, the failed decoding of n as t: a type's
// own message without its line (at adds one), or for go-yaml's type errors
// what was wanted and what was there, in words rather than Go types.
func kindError(err error, n *yaml.Node, t reflect.Type) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return lineRE.ReplaceAllString(err.Error(), "")
	}
	return "want " + describeType(t) + ", got " + describeNode(n)
}

// describeType names what a value of t is written as.
func describeType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration (e.g. 30s, 1h)"
	case reflect.TypeFor[Size]():
		return "a size (e.g. 1048576, 64KiB, 16MiB)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "another value"
}

// describeNode says what n is: a scalar quoted (at most 40 bytes of it), a
// list or a mapping.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}
