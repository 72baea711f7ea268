package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetrics(t *testing.T) {
	in := startServer(t, "")
	a := in.as(in.mint(tokenClaims("secret-tenant-name", scopeRead+" "+scopeWrite)))
	sc := checkSuccess(t, a.call(v2026, "save_report", map[string]any{"path": "m/1", "mimeType": "text/plain", "text": "12345"}), 1)
	a.read(v2026, sc["uri"].(string))
	a.rpc(v2026, "resources/read", map[string]any{"uri": "report://secret-tenant-name/none"})
	checkUnauthorized(t, in.as("garbage").listTools(), "garbage", "garbage", "not a JWT")
	in.as("").listTools()

	code, body := getText(t, in.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: HTTP %d", code)
	}
	for _, want := range []string{
		`resourced_requests_total{method="tools/call",outcome="ok",tool="save_report"} 1`,
		`resourced_requests_total{method="resources/read",outcome="ok",tool=""} 1`,
		`resourced_requests_total{method="resources/read",outcome="-32602",tool=""} 1`,
		`resourced_request_duration_seconds_bucket{method="resources/read",tool="",le="+Inf"} 2`,
		`resourced_saved_bytes_total{backend="bbolt",scheme="report"} 5`,
		`resourced_read_bytes_total{backend="bbolt",scheme="report"} 5`,
		`resourced_auth_failures_total{reason="malformed"} 1`,
		`resourced_auth_failures_total{reason="missing"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "secret-tenant-name") {
		t.Error("/metrics exposes a tenant name")
	}
}

// TestGracefulShutdownLosesNothing: SIGTERM while saves are in flight;
// the process exits cleanly and every acknowledged save is there after a
// restart.
func TestGracefulShutdownLosesNothing(t *testing.T) {
	in := startServer(t, "")
	url, token := in.URL, in.Token
	var (
		mu   sync.Mutex
		acks []ack
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				text := fmt.Sprintf("writer %d save %d", w, n)
				res, ok := saveQuietly(url, token, map[string]any{"path": fmt.Sprintf("term/w%d/%d", w, n), "mimeType": "text/plain", "text": text})
				if !ok {
					return // the server is gone
				}
				if res.uri != "" {
					mu.Lock()
					acks = append(acks, ack{res.uri, sum([]byte(text))})
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20s of SIGTERM")
	}
	stop.Store(true)
	wg.Wait()
	if code := in.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0\n%s", code, in.logs)
	}
	if !strings.Contains(in.logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", in.logs)
	}
	in.start()
	for _, a := range acks {
		if got := in.read(v2025, a.uri).body(t); sum(got) != a.sha {
			t.Errorf("%s reads back different after SIGTERM", a.uri)
		}
	}
	t.Logf("graceful shutdown: %d acknowledged saves, all read back", len(acks))
	if len(acks) == 0 {
		t.Error("no save was acknowledged before SIGTERM")
	}
}

// TestConfiguredLimits: every configured limit is enforced with a result
// that states it, and nothing is stored by a refused save.
func TestConfiguredLimits(t *testing.T) {
	in := startServer(t, "limits: {maxHits: 3, maxTitleBytes: 10, maxPathBytes: 20}\nschemes:\n  report: {maxBytes: 100}\n  search: {maxBytes: 1KiB}\n")
	fourHits := []map[string]any{{"id": "1", "title": "", "snippet": ""}, {"id": "2", "title": "", "snippet": ""}, {"id": "3", "title": "", "snippet": ""}, {"id": "4", "title": "", "snippet": ""}}
	cases := []struct {
		name, tool string
		args       map[string]any
		kind, says string
	}{
		{"hits", "save_search_snapshot", map[string]any{"query": "q", "hits": fourHits}, "too_large", "at most 3"},
		{"title", "save_report", map[string]any{"path": "p", "mimeType": "text/plain", "text": "x", "title": "eleven byte"}, "validation_error", "limit is 10"},
		{"path", "save_report", map[string]any{"path": "a/b/c/d/e/f/g/h/i/j/k", "mimeType": "text/plain", "text": "x"}, "validation_error", "limit is 20"},
		{"body", "save_report", map[string]any{"path": "p", "mimeType": "text/plain", "text": strings.Repeat("x", 101)}, "too_large", "at most 100 bytes"},
		{"snapshot body", "save_search_snapshot", map[string]any{"query": strings.Repeat("q", 1100), "hits": fourHits[:1]}, "too_large", "at most 1024 bytes"},
	}
	for _, c := range cases {
		r := in.call(v2026, c.tool, c.args)
		checkFailure(t, r, c.kind)
		if !strings.Contains(r.Content[0].Text, c.says) {
			t.Errorf("%s: text %q does not state the limit (%q)", c.name, r.Content[0].Text, c.says)
		}
	}
	checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "p", "mimeType": "text/plain", "text": strings.Repeat("x", 100)}), 1)
	sc := checkSuccess(t, in.call(v2026, "list_resources", map[string]any{}), 1)
	if n := len(sc["items"].([]any)); n != 1 {
		t.Errorf("%d resources stored, want only the one within limits", n)
	}
}

// TestBackupAndRestore: an online backup through the running server's
// admin socket, taken during saves, restores into a working server with
// everything acknowledged before it started.
func TestBackupAndRestore(t *testing.T) {
	in := startServer(t, "")
	var uris []string
	for i := 0; i < 20; i++ {
		sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": fmt.Sprintf("b/%d", i), "mimeType": "text/plain", "text": fmt.Sprint(i)}), 1)
		uris = append(uris, sc["uri"].(string))
	}
	if st, err := os.Stat(filepath.Join(in.dataDir, "resourced.sock")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v (mode %v), want mode 0600", err, st)
	}
	out := filepath.Join(t.TempDir(), "backup.db")
	var busy atomic.Bool
	busy.Store(true)
	go func() { // saves go on while the backup is taken
		for i := 0; busy.Load() && i < 200; i++ {
			saveQuietly(in.URL, in.Token, map[string]any{"path": fmt.Sprintf("during/%d", i), "mimeType": "text/plain", "text": "x"})
		}
	}()
	cmd := exec.Command(binary, "backup", "--config", in.config, "--data-dir", in.dataDir, "--out", out)
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_DATA_DIR=")
	msg, err := cmd.CombinedOutput()
	busy.Store(false)
	if err != nil || !strings.Contains(string(msg), "online") {
		t.Fatalf("resourced backup: %v\n%s", err, msg)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, want mode 0600", err)
	}
	// Restore: a stopped server's file replaced by the backup.
	in.stop()
	if err := os.Rename(out, filepath.Join(in.dataDir, "resourced.db")); err != nil {
		t.Fatal(err)
	}
	// The search index still describes the newer file: rebuild it.
	if msg, err := exec.Command(binary, "reindex", "--config", in.config, "--data-dir", in.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("reindex of the restored file: %v\n%s", err, msg)
	}
	if msg, err := exec.Command(binary, "fsck", "--config", in.config, "--data-dir", in.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("fsck of the restored file: %v\n%s", err, msg)
	}
	in.start()
	for i, u := range uris {
		if got := in.read(v2026, u).body(t); string(got) != fmt.Sprint(i) {
			t.Errorf("restored %s = %q", u, got)
		}
	}
	// Offline: with no server running the file itself is copied.
	in.stop()
	cmd = exec.Command(binary, "backup", "--config", in.config, "--data-dir", in.dataDir, "--out", out)
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_DATA_DIR=")
	if msg, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(msg), "offline") {
		t.Errorf("offline backup: %v\n%s", err, msg)
	}
}

// TestQuotaUnderConcurrency: parallel saves race for the last bytes of a
// tenant's quota; exactly as many as fit succeed, the rest are
// quota_exceeded, and usage never overshoots.
func TestQuotaUnderConcurrency(t *testing.T) {
	in := startServer(t, "quota: {bytes: 1000, objects: 50}\n")
	body := strings.Repeat("x", 100)
	var wg sync.WaitGroup
	results := make([]*toolResult, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = in.call(v2026, "save_report", map[string]any{"path": fmt.Sprintf("q/%d", i), "mimeType": "text/plain", "text": body})
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		if r.IsError {
			checkFailure(t, r, "quota_exceeded")
			if !strings.Contains(r.Content[0].Text, "at most 1000 bytes") {
				t.Errorf("quota error does not state the limit: %s", r.Content[0].Text)
			}
		} else {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("%d of 16 saves of 100 bytes fit a 1000-byte quota, want exactly 10", ok)
	}
	// Another tenant has its own quota.
	b := in.as(in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))
	checkSuccess(t, b.call(v2026, "save_report", map[string]any{"path": "q", "mimeType": "text/plain", "text": body}), 1)
	// Deleting frees quota.
	checkFailure(t, in.call(v2026, "save_report", map[string]any{"path": "q/more", "mimeType": "text/plain", "text": body}), "quota_exceeded")
	sc := checkSuccess(t, in.call(v2026, "list_resources", map[string]any{"limit": 1}), 1)
	checkSuccess(t, in.call(v2026, "delete_resource", map[string]any{"uri": sc["items"].([]any)[0].(map[string]any)["uri"]}), 0)
	checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "q/more", "mimeType": "text/plain", "text": body}), 1)
}

// TestRetentionAndSweeper: a resource reads as not found the moment it
// expires, and the sweeper removes it (counted in /metrics).
func TestRetentionAndSweeper(t *testing.T) {
	in := startServer(t, "sweep: {interval: 1s, batch: 10}\n")
	short := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "short", "mimeType": "text/plain", "text": "x", "retention": 1}), 1)
	long := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "long", "mimeType": "text/plain", "text": "y", "retention": "P1D"}), 1)
	exp, err := time.Parse(time.RFC3339Nano, short["expiresAt"].(string))
	if err != nil || time.Until(exp) > 1500*time.Millisecond {
		t.Fatalf("expiresAt %v for a 1s retention", short["expiresAt"])
	}
	// A snapshot's ttlMs never exceeds its remaining life.
	snap := checkSuccess(t, in.call(v2026, "save_search_snapshot", map[string]any{"query": "q", "hits": hits, "retention": 2}), 1)
	if rr := in.read(v2026, snap["uri"].(string)); rr.TTLMs == nil || *rr.TTLMs > 2000 {
		t.Errorf("ttlMs %s for a snapshot with 2s to live", show(rr.TTLMs))
	}
	time.Sleep(time.Until(exp) + 50*time.Millisecond)
	if r := in.rpc(v2026, "resources/read", map[string]any{"uri": short["uri"]}); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("expired resource still readable: %s", r.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := getText(t, in.URL+"/metrics")
		if strings.Contains(body, `resourced_swept_total{backend="bbolt"} 2`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper did not remove the 2 expired resources within 10s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	sc := checkSuccess(t, in.call(v2026, "list_resources", map[string]any{}), 1)
	if items := sc["items"].([]any); len(items) != 1 || items[0].(map[string]any)["uri"] != long["uri"] {
		t.Errorf("after the sweep list_resources = %v, want only %v", items, long["uri"])
	}
}
