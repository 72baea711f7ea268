// Package uri owns the grammar of resourced resource URIs,
//
//	<scheme>://<tenant>/<path>
//
// and nothing else: it parses, validates and formats them, with reasons precise enough for a
// client (or a model) to correct its input. Which schemes are configured, which tenant a caller
// may read and where resources are stored are decided elsewhere.
//
// Only the canonical form is accepted, so every URI has exactly one spelling:
//   - scheme: [a-z][a-z0-9+.-]*, at most 32 bytes (an upper-case scheme is rejected, not folded);
//   - tenant: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?;
//   - path: one or more "/"-separated segments of RFC 3986 unreserved characters [A-Za-z0-9._~-],
//     none of them empty, "." or "..";
//   - the whole URI is at most [MaxLen] bytes;
//   - no query, fragment, userinfo, port or percent-encoding.
//
// The package is pure: it uses only the standard library, keeps no state, never recurses and
// allocates at most O(len(input)) (in practice only to build an error or a lower-cased scheme).
package uri

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen is the maximum length in bytes of a whole resource URI.
const MaxLen = 1024

// maxSchemeLen is the maximum length in bytes of a scheme.
const maxSchemeLen = 32

// maxTenantLen is the maximum length in bytes of a tenant.
const maxTenantLen = 63

// tenantPattern is the grammar of a tenant, quoted in error reasons.
const tenantPattern = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"

// schemePattern is the grammar of a scheme, quoted in error reasons.
const schemePattern = "[a-z][a-z0-9+.-]*"

// sep separates the scheme from the tenant.
const sep = "://"

// URI is a parsed resource URI in canonical form. A URI returned by [Parse] or [New] is valid;
// the zero URI is not.
type URI struct {
	Scheme string // e.g. "report"
	Tenant string // e.g. "acme"
	Path   string // e.g. "billing/2026-11/import-dry-run", without a leading "/"
}

// Error reports an invalid resource URI or URI part. Its Error text does not include Input,
// which may contain control characters: callers that echo the input do so separately (e.g. in
// a JSON-encoded error data field).
type Error struct {
	Input  string // the rejected input, unmodified
	Reason string // a short, specific sentence fragment, e.g. "query is not allowed ('?' at byte 17)"
}

// Error returns "invalid resource URI: " followed by the reason.
func (e *Error) Error() string {
	return "invalid resource URI: " + e.Reason
}

// Parse parses s, which must be a resource URI in canonical form. It returns an *[Error]
// explaining the first problem it finds otherwise. Byte offsets in reasons count from the
// start of s.
func Parse(s string) (URI, error) {
	if len(s) > MaxLen {
		return URI{}, tooLong(s)
	}
	i := strings.Index(s, sep)
	if i < 0 {
		return URI{}, &Error{Input: s, Reason: `missing "://" after the scheme (want <scheme>://<tenant>/<path>)`}
	}
	if r := checkScheme(s[:i], 0); r != "" {
		return URI{}, &Error{Input: s, Reason: r}
	}
	off := i + len(sep)
	rest := s[off:]
	// The authority ends at the first '/', '?' or '#' (RFC 3986, section 3.2).
	end := strings.IndexAny(rest, "/?#")
	auth := rest
	if end >= 0 {
		auth = rest[:end]
	}
	if j := strings.IndexByte(auth, '@'); j >= 0 {
		return URI{}, &Error{Input: s, Reason: fmt.Sprintf("userinfo is not allowed ('@' at byte %d)", off+j)}
	}
	if j := strings.IndexByte(auth, ':'); j >= 0 {
		return URI{}, &Error{Input: s, Reason: fmt.Sprintf("port is not allowed (':' in the authority at byte %d)", off+j)}
	}
	if r := checkTenant(auth, off); r != "" {
		return URI{}, &Error{Input: s, Reason: r}
	}
	if end < 0 {
		return URI{}, &Error{Input: s, Reason: `path is missing (want <scheme>://<tenant>/<path>)`}
	}
	if rest[end] != '/' {
		return URI{}, &Error{Input: s, Reason: special(rest, end, off+end)}
	}
	path := rest[end+1:]
	if r := checkPath(path, off+end+1, true); r != "" {
		return URI{}, &Error{Input: s, Reason: r}
	}
	return URI{Scheme: s[:i], Tenant: auth, Path: path}, nil
}

