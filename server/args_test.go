package server

import (
	"encoding/json"
	"fmt"
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
		got, terr := parseRetention(json.RawMessage(in))
		if terr != nil || got != want {
			t.Errorf("parseRetention(%s) = %v, %v, want %v", in, got, terr, want)
		}
	}
	for _, in := range []string{`0`, `-5`, `0.5`, `1e-10`, `"PT0.5S"`, `"P"`, `"PT"`, `"P1Y"`, `"P1M"`, `"1h"`, `"forever"`, `true`, `"PT-1H"`, `1e-400`, `-1e400`, `1e400`, `-0`, `"3600"`, `NaN`, `Infinity`, `0x10`, `{}`, `[1]`, `null`, `"PT0.999999999S"`} {
		if got, terr := parseRetention(json.RawMessage(in)); terr == nil {
			t.Errorf("parseRetention(%s) = %v, want a validation error", in, got)
		} else if terr.ErrorKind != kindValidation || terr.FieldErrors[0].Field != "retention" {
			t.Errorf("parseRetention(%s) error = %+v", in, terr)
		}
	}
}

// TestOversizedDurationsAreCapped: retention and downloadUrlTtl past what
// a time.Duration holds are capped at maxRetention and links.maxTTL, as
// the docs say, through the tools.
func TestOversizedDurationsAreCapped(t *testing.T) {
	e := newLinkEnv(t)
	for i, v := range []string{`1e12`, `9223372036854775808`, `"P99999999999D"`} {
		args := fmt.Sprintf(`{"path":"cap/%d","mimeType":"text/plain","text":"x","retention":%s,"includeDownloadUrl":true,"downloadUrlTtl":%s}`, i, v, v)
		res, rerr := e.callRaw(t, "save_report", []byte(args))
		if rerr != nil || res["isError"] == true {
			t.Errorf("save_report with retention and downloadUrlTtl %s: %v %v", v, rerr, res["structuredContent"])
			continue
		}
		sc := structuredOf(t, res)
		if want := e.clock.Add(8760 * time.Hour).Format(time.RFC3339); sc["expiresAt"] != want {
			t.Errorf("retention %s: expiresAt %v, want %s (maxRetention)", v, sc["expiresAt"], want)
		}
		if want := e.clock.Add(10 * time.Minute).Format(time.RFC3339); sc["downloadUrlExpiresAt"] != want {
			t.Errorf("downloadUrlTtl %s: downloadUrlExpiresAt %v, want %s (links.maxTTL)", v, sc["downloadUrlExpiresAt"], want)
		}
	}
}

func TestDecodeArgsNamesTheField(t *testing.T) {
	var a snapshotArgs
	cases := map[string]string{
		`{"query": 5}`:                    "query: must be a string",
		`{"hits": [{"id": 1}]}`:           "hits.id: must be a string",
		`{"listed": "yes", "query": "q"}`: "listed: must be a boolean",
		`{"query": "q", "hits": [{"id": "1", "title": "", "snippet": "", "query": 1}]}`: "hits[0].query: is not an argument",
		`{"total": "2"}`:                 "total: must be an integer",
		`{"listed": "yes"}`:              "listed: must be a boolean",
		`{"query": "q", "surprise": 1}`:  "surprise: is not an argument",
		`[1, 2]`:                         "arguments must be a JSON object",
		`{"query": "q", "total": 1.5}`:   "total: must be an integer",
		`{"hits": {"id": "x"}}`:          "hits: must be an array",
		`{"query": "q", "hits": [], "x"`: "not valid JSON",
	}
	for in, want := range cases {
		terr := decodeArgs(json.RawMessage(in), &a)
		if terr == nil || terr.ErrorKind != kindValidation || !strings.Contains(terr.Message, want) {
			t.Errorf("decodeArgs(%s) = %+v, want validation_error containing %q", in, terr, want)
		}
	}
	if terr := decodeArgs(nil, &a); terr != nil {
		t.Errorf("decodeArgs(nil) = %v, want success (no arguments)", terr)
	}
}

func TestCheckText(t *testing.T) {
	for _, s := range []string{"a\x00b", "bell\a", "\x7f", string([]byte{0xff})} {
		if checkText("title", s, 100) == nil {
			t.Errorf("checkText(%q) accepted", s)
		}
	}
	if terr := checkText("title", "tab\tand\nnewline, 日本語", 100); terr != nil {
		t.Errorf("checkText rejected ordinary text: %v", terr)
	}
	if checkText("title", strings.Repeat("x", 101), 100) == nil {
		t.Error("checkText accepted an over-long value")
	}
}

func pos(scheme, path string) store.Position { return store.Position{Scheme: scheme, Path: path} }

func TestCursorIsBoundToTenantAndFilter(t *testing.T) {
	c := encodeCursor("t1", "report\x00a/", cursorBody{Scheme: "report", Path: "a/b"})
	if p, err := decodeCursor(c, "t1", "report\x00a/"); err != nil || pos(p.Scheme, p.Path) != pos("report", "a/b") {
		t.Errorf("round trip: %v %v", p, err)
	}
	for _, tc := range []struct{ tenant, binding string }{{"t10", "report\x00a/"}, {"t1", "report\x00"}, {"t1", ""}} {
		if _, err := decodeCursor(c, tc.tenant, tc.binding); err == nil {
			t.Errorf("cursor of t1 accepted for %q/%q", tc.tenant, tc.binding)
		}
	}
	for _, bad := range []string{"!!!", "e30", strings.Repeat("A", 5000)} {
		if _, err := decodeCursor(bad, "t1", ""); err == nil {
			t.Errorf("decodeCursor(%.20q) accepted", bad)
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
		if terr := checkMIMEType("mimeType", s); terr != nil {
			t.Errorf("checkMIMEType(%q) = %v, want nil", s, terr)
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
		terr := checkMIMEType("mimeType", s)
		if terr == nil || terr.ErrorKind != kindValidation || len(terr.FieldErrors) != 1 || terr.FieldErrors[0].Field != "mimeType" {
			t.Errorf("checkMIMEType(%q) = %+v, want a validation_error on mimeType", s, terr)
		}
	}
	if terr := checkMIMEType("Content-Type", "*/*"); terr == nil || terr.FieldErrors[0].Field != "Content-Type" || !strings.Contains(terr.Message, "media range") {
		t.Errorf("checkMIMEType(Content-Type, */*) = %+v, want an error naming Content-Type and the media range", terr)
	}
}
