package service

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

func TestParseRetention(t *testing.T) {
	good := map[string]time.Duration{
		`3600`:              time.Hour,
		`1.5`:               1500 * time.Millisecond,
		`1`:                 time.Second,
		`"PT1H"`:            time.Hour,
		`"P7D"`:             7 * 24 * time.Hour,
		`"P1W"`:             7 * 24 * time.Hour,
		`"P1DT2H"`:          26 * time.Hour,
		`"PT90M"`:           90 * time.Minute,
		`"PT1.5S"`:          1500 * time.Millisecond,
		`"P1DT1S"`:          24*time.Hour + time.Second,
		`"PT1H30M"`:         90 * time.Minute,
		`1E2`:               100 * time.Second,
		`"PT0.000000001S"`:  0, // replaced below: too short
		`"P1W1DT1H1M1.25S"`: 8*24*time.Hour + time.Hour + time.Minute + 1250*time.Millisecond,
		// Oversized values saturate (the caller caps them), never wrap.
		`1e12`:                                 maxDuration,
		`9223372036854775808`:                  maxDuration,
		`9223372037`:                           maxDuration,
		`1e300`:                                maxDuration,
		`"P99999999999D"`:                      maxDuration,
		`"P99999999999999D"`:                   maxDuration,
		`"PT9223372036854775808S"`:             maxDuration,
		`"P` + strings.Repeat("9", 400) + `W"`: maxDuration,
		`"PT9223372036.854775807S"`:            maxDuration,
		`9223372036`:                           9223372036 * time.Second,
	}
	delete(good, `"PT0.000000001S"`)
	for in, want := range good {
		got, terr := ParseRetention(json.RawMessage(in))
		if terr != nil || got != want {
			t.Errorf("ParseRetention(%s) = %v, %v, want %v", in, got, terr, want)
		}
	}
	for _, in := range []string{`0`, `-5`, `0.5`, `1e-10`, `"PT0.5S"`, `"P"`, `"PT"`, `"P1Y"`, `"P1M"`, `"1h"`, `"forever"`, `true`, `"PT-1H"`, `1e-400`, `-1e400`, `1e400`, `-0`, `"3600"`, `NaN`, `Infinity`, `0x10`, `{}`, `[1]`, `null`, `"PT0.999999999S"`} {
		if got, terr := ParseRetention(json.RawMessage(in)); terr == nil {
			t.Errorf("ParseRetention(%s) = %v, want a validation error", in, got)
		} else if terr.ErrorKind != KindValidation || terr.FieldErrors[0].Field != "retention" {
			t.Errorf("ParseRetention(%s) error = %+v", in, terr)
		}
	}
}

func TestCheckText(t *testing.T) {
	for _, s := range []string{"a\x00b", "bell\a", "\x7f", string([]byte{0xff})} {
		if CheckText("title", s, 100) == nil {
			t.Errorf("CheckText(%q) accepted", s)
		}
	}
	if terr := CheckText("title", "tab\tand\nnewline, 日本語", 100); terr != nil {
		t.Errorf("checkText rejected ordinary text: %v", terr)
	}
	if CheckText("title", strings.Repeat("x", 101), 100) == nil {
		t.Error("checkText accepted an over-long value")
	}
}

func pos(scheme, path string) store.Position { return store.Position{Scheme: scheme, Path: path} }

func TestCursorIsBoundToTenantAndFilter(t *testing.T) {
	c := EncodeCursor("t1", "report\x00a/", Cursor{Scheme: "report", Path: "a/b"})
	if p, err := DecodeCursor(c, "t1", "report\x00a/"); err != nil || pos(p.Scheme, p.Path) != pos("report", "a/b") {
		t.Errorf("round trip: %v %v", p, err)
	}
	for _, tc := range []struct{ tenant, binding string }{{"t10", "report\x00a/"}, {"t1", "report\x00"}, {"t1", ""}} {
		if _, err := DecodeCursor(c, tc.tenant, tc.binding); err == nil {
			t.Errorf("cursor of t1 accepted for %q/%q", tc.tenant, tc.binding)
		}
	}
	for _, bad := range []string{"!!!", "e30", strings.Repeat("A", 5000)} {
		if _, err := DecodeCursor(bad, "t1", ""); err == nil {
			t.Errorf("DecodeCursor(%.20q) accepted", bad)
		}
	}
}

