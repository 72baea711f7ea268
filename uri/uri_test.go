package uri

import (
	"errors"
	"strings"
	"testing"
)

const tenantRE = "tenant must match [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"

func TestParseValid(t *testing.T) {
	prefix := "report://acme/"
	maxPath := strings.Repeat("a", MaxLen-len(prefix))
	maxSegs := strings.Repeat("ab/", (MaxLen-len(prefix))/3) // ends with "/"; fix below
	maxSegs = maxSegs[:len(maxSegs)-1] + strings.Repeat("x", MaxLen-len(prefix)-len(maxSegs)+1)
	tenant63 := "a" + strings.Repeat("0-", 30) + "bz"

	tests := []struct {
		in   string
		want URI
	}{
		{"search://acme/results/01JXYZ8Q3K7M2N4P5R6S7T8V9W", URI{"search", "acme", "results/01JXYZ8Q3K7M2N4P5R6S7T8V9W"}},
		{"report://acme/billing/2026-11/import-dry-run", URI{"report", "acme", "billing/2026-11/import-dry-run"}},
		{"report://a/x", URI{"report", "a", "x"}},
		{"report://7/x", URI{"report", "7", "x"}},
		{"report://" + tenant63 + "/x", URI{"report", tenant63, "x"}},
		{"report://a-b/x", URI{"report", "a-b", "x"}},
		{"report://acme/A.Z_a~z-0.9", URI{"report", "acme", "A.Z_a~z-0.9"}},
		{"report://acme/...", URI{"report", "acme", "..."}},
		{"report://acme/.hidden/x.", URI{"report", "acme", ".hidden/x."}},
		{"report://acme/~/_/-", URI{"report", "acme", "~/_/-"}},
		{"a://t/p", URI{"a", "t", "p"}},
		{"x-1.b+c://t/p", URI{"x-1.b+c", "t", "p"}},
		{strings.Repeat("s", 32) + "://t/p", URI{strings.Repeat("s", 32), "t", "p"}},
		{prefix + maxPath, URI{"report", "acme", maxPath}},
		{prefix + maxSegs, URI{"report", "acme", maxSegs}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v, want %+v, nil", tt.in, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.in {
			t.Errorf("Parse(%q).String() = %q, want the input", tt.in, s)
		}
		n, err := New(got.Scheme, got.Tenant, got.Path)
		if err != nil || n != got {
			t.Errorf("New(%q, %q, %q) = %+v, %v, want %+v, nil", got.Scheme, got.Tenant, got.Path, n, err, got)
		}
	}
	if n := len(prefix + maxPath); n != MaxLen {
		t.Fatalf("test bug: max-length URI has %d bytes", n)
	}
	if n := len(prefix + maxSegs); n != MaxLen {
		t.Fatalf("test bug: max-length segmented URI has %d bytes", n)
	}
}

