package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeScenario(t *testing.T, dir, name, stamp, checks string) {
	t.Helper()
	d := filepath.Join(dir, "server-"+name+"-"+stamp)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if checks == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte(checks), 0o644); err != nil {
		t.Fatal(err)
	}
}

const expectedFile = `# comment
tools-call-* -- reference fixtures
pending@2025-11-25 -- only in one set
stateless check-fixture -- needs a reference tool
stateless check-gone -- never seen
`

func TestParseExpected(t *testing.T) {
	entries, err := ParseExpected(strings.NewReader(expectedFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("got %d entries, want 4", len(entries))
	}
	if e := entries[1]; e.Scenario != "pending" || e.Reqs != "2025-11-25" || e.Check != "" || e.Line != 3 {
		t.Errorf("entry 1 = %+v", e)
	}
	if e := entries[2]; e.Scenario != "stateless" || e.Check != "check-fixture" || e.Reason != "needs a reference tool" {
		t.Errorf("entry 2 = %+v", e)
	}
	for _, bad := range []string{"scenario", "scenario -- ", "a b c -- reason", "[ -- bad pattern"} {
		if _, err := ParseExpected(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseExpected(%q) succeeded", bad)
		}
	}
}

func TestGate(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "expected.txt")
	if err := os.WriteFile(exp, []byte(expectedFile), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	writeScenario(t, ok, "caching", "2026-01-01T00-00-00-000Z", `[{"id":"a","status":"SUCCESS"},{"id":"b","status":"INFO"}]`)
	writeScenario(t, ok, "stateless", "2026-01-01T00-00-00-000Z", `[{"id":"x","status":"SUCCESS"},{"id":"check-fixture","status":"FAILURE"}]`)
	writeScenario(t, ok, "tools-call-image", "2026-01-01T00-00-00-000Z", `[{"id":"t","status":"FAILURE"}]`)
	// An older run of the same scenario is ignored.
	writeScenario(t, ok, "caching", "2025-01-01T00-00-00-000Z", `[{"id":"a","status":"FAILURE"}]`)

	var out, errOut bytes.Buffer
	if rc := run([]string{"-expected", exp, "-run", "2026-07-28=" + ok, "-require", "2026-07-28=caching,stateless"}, &out, &errOut); rc != 0 {
		t.Fatalf("rc = %d, want 0\n%s%s", rc, out.String(), errOut.String())
	}
	for _, want := range []string{"gate PASS", "check-gone` matched nothing", "pending@2025-11-25` matched nothing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	bad := filepath.Join(dir, "bad")
	writeScenario(t, bad, "caching", "2026-01-01T00-00-00-000Z", `[{"id":"read","status":"SKIPPED"},{"id":"a","status":"SUCCESS"}]`)
	writeScenario(t, bad, "warn", "2026-01-01T00-00-00-000Z", `[{"id":"w","status":"WARNING","errorMessage":"boom","details":{"k": 1}}]`)
	writeScenario(t, bad, "pending", "2026-01-01T00-00-00-000Z", `[{"id":"p","status":"INFO"}]`)
	writeScenario(t, bad, "broken", "2026-01-01T00-00-00-000Z", "")
	out.Reset()
	if rc := run([]string{"-expected", exp, "-run", "2026-07-28=" + bad, "-require", "2026-07-28=caching,stateless"}, &out, &errOut); rc != 1 {
		t.Fatalf("rc = %d, want 1\n%s", rc, out.String())
	}
	for _, want := range []string{
		"SKIPPED read",               // a skip in a gated scenario fails
		"WARNING w", "error:   boom", // so does a warning, with its message
		`details: {"k":1}`,        // and compacted details
		"no check succeeded",      // pending is gated in 2026-07-28: INFO only tests nothing
		"no readable checks.json", // broken
		"required scenario stateless did not run",
		"gate FAIL",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRequiredScenarioExcluded(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "expected.txt")
	if err := os.WriteFile(exp, []byte("caching -- oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeScenario(t, dir, "caching", "2026-01-01T00-00-00-000Z", `[{"id":"a","status":"SUCCESS"}]`)
	var out, errOut bytes.Buffer
	if rc := run([]string{"-expected", exp, "-run", "2026-07-28=" + dir, "-require", "2026-07-28=caching"}, &out, &errOut); rc != 1 {
		t.Fatalf("rc = %d, want 1\n%s", rc, out.String())
	}
	if !strings.Contains(out.String(), "excludes required scenario caching") {
		t.Errorf("output:\n%s", out.String())
	}
}