// TestCheckMIMEType: RFC 9110 media types pass; media ranges, control
// characters, empty parts and malformed parameters are a validation_error
// naming the field.
func TestCheckMIMEType(t *testing.T) {
	for _, s := range []string{
		"text/plain", "text/csv; charset=utf-8", "application/vnd.api+json", "TEXT/Plain",
		`text/plain; charset="utf-8"`, `text/plain;a=b;c="d \" e"`, "text/plain;", "text/plain ; a=b",
		"text/plain;\ta=b", `text/plain; title="Übersicht"`, "application/x-!#$%&'*+-.^_`|~", "text/plain;;a=b",
		`text/plain; a=""`,
	} {
		if terr := CheckMIMEType("mimeType", s); terr != nil {
			t.Errorf("CheckMIMEType(%q) = %v, want nil", s, terr)
		}
	}
	for _, s := range []string{
		"", "*/*", "text/*", "*/plain", "text", "text/", "/plain", "text//plain", "text/pl\x00ain", "text/plain\x00",
		"text/plain; a=\"\x01\"", "text/plain; a=\"b\x7f\"", "text/plain\n", "text/plain\r\nX: y", " text/plain",
		"text/plain ", "text /plain", "text/ plain", "text/plain; a", "text/plain; a=", "text/plain; =b",
		"text/plain; a = b", "text/plain; a=b c", `text/plain; a="b`, `text/plain; a="b\`, "text/plain; a=b; A=c",
		"text/plain a=b", "text/plain; a=\"\xff\"", "té/plain", "text/plain; a=(b)", "text/[plain]",
		strings.Repeat("a", 250) + "/plain",
	} {
		terr := CheckMIMEType("mimeType", s)
		if terr == nil || terr.ErrorKind != KindValidation || len(terr.FieldErrors) != 1 || terr.FieldErrors[0].Field != "mimeType" {
			t.Errorf("CheckMIMEType(%q) = %+v, want a validation_error on mimeType", s, terr)
		}
	}
	if terr := CheckMIMEType("Content-Type", "*/*"); terr == nil || terr.FieldErrors[0].Field != "Content-Type" || !strings.Contains(terr.Message, "media range") {
		t.Errorf("CheckMIMEType(Content-Type, */*) = %+v, want an error naming Content-Type and the media range", terr)
	}
}

// FuzzParseRetention checks the retention parsers on arbitrary input: no
// panic, a success is a positive duration, a failure is a validation_error
// naming retention, and a string retention means what parseISODuration
// says.
func FuzzParseRetention(f *testing.F) {
	for _, s := range []string{
		`3600`, `1.5`, `0`, `-5`, `1e300`, `1e-3`, `9223372036`, `9223372037`, `true`, `null`, `{}`,
		`"PT1H"`, `"P7D"`, `"P1W"`, `"P1DT2H"`, `"PT0.5S"`, `"PT1H30M"`, `"P"`, `"PT"`, `"P1Y"`,
		`"P1M"`, `"PT-1H"`, `"P99999999999999D"`, `"PT0S"`, `"1h"`, `"forever"`, `"P1W1D"`, `"PT1.S"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseISODuration(s)
		if ok && d < 0 {
			t.Fatalf("parseISODuration(%q) = %v, true: negative", s, d)
		}
		if ok && !strings.HasPrefix(s, "P") {
			t.Fatalf("parseISODuration(%q) = %v, true for a string not starting with P", s, d)
		}

		check := func(raw string) (time.Duration, bool) {
			got, terr := ParseRetention(json.RawMessage(raw))
			if terr != nil {
				if terr.ErrorKind != KindValidation || len(terr.FieldErrors) != 1 || terr.FieldErrors[0].Field != "retention" || terr.Message == "" {
					t.Fatalf("ParseRetention(%s) error = %+v, want a validation_error on retention", raw, terr)
				}
				if got != 0 {
					t.Fatalf("ParseRetention(%s) = %v with an error", raw, got)
				}
				return 0, false
			}
			if got <= 0 {
				t.Fatalf("ParseRetention(%s) = %v, nil: a success must be a positive duration", raw, got)
			}
			return got, true
		}
		check(s)
		// A string retention is parseISODuration's value; every duration of
		// a minute or more is accepted (shorter ones may be refused).
		quoted, _ := json.Marshal(s)
		got, ok2 := check(string(quoted))
		if ok2 && (!ok || got != d) {
			t.Fatalf("ParseRetention(%s) = %v, but parseISODuration(%q) = %v, %v", quoted, got, s, d, ok)
		}
		if ok && d >= time.Minute && !ok2 {
			t.Fatalf("ParseRetention(%s) refused what parseISODuration reads as %v", quoted, d)
		}
	})
}

// TestQuoteIsBounded: a message quotes at most maxQuoted bytes of what the
// caller sent, cut at a character, and says how long it was.
func TestQuoteIsBounded(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  `""`,
		"public!":                           `"public!"`,
		strings.Repeat("x", maxQuoted):      `"` + strings.Repeat("x", maxQuoted) + `"`,
		strings.Repeat("x", 1<<20):          `"` + strings.Repeat("x", maxQuoted) + `…" (1048576 bytes)`,
		strings.Repeat("é", 40):             `"` + strings.Repeat("é", 32) + `…" (80 bytes)`,
		"a\x00b" + strings.Repeat("y", 100): `"a\x00b` + strings.Repeat("y", 61) + `…" (103 bytes)`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%.80q) = %s, want %s", in, got, want)
		}
	}
}
