package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fsGatewayYAML is a gateway: section with server-filesystem over stdio
// serving dir, named fs, with isolation (shared or perTenant).
func fsGatewayYAML(u *upstreamPaths, dir, isolation string) string {
	return fmt.Sprintf(`gateway:
  upstreams:
    - name: fs
      command: %q
      args: [%q, %q]
      isolation: %s
`, u.Node, u.Filesystem, dir, isolation)
}

// offloaded is what the gateway made of a large result.
type offloaded struct {
	link    *mcp.ResourceLink
	preview string
	note    string // the sentence saying how to read the rest
	bytes   int    // JSON size of the whole result the caller got
}

// parseOffloaded checks the shape docs/gateway.md gives an offloaded text
// part: a resource_link (uri in the gateway scheme under the caller's
// tenant, upstream and tool; name; mimeType; size; _meta sha256), then a
// preview that is a prefix of the original of at most previewChars
// characters, and one text item that says how to read the whole.
func parseOffloaded(t *testing.T, res *mcp.CallToolResult, tenant, tool string, original []byte, previewChars int) *offloaded {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: isError result: %+v", tool, res.Content)
	}
	b, _ := json.Marshal(res)
	o := &offloaded{bytes: len(b)}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			if o.link != nil {
				t.Errorf("more than one resource_link: %s", b)
			}
			o.link = c
		case *mcp.TextContent:
			switch {
			case o.link != nil && o.preview == "" && strings.HasPrefix(string(original), c.Text):
				o.preview = c.Text
			default:
				o.note += c.Text
			}
		default:
			t.Errorf("unexpected content item %T in an offloaded result", c)
		}
	}
	if o.link == nil {
		t.Fatalf("%s: no resource_link in the result (%d bytes): %.600s", tool, len(b), b)
	}
	prefix := fmt.Sprintf("result://%s/fs/%s/", tenant, tool)
	if !strings.HasPrefix(o.link.URI, prefix) || strings.Count(strings.TrimPrefix(o.link.URI, prefix), "/") != 1 {
		t.Errorf("link uri %s, want %s<sha256 prefix>/<n>", o.link.URI, prefix)
	}
	if o.link.Name == "" || o.link.MIMEType == "" {
		t.Errorf("link lacks name or mimeType: %+v", o.link)
	}
	if o.link.Size == nil || *o.link.Size != int64(len(original)) {
		t.Errorf("link size %v, want %d", o.link.Size, len(original))
	}
	sum := sha256.Sum256(original)
	if got, _ := o.link.Meta["sha256"].(string); got != hex.EncodeToString(sum[:]) {
		t.Errorf("link _meta sha256 %q, want %s", got, hex.EncodeToString(sum[:]))
	}
	if o.preview == "" {
		t.Errorf("no preview (a prefix of the original) after the link")
	}
	if n := utf8.RuneCountInString(o.preview); n > previewChars || !utf8.ValidString(o.preview) {
		t.Errorf("preview has %d characters (valid UTF-8: %v), want at most %d", n, utf8.ValidString(o.preview), previewChars)
	}
	if !strings.Contains(o.note, o.link.URI) || !strings.Contains(o.note, "read_resource") || !strings.Contains(o.note, "resources/read") {
		t.Errorf("the note does not say how to read the rest (uri, resources/read, read_resource): %q", o.note)
	}
	if o.bytes > 64<<10 {
		t.Errorf("the offloaded result is %d bytes, want a small one", o.bytes)
	}
	return o
}

