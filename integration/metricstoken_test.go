package integration

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsBearerToken: with metrics.bearerTokenFile /metrics answers
// only a scraper that sends the token; a token file readable by others, or
// too short, is refused at start and by config check, naming the key.
func TestMetricsBearerToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "metrics.token")
	const token = "3f9c2e7a1b4d6f80a5c3e1d7b9f2a4c6"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := startServer(t, "metrics:\n  bearerTokenFile: "+tokenFile+"\n")
	scrape := func(authz string) (int, string, string) {
		req, _ := http.NewRequest("GET", in.URL+"/metrics", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b.String()
	}
	for _, authz := range []string{"", "Bearer " + token[:len(token)-1], "Bearer " + token + "x", "Basic " + token, in.Token} {
		code, ch, body := scrape(authz)
		if code != http.StatusUnauthorized || ch != `Bearer realm="metrics"` || strings.Contains(body, "resourced_") {
			t.Errorf("/metrics with Authorization %q: HTTP %d %q %.80q, want 401 Bearer realm=\"metrics\"", authz, code, ch, body)
		}
	}
	if code, _, body := scrape("Bearer " + token); code != 200 || !strings.Contains(body, "resourced_build_info") {
		t.Errorf("/metrics with the token: HTTP %d %.200s", code, body)
	}
	// The MCP endpoint does not take the metrics token, nor /metrics the MCP one (above).
	if r := in.as(token).listTools(); r.Status != http.StatusUnauthorized {
		t.Errorf("the metrics token on /mcp: HTTP %d", r.Status)
	}
	if strings.Contains(in.logs.String(), token) {
		t.Error("the server logged the metrics token")
	}

	// Bad token files: serve exits 2, config check 1, each naming the key.
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"readable by others", token, 0o644, "must be 0600 (chmod 600"},
		{"too short", "abc", 0o600, "want a token of at least 16"},
		{"two lines", token + "\n" + token, 0o600, "one line holding the token"},
		{"empty", "\n", 0o600, "holds 0 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			f := filepath.Join(d, "metrics.token")
			os.WriteFile(f, []byte(c.content), 0o600)
			os.Chmod(f, c.mode)
			cfg := filepath.Join(d, "c.yaml")
			os.WriteFile(cfg, []byte("metrics:\n  bearerTokenFile: "+f+"\n"), 0o600)
			for _, run := range []struct {
				args []string
				code int
			}{
				{[]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(d, "data")}, 2},
				{[]string{"config", "check", "--config", cfg}, 1},
			} {
				cmd := exec.Command(binary, run.args...)
				cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=")
				out, err := cmd.CombinedOutput()
				ee, _ := err.(*exec.ExitError)
				if ee == nil || ee.ExitCode() != run.code || !strings.Contains(string(out), "metrics.bearerTokenFile: ") || !strings.Contains(string(out), c.want) {
					t.Errorf("%s: %v, want exit %d saying metrics.bearerTokenFile ... %q:\n%s", run.args[0], err, run.code, c.want, out)
				}
				if strings.Contains(string(out), token) {
					t.Errorf("%s printed the token", run.args[0])
				}
				if _, err := os.Stat(filepath.Join(d, "data")); run.args[0] == "serve" && !os.IsNotExist(err) {
					t.Errorf("serve with a bad metrics token file created its data directory (%v)", err)
				}
			}
		})
	}
}
