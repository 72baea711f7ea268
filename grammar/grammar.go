// Package grammar owns the syntax of the names resourced keys its data by:
// schemes, tenants and path segments. It is the one place these rules are
// written; uri, auth, store, config and mount call it instead of keeping
// their own copy.
//
//   - scheme: [a-z][a-z0-9+.-]*, at most [MaxSchemeLen] bytes (an
//     upper-case scheme is refused, not folded);
//   - tenant: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?, a lower-case DNS label
//     (CONTRACT §2);
//   - path: one or more "/"-separated segments of RFC 3986 unreserved
//     characters [A-Za-z0-9._~-], none empty, "." or "..", at most
//     [MaxPathLen] bytes.
//
// The package imports only the standard library and nothing of this
// module, so that every package may use it. It is pure: no state, no
// recursion, and it allocates only to build an error.
//
// Reasons name the first offending byte. The Check functions count byte
// positions from an offset, for callers that validate a part of a larger
// input (a URI); [Tenant], [Scheme] and [Path] count from 0.
package grammar

import (
	"fmt"
	"unicode/utf8"
)

// Limits of the names.
const (
	MaxSchemeLen = 32
	MaxTenantLen = 63
	MaxPathLen   = 1024
)

// Patterns quoted in reasons.
const (
	TenantPattern = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
	SchemePattern = "[a-z][a-z0-9+.-]*"
)

// Error reports a name that breaks its grammar. Its text does not include
// Input, which may hold control characters or come from a token: callers
// that echo it quote it themselves.
type Error struct {
	Input  string // the rejected name, unmodified
	Reason string // e.g. "tenant must match [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?: it ends with '-'"
}

// Error returns the reason.
func (e *Error) Error() string { return e.Reason }

// Tenant returns nil if t is a valid tenant, and an *[Error] saying why
// not otherwise.
func Tenant(t string) error { return wrap(t, CheckTenant(t, 0)) }

// Scheme returns nil if s is a valid scheme, and an *[Error] saying why
// not otherwise. Whether s is configured is not its concern.
func Scheme(s string) error { return wrap(s, CheckScheme(s, 0)) }

// Path returns nil if p is a valid path below a tenant, and an *[Error]
// saying why not otherwise.
func Path(p string) error {
	if len(p) > MaxPathLen {
		return &Error{Input: p, Reason: fmt.Sprintf("path is longer than %d bytes (%d bytes)", MaxPathLen, len(p))}
	}
	return wrap(p, CheckPath(p, 0))
}

func wrap(in, reason string) error {
	if reason == "" {
		return nil
	}
	return &Error{Input: in, Reason: reason}
}

// CheckScheme returns "" if s is a valid scheme, and the reason otherwise.
// Byte positions in the reason count from off, the offset of s in the
// caller's input.
func CheckScheme(s string, off int) string {
	if s == "" {
		return "scheme is empty (want <scheme>://<tenant>/<path>)"
	}
	if len(s) > MaxSchemeLen {
		return fmt.Sprintf("scheme is longer than %d bytes (%d bytes)", MaxSchemeLen, len(s))
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
				return fmt.Sprintf("scheme must start with a letter, not %q (scheme must match %s)", rune(c), SchemePattern)
			}
		default:
			if r := Special(s, i, off+i); r != "" {
				return r
			}
			return fmt.Sprintf("illegal character %q at byte %d in scheme (scheme must match %s)", rune(c), off+i, SchemePattern)
		}
	}
	if upper {
		return "scheme must be lower-case"
	}
	return ""
}

// CheckTenant returns "" if t is a valid tenant, and the reason otherwise.
// Byte positions in the reason count from off, the offset of t in the
// caller's input.
func CheckTenant(t string, off int) string {
	if t == "" {
		return fmt.Sprintf("tenant is empty (tenant must match %s)", TenantPattern)
	}
	if len(t) > MaxTenantLen {
		return fmt.Sprintf("tenant must match %s: it is longer than %d bytes (%d bytes)", TenantPattern, MaxTenantLen, len(t))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case isLower(c) || isDigit(c):
		case c == '-':
			if i == 0 {
				return fmt.Sprintf("tenant must match %s: it starts with '-'", TenantPattern)
			}
		case isUpper(c):
			return fmt.Sprintf("tenant must match %s: upper-case %q at byte %d", TenantPattern, rune(c), off+i)
		default:
			if r := Special(t, i, off+i); r != "" {
				return r
			}
			return fmt.Sprintf("tenant must match %s: illegal character %q at byte %d", TenantPattern, rune(c), off+i)
		}
	}
	if t[len(t)-1] == '-' {
		return fmt.Sprintf("tenant must match %s: it ends with '-'", TenantPattern)
	}
	return ""
}

// CheckPath returns "" if p is a valid path, and the reason otherwise. Byte
// positions in the reason count from off, the offset of p in the caller's
// input. It does not check the length: a path inside a URI is bounded by
// the URI's limit, a path alone by [Path].
func CheckPath(p string, off int) string {
	if p == "" {
		return "path is empty (want <scheme>://<tenant>/<path>)"
	}
	start := 0 // start of the current segment
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			c := p[i]
			if !IsUnreserved(c) {
				if r := Special(p, i, off+i); r != "" {
					return r
				}
				return fmt.Sprintf("illegal character %q at byte %d in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)", rune(c), off+i)
			}
			continue
		}
		switch seg := p[start:i]; seg {
		case "":
			switch {
			case i == 0:
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

// Special returns the reason for s[i] when it is a byte with a rule of its
// own (a control or non-ASCII byte, '%', '?' or '#'), and "" otherwise. pos
// is the offset of s[i] in the caller's input.
func Special(s string, i, pos int) string {
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

// IsUnreserved reports whether c is an RFC 3986 unreserved character, the
// alphabet of path segments.
func IsUnreserved(c byte) bool {
	return isLower(c) || isUpper(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
