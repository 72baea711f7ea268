package integration

import (
	"context"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayUpstreamsDirect is the baseline of the gateway tests: what
// the pinned upstreams do when the go-sdk client calls them directly,
// with no gateway. server-everything over stdio and over Streamable HTTP
// (bound to 127.0.0.1 only): every tool of everythingCalls works, the
// long-running tool sends its progress, prompts, resources, templates and
// completion answer; server-filesystem's read_text_file returns a file
// whole as one text item. The gateway tests compare against these runs.
func TestGatewayUpstreamsDirect(t *testing.T) {
	u := requireUpstreams(t)
	check := func(t *testing.T, tr *transcript) {
		t.Helper()
		for _, c := range everythingCalls {
			worked := false
			for _, w := range tr.worked {
				worked = worked || w == c.key
			}
			// get-roots-list is listed only to clients that declare roots.
			if want := c.key != "bad-arguments" && c.key != "get-roots-list" && c.key != "simulate-research-query"; worked != want {
				t.Errorf("%s: worked = %v, want %v: %s", c.key, worked, want, tr.ops["tools/call/"+c.key])
			}
		}
		for _, tool := range tr.tools {
			if tool == "get-roots-list" || strings.HasPrefix(tool, "trigger-sampling") || strings.HasPrefix(tool, "trigger-elicitation") {
				t.Errorf("%s is listed to a client that declares no roots, sampling or elicitation", tool)
			}
		}
		if got := tr.ops["progress/trigger-long-running-operation"]; got != "1/4 2/4 3/4 4/4" {
			t.Errorf("progress of trigger-long-running-operation = %q, want 1/4 2/4 3/4 4/4", got)
		}
		want := map[string]string{
			"completion/complete/prompt/department":         `"values":["Sales","Support"]`,
			"completion/complete/prompt/name-in-context":    `"values":["Alice","Bob","Charlie"]`,
			"completion/complete/resource/resourceId":       `"values":["12"]`,
			"prompts/get/args-prompt":                       `What's weather in Paris, Texas?`,
			"resources/read/demo://resource/dynamic/text/7": `Resource 7: This is a plaintext resource created at \u003ctime\u003e`,
			"resources/read/gzip-link":                      `"mimeType":"application/gzip"`,
			"tools/call/get-sum":                            `The sum of 2 and 40 is 42.`,
			"tools/call/get-structured-content":             `"structuredContent":{`,
			"tools/call/get-tiny-image":                     `"type":"image"`,
			"tools/call/get-resource-links":                 `"type":"resource_link"`,
			"tools/call/get-resource-reference/blob":        `"type":"resource"`,
			"shape/get-env":                                 `PATH=true`,
			"resources/read/bad-uri":                        `error: `,
			"prompts/get/bad-arguments":                     `error: `,
		}
		for k, frag := range want {
			if !strings.Contains(tr.ops[k], frag) {
				t.Errorf("%s = %s, want it to contain %s", k, tr.ops[k], frag)
			}
		}
		listed := 0
		for k := range tr.ops {
			if strings.HasPrefix(k, "resources/list/demo://resource/static/document/") {
				listed++
			}
		}
		if listed == 0 {
			t.Errorf("resources/list has no static documents")
		}
	}
	t.Run("everything/stdio", func(t *testing.T) {
		rec := &sessionRecorder{}
		cs := connectStdio(t, rec, u.Node, u.Everything, "stdio")
		check(t, exerciseEverything(t, cs, rec, naming{}))
	})
	t.Run("everything/http", func(t *testing.T) {
		endpoint := startEverythingHTTP(t, u)
		if addrs := listeningOn(t, endpoint); len(addrs) != 1 || addrs[0] != "127.0.0.1" {
			t.Errorf("server-everything listens on %v, want 127.0.0.1 only (the loopback preload)", addrs)
		}
		rec := &sessionRecorder{}
		cs := connectHTTP(t, rec, endpoint, "", v2025)
		if got := cs.InitializeResult().ProtocolVersion; got != v2025 {
			t.Errorf("server-everything negotiated %s, want %s", got, v2025)
		}
		check(t, exerciseEverything(t, cs, rec, naming{}))
	})
	t.Run("filesystem/read_text_file", func(t *testing.T) {
		dir := t.TempDir()
		small, large := writeFixtureFiles(t, dir)
		rec := &sessionRecorder{}
		cs := connectStdio(t, rec, u.Node, u.Filesystem, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
		defer cancel()
		for _, f := range []string{small, large} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": f}})
			if err != nil || res.IsError {
				t.Fatalf("read_text_file %s: %v %+v", f, err, res)
			}
			want, _ := os.ReadFile(f)
			if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != string(want) {
				t.Errorf("read_text_file %s: want one text item equal to the file (%d bytes)", filepath.Base(f), len(want))
			}
		}
	})
}

// largeLogSize is the size of the large log fixture: 2 MB, over every
// host's tool-result limit.
const largeLogSize = 2 << 20

// writeFixtureFiles writes a small text file and a 2 MB log with
// multi-byte characters into dir and returns their paths.
func writeFixtureFiles(t *testing.T, dir string) (small, large string) {
	t.Helper()
	small = filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, []byte("a small file: it passes through unchanged — ü\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	large = filepath.Join(dir, "big.log")
	var b strings.Builder
	for i := 0; b.Len() < largeLogSize-200; i++ {
		b.WriteString(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339))
		b.WriteString(" level=info component=gateway-fixture line=")
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(" naïve café ✓ 日本語\n")
	}
	b.WriteString(strings.Repeat("z", largeLogSize-1-b.Len()) + "\n") // exactly 2 MB, valid UTF-8
	if err := os.WriteFile(large, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return small, large
}

// listeningOn returns the local addresses of the sockets listening on
// endpoint's port, from /proc/net/tcp and /proc/net/tcp6.
func listeningOn(t *testing.T, endpoint string) []string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			// local_address is HEXIP:HEXPORT; state 0A is LISTEN.
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			ip, p, ok := strings.Cut(fields[1], ":")
			if pn, err := strconv.ParseUint(p, 16, 16); !ok || err != nil || int(pn) != port {
				continue
			}
			raw, err := hex.DecodeString(ip)
			if err != nil {
				continue
			}
			// The kernel prints each 32-bit word in host (little-endian) order.
			for i := 0; i+4 <= len(raw); i += 4 {
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			out = append(out, net.IP(raw).String())
		}
	}
	return out
}
