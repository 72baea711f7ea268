package uri

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse accepts only the canonical form: whatever it accepts formats back
// to the input byte for byte, contains no dangerous byte or dot segment, and agrees with New.
// Whatever it rejects comes with an *Error whose reason is non-empty printable ASCII.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		// Valid.
		"search://acme/results/01JXYZ8Q3K7M2N4P5R6S7T8V9W",
		"report://acme/billing/2026-11/import-dry-run",
		"report://a/x",
		"report://a-b/A.Z_a~z-0.9/...",
		"x-1.b+c://t/p",
		"report://" + strings.Repeat("a", 63) + "/x",
		"report://acme/" + strings.Repeat("a", MaxLen-len("report://acme/")),
		// Invalid.
		"",
		"report://acme/" + strings.Repeat("a", MaxLen-len("report://acme/")+1),
		"report://acme/%2e%2e",
		"report://acme/a/../b",
		"report://acme/a//b",
		"report://acme/a/",
		"report://acme",
		"report://acme/",
		"report:///x",
		"Report://acme/x",
		"report://ACME/x",
		"report://acme:80/x",
		"report://u@acme/x",
		"report://acme/x?y",
		"report://acme/x#y",
		"report://-acme/x",
		"report://acme-/x",
		"report://" + strings.Repeat("a", 64) + "/x",
		"report://acme/a\x00b",
		"report://acme／x",
		"report://\u0430cme/x",
		"report://acme/x\xff",
		"report:acme/x",
		"://x/y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, hasSep := SplitScheme(s) // must never panic
		u, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) error = %#v, want *Error", s, err)
			}
			if e.Reason == "" {
				t.Fatalf("Parse(%q) returned an *Error with an empty Reason", s)
			}
			if e.Input != s {
				t.Fatalf("Parse(%q) error Input = %q, want the input", s, e.Input)
			}
			if len(e.Reason) > 200 {
				t.Fatalf("Parse(%q) reason is %d bytes long: %q", s, len(e.Reason), e.Reason)
			}
			for i := 0; i < len(e.Reason); i++ {
				if c := e.Reason[i]; c < 0x20 || c >= 0x7f {
					t.Fatalf("Parse(%q) reason %q has byte 0x%02x at %d", s, e.Reason, c, i)
				}
			}
			if u != (URI{}) {
				t.Fatalf("Parse(%q) = %+v with an error, want the zero URI", s, u)
			}
			return
		}

		// The canonical form is the only form.
		if got := u.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q, want the input", s, got)
		}
		if again, err := Parse(u.String()); err != nil || again != u {
			t.Fatalf("Parse(%q) = %+v, %v, want %+v, nil", u.String(), again, err, u)
		}
		if n, err := New(u.Scheme, u.Tenant, u.Path); err != nil || n != u {
			t.Fatalf("New(%q, %q, %q) = %+v, %v, want %+v, nil", u.Scheme, u.Tenant, u.Path, n, err, u)
		}
		if err := ValidScheme(u.Scheme); err != nil {
			t.Fatalf("ValidScheme(%q) = %v for a parsed URI", u.Scheme, err)
		}
		if err := ValidTenant(u.Tenant); err != nil {
			t.Fatalf("ValidTenant(%q) = %v for a parsed URI", u.Tenant, err)
		}
		if err := ValidPath(u.Path); err != nil {
			t.Fatalf("ValidPath(%q) = %v for a parsed URI", u.Path, err)
		}
		if !hasSep || scheme != u.Scheme {
			t.Fatalf("SplitScheme(%q) = %q, %v, want %q, true", s, scheme, hasSep, u.Scheme)
		}

		// Nothing dangerous gets through.
		if len(s) > MaxLen {
			t.Fatalf("Parse accepted a %d-byte URI", len(s))
		}
		if strings.ContainsAny(s, "%?#@\\") {
			t.Fatalf("Parse(%q) accepted one of %%?#@\\", s)
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x7f {
				t.Fatalf("Parse(%q) accepted byte 0x%02x at %d", s, c, i)
			}
		}
		if strings.ContainsAny(u.Scheme+u.Tenant, "/:") || strings.ContainsRune(u.Path, ':') {
			t.Fatalf("Parse(%q) = %+v: a part contains a delimiter", s, u)
		}
		if strings.ToLower(u.Scheme) != u.Scheme || strings.ToLower(u.Tenant) != u.Tenant {
			t.Fatalf("Parse(%q) = %+v: scheme or tenant is not lower-case", s, u)
		}
		// A segment such as "a..b" or "..." is legal (it is not a dot segment), so the check is
		// per segment rather than a search for "..".
		for seg := range strings.SplitSeq(u.Path, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("Parse(%q) accepted path segment %q", s, seg)
			}
		}
	})
}
