package main

import (
	"strings"
	"testing"
)

func TestHostRunTarget(t *testing.T) {
	id := strings.Repeat("ab", 16)
	for _, c := range []struct{ run, url, base, id, err string }{
		{id, "http://127.0.0.1:8765", "http://127.0.0.1:8765", id, ""},
		{id, "http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765", id, ""},
		{id, "https://rd.example.com/prefix/mcp/", "https://rd.example.com/prefix", id, ""},
		{"http://h:1/fixtures/runs/" + id, "", "http://h:1", id, ""},
		{"http://h:1/fixtures/runs/" + id + "/report.json", "", "http://h:1", id, ""},
		{"", "http://h:1/mcp/runs/" + id, "http://h:1", id, ""},
		{"", "http://h:1/mcp", "http://h:1", "", ""}, // --new-host-run
		{id, "", "", "", "--url is required"},
		{"nothex", "http://h:1", "", "", "32 lowercase hex"},
		{id, "h:1", "", "", "not an http(s) URL"},
	} {
		base, gotID, err := hostRunTarget(c.run, c.url)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("hostRunTarget(%q, %q): error %v, want %q", c.run, c.url, err, c.err)
			}
			continue
		}
		if err != nil || base != c.base || gotID != c.id {
			t.Errorf("hostRunTarget(%q, %q) = %q, %q, %v; want %q, %q", c.run, c.url, base, gotID, err, c.base, c.id)
		}
	}
	if got := redactRun("GET http://h/fixtures/runs/" + id + "/report.json"); strings.Contains(got, id) || !strings.HasSuffix(got, "/runs/…/report.json") {
		t.Errorf("redactRun: %q", got)
	}
}
