package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
)

// DecodeArgs decodes tool arguments strictly into v (a pointer to an
// argument struct). Every failure is a validation_error that names the
// argument by its JSON path (hits[3].url) and the JSON type it must have,
// never a Go type, so a model can correct its call:
//
//   - not one JSON object, unknown fields (exactKeys, keys.go);
//   - strings that are not valid UTF-8, or hold an unpaired UTF-16
//     surrogate escape: encoding/json would turn both into U+FFFD and
//     store a body the caller did not send, so they are found in the raw
//     arguments first (a \ufffd the caller wrote is a character like any
//     other);
//   - values of the wrong JSON type, or integers out of range (argError);
//   - a member of an object inside the arguments (a hit) that its
//     inputSchema requires, missing or null (requiredMembers). The
//     required arguments themselves are checked by the service, whose
//     messages say what to send.
func DecodeArgs(raw json.RawMessage, v any) *service.Failure {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if !json.Valid(raw) {
		return service.Fail(service.KindValidation, "arguments are not valid JSON for this tool: send one JSON object")
	}
	if raw[0] != '{' {
		return service.Fail(service.KindValidation, "arguments must be a JSON object")
	}
	t := reflect.TypeOf(v)
	if terr := exactKeys(raw, t, ""); terr != nil {
		return terr
	}
	if !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\ud`)) || bytes.Contains(raw, []byte(`\uD`)) {
		if terr := argError(raw, t, ""); terr != nil {
			return terr
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if terr := argError(raw, t, ""); terr != nil {
			return terr
		}
		// Not expected: argError checks what the decoder does. Its text
		// names Go types, so it is not sent.
		return service.Fail(service.KindValidation, "arguments do not match this tool's inputSchema")
	}
	if hasNestedStruct(t.Elem()) {
		return requiredMembers(raw, t, "")
	}
	return nil
}

// requiredMembers returns the first member of an object below the top
// of data (a value of type t, already decoded) that is required (its json
// tag has no omitempty, so the inputSchema lists it in required) but
// missing or null, named by its path (hits[0].title). encoding/json would
// leave it "", storing a value the caller did not send.
func requiredMembers(data []byte, t reflect.Type, path string) *service.Failure {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	var terr *service.Failure
	switch {
	case t.Kind() == reflect.Struct && data[0] == '{':
		fields := FieldNames(t)
		seen := map[string]bool{}
		_ = jsonwire.Members(data, func(key string, v []byte) error {
			ft, ok := fields[key]
			if !ok {
				return nil
			}
			name := key
			if path != "" {
				name = path + "." + key
			}
			if string(bytes.TrimSpace(v)) != "null" {
				seen[key] = true
			} else if path != "" && slices.Contains(requiredNames(t), key) {
				terr = service.InvalidField(name, "must be "+DescribeType(ft)+", not null")
				return terr
			}
			if hasNestedStruct(ft) || isStruct(ft) {
				terr = requiredMembers(v, ft, name)
			}
			return terrOrNil(terr)
		})
		if terr == nil && path != "" {
			for _, key := range requiredNames(t) {
				if !seen[key] {
					return service.InvalidField(path+"."+key, "is required: "+DescribeType(fields[key])+" (its inputSchema lists it in required)")
				}
			}
		}
	case t.Kind() == reflect.Slice && data[0] == '[':
		_ = jsonwire.Elements(data, func(i int, v []byte) error {
			terr = requiredMembers(v, t.Elem(), path+"["+strconv.Itoa(i)+"]")
			return terrOrNil(terr)
		})
	}
	return terr
}

// terrOrNil is terr as an error, nil when terr is nil (not a typed nil).
func terrOrNil(terr *service.Failure) error {
	if terr == nil {
		return nil
	}
	return terr
}

func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != RawMessageType
}

// hasNestedStruct reports whether a value of struct type t holds an
// object of a struct type below its top (a field of struct type, or an
// array of them), so that requiredMembers has something to check.
func hasNestedStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for _, ft := range FieldNames(t) {
		if isStruct(ft) {
			return true
		}
	}
	return false
}

// argError walks data as the JSON of a value of type t and returns the
// first value whose JSON type does not fit (a string for an integer, 1.5
// or 1e30 for an integer, an object for a string, ...) or whose string is
// not valid Unicode, named by its JSON path. null fits anything, as in
// encoding/json; json.RawMessage takes any value (its own parser checks
// it), except a string with invalid Unicode.
//
// Its cyclomatic complexity (about 32) is one case per reflect kind and
// JSON type, each a two-line check; splitting it would scatter one table.
func argError(data []byte, t reflect.Type, path string) *service.Failure {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if data[0] == '"' {
		if reason := stringError(data); reason != "" && (t.Kind() == reflect.String || t == RawMessageType) {
			if path == "text" {
				reason += "; send binary content as blobBase64"
			}
			return service.InvalidField(path, reason)
		}
	}
	if string(data) == "null" || t == RawMessageType {
		return nil
	}
	got := jsonKind(data[0])
	wrong := func() *service.Failure {
		if path == "" {
			return service.Fail(service.KindValidation, "arguments must be a JSON object")
		}
		return service.InvalidField(path, "must be "+DescribeType(t)+", not a JSON "+got)
	}
	switch t.Kind() {
	case reflect.String:
		if got != "string" {
			return wrong()
		}
	case reflect.Bool:
		if got != "bool" {
			return wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if got != "number" {
			return wrong()
		}
		if _, err := strconv.ParseInt(string(data), 10, t.Bits()); err != nil {
			return intError(path, data, err, fmt.Sprintf("from %d to %d", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if got != "number" {
			return wrong()
		}
		if _, err := strconv.ParseUint(string(data), 10, t.Bits()); err != nil {
			return intError(path, data, err, fmt.Sprintf("from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits())))
		}
	case reflect.Float32, reflect.Float64:
		if got != "number" {
			return wrong()
		}
		if _, err := strconv.ParseFloat(string(data), t.Bits()); err != nil {
			return service.InvalidField(path, "must be a number, not a JSON number "+shorten(data)+" (the largest is "+strconv.FormatFloat(math.MaxFloat64, 'g', 3, 64)+")")
		}
	case reflect.Slice:
		if got != "array" {
			return wrong()
		}
		var terr *service.Failure
		_ = jsonwire.Elements(data, func(i int, v []byte) error {
			// Elements are named by their index (hits[3].score), as
			// exactKeys and the service name them.
			if terr = argError(v, t.Elem(), path+"["+strconv.Itoa(i)+"]"); terr != nil {
				return terr
			}
			return nil
		})
		return terr
	case reflect.Struct:
		if got != "object" {
			return wrong()
		}
		fields := FieldNames(t)
		var terr *service.Failure
		_ = jsonwire.Members(data, func(key string, v []byte) error {
			ft, ok := fields[key]
			if !ok {
				return nil // exactKeys reports unknown keys
			}
			name := key
			if path != "" {
				name = path + "." + key
			}
			if terr = argError(v, ft, name); terr != nil {
				return terr
			}
			return nil
		})
		return terr
	}
	return nil
}

// intError is the error for the JSON number data given for an integer
// argument: out of bounds, or not written as an integer (1.5, 1e2).
func intError(path string, data []byte, err error, bounds string) *service.Failure {
	if errors.Is(err, strconv.ErrRange) {
		return service.InvalidField(path, "must be an integer, not a JSON number "+shorten(data)+" (the bounds are "+bounds+")")
	}
	return service.InvalidField(path, "must be an integer, not a JSON number "+shorten(data)+" (digits only, no fraction or exponent)")
}

// jsonKind names the JSON type of a value by its first byte.
func jsonKind(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool" // encoding/json's word, which clients already match
	case 'n':
		return "null"
	}
	return "number"
}

// shorten returns at most 40 bytes of a JSON number, for a message.
func shorten(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// stringError says why the JSON string token raw is not valid Unicode:
// bytes that are not UTF-8, or a \uD800-\uDFFF escape that is not half
// of a surrogate pair. "" when it is valid.
func stringError(raw []byte) string {
	if !utf8.Valid(raw) {
		for i := 0; i < len(raw); {
			r, w := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && w == 1 {
				return fmt.Sprintf("is not valid UTF-8: byte %d of the string as sent (0x%02x) starts no character", i-1, raw[i])
			}
			i += w
		}
	}
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' || i+4 >= len(raw) {
			continue
		}
		r, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
		if err != nil {
			continue
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return fmt.Sprintf("has the escape \\u%s, the second half of a UTF-16 surrogate pair without its first: it is not a character", raw[i+1:i+5])
		case r >= 0xD800 && r <= 0xDBFF:
			lo := uint64(0)
			if i+10 < len(raw) && raw[i+5] == '\\' && raw[i+6] == 'u' {
				lo, _ = strconv.ParseUint(string(raw[i+7:i+11]), 16, 16)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return fmt.Sprintf("has the escape \\u%s, the first half of a UTF-16 surrogate pair without its second: it is not a character", raw[i+1:i+5])
			}
			i += 6
		}
		i += 4
	}
	return ""
}

// DescribeType names the JSON type a Go type decodes from ("a string",
// "an array", ...), for messages that must not name Go types.
func DescribeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
