package grammar

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// The grammars as regular expressions, straight from CONTRACT §2: the
// oracle the hand-written scanners are held to.
var (
	tenantRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	schemeRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]{0,31}$`)
	pathRE   = regexp.MustCompile(`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`)
)

func pathOracle(p string) bool {
	if len(p) > MaxPathLen || !pathRE.MatchString(p) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func TestTenant(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a", ""},
		{"0", ""},
		{"9lives", ""},
		{"a-b", ""},
		{"a--b", ""},
		{strings.Repeat("a", 63), ""},
		{"", "tenant is empty (tenant must match " + TenantPattern + ")"},
		{"-", "tenant must match " + TenantPattern + ": it starts with '-'"},
		{"-a", "tenant must match " + TenantPattern + ": it starts with '-'"},
		{"a-", "tenant must match " + TenantPattern + ": it ends with '-'"},
		{"Acme", "tenant must match " + TenantPattern + ": upper-case 'A' at byte 0"},
		{"a.b", "tenant must match " + TenantPattern + ": illegal character '.' at byte 1"},
		{"a+b", "tenant must match " + TenantPattern + ": illegal character '+' at byte 1"},
		{"a_b", "tenant must match " + TenantPattern + ": illegal character '_' at byte 1"},
		{"a\x00", "control character at byte 1 (0x00)"},
		{"\u0430", "non-ASCII character U+0430 at byte 0 (resource URIs are ASCII only)"},
		{strings.Repeat("a", 64), "tenant must match " + TenantPattern + ": it is longer than 63 bytes (64 bytes)"},
	}
	for _, tc := range tests {
		check(t, "Tenant", tc.in, Tenant(tc.in), tc.want)
	}
}

func TestScheme(t *testing.T) {
	tests := []struct{ in, want string }{
		{"search", ""},
		{"a", ""},
		{"x+y.z-w9", ""},
		{strings.Repeat("z", 32), ""},
		{"", "scheme is empty (want <scheme>://<tenant>/<path>)"},
		{"Report", "scheme must be lower-case"},
		{"9p", "scheme must start with a letter, not '9' (scheme must match " + SchemePattern + ")"},
		{"-a", "scheme must start with a letter, not '-' (scheme must match " + SchemePattern + ")"},
		{"+a", "scheme must start with a letter, not '+' (scheme must match " + SchemePattern + ")"},
		{".a", "scheme must start with a letter, not '.' (scheme must match " + SchemePattern + ")"},
		{"a_b", "illegal character '_' at byte 1 in scheme (scheme must match " + SchemePattern + ")"},
		{"a:", "illegal character ':' at byte 1 in scheme (scheme must match " + SchemePattern + ")"},
		{strings.Repeat("z", 33), "scheme is longer than 32 bytes (33 bytes)"},
	}
	for _, tc := range tests {
		check(t, "Scheme", tc.in, Scheme(tc.in), tc.want)
	}
}

func TestPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x", ""},
		{"a/b", ""},
		{"...", ""},
		{"A.Z_a~z-0.9", ""},
		{strings.Repeat("p", MaxPathLen), ""},
		{"", "path is empty (want <scheme>://<tenant>/<path>)"},
		{"/a", `path must not start with "/"`},
		{"a/", "path has a trailing slash (byte 1)"},
		{"a//b", `path has an empty segment ("//" at byte 1)`},
		{"a/../b", `path segment ".." is not allowed (byte 2)`},
		{"./a", `path segment "." is not allowed (byte 0)`},
		{"a+b", "illegal character '+' at byte 1 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		{"a?b", "query is not allowed ('?' at byte 1)"},
		{strings.Repeat("p", MaxPathLen+1), "path is longer than 1024 bytes (1025 bytes)"},
	}
	for _, tc := range tests {
		check(t, "Path", tc.in, Path(tc.in), tc.want)
	}
}

func TestOffsets(t *testing.T) {
	if got, want := CheckTenant("aB", 10), "tenant must match "+TenantPattern+": upper-case 'B' at byte 11"; got != want {
		t.Errorf("CheckTenant(%q, 10) = %q, want %q", "aB", got, want)
	}
	if got, want := CheckPath("a//b", 7), `path has an empty segment ("//" at byte 8)`; got != want {
		t.Errorf("CheckPath(%q, 7) = %q, want %q", "a//b", got, want)
	}
}

func check(t *testing.T, fn, in string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s(%q) = %v, want nil", fn, in, err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != want || e.Input != in || err.Error() != want {
		t.Errorf("%s(%q) = %#v, want reason %q", fn, in, err, want)
	}
}

// FuzzGrammar holds each scanner to its regular expression: it accepts
// exactly what the expression matches, and its reasons are printable ASCII
// (they end up in logs and JSON-RPC messages).
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{"a", "a-", "-a", "a-b", "A", "9p", "x+y.z", "a/b", "a//b", "a/./b", "..", "a\x00", "\u0430", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range []struct {
			name   string
			err    error
			oracle bool
		}{
			{"Tenant", Tenant(s), tenantRE.MatchString(s)},
			{"Scheme", Scheme(s), schemeRE.MatchString(s)},
			{"Path", Path(s), pathOracle(s)},
		} {
			if (g.err == nil) != g.oracle {
				t.Fatalf("%s(%q) = %v, but the regular expression says valid=%v", g.name, s, g.err, g.oracle)
			}
			if g.err == nil {
				continue
			}
			msg := g.err.Error()
			if msg == "" {
				t.Fatalf("%s(%q): empty reason", g.name, s)
			}
			for _, c := range []byte(msg) {
				if c < 0x20 || c >= 0x7f {
					t.Fatalf("%s(%q) = %q contains byte 0x%02x", g.name, s, msg, c)
				}
			}
		}
	})
}
