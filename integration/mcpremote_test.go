package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpRemote starts the pinned mcp-remote (integration/upstreams), the
// stdio bridge desktop hosts put in front of a remote server, against in
// with token as its --header. It skips (or, with
// RESOURCED_REQUIRE_GATEWAY=1, fails) when it is not installed.
func mcpRemote(t *testing.T, in *instance, token string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *bufio.Reader, stderr *syncBuffer) {
	t.Helper()
	node, err := exec.LookPath("node")
	proxy, _ := filepath.Abs(filepath.Join("upstreams", "node_modules", "mcp-remote", "dist", "proxy.js"))
	if err == nil {
		_, err = os.Stat(proxy)
	}
	if err != nil {
		if os.Getenv("RESOURCED_REQUIRE_GATEWAY") == "1" {
			t.Fatalf("mcp-remote: %v: %s", err, upstreamsSetupHint)
		}
		t.Skipf("mcp-remote: %v: %s", err, upstreamsSetupHint)
	}
	cmd = exec.Command(node, proxy, in.URL+"/mcp", "--header", "Authorization: Bearer "+token)
	// Its token store (~/.mcp-auth) and any browser stay inside the test.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "BROWSER=false", "XDG_CONFIG_HOME=", "MCP_REMOTE_CONFIG_DIR=")
	stdin, err = cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(out), stderr
}

// readMessage reads one JSON-RPC line from r within d.
func readMessage(t *testing.T, r *bufio.Reader, d time.Duration, stderr *syncBuffer) map[string]any {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("mcp-remote wrote %q: %v\nstderr:\n%s", line, err, stderr)
		}
		return m
	case <-time.After(d):
		t.Fatalf("mcp-remote answered nothing within %s; stderr:\n%s", d, stderr)
	}
	return nil
}

const mcpRemoteInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"resourced-test","version":"1"}}}` + "\n"

// TestMCPRemoteWithStaticToken: mcp-remote with a good token passed as a
// header connects and lists the tools; with a token the server refuses it
// reports the cause and exits non-zero without answering initialize and
// without an authorization request (docs/decisions.md, Auth).
func TestMCPRemoteWithStaticToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	in := startServer(t, "")
	t.Run("good token", func(t *testing.T) {
		cmd, stdin, stdout, stderr := mcpRemote(t, in, in.Token)
		io.WriteString(stdin, mcpRemoteInitialize)
		m := readMessage(t, stdout, 60*time.Second, stderr)
		if res, _ := m["result"].(map[string]any); res == nil || res["serverInfo"].(map[string]any)["name"] != "resourced" {
			t.Fatalf("initialize through mcp-remote: %v", m)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
		m = readMessage(t, stdout, 30*time.Second, stderr)
		tools, _ := m["result"].(map[string]any)["tools"].([]any)
		var names []string
		for _, x := range tools {
			names = append(names, x.(map[string]any)["name"].(string))
		}
		if !strings.Contains(strings.Join(names, " "), "save_report") {
			t.Errorf("tools/list through mcp-remote: %v", m)
		}
		stdin.Close()
		cmd.Wait()
		if strings.Contains(stderr.String(), in.Token) {
			t.Error("mcp-remote's log holds the token (it should not; nor should we pass it so)")
		}
	})
	t.Run("token for another server", func(t *testing.T) {
		c := tokenClaims("default", scopeRead+" "+scopeWrite)
		c["aud"] = "http://127.0.0.1:8765" // the port trap: minted for the default port
		cmd, stdin, stdout, stderr := mcpRemote(t, in, in.mint(c))
		io.WriteString(stdin, mcpRemoteInitialize)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
				t.Errorf("mcp-remote with a refused token exited with %v, want a non-zero status", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("mcp-remote with a refused token is still running after 60s; stderr:\n%s", stderr)
		}
		if rest, _ := io.ReadAll(stdout); strings.Contains(string(rest), `"result"`) {
			t.Errorf("mcp-remote answered initialize with a refused token: %s", rest)
		}
		want := "the token this request carried was refused: the token's audience (aud) is not this server: it must contain " + testBaseURL
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("mcp-remote's report does not name the cause %q:\n%s", want, stderr)
		}
		for _, path := range []string{" /authorize", " /token"} {
			if strings.Contains(in.logs.String(), path) {
				t.Errorf("mcp-remote asked the server for %s:\n%s", path, in.logs)
			}
		}
		for _, started := range []string{"Please authorize", "open the browser", "Browser opened"} {
			if strings.Contains(stderr.String(), started) {
				t.Errorf("mcp-remote started an authorization (%q):\n%s", started, stderr)
			}
		}
		// The server logs a request after answering it, and its log is
		// read through a pipe: the line may come after mcp-remote exits.
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(in.logs.String(), `"http":"POST /register","status":403`); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("no refused registration in the server's log:\n%s", in.logs)
				break
			}
		}
	})
}
