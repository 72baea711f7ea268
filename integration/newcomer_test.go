package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tests of this file follow the README as a first-time user would:
// the real binary with the defaults (no test config: the dev key created
// in the data directory on first start), on a port other than 8765.

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text of the README's "## title" section.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README has no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// codeBlocks are the fenced blocks of lang in text.
func codeBlocks(text, lang string) []string {
	var out []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		if body, _, ok := strings.Cut(part, "\n```"); ok {
			out = append(out, body+"\n")
		}
	}
	return out
}

// runBinary runs resourced with args in dir, with no RESOURCED_*
// environment, and returns its exit code, stdout and stderr.
func runBinary(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("resourced %v: %v", args, err)
	return 0, "", ""
}

// startDefaultServer starts resourced with no config at all (the README's
// `go run ./cmd/resourced`), on a free port, and returns it with the token
// its first start printed.
func startDefaultServer(t *testing.T) *instance {
	t.Helper()
	in := startServerConfig(t, "")
	m := regexp.MustCompile(`(?m)^(ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$`).FindStringSubmatch(in.stdout.String())
	if m == nil {
		t.Fatalf("first start printed no token; stdout:\n%s", in.stdout)
	}
	in.Token = m[1]
	return in
}

// TestNewcomerTokenOtherPort: against a server on another port than 8765,
// `resourced token` alone (it asks the running server) and `token --listen
// <that address>` both mint tokens the server accepts; the stderr line says
// which audience was used. Before, token always minted for
// http://127.0.0.1:8765 and the server answered 401.
func TestNewcomerTokenOtherPort(t *testing.T) {
	in := startDefaultServer(t)
	addr := strings.TrimPrefix(in.URL, "http://")
	checkSuccess(t, in.call(v2025, "list_resources", map[string]any{}), 0)
	for _, c := range []struct {
		args []string
		why  string
	}{
		{nil, "asked the server running on " + in.dataDir},
		{[]string{"--listen", addr}, "--listen"},
		{[]string{"--base-url", in.URL}, "--base-url"},
	} {
		args := append([]string{"token", "--data-dir", in.dataDir, "--tenant", "acme"}, c.args...)
		code, stdout, stderr := runBinary(t, t.TempDir(), args...)
		if code != 0 {
			t.Fatalf("resourced %v: exit %d\n%s", args, code, stderr)
		}
		if !strings.Contains(stderr, in.URL) || !strings.Contains(stderr, c.why) {
			t.Errorf("resourced %v: stderr %q does not say %s (%s)", args, stderr, in.URL, c.why)
		}
		acme := in.as(strings.TrimSpace(stdout))
		if r := acme.post(acme.http2025(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)); r.Status != 200 || r.Error != nil {
			t.Errorf("token of resourced %v: HTTP %d %s", args, r.Status, r.Body)
		}
	}
	// A port the server is not on: minted as asked, with a warning.
	code, stdout, stderr := runBinary(t, t.TempDir(), "token", "--data-dir", in.dataDir, "--listen", "127.0.0.1:1")
	if code != 0 || !strings.Contains(stderr, "will refuse this token") {
		t.Errorf("token for another port: exit %d, stderr %q; want 0 and a warning", code, stderr)
	}
	other := in.as(strings.TrimSpace(stdout))
	if r := other.post(other.http2025(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)); r.Status != 401 {
		t.Errorf("token for 127.0.0.1:1 against %s: HTTP %d, want 401", in.URL, r.Status)
	}
}

// TestNewcomerCommandLine: the process exit codes of help, version, usage
// errors and operator commands given a wrong path (which create nothing).
func TestNewcomerCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"--help"}, 0, "resourced token"},
		{[]string{"-h"}, 0, "resourced fsck"},
		{[]string{"serve", "--help"}, 0, "-base-url"},
		{[]string{"token", "--help"}, 0, "-listen"},
		{[]string{"backup", "-h"}, 0, "-force"},
		{[]string{"check", "--help"}, 0, "-url"},
		{[]string{"--version"}, 0, "resourced "},
		{[]string{"-v"}, 0, "resourced "},
		{[]string{"version"}, 0, "resourced "},
		{[]string{"--no-such-flag"}, 2, ""},
		{[]string{"fsck", "--data-dir", "datta"}, 2, ""},
		{[]string{"backup", "--data-dir", "datta", "--out", "b.db"}, 2, ""},
		{[]string{"token", "--data-dir", "datta"}, 2, ""},
	} {
		code, stdout, stderr := runBinary(t, dir, c.args...)
		if code != c.code || !strings.Contains(stdout, c.stdout) {
			t.Errorf("resourced %v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, stdout, stderr, c.code, c.stdout)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the commands left %v in their working directory, want nothing", ents)
	}
}

