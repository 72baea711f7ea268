package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file follow issue 28, what an operator meets on the
// second day: the port trap with no server running, the listening line at
// every level and build_info. Release archives: release_test.go.

// TestNoPortTrap: a server first started on a port other than 8765 is
// stopped; `resourced token` with no server running mints for the URL
// the data directory was last served at (and says so), and once the
// server is back on that port a read with the token is no 401. Before, it
// minted for http://127.0.0.1:8765 and the server answered 401.
func TestNoPortTrap(t *testing.T) {
	in := startDefaultServer(t)
	addr := strings.TrimPrefix(in.URL, "http://")
	if strings.HasSuffix(addr, ":8765") {
		t.Skip("the free port chosen is 8765, the default: nothing to tell apart")
	}
	sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "trap/r", "mimeType": "text/plain", "text": "no trap"}), 1)
	uri := sc["uri"].(string)
	in.stop()

	code, stdout, stderr := runBinary(t, t.TempDir(), "token", "--data-dir", in.dataDir)
	if code != 0 {
		t.Fatalf("token with no server running: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "for audience "+in.URL) || !strings.Contains(stderr, "no server is running on "+in.dataDir+"; the URL it was last served at") {
		t.Errorf("token's stderr %q does not say it minted for %s, the URL last served at", stderr, in.URL)
	}
	in.listen = addr
	in.start()
	minted := in.as(strings.TrimSpace(stdout))
	r := minted.post(minted.http2025(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`))
	if r.Status != 200 || r.Error != nil || !strings.Contains(string(r.Body), "no trap") {
		t.Errorf("a read with the token minted while no server ran: HTTP %d %s", r.Status, r.Body)
	}
}

// TestListeningAtWarnAndBuildInfo: at logLevel warn the listening line is
// still there (the harness waits for it; before, start timed out) and no
// request line is; /metrics has resourced_build_info.
func TestListeningAtWarnAndBuildInfo(t *testing.T) {
	in := startServerEnv(t, "", "RESOURCED_LOG_LEVEL=warn")
	checkSuccess(t, in.call(v2026, "list_resources", map[string]any{}), 0)
	code, body := getText(t, in.URL+"/metrics")
	if code != 200 || !strings.Contains(body, `resourced_build_info{goversion="`+runtime.Version()+`",revision="`) {
		t.Errorf("/metrics: HTTP %d, no resourced_build_info with the Go version:\n%s", code, grepLines(body, "build_info"))
	}
	time.Sleep(2 * logFlush) // lines are flushed within logFlush
	if strings.Contains(in.logs.String(), `"msg":"request"`) {
		t.Errorf("at warn a request line was logged:\n%s", in.logs)
	}
}

// logFlush is the server's longest hold of an info line (cmd/resourced
// logFlushDelay).
const logFlush = 100 * time.Millisecond

// TestReadmeSetUpOnCleanClone follows the README's "Set up" and "A
// 2-minute walkthrough" literally on a clean clone of this repository's
// HEAD, on a port other than 8765: `go run ./cmd/resourced --listen
// 127.0.0.1:PORT` in the clone, the token its first start prints, the
// walkthrough's mcp() (curl) with RD set to match, then the read of the
// saved report's link: no 401 anywhere; then go install ./cmd/resourced
// in the clone gives a binary that runs.
func TestReadmeSetUpOnCleanClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a clone with go run")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "resourced")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Skipf("git clone of %s: %v %s", root, err, out)
	}
	setup := section(t, readme(t), "Set up")
	if !strings.Contains(setup, "go run ./cmd/resourced") {
		t.Fatal("README's Set up no longer says go run ./cmd/resourced")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	if strings.HasSuffix(addr, ":8765") {
		t.Skip("the free port chosen is 8765, the default")
	}
	cmd := exec.Command("go", "run", "./cmd/resourced", "--listen", addr)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=", "RESOURCED_BASE_URL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child too: stopped as a group
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(10 * time.Minute) // the clone's first build, on a busy machine
	for !strings.Contains(stderr.String(), `"msg":"listening"`) {
		select {
		case <-done:
			t.Fatalf("go run exited before listening:\n%s", stderr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 10 minutes:\n%s", stderr)
		}
	}
	token := regexp.MustCompile(`(?m)^(ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$`).FindStringSubmatch(stdout.String())
	if token == nil {
		t.Fatalf("the first start printed no token; stdout:\n%s", stdout)
	}
	// The walkthrough's shell, as written: its mcp() with TOKEN and RD set.
	walk := section(t, readme(t), "A 2-minute walkthrough")
	def := regexp.MustCompile(`(?s)mcp\(\) \{.*?; \}`).FindString(walk)
	calls := mcpCallRE.FindAllString(walk, 5)
	if def == "" || len(calls) < 4 {
		t.Fatal("the walkthrough's mcp() or its calls are not found; README changed?")
	}
	script := "set -e\nTOKEN=" + token[1] + "\nRD=http://" + addr + "\n" + def + "\n" + calls[0] + "\n" + calls[2] + "\n"
	sh := exec.Command("bash", "-c", script)
	sh.Dir = clone
	out, err := sh.CombinedOutput()
	if err != nil || strings.Contains(string(out), "401") || strings.Contains(string(out), "Unauthorized") {
		t.Fatalf("the walkthrough's save and read: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"resource_link"`) || !strings.Contains(lines[0], `"uri":"report://default/demo/hello"`) ||
		!strings.Contains(lines[1], `"text":"# Hello\n"`) {
		t.Errorf("want a resource_link for report://default/demo/hello and its read back; got:\n%s", out)
	}
	// The other install path from a clone: go install (the packages are
	// built already; this links).
	bin := t.TempDir()
	inst := exec.Command("go", "install", "./cmd/resourced")
	inst.Dir, inst.Env = clone, append(os.Environ(), "GOBIN="+bin)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/resourced: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(bin, "resourced"), "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "resourced ") {
		t.Errorf("the installed resourced version: %v %q", err, out)
	}
}
