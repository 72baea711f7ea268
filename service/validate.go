package service

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/resourced/resourced/uri"
)

// The pure validators of what a caller sends, whatever the transport:
// free text, media types, hashes, base64, durations and list prefixes.
// Each returns a validation Failure naming the field it was given.

// Fixed input limits; the others are in Limits.
const (
	MaxQueryLen    = 4096
	maxMIMETypeLen = 255
	// MaxLinkURLLen bounds a URL a caller stores for others to follow
	// (a snapshot hit's url): the request-line limit of common HTTP
	// servers, so a longer link would not be served anyway.
	MaxLinkURLLen = 8192
)

// CheckText validates a free-text field: valid UTF-8, no control
// characters except tab and newline, at most max bytes.
func CheckText(field, s string, max int) *Failure {
	if len(s) > max {
		return InvalidField(field, fmt.Sprintf("is %d bytes; the limit is %d", len(s), max))
	}
	if !utf8.ValidString(s) {
		return InvalidField(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return InvalidField(field, fmt.Sprintf("has a control character at byte %d", i))
		}
	}
	return nil
}

// CheckMIMEType validates a media type such as "text/csv; charset=utf-8"
// against RFC 9110 §8.3.1: type "/" subtype, both tokens (§5.6.2), then
// parameters `;name=value` with a token or quoted-string value (§5.6.4),
// optional whitespace only around the ';'. A media range ("*/*",
// "text/*") names no type and is refused. Every save path (the tools and
// uploads) calls it.
func CheckMIMEType(field, s string) *Failure {
	if s == "" {
		return InvalidField(field, "is required, e.g. \"text/markdown\" or \"application/json\"")
	}
	if len(s) > maxMIMETypeLen {
		return InvalidField(field, fmt.Sprintf("is longer than %d bytes", maxMIMETypeLen))
	}
	if reason := mediaTypeError(s); reason != "" {
		return InvalidField(field, fmt.Sprintf("%q is not a media type: %s; use type/subtype with optional ;name=value parameters (RFC 9110), e.g. \"text/csv; charset=utf-8\"", s, reason))
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

func CheckSHA256(field, s string) *Failure {
	if !sha256Hex.MatchString(s) {
		return InvalidField(field, "must be the 64 lower-case hex digits of a SHA-256, as returned in sha256 by a save or stat_resource")
	}
	return nil
}

// linkURLHint ends every refusal of CheckLinkURL.
const linkURLHint = `; a link must be an absolute http or https URL such as "https://example.com/doc/1" (or leave the field out)`

// CheckLinkURL validates a URL that hosts will show as a link (a
// snapshot hit's url): an absolute http or https URL (scheme in any
// case) with a host, without a user name or password, without
// whitespace, control or bidirectional-formatting characters (a browser
// would strip or reorder them, so the link shown is not the link
// followed; percent-encode them), valid UTF-8, at most MaxLinkURLLen
// bytes. Every other scheme is refused, javascript:, data: and vbscript:
// first among them: a host that renders the link would run or open what
// the caller wrote.
func CheckLinkURL(field, s string) *Failure {
	if s == "" {
		return InvalidField(field, "is empty"+linkURLHint)
	}
	if len(s) > MaxLinkURLLen {
		return InvalidField(field, fmt.Sprintf("is %d bytes; the limit is %d", len(s), MaxLinkURLLen))
	}
	if !utf8.ValidString(s) {
		return InvalidField(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return InvalidField(field, fmt.Sprintf("has a whitespace, control or bidirectional-formatting character (%U) at byte %d; percent-encode it", r, i))
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which the caller has
		}
		return InvalidField(field, "is not a URL: "+err.Error()+linkURLHint)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return InvalidField(field, "is a relative reference, not an absolute URL"+linkURLHint)
	default:
		return InvalidField(field, fmt.Sprintf("has the scheme %q, which is not allowed%s", u.Scheme, linkURLHint))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return InvalidField(field, "has no host (write the scheme as \""+u.Scheme+"://\" followed by the host)"+linkURLHint)
	}
	if u.User != nil {
		return InvalidField(field, "has a user name or password before the host (user@host): a stored link must not carry credentials, and a host shown after '@' misleads the reader"+linkURLHint)
	}
	// url.Parse checks that a port is digits, not that it is one.
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return InvalidField(field, fmt.Sprintf("is not a URL: its port (%d digits) is not a TCP port from 1 to 65535%s", len(p), linkURLHint))
		}
	}
	return nil
}

// DecodeBase64 accepts standard base64, padded or not.
func DecodeBase64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// ParseRetention reads a save's retention (parseDuration). The caller caps
// it at the scheme's maxRetention.
func ParseRetention(raw json.RawMessage) (time.Duration, *Failure) {
	return ParseDuration("retention", raw)
}

// maxDuration is what an oversized duration saturates to; callers cap it
// (retention at the scheme's maxRetention, downloadUrlTtl at links.maxTTL).
const maxDuration = time.Duration(math.MaxInt64)

// jsonNumber is the JSON number grammar (RFC 8259 §6).
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$`)

// ParseDuration is the one parser of the durations tools and uploads take
// (retention, downloadUrlTtl): a JSON number of seconds (fractions allowed,
// e.g. 1.5), or a string holding an ISO-8601 duration of weeks, days,
// hours, minutes and seconds ("PT1H", "P7D", "P1W", "P1DT2H30M",
// "PT1.5S"). It must be at least 1 second; a longer one than a
// time.Duration holds saturates at maxDuration instead of wrapping, so the
// caller's cap applies to it.
func ParseDuration(field string, raw json.RawMessage) (time.Duration, *Failure) {
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
			return 0, InvalidField(field, "must be "+forms+" (this number is beyond what JSON parsers hold)")
		}
		d = secondsToDuration(secs)
	case len(raw) > 0 && raw[0] == '"':
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return 0, InvalidField(field, "must be "+forms)
		}
		var ok bool
		if d, ok = parseISODuration(str); !ok {
			return 0, InvalidField(field, fmt.Sprintf("%s is not %s (years and months have no fixed length)", Quote(str), forms))
		}
	default:
		return 0, InvalidField(field, "must be "+forms)
	}
	if d < time.Second {
		return 0, InvalidField(field, "must be at least 1 second: "+forms)
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

// checkPrefix validates a list prefix: path characters and '/', no '.' or
// '..' segment.
func checkPrefix(prefix string) *Failure {
	if len(prefix) > uri.MaxLen {
		return InvalidField("prefix", fmt.Sprintf("is longer than %d bytes", uri.MaxLen))
	}
	for seg := range strings.SplitSeq(prefix, "/") {
		if seg == "." || seg == ".." {
			return InvalidField("prefix", "must not contain '.' or '..' segments")
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
				return InvalidField("prefix", fmt.Sprintf("has %q; use path characters A-Z a-z 0-9 . _ ~ - and /", string(c)))
			}
		}
	}
	return nil
}

// maxQuoted is how many bytes of a caller's value a message quotes.
const maxQuoted = 64

// Quote is s quoted for a message (Go syntax, as %q writes it), cut to
// maxQuoted bytes with "…" and its length said when longer: an error
// echoes what the caller sent so it can be found, never all of it, so a
// megabyte value gives a short error.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(Truncate(s, maxQuoted)), len(s))
}

// Truncate cuts s to at most n bytes at a UTF-8 boundary, marking the cut
// with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