// TestGatewayFilesystem puts server-filesystem (stdio) behind `resourced
// gateway` and reads through it: a small file passes through unchanged
// (equal to the direct result), a 2 MB log comes back as a preview and a
// link; the link reads back byte-identical with the go-sdk client on
// 2026-07-28 and 2025-11-25 and with the TypeScript client in both
// negotiation modes, and read_resource windows walk it to the end.
func TestGatewayFilesystem(t *testing.T) {
	u := requireUpstreams(t)
	dir := t.TempDir()
	small, large := writeFixtureFiles(t, dir)
	want, err := os.ReadFile(large)
	if err != nil {
		t.Fatal(err)
	}
	in := startGateway(t, true, fsGatewayYAML(u, dir, "shared"))

	direct := connectStdio(t, &sessionRecorder{}, u.Node, u.Filesystem, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	directSmall, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": small}})
	if err != nil {
		t.Fatal(err)
	}

	var uri string
	for _, v := range versions {
		t.Run("go-sdk/"+v, func(t *testing.T) {
			cs := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", in.Token, v)
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": small}})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := canonical(t, naming{}, directSmall), canonical(t, naming{}, got); a != b {
				t.Errorf("small file through the gateway differs from direct:\ndirect:  %s\ngateway: %s", a, b)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": large}})
			if err != nil {
				t.Fatal(err)
			}
			o := parseOffloaded(t, res, "default", "read_text_file", want, 500)
			t.Logf("2 MB read_text_file: %d bytes reach the caller (%d original)", o.bytes, len(want))
			// server-filesystem declares outputSchema {content: string} and
			// returns the file in structuredContent too: offloaded as well,
			// valid for the schema as listed (docs/gateway.md).
			var listed *mcp.Tool
			for tool, err := range cs.Tools(ctx, nil) {
				if err == nil && tool.Name == "read_text_file" {
					listed = tool
				}
			}
			validateOutput(t, listed, res.StructuredContent)
			validateOutput(t, listed, map[string]any{"content": "a small file"})
			wantSC, _ := json.Marshal(map[string]any{"content": string(want)})
			checkPointer(t, ctx, cs, "read_text_file", res.StructuredContent, wantSC)
			uri = o.link.URI
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: o.link.URI})
			if err != nil {
				t.Fatalf("resources/read %s: %v", o.link.URI, err)
			}
			if len(rr.Contents) != 1 || rr.Contents[0].Text != string(want) {
				t.Fatalf("resources/read of the link: %d contents, want one text equal to the file", len(rr.Contents))
			}
			if v == v2026 && (rr.CacheScope != "private" || rr.TTLMs <= 0) {
				t.Errorf("offloaded part read with cacheScope %q ttlMs %d, want private and > 0", rr.CacheScope, rr.TTLMs)
			}
		})
	}
	if uri == "" {
		t.FailNow()
	}

	t.Run("raw-read", func(t *testing.T) {
		// The offloaded part read as raw JSON-RPC: rpc validates the
		// response against the official schema of each version.
		for _, v := range versions {
			r := in.rpc(v, "resources/read", map[string]any{"uri": uri})
			if r.Error != nil || !strings.Contains(string(r.Result), `"uri":"`+uri+`"`) {
				t.Errorf("%s: resources/read %s: %.300s", v, uri, r.Body)
			}
		}
	})

	t.Run("read_resource-windows", func(t *testing.T) {
		var got strings.Builder
		args := map[string]any{"uri": uri}
		for calls := 0; ; calls++ {
			if calls > 2*len(want)/4096 {
				t.Fatalf("read_resource windows did not reach the end after %d calls", calls)
			}
			r := in.call(v2026, "read_resource", args)
			sc := checkSuccessWindow(t, r)
			got.WriteString(r.Content[1].Text)
			next, ok := sc["nextOffset"]
			if !ok {
				break
			}
			args = map[string]any{"uri": uri, "offset": next}
		}
		if got.String() != string(want) {
			t.Errorf("read_resource windows joined are %d bytes, not the file's %d", got.Len(), len(want))
		}
	})

	t.Run("typescript", func(t *testing.T) {
		node := requireTS(t)
		sum := sha256.Sum256(want)
		for _, mode := range []string{"auto", "legacy"} {
			t.Run(mode, func(t *testing.T) {
				out := runTSScript(t, node, "gateway-read.mjs", in.URL+"/mcp", mode, large,
					"RESOURCED_TOKEN="+in.Token)
				var s struct {
					OK       bool   `json:"ok"`
					Protocol string `json:"protocol"`
					URI      string `json:"uri"`
					Size     int    `json:"size"`
					SHA256   string `json:"sha256"`
				}
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatalf("summary %q: %v", out, err)
				}
				if !s.OK || s.Size != len(want) || s.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("TS client (%s) read back %d bytes sha256 %s, want %d and %x", mode, s.Size, s.SHA256, len(want), sum)
				}
				if wantProto := map[string]string{"auto": v2026, "legacy": v2025}[mode]; s.Protocol != wantProto {
					t.Errorf("TS client (%s) negotiated %s, want %s", mode, s.Protocol, wantProto)
				}
			})
		}
	})
}

