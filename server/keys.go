package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// encoding/json matches object keys to struct fields case-insensitively,
// so {"Path": …} would fill path. Tool arguments are case-sensitive, as
// their inputSchemas say: exactKeys checks every object key of the
// arguments against the json names of the struct fields it would fill,
// walking the document without copying its values (a save carries up to
// the largest maxBytes of text).

// fieldNames returns the json names of t's fields, embedded structs
// flattened, with the type each decodes into.
func fieldNames(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldCache.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range fieldNames(f.Type) {
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

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// exactKeys reports the first key of data that is not exactly a field name
// of t (recursing into struct and slice fields), naming it by its path
// (hits[2].url). It assumes data is valid JSON and returns nil where the
// shapes disagree: the decoder reports those.
func exactKeys(data []byte, t reflect.Type, path string) *toolError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || t == rawMessageType {
		return nil
	}
	var terr *toolError
	switch {
	case t.Kind() == reflect.Struct && data[0] == '{':
		fields := fieldNames(t)
		_ = members(data, func(key string, v []byte) error {
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
		_ = elements(data, func(n int, v []byte) error {
			if terr = exactKeys(v, t.Elem(), strings.TrimSuffix(path, ".")+"["+strconv.Itoa(n)+"]."); terr != nil {
				return terr
			}
			return nil
		})
	}
	return terr
}

// unknownArgument is the error for key, which is not among fields.
func unknownArgument(fields map[string]reflect.Type, path, key string) *toolError {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return invalidField(path+key, "is not an argument of this tool; names are case-sensitive: did you mean "+strconv.Quote(name)+"?")
		}
	}
	if key == "" {
		key = `""`
	}
	return invalidField(path+key, "is not an argument of this tool; see its inputSchema")
}

// members calls f with each member of the JSON object data: its exact
// name and its value. It stops at f's first error, and returns errParse
// for a malformed object; data that is not an object is no error (the
// decoder reports it).
func members(data []byte, f func(name string, value []byte) error) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	i := 1
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == '}' {
			return nil
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipValue(data, i)
		if end < 0 || data[i] != '"' {
			return errParse
		}
		name, ok := jsonString(data[i:end])
		if !ok {
			return errParse
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return errParse
		}
		vstart := skipSpace(data, i+1)
		vend := skipValue(data, vstart)
		if vend < 0 {
			return errParse
		}
		if err := f(name, data[vstart:vend]); err != nil {
			return err
		}
		i = vend
	}
}

// jsonString returns the JSON string raw decoded; ok is false when raw is
// not a string. Strings without escapes (nearly all names) are sliced,
// not decoded.
func jsonString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// elements calls f with each element of the JSON array data, like members.
func elements(data []byte, f func(i int, value []byte) error) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '[' {
		return nil
	}
	i, n := 1, 0
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == ']' {
			return nil
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipValue(data, i)
		if end < 0 {
			return errParse
		}
		if err := f(n, data[i:end]); err != nil {
			return err
		}
		i, n = end, n+1
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at data[i], or -1.
// Nesting is counted, not recursed, so deep documents cannot exhaust the
// stack.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				if i = skipString(data, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // number, true, false, null
		for i < len(data) && !strings.ContainsRune(" \t\r\n,}]:", rune(data[i])) {
			i++
		}
		return i
	}
}

// skipString returns the end of the JSON string starting at data[i], or -1.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