// String returns the URI as scheme + "://" + tenant + "/" + path. For a valid URI this is the
// canonical form, which [Parse] accepts and maps back to u.
func (u URI) String() string {
	return u.Scheme + sep + u.Tenant + "/" + u.Path
}

// New returns the URI with the given parts after validating them with the same rules as
// [Parse], including the length limit of the whole URI. It returns an *[Error] whose Input is
// the URI the parts would form, and whose byte offsets count from the start of that URI.
func New(scheme, tenant, path string) (URI, error) {
	u := URI{Scheme: scheme, Tenant: tenant, Path: path}
	if n := len(scheme) + len(sep) + len(tenant) + 1 + len(path); n > MaxLen {
		return URI{}, tooLong(u.String())
	}
	r := checkScheme(scheme, 0)
	if r == "" {
		r = checkTenant(tenant, len(scheme)+len(sep))
	}
	if r == "" {
		r = checkPath(path, len(scheme)+len(sep)+len(tenant)+1, false)
	}
	if r != "" {
		return URI{}, &Error{Input: u.String(), Reason: r}
	}
	return u, nil
}

// ValidTenant returns nil if t matches [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?, and an *[Error]
// saying why not otherwise.
func ValidTenant(t string) error {
	if r := checkTenant(t, 0); r != "" {
		return &Error{Input: t, Reason: r}
	}
	return nil
}

// ValidScheme returns nil if s is a syntactically valid scheme ([a-z][a-z0-9+.-]*, at most 32
// bytes), and an *[Error] saying why not otherwise. Whether s is configured is not checked.
func ValidScheme(s string) error {
	if r := checkScheme(s, 0); r != "" {
		return &Error{Input: s, Reason: r}
	}
	return nil
}

// ValidPath returns nil if p is a valid path on its own (segments of [A-Za-z0-9._~-] separated
// by single slashes, no leading or trailing slash, no "." or ".." segment, at most [MaxLen]
// bytes), and an *[Error] saying why not otherwise. A path that passes may still be too long
// once combined with a scheme and tenant; [New] checks that.
func ValidPath(p string) error {
	if len(p) > MaxLen {
		return &Error{Input: p, Reason: fmt.Sprintf("path is longer than %d bytes (%d bytes)", MaxLen, len(p))}
	}
	if r := checkPath(p, 0, false); r != "" {
		return &Error{Input: p, Reason: r}
	}
	return nil
}

// SplitScheme returns the text before the first "://" in s with ASCII letters lower-cased, and
// whether "://" was present. It lets a caller decide whether a URI belongs to one of its
// configured schemes before full validation (e.g. "REPORT://x/y" -> "report", true), so that a
// non-canonical URI of a configured scheme can be rejected with a reason. It never fails on any
// input; the returned scheme is not validated, and non-ASCII bytes are left as they are (so
// look-alike letters never fold into an ASCII scheme).
func SplitScheme(s string) (scheme string, ok bool) {
	i := strings.Index(s, sep)
	if i < 0 {
		return "", false
	}
	return lowerASCII(s[:i]), true
}

// lowerASCII returns s with ASCII upper-case letters lower-cased. Unlike strings.ToLower it
// maps no non-ASCII character (such as the Kelvin sign U+212A) to ASCII.
func lowerASCII(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if isUpper(b[i]) {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

func tooLong(s string) *Error {
	return &Error{Input: s, Reason: fmt.Sprintf("URI is longer than %d bytes (%d bytes)", MaxLen, len(s))}
}

// checkScheme returns "" if s is a valid scheme, and the reason otherwise. off is the offset of
// s in the input, for byte positions in reasons.
func checkScheme(s string, off int) string {
	if s == "" {
		return "scheme is empty (want <scheme>://<tenant>/<path>)"
	}
	if len(s) > maxSchemeLen {
		return fmt.Sprintf("scheme is longer than %d bytes (%d bytes)", maxSchemeLen, len(s))
	}
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLower(c):
		case isUpper(c):
			upper = true
		case isDigit(c) || c == '+' || c == '.' || c == '-':
			if i == 0 {
				return fmt.Sprintf("scheme must start with a letter, not %q (scheme must match %s)", rune(c), schemePattern)
			}
		default:
			if r := special(s, i, off+i); r != "" {
				return r
			}
			return fmt.Sprintf("illegal character %q at byte %d in scheme (scheme must match %s)", rune(c), off+i, schemePattern)
		}
	}
	if upper {
		return "scheme must be lower-case"
	}
	return ""
}

