package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/resourced/resourced/internal/jsonwire"
)

// decodeArgs decodes tool arguments strictly into v (a pointer to an
// argument struct). Every failure is a validation_error that names the
// argument by its JSON path (hits.url) and the JSON type it must have,
// never a Go type, so a model can correct its call:
//
//   - not one JSON object, unknown fields (exactKeys, keys.go);
//   - strings that are not valid UTF-8, or hold an unpaired UTF-16
//     surrogate escape: encoding/json would turn both into U+FFFD and
//     store a body the caller did not send, so they are found in the raw
//     arguments first (a \ufffd the caller wrote is a character like any
//     other);
//   - values of the wrong JSON type, or integers out of range (argError).
func decodeArgs(raw json.RawMessage, v any) *toolError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if !json.Valid(raw) {
		return failure(kindValidation, "arguments are not valid JSON for this tool: send one JSON object")
	}
	if raw[0] != '{' {
		return failure(kindValidation, "arguments must be a JSON object")
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
		return failure(kindValidation, "arguments do not match this tool's inputSchema")
	}
	return nil
}

// argError walks data as the JSON of a value of type t and returns the
// first value whose JSON type does not fit (a string for an integer, 1.5
// or 1e30 for an integer, an object for a string, ...) or whose string is
// not valid Unicode, named by its JSON path. null fits anything, as in
// encoding/json; json.RawMessage takes any value (its own parser checks
// it), except a string with invalid Unicode.
func argError(data []byte, t reflect.Type, path string) *toolError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if data[0] == '"' {
		if reason := stringError(data); reason != "" && (t.Kind() == reflect.String || t == rawMessageType) {
			if path == "text" {
				reason += "; send binary content as blobBase64"
			}
			return invalidField(path, reason)
		}
	}
	if string(data) == "null" || t == rawMessageType {
		return nil
	}
	got := jsonKind(data[0])
	wrong := func() *toolError {
		if path == "" {
			return failure(kindValidation, "arguments must be a JSON object")
		}
		return invalidField(path, "must be "+describeType(t)+", not a JSON "+got)
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
			return invalidField(path, "must be a number, not a JSON number "+shorten(data)+" (the largest is "+strconv.FormatFloat(math.MaxFloat64, 'g', 3, 64)+")")
		}
	case reflect.Slice:
		if got != "array" {
			return wrong()
		}
		var terr *toolError
		_ = jsonwire.Elements(data, func(i int, v []byte) error {
			// Elements are named like encoding/json names them (hits.score),
			// which clients already match.
			if terr = argError(v, t.Elem(), path); terr != nil {
				return terr
			}
			return nil
		})
		return terr
	case reflect.Struct:
		if got != "object" {
			return wrong()
		}
		fields := fieldNames(t)
		var terr *toolError
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
func intError(path string, data []byte, err error, bounds string) *toolError {
	if errors.Is(err, strconv.ErrRange) {
		return invalidField(path, "must be an integer, not a JSON number "+shorten(data)+" (the bounds are "+bounds+")")
	}
	return invalidField(path, "must be an integer, not a JSON number "+shorten(data)+" (digits only, no fraction or exponent)")
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
	}
	return "an object"
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

// checkMIMEType validates a media type such as "text/csv; charset=utf-8"
// against RFC 9110 §8.3.1: type "/" subtype, both tokens (§5.6.2), then
// parameters `;name=value` with a token or quoted-string value (§5.6.4),
// optional whitespace only around the ';'. A media range ("*/*",
// "text/*") names no type and is refused. Every save path (the tools and
// uploads) calls it.
func checkMIMEType(field, s string) *toolError {
	if s == "" {
		return invalidField(field, "is required, e.g. \"text/markdown\" or \"application/json\"")
	}
	if len(s) > maxMIMETypeLen {
		return invalidField(field, fmt.Sprintf("is longer than %d bytes", maxMIMETypeLen))
	}
	if reason := mediaTypeError(s); reason != "" {
		return invalidField(field, fmt.Sprintf("%q is not a media type: %s; use type/subtype with optional ;name=value parameters (RFC 9110), e.g. \"text/csv; charset=utf-8\"", s, reason))
	}
	return nil
}

// mediaTypeError returns why s is not an RFC 9110 media type, or "".
func mediaTypeError(s string) string {
	i := tokenEnd(s, 0)
	if i == 0 {
		return "the type is empty or starts with a character that is not allowed" + at(s, 0)
	}
	typ := s[:i]
	if i == len(s) || s[i] != '/' {
		return "the type is not followed by '/' and a subtype" + at(s, i)
	}
	j := tokenEnd(s, i+1)
	if j == i+1 {
		return "the subtype is empty or starts with a character that is not allowed" + at(s, i+1)
	}
	if typ == "*" || s[i+1:j] == "*" {
		return "it is a media range (with *), not a media type"
	}
	seen := map[string]bool{}
	for k := j; k < len(s); {
		k = skipOWS(s, k)
		if k == len(s) || s[k] != ';' {
			return "expected ';' before a parameter" + at(s, k)
		}
		k = skipOWS(s, k+1)
		if k == len(s) || s[k] == ';' {
			continue // an empty parameter is allowed
		}
		n := tokenEnd(s, k)
		if n == k {
			return "a parameter name is empty or has a character that is not allowed" + at(s, k)
		}
		pname := strconv.Quote(s[k:n])
		if n == len(s) || s[n] != '=' {
			return "parameter " + pname + " has no '=value' directly after its name" + at(s, n)
		}
		if name := strings.ToLower(s[k:n]); seen[name] {
			return "parameter " + pname + " is given twice"
		} else {
			seen[name] = true
		}
		k = n + 1
		if k < len(s) && s[k] == '"' {
			end, reason := quotedStringEnd(s, k)
			if reason != "" {
				return reason
			}
			k = end
		} else if v := tokenEnd(s, k); v == k {
			return "the value of parameter " + pname + " is empty or has a character that is not allowed" + at(s, k)
		} else {
			k = v
		}
	}
	return ""
}

