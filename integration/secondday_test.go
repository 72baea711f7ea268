package integration

import (
	"runtime"
	"strings"
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