// checkSuccessWindow checks a read_resource result: the metadata JSON,
// then the window as text.
func checkSuccessWindow(t *testing.T, r *toolResult) map[string]any {
	t.Helper()
	if r.IsError || len(r.Content) != 2 || r.Content[1].Type != "text" {
		t.Fatalf("read_resource: want metadata and a text window, got %.400s", r.raw)
	}
	return r.structured(t)
}

// runTSScript runs ts/<script> with node and args (tokens only in env) and
// returns its last stdout line, failing the test on a non-zero exit.
func runTSScript(t *testing.T, node, script string, args ...string) string {
	t.Helper()
	var argv, env []string
	for _, a := range args {
		if strings.HasPrefix(a, "RESOURCED_") && strings.Contains(a, "=") {
			env = append(env, a)
		} else {
			argv = append(argv, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("ts", script)}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout strings.Builder
	combined := &syncBuffer{}
	cmd.Stdout = io.MultiWriter(&stdout, combined)
	cmd.Stderr = combined
	if err := cmd.Run(); err != nil {
		t.Fatalf("node ts/%s %v: %v; output:\n%s", script, argv, err, combined)
	}
	return lastLine(stdout.String())
}

// TestGatewayPerTenant runs server-filesystem with isolation perTenant
// behind a JWT gateway: two tenants reading the 2 MB log get a process
// each (children of the gateway, from /proc), and neither can read the
// other's offloaded result: a foreign read gets the same -32602 as an
// unknown URI.
func TestGatewayPerTenant(t *testing.T) {
	u := requireUpstreams(t)
	dir := t.TempDir()
	_, large := writeFixtureFiles(t, dir)
	want, _ := os.ReadFile(large)
	in := startGateway(t, true, fsGatewayYAML(u, dir, "perTenant"))
	pid := in.cmd.Process.Pid
	fsChildren := func() []int {
		var out []int
		for _, c := range childProcesses(t, pid) {
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
			if strings.Contains(string(cl), u.Filesystem) {
				out = append(out, c)
			}
		}
		return out
	}
	if n := len(fsChildren()); n != 0 {
		t.Errorf("%d server-filesystem processes before any call, want 0 (perTenant starts them on first use)", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	uris := map[string]string{}
	tokens := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		tokens[tenant] = in.mint(tokenClaims(tenant, scopeRead))
		cs := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", tokens[tenant], v2026)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": large}})
		if err != nil {
			t.Fatal(err)
		}
		uris[tenant] = parseOffloaded(t, res, tenant, "read_text_file", want, 500).link.URI
	}
	kids := fsChildren()
	if len(kids) != 2 {
		t.Errorf("server-filesystem processes after two tenants' calls: %v, want 2", kids)
	}
	// A second call of the same tenant reuses its process.
	cs := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", tokens["acme"], v2025)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if again := fsChildren(); fmt.Sprint(again) != fmt.Sprint(kids) {
		t.Errorf("processes after acme's second call %v, want still %v", again, kids)
	}

	for _, v := range versions {
		globex := in.as(tokens["globex"])
		foreign := globex.rpc(v, "resources/read", map[string]any{"uri": uris["acme"]})
		unknown := strings.Replace(uris["acme"], "result://acme/", "result://acme/never-", 1)
		never := globex.rpc(v, "resources/read", map[string]any{"uri": unknown})
		if foreign.Error == nil || foreign.Error.Code != int64(jsonrpc.CodeInvalidParams) {
			t.Fatalf("%s: globex reading acme's offloaded result: %s, want -32602", v, foreign.Body)
		}
		if got, wantErr := errorMember(t, foreign), strings.Replace(errorMember(t, never), unknown, uris["acme"], 1); got != wantErr {
			t.Errorf("%s: foreign read differs from unknown read:\n%s\n%s", v, got, wantErr)
		}
		// Through read_resource too: the same not_found as for nothing.
		checkFailure(t, globex.call(v, "read_resource", map[string]any{"uri": uris["acme"]}), "not_found")
		// Each reads its own.
		if _, err := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", tokens["globex"], v).ReadResource(ctx, &mcp.ReadResourceParams{URI: uris["globex"]}); err != nil {
			t.Errorf("%s: globex reading its own result: %v", v, err)
		}
	}
	var werr *jsonrpc.Error
	_, err := connectHTTP(t, &sessionRecorder{}, in.URL+"/mcp", tokens["acme"], v2026).ReadResource(ctx, &mcp.ReadResourceParams{URI: uris["globex"]})
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("acme reading globex's result with the go-sdk client: %v, want -32602", err)
	}
}

