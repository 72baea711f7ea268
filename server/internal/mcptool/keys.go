package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
)

// encoding/json matches object keys to struct fields case-insensitively,
// so {"Path": …} would fill path. Tool arguments are case-sensitive, as
// their inputSchemas say: exactKeys checks every object key of the
// arguments against the json names of the struct fields it would fill,
// walking the document without copying its values (a save carries up to
// the largest maxBytes of text).

// FieldNames returns the json names of t's fields, embedded structs
// flattened, with the type each decodes into.
func FieldNames(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldCache.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range FieldNames(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// requiredNames returns the json names of t's fields that a value must
// carry, in declaration order, embedded structs flattened: those whose
// json tag has no omitempty or omitzero, as the inputSchema's required
// lists them (schema.go).
func requiredNames(t reflect.Type) []string {
	if v, ok := requiredCache.Load(t); ok {
		return v.([]string)
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, requiredNames(f.Type)...)
			continue
		}
		if !f.IsExported() || name == "-" || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	requiredCache.Store(t, out)
	return out
}

var requiredCache sync.Map // reflect.Type → []string

var RawMessageType = reflect.TypeFor[json.RawMessage]()

// exactKeys reports the first key of data that is not exactly a field name
// of t (recursing into struct and slice fields), naming it by its path
// (hits[2].url). It assumes data is valid JSON and returns nil where the
// shapes disagree: the decoder reports those.
func exactKeys(data []byte, t reflect.Type, path string) *service.Failure {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || t == RawMessageType {
		return nil
	}
	var terr *service.Failure
	switch {
	case t.Kind() == reflect.Struct && data[0] == '{':
		fields := FieldNames(t)
		_ = jsonwire.Members(data, func(key string, v []byte) error {
			ft, ok := fields[key]
			if !ok {
				terr = unknownArgument(fields, path, key)
			} else {
				terr = exactKeys(v, ft, path+key+".")
			}
			if terr != nil {
				return terr
			}
			return nil
		})
	case t.Kind() == reflect.Slice && data[0] == '[':
		_ = jsonwire.Elements(data, func(n int, v []byte) error {
			if terr = exactKeys(v, t.Elem(), strings.TrimSuffix(path, ".")+"["+strconv.Itoa(n)+"]."); terr != nil {
				return terr
			}
			return nil
		})
	}
	return terr
}

// unknownArgument is the error for key, which is not among fields.
func unknownArgument(fields map[string]reflect.Type, path, key string) *service.Failure {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return service.InvalidField(path+key, "is not an argument of this tool; names are case-sensitive: did you mean "+strconv.Quote(name)+"?")
		}
	}
	msg := "is not an argument of this tool; see its inputSchema"
	switch {
	case key == "":
		key = `""`
	case len(key) > maxKeyEcho:
		// The field names the key as sent, cut: the error stays short
		// however long a name the caller sent.
		msg = fmt.Sprintf("is not an argument of this tool (a name of %d bytes, cut here); see its inputSchema", len(key))
		key = service.Truncate(key, maxKeyEcho)
	}
	return service.InvalidField(path+key, msg)
}

// maxKeyEcho is how many bytes of an unknown argument's name an error
// repeats.
const maxKeyEcho = 64