func TestParseInvalid(t *testing.T) {
	long := "report://acme/" + strings.Repeat("a", MaxLen-len("report://acme/")+1)
	tests := []struct {
		in   string
		want string // exact Reason
	}{
		// Length.
		{long, "URI is longer than 1024 bytes (1025 bytes)"},
		{long + "/../%00\x00", "URI is longer than 1024 bytes (1033 bytes)"},
		// Structure.
		{"", `missing "://" after the scheme (want <scheme>://<tenant>/<path>)`},
		{"report:acme/x", `missing "://" after the scheme (want <scheme>://<tenant>/<path>)`},
		{"report:/acme/x", `missing "://" after the scheme (want <scheme>://<tenant>/<path>)`},
		{"acme/x", `missing "://" after the scheme (want <scheme>://<tenant>/<path>)`},
		{"://acme/x", "scheme is empty (want <scheme>://<tenant>/<path>)"},
		{"report://acme", "path is missing (want <scheme>://<tenant>/<path>)"},
		{"report://acme/", "path is empty (want <scheme>://<tenant>/<path>)"},
		{"report:///x", "tenant is empty (" + tenantRE + ")"},
		{"report://", "tenant is empty (" + tenantRE + ")"},
		// Path segments.
		{"report://acme/a/", "path has a trailing slash (byte 15)"},
		{"report://acme/a//b", `path has an empty segment ("//" at byte 15)`},
		{"report://acme//a", `path has an empty segment ("//" at byte 13)`},
		{"report://acme//", `path has an empty segment ("//" at byte 13)`},
		{"report://acme/a/../b", `path segment ".." is not allowed (byte 16)`},
		{"report://acme/..", `path segment ".." is not allowed (byte 14)`},
		{"report://acme/a/..", `path segment ".." is not allowed (byte 16)`},
		{"report://acme/./a", `path segment "." is not allowed (byte 14)`},
		{"report://acme/a/.", `path segment "." is not allowed (byte 16)`},
		// Percent-encoding, query, fragment.
		{"report://acme/%2e%2e", "percent-encoding is not allowed ('%' at byte 14)"},
		{"report://acme/a%2Fb", "percent-encoding is not allowed ('%' at byte 15)"},
		{"report://ac%6De/x", "percent-encoding is not allowed ('%' at byte 11)"},
		{"report://acme/x?y", "query is not allowed ('?' at byte 15)"},
		{"report://acme?y", "query is not allowed ('?' at byte 13)"},
		{"report://acme/x#y", "fragment is not allowed ('#' at byte 15)"},
		{"report://acme#/x", "fragment is not allowed ('#' at byte 13)"},
		{"report://acme/x#y?z", "fragment is not allowed ('#' at byte 15)"},
		// Authority.
		{"report://acme:80/x", "port is not allowed (':' in the authority at byte 13)"},
		{"report://acme:/x", "port is not allowed (':' in the authority at byte 13)"},
		{"report://u@acme/x", "userinfo is not allowed ('@' at byte 10)"},
		{"report://u:p@acme/x", "userinfo is not allowed ('@' at byte 12)"},
		{"report://@acme/x", "userinfo is not allowed ('@' at byte 9)"},
		// Control and non-ASCII bytes.
		{"report://acme/a\x00b", "control character at byte 15 (0x00)"},
		{"report://acme/\x7f", "control character at byte 14 (0x7f)"},
		{"report://acme/x\n", "control character at byte 15 (0x0a)"},
		{"report://ac\tme/x", "control character at byte 11 (0x09)"},
		{"rep\x00ort://acme/x", "control character at byte 3 (0x00)"},
		{"report://acme／x", "non-ASCII character U+FF0F at byte 13 (resource URIs are ASCII only)"},
		{"report://acme/a／b", "non-ASCII character U+FF0F at byte 15 (resource URIs are ASCII only)"},
		{"report://\u0430cme/x", "non-ASCII character U+0430 at byte 9 (resource URIs are ASCII only)"}, // Cyrillic а
		{"report://acme/\u202ex", "non-ASCII character U+202E at byte 14 (resource URIs are ASCII only)"},
		{"report://acme/x\xff", "non-ASCII byte 0xff at byte 15 (resource URIs are ASCII only)"},
		{"report://acme/\xe2\x80", "non-ASCII byte 0xe2 at byte 14 (resource URIs are ASCII only)"},
		{"\u212Aey://acme/x", "non-ASCII character U+212A at byte 0 (resource URIs are ASCII only)"}, // Kelvin sign
		// Illegal printable characters.
		{"report://acme/a b", "illegal character ' ' at byte 15 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		{"report://acme/a:b", "illegal character ':' at byte 15 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		{"report://acme/a@b", "illegal character '@' at byte 15 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		{"report://acme/a\\b", "illegal character '\\\\' at byte 15 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		{"report://acme/it's", "illegal character '\\'' at byte 16 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)"},
		// Scheme.
		{"Report://acme/x", "scheme must be lower-case"},
		{"REPORT://acme/x", "scheme must be lower-case"},
		{"1report://acme/x", "scheme must start with a letter, not '1' (scheme must match [a-z][a-z0-9+.-]*)"},
		{"-r://acme/x", "scheme must start with a letter, not '-' (scheme must match [a-z][a-z0-9+.-]*)"},
		{"re_port://acme/x", "illegal character '_' at byte 2 in scheme (scheme must match [a-z][a-z0-9+.-]*)"},
		{" report://acme/x", "illegal character ' ' at byte 0 in scheme (scheme must match [a-z][a-z0-9+.-]*)"},
		{"a/b://acme/x", "illegal character '/' at byte 1 in scheme (scheme must match [a-z][a-z0-9+.-]*)"},
		{strings.Repeat("s", 33) + "://t/p", "scheme is longer than 32 bytes (33 bytes)"},
		// Tenant.
		{"report://ACME/x", tenantRE + ": upper-case 'A' at byte 9"},
		{"report://acMe/x", tenantRE + ": upper-case 'M' at byte 11"},
		{"report://-acme/x", tenantRE + ": it starts with '-'"},
		{"report://acme-/x", tenantRE + ": it ends with '-'"},
		{"report://-/x", tenantRE + ": it starts with '-'"},
		{"report://ac_me/x", tenantRE + ": illegal character '_' at byte 11"},
		{"report://ac.me/x", tenantRE + ": illegal character '.' at byte 11"},
		{"report://[::1]/x", "port is not allowed (':' in the authority at byte 10)"},
		{"report://" + strings.Repeat("a", 64) + "/x", tenantRE + ": it is longer than 63 bytes (64 bytes)"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %+v, %v, want *Error %q", tt.in, got, err, tt.want)
			continue
		}
		if got != (URI{}) {
			t.Errorf("Parse(%q) returned %+v with an error, want the zero URI", tt.in, got)
		}
		if e.Reason != tt.want {
			t.Errorf("Parse(%q) reason = %q, want %q", tt.in, e.Reason, tt.want)
		}
		if e.Input != tt.in {
			t.Errorf("Parse(%q) error Input = %q, want the input", tt.in, e.Input)
		}
		if msg := err.Error(); msg != "invalid resource URI: "+tt.want {
			t.Errorf("Parse(%q).Error() = %q, want %q", tt.in, msg, "invalid resource URI: "+tt.want)
		}
	}
}

func TestErrorTextOmitsInput(t *testing.T) {
	in := "report://acme/\x00\x1b[31m"
	_, err := Parse(in)
	if err == nil {
		t.Fatalf("Parse(%q) = nil error, want an error", in)
	}
	for _, c := range []byte(err.Error()) {
		if c < 0x20 || c >= 0x7f {
			t.Fatalf("Parse(%q).Error() = %q contains byte 0x%02x", in, err.Error(), c)
		}
	}
}

func TestValidTenant(t *testing.T) {
	valid := []string{"a", "0", "acme", "a-b", "a--b", "t1", "t10", "a" + strings.Repeat("b", 61) + "c"}
	for _, s := range valid {
		if err := ValidTenant(s); err != nil {
			t.Errorf("ValidTenant(%q) = %v, want nil", s, err)
		}
	}
	invalid := map[string]string{
		"":                       "tenant is empty (" + tenantRE + ")",
		"-":                      tenantRE + ": it starts with '-'",
		"-a":                     tenantRE + ": it starts with '-'",
		"a-":                     tenantRE + ": it ends with '-'",
		"Acme":                   tenantRE + ": upper-case 'A' at byte 0",
		"ac me":                  tenantRE + ": illegal character ' ' at byte 2",
		"a/b":                    tenantRE + ": illegal character '/' at byte 1",
		"a:80":                   tenantRE + ": illegal character ':' at byte 1",
		"u@a":                    tenantRE + ": illegal character '@' at byte 1",
		"\u0430cme":              "non-ASCII character U+0430 at byte 0 (resource URIs are ASCII only)",
		"a\x00":                  "control character at byte 1 (0x00)",
		"a%41":                   "percent-encoding is not allowed ('%' at byte 1)",
		strings.Repeat("a", 64):  tenantRE + ": it is longer than 63 bytes (64 bytes)",
		strings.Repeat("a", 1e4): tenantRE + ": it is longer than 63 bytes (10000 bytes)",
	}
	for s, want := range invalid {
		err := ValidTenant(s)
		var e *Error
		if !errors.As(err, &e) || e.Reason != want || e.Input != s {
			t.Errorf("ValidTenant(%q) = %#v, want reason %q", s, err, want)
		}
	}
}

func TestValidScheme(t *testing.T) {
	for _, s := range []string{"search", "report", "a", "a1", "x+y.z-w", strings.Repeat("z", 32)} {
		if err := ValidScheme(s); err != nil {
			t.Errorf("ValidScheme(%q) = %v, want nil", s, err)
		}
	}
	invalid := map[string]string{
		"":                      "scheme is empty (want <scheme>://<tenant>/<path>)",
		"Report":                "scheme must be lower-case",
		"9p":                    "scheme must start with a letter, not '9' (scheme must match [a-z][a-z0-9+.-]*)",
		"re port":               "illegal character ' ' at byte 2 in scheme (scheme must match [a-z][a-z0-9+.-]*)",
		"report:":               "illegal character ':' at byte 6 in scheme (scheme must match [a-z][a-z0-9+.-]*)",
		"rep\u043ert":           "non-ASCII character U+043E at byte 3 (resource URIs are ASCII only)",
		strings.Repeat("z", 33): "scheme is longer than 32 bytes (33 bytes)",
	}
	for s, want := range invalid {
		err := ValidScheme(s)
		var e *Error
		if !errors.As(err, &e) || e.Reason != want || e.Input != s {
			t.Errorf("ValidScheme(%q) = %#v, want reason %q", s, err, want)
		}
	}
}

func TestValidPath(t *testing.T) {
	for _, s := range []string{"x", "a/b", "billing/2026-11/import-dry-run", "...", "a..b", ".x/x.", strings.Repeat("p", MaxLen)} {
		if err := ValidPath(s); err != nil {
			t.Errorf("ValidPath(%q) = %v, want nil", s, err)
		}
	}
	invalid := map[string]string{
		"":                            "path is empty (want <scheme>://<tenant>/<path>)",
		"/":                           `path must not start with "/"`,
		"/a":                          `path must not start with "/"`,
		"a/":                          "path has a trailing slash (byte 1)",
		"a//b":                        `path has an empty segment ("//" at byte 1)`,
		"..":                          `path segment ".." is not allowed (byte 0)`,
		"a/../b":                      `path segment ".." is not allowed (byte 2)`,
		"./a":                         `path segment "." is not allowed (byte 0)`,
		"%2e%2e":                      "percent-encoding is not allowed ('%' at byte 0)",
		"a?b":                         "query is not allowed ('?' at byte 1)",
		"a#b":                         "fragment is not allowed ('#' at byte 1)",
		"a\x00":                       "control character at byte 1 (0x00)",
		"a\uff0fb":                    "non-ASCII character U+FF0F at byte 1 (resource URIs are ASCII only)",
		"a+b":                         "illegal character '+' at byte 1 in path (allowed: A-Z a-z 0-9 - . _ ~ and \"/\" between segments)",
		strings.Repeat("p", MaxLen+1): "path is longer than 1024 bytes (1025 bytes)",
	}
	for s, want := range invalid {
		err := ValidPath(s)
		var e *Error
		if !errors.As(err, &e) || e.Reason != want || e.Input != s {
			t.Errorf("ValidPath(%q) = %#v, want reason %q", s, err, want)
		}
	}
}

func TestNew(t *testing.T) {
	u, err := New("report", "acme", "billing/2026-11/import-dry-run")
	want := URI{"report", "acme", "billing/2026-11/import-dry-run"}
	if err != nil || u != want {
		t.Fatalf("New = %+v, %v, want %+v, nil", u, err, want)
	}
	if s := u.String(); s != "report://acme/billing/2026-11/import-dry-run" {
		t.Errorf("String() = %q, want %q", s, "report://acme/billing/2026-11/import-dry-run")
	}
	p, err := Parse(u.String())
	if err != nil || p != u {
		t.Errorf("Parse(%q) = %+v, %v, want %+v, nil", u.String(), p, err, u)
	}

	maxPath := strings.Repeat("a", MaxLen-len("report://acme/"))
	if _, err := New("report", "acme", maxPath); err != nil {
		t.Errorf("New with a %d-byte URI = %v, want nil", MaxLen, err)
	}

	tests := []struct {
		scheme, tenant, path string
		want                 string
	}{
		{"report", "acme", maxPath + "a", "URI is longer than 1024 bytes (1025 bytes)"},
		{"Report", "acme", "x", "scheme must be lower-case"},
		{"", "acme", "x", "scheme is empty (want <scheme>://<tenant>/<path>)"},
		{"report", "", "x", "tenant is empty (" + tenantRE + ")"},
		{"report", "ACME", "x", tenantRE + ": upper-case 'A' at byte 9"},
		{"report", "acme:80", "x", tenantRE + ": illegal character ':' at byte 13"},
		{"report", "acme/x", "y", tenantRE + ": illegal character '/' at byte 13"},
		{"report", "acme", "", "path is empty (want <scheme>://<tenant>/<path>)"},
		{"report", "acme", "/x", `path must not start with "/"`},
		{"report", "acme", "x/", "path has a trailing slash (byte 15)"},
		{"report", "acme", "a/../b", `path segment ".." is not allowed (byte 16)`},
		{"report", "acme", "x?y", "query is not allowed ('?' at byte 15)"},
	}
	for _, tt := range tests {
		u, err := New(tt.scheme, tt.tenant, tt.path)
		var e *Error
		if !errors.As(err, &e) || e.Reason != tt.want {
			t.Errorf("New(%q, %q, %q) = %+v, %v, want reason %q", tt.scheme, tt.tenant, tt.path, u, err, tt.want)
			continue
		}
		if in := tt.scheme + "://" + tt.tenant + "/" + tt.path; e.Input != in {
			t.Errorf("New(%q, %q, %q) error Input = %q, want %q", tt.scheme, tt.tenant, tt.path, e.Input, in)
		}
	}
}

func TestSplitScheme(t *testing.T) {
	tests := []struct {
		in     string
		scheme string
		ok     bool
	}{
		{"report://acme/x", "report", true},
		{"REPORT://x/y", "report", true},
		{"Search://acme/results/1", "search", true},
		{"report://", "report", true},
		{"://x", "", true},
		{"a://b://c", "a", true},
		{"re_Port\x00://x", "re_port\x00", true},
		{"\u212Aey://x", "\u212Aey", true}, // Kelvin sign stays: no folding of look-alikes to ASCII
		{"ＲEPORT://x", "Ｒeport", true},
		{"report:/x", "", false},
		{"report", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		scheme, ok := SplitScheme(tt.in)
		if scheme != tt.scheme || ok != tt.ok {
			t.Errorf("SplitScheme(%q) = %q, %v, want %q, %v", tt.in, scheme, ok, tt.scheme, tt.ok)
		}
	}
}

func TestStringZero(t *testing.T) {
	if s := (URI{}).String(); s != ":///" {
		t.Errorf("URI{}.String() = %q, want %q", s, ":///")
	}
	if _, err := Parse((URI{}).String()); err == nil {
		t.Errorf("Parse(URI{}.String()) = nil error, want an error")
	}
}

func TestParseAllocs(t *testing.T) {
	in := "report://acme/billing/2026-11/import-dry-run"
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse(in) }); n != 0 {
		t.Errorf("Parse(%q) allocates %v times, want 0", in, n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = SplitScheme(in) }); n != 0 {
		t.Errorf("SplitScheme(%q) allocates %v times, want 0", in, n)
	}
}
