// Package uri owns the grammar of resourced resource URIs,
//
//	<scheme>://<tenant>/<path>
//
// and nothing else: it parses, validates and formats them, with reasons precise enough for a
// client (or a model) to correct its input. Which schemes are configured, which tenant a caller
// may read and where resources are stored are decided elsewhere.
//
// Only the canonical form is accepted, so every URI has exactly one spelling (the scheme, tenant
// and path rules are the grammar package's; uri places them in a URI):
//   - scheme: [a-z][a-z0-9+.-]*, at most 32 bytes (an upper-case scheme is rejected, not folded);
//   - tenant: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?;
//   - path: one or more "/"-separated segments of RFC 3986 unreserved characters [A-Za-z0-9._~-],
//     none of them empty, "." or "..";
//   - the whole URI is at most [MaxLen] bytes;
//   - no query, fragment, userinfo, port or percent-encoding.
//
// The package is pure: it uses only the standard library and grammar, keeps no state, never recurses and
// allocates at most O(len(input)) (in practice only to build an error or a lower-cased scheme).
package uri

import (
	"errors"
	"fmt"
	"strings"

	"github.com/resourced/resourced/grammar"
)

// MaxLen is the maximum length in bytes of a whole resource URI.
const MaxLen = 1024

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
	if r := grammar.CheckScheme(s[:i], 0); r != "" {
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
	if r := grammar.CheckTenant(auth, off); r != "" {
		return URI{}, &Error{Input: s, Reason: r}
	}
	if end < 0 {
		return URI{}, &Error{Input: s, Reason: `path is missing (want <scheme>://<tenant>/<path>)`}
	}
	if rest[end] != '/' {
		return URI{}, &Error{Input: s, Reason: grammar.Special(rest, end, off+end)}
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
	r := grammar.CheckScheme(scheme, 0)
	if r == "" {
		r = grammar.CheckTenant(tenant, len(scheme)+len(sep))
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
	if r := grammar.CheckTenant(t, 0); r != "" {
		return &Error{Input: t, Reason: r}
	}
	return nil
}

// ValidScheme returns nil if s is a syntactically valid scheme ([a-z][a-z0-9+.-]*, at most 32
// bytes), and an *[Error] saying why not otherwise. Whether s is configured is not checked.
func ValidScheme(s string) error {
	if r := grammar.CheckScheme(s, 0); r != "" {
		return &Error{Input: s, Reason: r}
	}
	return nil
}

// ValidPath returns nil if p is a valid path on its own (segments of [A-Za-z0-9._~-] separated
// by single slashes, no leading or trailing slash, no "." or ".." segment, at most
// grammar.MaxPathLen bytes), and an *[Error] saying why not otherwise. A path that passes may
// still be too long once combined with a scheme and tenant; [New] checks that.
func ValidPath(p string) error {
	var e *grammar.Error
	if errors.As(grammar.Path(p), &e) {
		return &Error{Input: p, Reason: e.Reason}
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

// checkPath returns "" if p is a valid path, and the reason otherwise. off is the offset of p in
// the input, for byte positions in reasons. inURI says p follows "<tenant>/" in the input, so a
// leading slash in p is an empty segment ("//") of the URI.
func checkPath(p string, off int, inURI bool) string {
	if inURI && p != "" && p[0] == '/' {
		return fmt.Sprintf(`path has an empty segment ("//" at byte %d)`, off-1)
	}
	return grammar.CheckPath(p, off)
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
