package index

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name, mt, body string
		max            int
		want           string
		complete       bool
	}{
		{"markdown", "text/markdown", "# Hello\nworld\n", 100, "# Hello\nworld\n", true},
		{"text cut at a character", "text/plain; charset=utf-8", "aé", 2, "a", false},
		{"json strings on their lines", "application/json",
			"{\n  \"query\": \"acme billing\",\n  \"total\": 2,\n  \"hits\": [\n    {\"id\": \"a\", \"title\": \"Invoice\\nMarch\"}\n  ]\n}",
			1000, "\nacme billing\n\n\na Invoice March", true},
		{"json keys, numbers and literals are not text", "application/vnd.x+json",
			`{"secretKey": 1, "ok": true, "n": null, "list": ["x", {"k": "v"}]}`, 1000, "x v", true},
		{"json cut", "application/json", `["aaaa", "bbbb", "cccc"]`, 7, "aaaa bb", false},
		{"json that does not parse is text", "application/json", `{"a": `, 100, `{"a": `, true},
		{"binary", "application/octet-stream", "\x00\x01", 100, "", false},
		{"text that is not UTF-8", "text/plain", "a\xffb", 100, "", false},
		{"image", "image/png", "PNG", 100, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := Extract(tt.mt, []byte(tt.body), tt.max)
			if got != tt.want || complete != tt.complete {
				t.Errorf("Extract(%q, %q, %d) = %q, %v; want %q, %v", tt.mt, tt.body, tt.max, got, complete, tt.want, tt.complete)
			}
		})
	}
}

func TestExtractJSONLinesMatchBody(t *testing.T) {
	body := "[\n\"alpha\",\n\n\"beta gamma\",\n4,\n\"delta\"\n]\n"
	text, _ := Extract("application/json", []byte(body), 1000)
	bodyLines := strings.Split(body, "\n")
	for i, l := range strings.Split(text, "\n") {
		for _, w := range Tokens(l) {
			if !strings.Contains(bodyLines[i], w) {
				t.Errorf("text line %d holds %q, body line %d is %q", i+1, w, i+1, bodyLines[i])
			}
		}
	}
}

func TestTokens(t *testing.T) {
	got := Tokens("Foo-bar, ÉCOLE_1.5 naïve x" + strings.Repeat("z", MaxTokenBytes+1) + " 東京")
	want := []string{"foo", "bar", "école", "1", "5", "naïve", "東京"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Tokens (-want +got):\n%s", d)
	}
}
