package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGatewayEverything puts server-everything behind `resourced gateway`
// over Streamable HTTP and over stdio and compares every operation of
// exerciseEverything through the gateway (go-sdk client, both protocol
// versions) with the same operation made directly, field by field: tools
// (their definitions and results, images and resource_links included),
// progress of the long-running tool, prompts, resources, templates,
// completion and upstream errors. Over HTTP a second upstream (fs) makes
// the gateway namespace names (everything__echo) and URIs
// (everything+demo://…); over stdio, alone, it passes them unchanged.
func TestGatewayEverything(t *testing.T) {
	u := requireUpstreams(t)
	t.Run("http", func(t *testing.T) {
		endpoint := startEverythingHTTP(t, u)
		rec := &sessionRecorder{}
		want := exerciseEverything(t, connectHTTP(t, rec, endpoint, "", v2025), rec, naming{})
		in := startGateway(t, true, fmt.Sprintf(`gateway:
  upstreams:
    - name: everything
      url: %s
    - name: fs
      command: %q
      args: [%q, %q]
`, endpoint, u.Node, u.Filesystem, t.TempDir()))
		for _, v := range versions {
			t.Run(v, func(t *testing.T) {
				rec := &sessionRecorder{}
				cs := connectHTTP(t, rec, in.URL+"/mcp", in.Token, v)
				got := exerciseEverything(t, cs, rec, naming{prefix: "everything"})
				compareTranscripts(t, want, got, nil)
			})
		}
	})
	t.Run("stdio", func(t *testing.T) {
		rec := &sessionRecorder{}
		want := exerciseEverything(t, connectStdio(t, rec, u.Node, u.Everything, "stdio"), rec, naming{})
		in := startGateway(t, true, fmt.Sprintf(`gateway:
  upstreams:
    - name: everything
      command: %q
      args: [%q, stdio]
`, u.Node, u.Everything))
		for _, v := range versions {
			t.Run(v, func(t *testing.T) {
				rec := &sessionRecorder{}
				cs := connectHTTP(t, rec, in.URL+"/mcp", in.Token, v)
				got := exerciseEverything(t, cs, rec, naming{})
				compareTranscripts(t, want, got, map[string]string{
					"tools/call/get-env": "the gateway starts a stdio upstream with a minimal environment (docs/gateway.md); shape/get-env is compared",
				})
			})
		}
	})
}

// TestGatewayInspectorCLI is the MCP Inspector CLI smoke test (Inspector
// 2.12.0 on Node 22 from npm): it lists the tools of a gateway fronting
// server-filesystem and calls one through it. The Inspector prints a
// JSON-RPC error as JSON and exits 1, so the exit code is what is checked.
// Auth is none so that no token goes on a command line.
func TestGatewayInspectorCLI(t *testing.T) {
	u := requireUpstreams(t)
	dir := t.TempDir()
	small, _ := writeFixtureFiles(t, dir)
	in := startGateway(t, false, fsGatewayYAML(u, dir, "shared"))
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
		defer cancel()
		cmd := exec.CommandContext(ctx, u.Node22, append([]string{u.Inspector, "--cli", in.URL + "/mcp", "--transport", "http"}, args...)...)
		// The launcher finds its own package relative to the working directory.
		cmd.Dir = "upstreams"
		cmd.Env = append(os.Environ(), "PATH="+strings.TrimSuffix(u.Node22, "/node")+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("--method", "tools/list")
	if err != nil {
		t.Fatalf("inspector tools/list: %v\n%s", err, out)
	}
	for _, name := range []string{"read_text_file", "list_directory", "read_resource"} {
		if !strings.Contains(out, `"`+name+`"`) {
			t.Errorf("inspector tools/list does not show %s:\n%.2000s", name, out)
		}
	}
	out, err = run("--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path="+small)
	if err != nil {
		t.Fatalf("inspector tools/call read_text_file: %v\n%s", err, out)
	}
	if !strings.Contains(out, "a small file: it passes through unchanged") {
		t.Errorf("inspector tools/call did not print the file:\n%s", out)
	}
	// And a failing call fails by exit code.
	if out, err := run("--method", "tools/call", "--tool-name", "no_such_tool"); err == nil {
		t.Errorf("inspector tools/call of an unknown tool exited 0:\n%s", out)
	}
}

// TestGatewayWire sends the proxied methods as raw JSON-RPC through a
// gateway fronting server-everything (stdio) in both protocol versions,
// and validates every response against the official MCP schema of its
// version (rpc does); on 2026-07-28 a complete result must say so
// (resultType "complete"), which the official TypeScript client insists on.
func TestGatewayWire(t *testing.T) {
	u := requireUpstreams(t)
	in := startGateway(t, true, fmt.Sprintf(`gateway:
  upstreams:
    - name: everything
      command: %q
      args: [%q, stdio]
`, u.Node, u.Everything))
	calls := []struct {
		method string
		params map[string]any
	}{
		{"tools/list", nil},
		{"tools/call", map[string]any{"name": "get-sum", "arguments": map[string]any{"a": 1, "b": 2}}},
		{"tools/call", map[string]any{"name": "get-tiny-image", "arguments": map[string]any{}}},
		{"tools/call", map[string]any{"name": "get-resource-links", "arguments": map[string]any{"count": 2}}},
		{"prompts/list", nil},
		{"prompts/get", map[string]any{"name": "args-prompt", "arguments": map[string]any{"city": "Oslo"}}},
		{"resources/list", nil},
		{"resources/templates/list", nil},
		{"resources/read", map[string]any{"uri": "demo://resource/dynamic/text/1"}},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "completable-prompt"},
			"argument": map[string]any{"name": "department", "value": "E"}}},
	}
	for _, v := range versions {
		for _, c := range calls {
			params := map[string]any{}
			for k, x := range c.params {
				params[k] = x // rpc adds _meta to the map it is given
			}
			var r *rawResponse
			if c.method == "prompts/get" && v == v2026 {
				r = rpcPromptsGet2026(in, params)
			} else {
				r = in.rpc(v, c.method, params)
			}
			if r.Error != nil {
				t.Errorf("%s %s: JSON-RPC error %d %s", v, c.method, r.Error.Code, r.Error.Message)
				continue
			}
			var res struct {
				ResultType *string `json:"resultType"`
			}
			json.Unmarshal(r.Result, &res)
			switch {
			case v == v2026 && (res.ResultType == nil || *res.ResultType != "complete"):
				t.Errorf("%s %s: resultType %v, want \"complete\": %.300s", v, c.method, res.ResultType, r.Result)
			case v == v2025 && res.ResultType != nil:
				t.Errorf("%s %s: resultType %q on 2025-11-25", v, c.method, *res.ResultType)
			}
		}
	}
}

// rpcPromptsGet2026 is rpc for prompts/get on 2026-07-28, which also needs
// the prompt's name in Mcp-Name (rpc sets it for tools/call and
// resources/read only).
func rpcPromptsGet2026(in *instance, params map[string]any) *rawResponse {
	in.t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v2026,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "resourced-it", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", v2026)
	hdr.Set("Mcp-Method", "prompts/get")
	hdr.Set("Mcp-Name", headerValue(params["name"].(string)))
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "prompts/get", "params": params})
	if err != nil {
		in.t.Fatal(err)
	}
	r := in.post(hdr, body)
	validateResponse(in.t, v2026, "prompts/get", r.Body)
	return r
}
