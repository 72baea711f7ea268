package gateway

import (
	"regexp"
	"testing"
)

var own = []string{"read_resource", "grep_resource", "query_resource"}

func TestToolNamesRoundTripAndCannotSpoof(t *testing.T) {
	multi := newNames([]string{"fs", "fs-2", "web"}, own, []string{"result", "report"})
	single := newNames([]string{"fs"}, own, []string{"result", "report"})
	tests := []struct {
		n         *names
		up, name  string
		wantFront string
	}{
		{multi, "fs", "read_text_file", "fs__read_text_file"},
		{multi, "fs-2", "read_text_file", "fs-2__read_text_file"},
		// An upstream listing a name that looks like another's namespace
		// stays in its own.
		{multi, "web", "fs__read_text_file", "web__fs__read_text_file"},
		{multi, "web", "read_resource", "web__read_resource"},
		{single, "fs", "read_text_file", "read_text_file"},
		{single, "fs", "read_resource", "fs__read_resource"},
		{single, "fs", "grep_resource", "fs__grep_resource"},
		// A name that would read back as a shorter one is prefixed.
		{single, "fs", "fs__x", "fs__fs__x"},
		{single, "fs", "web__x", "web__x"},
		{single, "fs", "a__b", "a__b"},
	}
	for _, tt := range tests {
		got := tt.n.frontTool(tt.up, tt.name, true)
		if got != tt.wantFront {
			t.Errorf("frontTool(%q, %q) = %q, want %q", tt.up, tt.name, got, tt.wantFront)
			continue
		}
		up, name, ok := tt.n.backTool(got, true)
		if !ok || up != tt.up || name != tt.name {
			t.Errorf("backTool(%q) = %q, %q, %v; want %q, %q", got, up, name, ok, tt.up, tt.name)
		}
	}
	// Accepted in calls: the prefixed form always; unprefixed only with
	// one upstream; the gateway's own names never reach an upstream.
	backs := []struct {
		n        *names
		front    string
		up, name string
		ok       bool
	}{
		{single, "fs__read_text_file", "fs", "read_text_file", true},
		{single, "read_resource", "", "", false},
		{multi, "read_text_file", "", "", false},
		{multi, "read_resource", "", "", false},
		{multi, "nope__x", "", "", false},
		{multi, "fs_2__x", "", "", false},
		{multi, "FS__x", "", "", false},
	}
	for _, b := range backs {
		up, name, ok := b.n.backTool(b.front, true)
		if up != b.up || name != b.name || ok != b.ok {
			t.Errorf("backTool(%q) = %q, %q, %v; want %q, %q, %v", b.front, up, name, ok, b.up, b.name, b.ok)
		}
	}
	// Prompts reserve no names.
	if got := single.frontTool("fs", "read_resource", false); got != "read_resource" {
		t.Errorf("prompt read_resource listed as %q", got)
	}
}

func TestURIsRoundTripAndCannotSpoof(t *testing.T) {
	multi := newNames([]string{"fs", "web"}, own, []string{"result", "report"})
	single := newNames([]string{"fs"}, own, []string{"result", "report"})
	tests := []struct {
		n         *names
		up, raw   string
		wantFront string
	}{
		{multi, "fs", "file:///x", "fs+file:///x"},
		{multi, "fs", "file:///a+b", "fs+file:///a+b"},
		// Another upstream's prefix inside a URI stays in its upstream.
		{multi, "web", "fs+file:///etc/passwd", "web+fs+file:///etc/passwd"},
		{multi, "web", "result://default/x", "web+result://default/x"},
		{single, "fs", "file:///x", "file:///x"},
		{single, "fs", "file:///a+b", "file:///a+b"},
		{single, "fs", "result://default/x", "fs+result://default/x"},
		{single, "fs", "RESULT://default/x", "fs+RESULT://default/x"},
		{single, "fs", "report://default/x", "fs+report://default/x"},
		{single, "fs", "fs+file:///x", "fs+fs+file:///x"},
		{single, "fs", "other+x://y", "fs+other+x://y"},
		{single, "fs", "fs+abc", "fs+fs+abc"},
		{single, "fs", "file:///{path}", "file:///{path}"},
	}
	for _, tt := range tests {
		got := tt.n.frontURI(tt.up, tt.raw)
		if got != tt.wantFront {
			t.Errorf("frontURI(%q, %q) = %q, want %q", tt.up, tt.raw, got, tt.wantFront)
			continue
		}
		up, raw, ok := tt.n.backURI(got)
		if !ok || up != tt.up || raw != tt.raw {
			t.Errorf("backURI(%q) = %q, %q, %v; want %q, %q", got, up, raw, ok, tt.up, tt.raw)
		}
		if tt.n.resourcedURI(got) {
			t.Errorf("resourcedURI(%q) = true for an upstream's URI", got)
		}
	}
	for _, n := range []*names{single, multi} {
		for _, raw := range []string{"result://default/x", "Report://default/x", "nope+file:///x"} {
			if up, _, ok := n.backURI(raw); ok {
				t.Errorf("backURI(%q) went to upstream %q; want resourced's", raw, up)
			}
		}
	}
	if _, _, ok := multi.backURI("file:///x"); ok {
		t.Error("an unprefixed URI went to an upstream with two upstreams")
	}
}

func TestNamePatternExcludesSeparators(t *testing.T) {
	re := regexp.MustCompile(NamePattern)
	for _, bad := range []string{"a_b", "a+b", "a.b", "A", "1a", ""} {
		if re.MatchString(bad) {
			t.Errorf("NamePattern accepts %q", bad)
		}
	}
}