// TestGatewayReadmeExample runs the README's option 0 as written: its
// five-line gateway.yaml (npx of server-filesystem over /tmp) on the
// defaults (bbolt, the dev token of the first start), and its host entry,
// whose url and Authorization header reach the gateway; a 2 MB log under
// /tmp comes back as a link. It runs in integration/upstreams, where npx
// finds the pinned server-filesystem without downloading it.
func TestGatewayReadmeExample(t *testing.T) {
	requireUpstreams(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not on PATH")
	}
	sec := section(t, readme(t), "Backing your server")
	var cfg, host string
	for _, b := range codeBlocks(sec, "yaml") {
		if strings.Contains(b, "gateway:") && cfg == "" {
			cfg = b
		}
	}
	for _, b := range codeBlocks(sec, "json") {
		if strings.Contains(b, "mcpServers") && host == "" {
			host = b
		}
	}
	if cfg == "" || host == "" {
		t.Fatalf("README's Backing your server lacks the gateway yaml (%t) or the host json (%t)", cfg != "", host != "")
	}
	if n := strings.Count(strings.TrimSpace(cfg), "\n") + 1; n != 5 {
		t.Errorf("the README's gateway config has %d lines, it says five", n)
	}
	var entry struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(host), &entry); err != nil || len(entry.MCPServers) != 1 {
		t.Fatalf("README host entry: %v (%d servers)", err, len(entry.MCPServers))
	}
	upstreams, _ := filepath.Abs("upstreams")
	in := startGatewayConfig(t, cfg, upstreams)
	m := regexp.MustCompile(`(?m)^(ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$`).FindStringSubmatch(in.stdout.String())
	if m == nil {
		t.Fatalf("first start printed no token; stdout:\n%s", in.stdout)
	}
	for _, s := range entry.MCPServers {
		if s.Type != "http" || !strings.HasPrefix(s.URL, "http://127.0.0.1:8765/") {
			t.Fatalf("host entry %+v: want type http and the default address", s)
		}
		dir, err := os.MkdirTemp("/tmp", "resourced-readme-gateway-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		_, large := writeFixtureFiles(t, dir)
		want, _ := os.ReadFile(large)
		auth := strings.ReplaceAll(s.Headers["Authorization"], "${RESOURCED_TOKEN}", m[1])
		if !strings.HasPrefix(auth, "Bearer ") {
			t.Fatalf("host entry's Authorization header %q", s.Headers["Authorization"])
		}
		endpoint := strings.Replace(s.URL, "http://127.0.0.1:8765", in.URL, 1)
		cs := connectHTTP(t, &sessionRecorder{}, endpoint, strings.TrimPrefix(auth, "Bearer "), v2026)
		// A bound that ends a stuck call, not a slow one: a loaded CI run's
		// first npx start took 52 s and the call 59 s.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": large}})
		if err != nil {
			t.Fatal(err)
		}
		o := parseOffloaded(t, res, "default", "read_text_file", want, 500)
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: o.link.URI})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != string(want) {
			t.Fatalf("reading the README example's link back: %v", err)
		}
	}
}