// checkTenant returns "" if t is a valid tenant, and the reason otherwise. off is the offset of
// t in the input, for byte positions in reasons.
func checkTenant(t string, off int) string {
	if t == "" {
		return fmt.Sprintf("tenant is empty (tenant must match %s)", tenantPattern)
	}
	if len(t) > maxTenantLen {
		return fmt.Sprintf("tenant must match %s: it is longer than %d bytes (%d bytes)", tenantPattern, maxTenantLen, len(t))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case isLower(c) || isDigit(c):
		case c == '-':
			if i == 0 {
				return fmt.Sprintf("tenant must match %s: it starts with '-'", tenantPattern)
			}
		case isUpper(c):
			return fmt.Sprintf("tenant must match %s: upper-case %q at byte %d", tenantPattern, rune(c), off+i)
		default:
			if r := special(t, i, off+i); r != "" {
				return r
			}
			return fmt.Sprintf("tenant must match %s: illegal character %q at byte %d", tenantPattern, rune(c), off+i)
		}
	}
	if t[len(t)-1] == '-' {
		return fmt.Sprintf("tenant must match %s: it ends with '-'", tenantPattern)
	}
	return ""
}

// checkPath returns "" if p is a valid path, and the reason otherwise. off is the offset of p in
// the input, for byte positions in reasons. inURI says p follows "<tenant>/" in the input, so a
// leading slash in p is an empty segment ("//") of the URI.
func checkPath(p string, off int, inURI bool) string {
	if p == "" {
		return "path is empty (want <scheme>://<tenant>/<path>)"
	}
	start := 0 // start of the current segment
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			c := p[i]
			if !isUnreserved(c) {
				if r := special(p, i, off+i); r != "" {
					return r
				}
				return fmt.Sprintf("illegal character %q at byte %d in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)", rune(c), off+i)
			}
			continue
		}
		switch seg := p[start:i]; seg {
		case "":
			switch {
			case i == 0 && !inURI:
				return `path must not start with "/"`
			case i == len(p):
				return fmt.Sprintf("path has a trailing slash (byte %d)", off+i-1)
			default:
				return fmt.Sprintf(`path has an empty segment ("//" at byte %d)`, off+i-1)
			}
		case ".", "..":
			return fmt.Sprintf("path segment %q is not allowed (byte %d)", seg, off+start)
		}
		start = i + 1
	}
	return ""
}

// special returns the reason for s[i] when it is a byte with its own rule (a control or
// non-ASCII byte, '%', '?' or '#'), and "" otherwise. pos is the offset of s[i] in the input.
func special(s string, i, pos int) string {
	c := s[i]
	switch {
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("control character at byte %d (0x%02x)", pos, c)
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return fmt.Sprintf("non-ASCII byte 0x%02x at byte %d (resource URIs are ASCII only)", c, pos)
		}
		return fmt.Sprintf("non-ASCII character U+%04X at byte %d (resource URIs are ASCII only)", r, pos)
	case c == '%':
		return fmt.Sprintf("percent-encoding is not allowed ('%%' at byte %d)", pos)
	case c == '?':
		return fmt.Sprintf("query is not allowed ('?' at byte %d)", pos)
	case c == '#':
		return fmt.Sprintf("fragment is not allowed ('#' at byte %d)", pos)
	}
	return ""
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isUnreserved reports whether c is an RFC 3986 unreserved character.
func isUnreserved(c byte) bool {
	return isLower(c) || isUpper(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}
