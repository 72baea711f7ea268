package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/gateway"
)

func TestGatewayHelp(t *testing.T) {
	for _, args := range [][]string{{"gateway", "--help"}, {"gateway", "-h"}, {"help", "gateway"}} {
		code, stdout, stderr := runCmd(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "usage: resourced gateway") ||
			!strings.Contains(stdout, "gateway.upstreams") || !strings.Contains(stdout, "-config") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, stderr, stdout)
		}
	}
	if _, top, _ := runCmd(t, "help"); !strings.Contains(top, "resourced gateway ") {
		t.Errorf("resourced help does not list gateway:\n%s", top)
	}
}

func TestGatewayNeedsUpstreams(t *testing.T) {
	dir := t.TempDir()
	for name, yaml := range map[string]string{
		"no section":   "auth: {mode: none}\n",
		"no upstreams": "auth: {mode: none}\ngateway:\n  previewChars: 100\n",
	} {
		cfg := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCmd(t, "gateway", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
		// An invalid configuration is exit 2 (issue 28), as every value error.
		if code != 2 || !strings.Contains(stderr, "gateway.upstreams: ") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and the gateway.upstreams key", name, code, stderr)
		}
	}
}

// TestGatewaySecretsUnresolvedExit2: an upstream header whose variable is
// unset or whose file is missing is an invalid configuration for serve and
// gateway alike: exit 2, the problem on the first line.
func TestGatewaySecretsUnresolvedExit2(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	yaml := "auth: {mode: none}\ngateway:\n  upstreams:\n    - name: up\n      url: http://127.0.0.1:9/mcp\n" +
		"      headers:\n        Authorization: {env: RESOURCED_TEST_UNSET_TOKEN}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"serve", "gateway"} {
		code, _, stderr := runCmd(t, cmd, "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || !strings.Contains(first, "invalid configuration: gateway.upstreams[0].headers.Authorization") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and the header's key on the first line", cmd, code, stderr)
		}
	}
}

func TestUpstreamNamePatternIsTheGateways(t *testing.T) {
	if config.UpstreamNamePattern != gateway.NamePattern {
		t.Fatalf("config.UpstreamNamePattern %q, gateway.NamePattern %q: one grammar, two copies that differ",
			config.UpstreamNamePattern, gateway.NamePattern)
	}
}

// gatewayConfig decodes and validates a config with a gateway section.
func gatewayConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Decode(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestGatewayHeaderValuesFromEnvAndFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	if err := os.WriteFile(good, []byte("  k-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(dir, "two-lines")
	if err := os.WriteFile(twoLines, []byte("a\nInjected: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"UP_TOKEN": "Bearer from-env"}
	getenv := func(k string) string { return env[k] }

	cfg := gatewayConfig(t, `
gateway:
  upstreams:
    - name: web
      url: http://127.0.0.1:1/mcp
      headers:
        Authorization: {env: UP_TOKEN}
        X-Api-Key: {file: `+good+`}
`)
	ups, err := gatewayUpstreams(cfg.Gateway, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if h := ups[0].Headers; h["Authorization"] != "Bearer from-env" || h["X-Api-Key"] != "k-from-file" || len(h) != 2 {
		t.Fatalf("headers = %q", h)
	}

	cfg = gatewayConfig(t, `
gateway:
  upstreams:
    - name: a
      command: x
    - name: web
      url: http://127.0.0.1:1/mcp
      headers:
        X-Missing-Env: {env: NOT_SET}
        X-Key: {file: `+open+`}
        X-Gone: {file: `+filepath.Join(dir, "absent")+`}
        X-Two: {file: `+twoLines+`}
`)
	_, err = gatewayUpstreams(cfg.Gateway, getenv)
	for _, want := range []string{
		"gateway.upstreams[1].headers.X-Key: file " + open + " has mode 0644; it must be 0600",
		"gateway.upstreams[1].headers.X-Missing-Env: environment variable NOT_SET is not set",
		"gateway.upstreams[1].headers.X-Gone: file " + filepath.Join(dir, "absent") + ": no such file or directory",
		"gateway.upstreams[1].headers.X-Two: the value has a control character",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gatewayUpstreams error lacks %q; got:\n%v", want, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "Injected") || strings.Contains(err.Error(), "from-env")) {
		t.Errorf("a header value is in the error: %v", err)
	}
}

// TestGatewayHeaderFromFileReachesTheUpstream: the value of a 0600 file
// travels with every request to an HTTP upstream, through the real pool.
func TestGatewayHeaderFromFileReachesTheUpstream(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var keys []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("k-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := gatewayConfig(t, "gateway:\n  upstreams:\n    - name: web\n      url: "+ts.URL+"\n      headers:\n        X-Api-Key: {file: "+key+"}\n")
	run, err := startGateway(cfg, noEnv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer run.pool.Close()
	if run.front.Scheme != "result" || run.front.PreviewChars != 500 || run.front.Sessions != run.pool {
		t.Fatalf("front options = %+v", run.front)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := run.pool.Session(ctx, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) < 2 {
		t.Fatalf("the upstream saw %d requests", len(keys))
	}
	for i, k := range keys {
		if k != "k-secret" {
			t.Fatalf("request %d carried X-Api-Key %q, want the file's value", i, k)
		}
	}
	if n, err := testutil.GatherAndCount(run.metrics, "resourced_gateway_upstream_sessions"); err != nil || n != 1 {
		t.Fatalf("the pool's metrics are not in the registry /metrics serves (%v)", err)
	}
}

func TestGatewayExampleConfig(t *testing.T) {
	cfg, err := config.Load("../../configs/gateway.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(cfg); err != nil {
		t.Fatalf("configs/gateway.example.yaml does not validate: %v", err)
	}
	if cfg.Gateway == nil || len(cfg.Gateway.Upstreams) < 2 {
		t.Fatal("the example has no gateway upstreams")
	}
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Gateway.Upstreams {
		for name, h := range cfg.Gateway.Upstreams[i].Headers {
			if h.File != "" {
				cfg.Gateway.Upstreams[i].Headers[name] = config.HeaderValue{File: key}
			}
		}
	}
	ups, err := gatewayUpstreams(cfg.Gateway, func(string) string { return "set" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.NewPool(gateway.PoolOptions{Upstreams: ups}); err != nil {
		t.Fatalf("the example's upstreams do not make a pool: %v", err)
	}
}

func TestGatewayReadmeExample(t *testing.T) {
	// The README's five lines, on the default config with auth none.
	cfg := gatewayConfig(t, `auth: {mode: none}
gateway:
  upstreams:
    - name: fs
      command: npx
      args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"]
`)
	ups, err := gatewayUpstreams(cfg.Gateway, noEnv)
	if err != nil || len(ups) != 1 || ups[0].Isolation != gateway.Shared || !ups[0].Required ||
		ups[0].Offload.Threshold != 16<<10 || ups[0].CallTimeout != 2*time.Minute {
		t.Fatalf("upstreams = %+v, %v", ups, err)
	}
	if cfg.Schemes["result"] == nil {
		t.Fatal("the gateway's scheme was not added")
	}
}