var mcpCallRE = regexp.MustCompile(`(?s)\bmcp '(\{.*?\})'`)

// TestReadmeWalkthroughTwice runs the README walkthrough's JSON-RPC calls,
// exactly as written there, twice against one server: the second run's
// first save_report is the conflict the README announces, and everything
// else, the overwrite: true replace included, succeeds both times.
func TestReadmeWalkthroughTwice(t *testing.T) {
	walk := section(t, readme(t), "A 2-minute walkthrough")
	var calls []string
	for _, m := range mcpCallRE.FindAllStringSubmatch(walk, -1) {
		calls = append(calls, m[1])
	}
	if len(calls) < 5 || !strings.Contains(walk, `"overwrite":true`) {
		t.Fatalf("walkthrough has %d calls and no overwrite: true replace; README changed?", len(calls))
	}
	in := startDefaultServer(t)
	for run := 1; run <= 2; run++ {
		saves := 0
		for _, call := range calls {
			body := strings.ReplaceAll(call, "\n", " ") // the shell passes the newline; JSON allows it as space
			r := in.post(in.http2025(), []byte(body))
			if r.Status != 200 {
				t.Fatalf("run %d: %s: HTTP %d %s", run, body, r.Status, r.Body)
			}
			if strings.Contains(body, "demo/nope") {
				if r.Error == nil || r.Error.Code != -32602 {
					t.Errorf("run %d: read of demo/nope: %s, want -32602", run, r.Body)
				}
				continue
			}
			if r.Error != nil {
				t.Fatalf("run %d: %s: %s", run, body, r.Body)
			}
			if !strings.Contains(body, `"save_report"`) {
				continue
			}
			var res toolResult
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatal(err)
			}
			saves++
			wantConflict := run == 2 && saves == 1 && !strings.Contains(body, `"overwrite":true`)
			if res.IsError != wantConflict || (wantConflict && !strings.Contains(string(res.StructuredContent), `"errorKind":"conflict"`)) {
				t.Errorf("run %d, save %d: isError %v (%s), want conflict %v", run, saves, res.IsError, res.StructuredContent, wantConflict)
			}
		}
	}
}

// TestTypeScriptClientTwice: integration/ts/unlisted-read.mjs, as the README
// runs it, passes twice against one server (it saved a fixed report path,
// so its second run was a conflict).
func TestTypeScriptClientTwice(t *testing.T) {
	node := requireTS(t)
	in := startDefaultServer(t)
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(node, filepath.Join("ts", "unlisted-read.mjs"), in.URL+"/mcp", "auto")
		cmd.Env = append(os.Environ(), "RESOURCED_TOKEN="+in.Token)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: node ts/unlisted-read.mjs: %v\n%s", run, err, out)
		}
	}
}

// TestReadmeBackingSnippet runs the README's "Backing your server"
// TypeScript program exactly as the README shows it (buildCsv and the
// node:http glue included) as a server backed by resourced, and checks
// with the official TS client that its generate_report link reads back.
func TestReadmeBackingSnippet(t *testing.T) {
	node := requireTS(t)
	if _, err := os.Stat(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "server", "package.json")); err != nil {
		if os.Getenv("RESOURCED_REQUIRE_TS") == "1" {
			t.Fatalf("@modelcontextprotocol/server is not installed: %s", tsSetupHint)
		}
		t.Skipf("@modelcontextprotocol/server is not installed: %s", tsSetupHint)
	}
	var program string
	for _, b := range codeBlocks(section(t, readme(t), "Backing your server"), "js") {
		if strings.Contains(b, "createServer") {
			program = b
		}
	}
	if program == "" {
		t.Fatal(`README's "Backing your server" has no runnable js block (one with createServer)`)
	}
	// Next to integration/ts/node_modules, so that its imports resolve.
	f, err := os.CreateTemp("ts", ".readme-backing-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(program); err != nil {
		t.Fatal(err)
	}
	f.Close()

	in := startDefaultServer(t)
	cmd := exec.Command(node, f.Name())
	cmd.Env = append(os.Environ(), "RESOURCED_URL="+in.URL+"/mcp", "RESOURCED_TOKEN="+in.Token, "LISTEN=127.0.0.1:0")
	ts := startSideProcess(t, cmd, tsListenRE)
	checkBackingSummary(t, runBackingCheck(t, ts.URL+"/mcp", "", ""), in, v2026)
}