// at names the byte at offset i of s, for a reason.
func at(s string, i int) string {
	if i >= len(s) {
		return " (at the end)"
	}
	return fmt.Sprintf(" (byte %d, %q)", i, s[i:i+1])
}

// isTchar reports whether c may appear in an RFC 9110 token (§5.6.2).
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func tokenEnd(s string, i int) int {
	for i < len(s) && isTchar(s[i]) {
		i++
	}
	return i
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// quotedStringEnd returns the offset after the quoted-string starting at
// s[i] == '"' (RFC 9110 §5.6.4), or why it is not one. Bytes 0x80-0xFF
// (obs-text) are accepted only as valid UTF-8: the media type is echoed in
// JSON, which cannot carry anything else.
func quotedStringEnd(s string, i int) (int, string) {
	for k := i + 1; k < len(s); k++ {
		c := s[k]
		switch {
		case c == '"':
			if !utf8.ValidString(s[i : k+1]) {
				return 0, "a quoted parameter value is not valid UTF-8"
			}
			return k + 1, ""
		case c == '\\':
			k++
			if k == len(s) {
				return 0, "a quoted parameter value ends with a lone backslash"
			}
			if d := s[k]; d < 0x20 && d != '\t' || d == 0x7f {
				return 0, "a quoted parameter value has a control character" + at(s, k)
			}
		case c < 0x20 && c != '\t' || c == 0x7f:
			return 0, "a quoted parameter value has a control character" + at(s, k)
		}
	}
	return 0, "a quoted parameter value has no closing '\"'"
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

// parseRetention reads a save's retention (parseDuration). The caller caps
// it at the scheme's maxRetention.
func parseRetention(raw json.RawMessage) (time.Duration, *toolError) {
	return parseDuration("retention", raw)
}

// maxDuration is what an oversized duration saturates to; callers cap it
// (retention at the scheme's maxRetention, downloadUrlTtl at links.maxTTL).
const maxDuration = time.Duration(math.MaxInt64)

// jsonNumber is the JSON number grammar (RFC 8259 §6).
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$`)

// parseDuration is the one parser of the durations tools and uploads take
// (retention, downloadUrlTtl): a JSON number of seconds (fractions allowed,
// e.g. 1.5), or a string holding an ISO-8601 duration of weeks, days,
// hours, minutes and seconds ("PT1H", "P7D", "P1W", "P1DT2H30M",
// "PT1.5S"). It must be at least 1 second; a longer one than a
// time.Duration holds saturates at maxDuration instead of wrapping, so the
// caller's cap applies to it.
func parseDuration(field string, raw json.RawMessage) (time.Duration, *toolError) {
	const forms = `a number of seconds or an ISO-8601 duration such as "PT1H", "P7D" or "P1W"`
	raw = bytes.TrimSpace(raw)
	var d time.Duration
	switch {
	case jsonNumber.Match(raw):
		// A number beyond float64 (1e400) is refused like other numbers
		// no JSON parser can hold; large ones that fit (1e12, 2^63)
		// saturate.
		secs, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, invalidField(field, "must be "+forms+" (this number is beyond what JSON parsers hold)")
		}
		d = secondsToDuration(secs)
	case len(raw) > 0 && raw[0] == '"':
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return 0, invalidField(field, "must be "+forms)
		}
		var ok bool
		if d, ok = parseISODuration(str); !ok {
			return 0, invalidField(field, fmt.Sprintf("%q is not %s (years and months have no fixed length)", str, forms))
		}
	default:
		return 0, invalidField(field, "must be "+forms)
	}
	if d < time.Second {
		return 0, invalidField(field, "must be at least 1 second: "+forms)
	}
	return d, nil
}

// secondsToDuration converts seconds to a Duration, saturating at
// maxDuration; negative and NaN values give -1.
func secondsToDuration(secs float64) time.Duration {
	ns := secs * float64(time.Second)
	switch {
	case !(ns >= 0): // negative or NaN
		return -1
	case ns >= float64(maxDuration): // float64(MaxInt64) is 2^63
		return maxDuration
	}
	return time.Duration(ns)
}

var isoDuration = regexp.MustCompile(`^P(?:([0-9]+)W)?(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?$`)

// parseISODuration parses the day-and-time subset of ISO-8601 durations
// (weeks, days, hours, minutes, seconds). Years and months have no fixed
// length and are rejected. The sum is exact to the nanosecond (fractions
// of a second beyond nine digits are dropped) and saturates at
// maxDuration: it never wraps.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, false
	}
	units := []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
	var total time.Duration
	for i, unit := range units {
		if m[i+1] == "" {
			continue
		}
		whole, frac, _ := strings.Cut(m[i+1], ".")
		total = addSat(total, mulSat(digitsSat(whole), unit))
		if frac != "" { // seconds only (the pattern allows no other)
			frac = (frac + "000000000")[:9]
			total = addSat(total, digitsSat(frac))
		}
	}
	return total, true
}

// digitsSat is the value of a string of decimal digits, saturating at
// maxDuration.
func digitsSat(s string) time.Duration {
	var v time.Duration
	for i := 0; i < len(s); i++ {
		v = addSat(mulSat(v, 10), time.Duration(s[i]-'0'))
	}
	return v
}

// mulSat and addSat are a*b and a+b of non-negative values, saturating at
// maxDuration.
func mulSat(a, b time.Duration) time.Duration {
	if a != 0 && b > maxDuration/a {
		return maxDuration
	}
	return a * b
}

func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}
