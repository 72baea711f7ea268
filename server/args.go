package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// decodeArgs decodes tool arguments strictly into v. Type errors and unknown
// fields become a validation_error that names the field, so a model can
// correct its call.
func decodeArgs(raw json.RawMessage, v any) *toolError {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	if json.Valid(raw) {
		if terr := exactKeys(raw, reflect.TypeOf(v), ""); terr != nil {
			return terr
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return failure(kindValidation, "arguments must be one JSON object")
		}
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return failure(kindValidation, "arguments must be a JSON object")
		}
		// Field is the Go path; embedded option structs are not part of
		// the JSON names.
		field := strings.ReplaceAll(te.Field, "saveOptions.", "")
		return invalidField(field, "must be "+describeType(te.Type)+", not a JSON "+te.Value)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ := strconv.Unquote(f)
		if name == "" {
			name = f
		}
		return invalidField(name, "is not an argument of this tool; see its inputSchema")
	}
	return failure(kindValidation, "arguments are not valid JSON for this tool: "+err.Error())
}

func describeType(t reflect.Type) string {
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
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// Fixed input limits; the others are in Limits.
const (
	maxQueryLen    = 4096
	maxMIMETypeLen = 255
)

// checkText validates a free-text field: valid UTF-8, no control
// characters except tab and newline, at most max bytes.
func checkText(field, s string, max int) *toolError {
	if len(s) > max {
		return invalidField(field, fmt.Sprintf("is %d bytes; the limit is %d", len(s), max))
	}
	if !utf8.ValidString(s) {
		return invalidField(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return invalidField(field, fmt.Sprintf("has a control character at byte %d", i))
		}
	}
	return nil
}

// checkMIMEType validates a media type such as "text/csv; charset=utf-8".
func checkMIMEType(field, s string) *toolError {
	if s == "" {
		return invalidField(field, "is required, e.g. \"text/markdown\" or \"application/json\"")
	}
	if len(s) > maxMIMETypeLen {
		return invalidField(field, fmt.Sprintf("is longer than %d bytes", maxMIMETypeLen))
	}
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || !strings.Contains(mt, "/") {
		return invalidField(field, fmt.Sprintf("%q is not a media type; use type/subtype, e.g. \"text/csv\"", s))
	}
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func checkSHA256(field, s string) *toolError {
	if !sha256Hex.MatchString(s) {
		return invalidField(field, "must be the 64 lower-case hex digits of a SHA-256, as returned in sha256 by a save or stat_resource")
	}
	return nil
}

// decodeBase64 accepts standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// parseRetention reads a retention: a number of seconds, or an ISO-8601
// duration string such as "PT1H", "P7D" or "P1W".
func parseRetention(raw json.RawMessage) (time.Duration, *toolError) {
	const field = "retention"
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		if secs < 1 || secs > math.MaxInt64/float64(time.Second) {
			return 0, invalidField(field, "must be at least 1 second")
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, invalidField(field, "must be a number of seconds or an ISO-8601 duration such as \"P7D\"")
	}
	d, ok := parseISODuration(s)
	if !ok || d < time.Second {
		return 0, invalidField(field, fmt.Sprintf("%q is not an ISO-8601 duration of at least 1 second (e.g. \"PT1H\", \"P7D\", \"P1W\") or number of seconds", s))
	}
	return d, nil
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseISODuration parses the day-and-time subset of ISO-8601 durations
// (weeks, days, hours, minutes, seconds). Years and months have no fixed
// length and are rejected.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, false
	}
	units := []float64{7 * 24 * 3600, 24 * 3600, 3600, 60, 1}
	var secs float64
	for i, u := range units {
		if m[i+1] == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, false
		}
		secs += v * u
	}
	if secs > math.MaxInt64/float64(time.Second) {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}
