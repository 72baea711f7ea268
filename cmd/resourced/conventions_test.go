package main

// Tests of issue 28's command-line and configuration conventions: exit
// codes, the one-line hint, listening at every level, nothing created
// before the bind, fsck against a running server, the URL recorded in
// the data directory, config check, health, build_info and the README's
// usage block.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/internal/gcheadroom"
	"github.com/resourced/resourced/store/boltstore"
)

// runCmdEnv is runCmd with the environment env (nothing else).
func runCmdEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// dataDirWithKey is a data directory that holds a token key, as after a
// server's first start.
func dataDirWithKey(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := auth.LoadOrCreateHMACKey(filepath.Join(dir, "auth-hmac.key")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestValueErrorsExit2: every usage or value error is exit 2, with the
// problem named (issue 28: these were 1 while the README said 2).
func TestValueErrorsExit2(t *testing.T) {
	dir := dataDirWithKey(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("limits:\n  maxHits: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(serve, "--log-level", "loud"), `logLevel: want debug, info, warn or error, got "loud"`},
		{append(serve, "--backend", "foo"), `store.backend: want bbolt, s3 or memory, got "foo"`},
		{append(serve, "--config", bad), "limits.maxHits: want an integer"},
		{append(serve, "--config", filepath.Join(dir, "none.yaml")), "no such file"},
		{[]string{"serve", "--listen", "0.0.0.0:0", "--data-dir", filepath.Join(t.TempDir(), "data")}, "baseURL: required when listen"},
		{[]string{"gateway", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data")}, "gateway.upstreams:"},
		{[]string{"token", "--data-dir", dir, "--tenant", "Bad Tenant"}, `--tenant "Bad Tenant": `},
		{[]string{"token", "--data-dir", dir, "--scope", "x"}, `--scope: "x" is not`},
		{[]string{"token", "--data-dir", dir, "--ttl", "-1h"}, "--ttl -1h0m0s: must be positive"},
		{[]string{"token", "--data-dir", dir, "--ttl", "soon"}, `invalid value "soon" for flag -ttl: want a duration such as 1h or 30m`},
		{[]string{"token", "--data-dir", dir, "--listen", ":8765"}, "baseURL: required when listen"},
		{[]string{"token", "--data-dir", dir, "--config", bad}, "limits.maxHits"},
		{[]string{"health", "--listen", "nonsense"}, "listen: want host:port"},
		{[]string{"config", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"config", "check", "--nope"}, "flag provided but not defined: -nope"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing (no token, no first-start output)", stdout)
			}
		})
	}
}

// TestUsageErrorOneLineHint: an unknown command or flag prints the
// problem first and one line saying where the usage is (issue 28: 29
// lines of usage with the error last).
func TestUsageErrorOneLineHint(t *testing.T) {
	for _, c := range []struct {
		args    []string
		problem string
		hint    string
	}{
		{[]string{"nope"}, `resourced: unknown command "nope"`, "run 'resourced --help' for the commands"},
		{[]string{"--nope"}, "resourced: serve: flag provided but not defined: -nope", "run 'resourced serve --help' for its flags"},
		{[]string{"token", "--backend", "s3"}, "resourced: token: flag provided but not defined: -backend", "run 'resourced token --help' for its flags"},
		{[]string{"fsck", "stray"}, `resourced: fsck: unexpected arguments ["stray"]`, "run 'resourced fsck --help' for its flags"},
		{[]string{"health", "--timeout", "x"}, `resourced: health: invalid value "x" for flag -timeout: want a duration`, "run 'resourced health --help' for its flags"},
		{[]string{"token", "--ttl", "5"}, `resourced: token: invalid value "5" for flag -ttl: want a duration such as 1h or 30m`, "run 'resourced token --help' for its flags"},
		{[]string{"check"}, "resourced: check: --url is required", "run 'resourced check --help' for its flags"},
		{[]string{"check", "--timeout", "5", "--url", "http://127.0.0.1:1/mcp"}, `resourced: check: invalid value "5" for flag -timeout: want a duration`, "run 'resourced check --help' for its flags"},
		{[]string{"check", "--new-host-run"}, "resourced: check: --url is required", "run 'resourced check --help' for its flags"},
		{[]string{"config"}, "resourced: config: no subcommand", "run 'resourced config check --help'"},
	} {
		code, stdout, stderr := runCmd(t, c.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], c.problem) || lines[1] != c.hint {
			t.Errorf("resourced %v: exit %d, stdout %q, stderr:\n%s\nwant 2, the problem %q first and the hint %q", c.args, code, stdout, stderr, c.problem, c.hint)
		}
	}
}

// waitFor polls cond until it holds or 20 s have passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var listeningRE = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// serveInProcess runs `resourced args...` in a goroutine until the test
// ends; it returns the address from the listening line and the log.
func serveInProcess(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, noEnv, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var addr string
	waitFor(t, "the listening line", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
		default:
		}
		m := listeningRE.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr, &stderr
}

// TestListeningAtEveryLevel: the listening line is logged at every log
// level (issue 28: at warn it disappeared, though docs/CONTRACT.md §8
// promises it), and at warn nothing else of info level is.
func TestListeningAtEveryLevel(t *testing.T) {
	for _, level := range []string{"debug", "info", "warn", "error"} {
		t.Run(level, func(t *testing.T) {
			_, logs := serveInProcess(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--backend", "memory", "--log-level", level)
			if (level == "warn" || level == "error") && strings.Contains(logs.String(), "created a signing key") {
				t.Errorf("at %s an info line other than listening is logged:\n%s", level, logs)
			}
		})
	}
}

// TestLogDurationsAreSeconds: a request line carries duration, a number
// of seconds, and no dur (issue 28: request lines had dur in integer
// nanoseconds, gateway lines duration in nanoseconds).
func TestLogDurationsAreSeconds(t *testing.T) {
	addr, logs := serveInProcess(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--backend", "memory")
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	re := regexp.MustCompile(`"msg":"request".*"duration":(\d+(\.\d+)?(e-\d+)?)`)
	waitFor(t, "the request line", func() bool { return re.MatchString(logs.String()) })
	m := re.FindStringSubmatch(logs.String())
	var secs float64
	if _, err := fmt.Sscan(m[1], &secs); err != nil || secs <= 0 || secs > 5 {
		t.Errorf("duration %s: want a positive number of seconds below 5", m[1])
	}
	if strings.Contains(logs.String(), `"dur":`) {
		t.Errorf("a log line still has dur:\n%s", logs)
	}
}

// TestNothingCreatedBeforeBind: when the port is taken, serve fails (exit
// 1, a runtime failure) and leaves no data directory behind (issue 28: the
// directory and a 16 MiB resourced.db were created first).
func TestNothingCreatedBeforeBind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "data")
	for _, cmd := range []string{"serve", "gateway"} {
		args := []string{cmd, "--listen", taken.Addr().String(), "--data-dir", dir}
		if cmd == "gateway" {
			cfg := filepath.Join(t.TempDir(), "gw.yaml")
			if err := os.WriteFile(cfg, []byte("gateway:\n  upstreams:\n    - {name: a, command: /bin/true}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", cfg)
		}
		code, _, stderr := runCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, "address already in use") {
			t.Errorf("%s on a taken port: exit %d, stderr %q; want 1 and the bind error", cmd, code, stderr)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s on a taken port created %s", cmd, dir)
		}
	}
}

// TestFsckSeesRunningServerAtOnce: fsck against a running server says so
// at once (issue 28: after the 5 s lock timeout).
func TestFsckSeesRunningServerAtOnce(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin, err := serveAdmin(&config.Config{DataDir: dir}, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, _, stderr := runCmd(t, "fsck", "--data-dir", dir)
	took := time.Since(start)
	if code != 1 || !strings.Contains(stderr, "a server is running on "+dir) || !strings.Contains(stderr, "resourced backup") {
		t.Errorf("fsck on a running server: exit %d, stderr %q", code, stderr)
	}
	if took > 2*time.Second {
		t.Errorf("fsck took %s to see the running server, want well under 2s", took)
	}
	// Without the admin socket (a server that could not open one), the
	// lock is waited for briefly, not for openTimeout.
	admin.stop()
	start = time.Now()
	code, _, stderr = runCmd(t, "fsck", "--data-dir", dir)
	if took := time.Since(start); code != 1 || !strings.Contains(stderr, "a resourced already serving this data directory?") || took > 2*time.Second {
		t.Errorf("fsck on a locked file: exit %d after %s, stderr %q", code, took, stderr)
	}
}

// TestTokenUsesLastServedURL: with no server running, token mints for the
// URL the data directory was last served at and says so (issue 28: it
// minted for 8765 while the server had run on 28815); --listen and
// --base-url still win, with a warning; a running server wins over the
// record.
func TestTokenUsesLastServedURL(t *testing.T) {
	dir := dataDirWithKey(t)
	cfg := config.Default()
	cfg.DataDir, cfg.BaseURL = dir, "http://127.0.0.1:28815"
	if err := recordServed(cfg, "127.0.0.1:28815"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(servedPath(cfg)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("served.json: %v, mode %v", err, fi.Mode())
	}
	mint := func(args ...string) (map[string]any, string) {
		t.Helper()
		code, stdout, stderr := runCmd(t, append([]string{"token", "--data-dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("token %v: exit %d, %s", args, code, stderr)
		}
		return claimsOf(t, stdout), stderr
	}
	c, stderr := mint()
	if c["aud"] != "http://127.0.0.1:28815" || c["iss"] != "http://127.0.0.1:28815" ||
		!strings.Contains(stderr, "no server is running on "+dir+"; the URL it was last served at") ||
		!strings.Contains(stderr, "the configuration gives audience http://127.0.0.1:8765") {
		t.Errorf("token with a record: aud %v iss %v, stderr %q", c["aud"], c["iss"], stderr)
	}
	c, stderr = mint("--listen", "127.0.0.1:9")
	if c["aud"] != "http://127.0.0.1:9" || !strings.Contains(stderr, "verified audience http://127.0.0.1:28815") {
		t.Errorf("token --listen with a record: aud %v, stderr %q; want the flag's and a warning", c["aud"], stderr)
	}
	// A running server wins over the record.
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin, err := serveAdmin(&config.Config{DataDir: dir}, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.stop()
	admin.setVerifier("http://127.0.0.1:40123", "http://127.0.0.1:40123", "http://127.0.0.1:40123")
	if c, stderr := mint(); c["aud"] != "http://127.0.0.1:40123" || !strings.Contains(stderr, "asked the server running") {
		t.Errorf("token with a running server and a record: aud %v, stderr %q", c["aud"], stderr)
	}
	// A damaged record is said, and not used.
	admin.stop()
	if err := os.WriteFile(servedPath(cfg), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, stderr := mint(); c["aud"] != "http://127.0.0.1:8765" || !strings.Contains(stderr, "served.json does not parse") {
		t.Errorf("token with a damaged record: aud %v, stderr %q", c["aud"], stderr)
	}
}

// TestHealthFollowsConfig: without --url, health asks the address serve
// would listen on, from RESOURCED_LISTEN, --config and --listen, a
// wildcard by loopback (issue 28: it always asked 127.0.0.1:8765).
func TestHealthFollowsConfig(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:"+port+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"RESOURCED_LISTEN", map[string]string{"RESOURCED_LISTEN": "127.0.0.1:" + port}, nil},
		{"wildcard RESOURCED_LISTEN", map[string]string{"RESOURCED_LISTEN": "0.0.0.0:" + port}, nil},
		{"empty host", map[string]string{"RESOURCED_LISTEN": ":" + port}, nil},
		{"--config", nil, []string{"--config", cfg}},
		{"RESOURCED_CONFIG", map[string]string{"RESOURCED_CONFIG": cfg}, nil},
		{"--listen over the config", map[string]string{"RESOURCED_LISTEN": "127.0.0.1:1"}, []string{"--listen", "127.0.0.1:" + port}},
	} {
		code, stdout, stderr := runCmdEnv(t, c.env, append([]string{"health", "--timeout", "2s"}, c.args...)...)
		if code != 0 || stdout != "ok\n" {
			t.Errorf("%s: exit %d, %q %q", c.name, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCmdEnv(t, map[string]string{"RESOURCED_LISTEN": "127.0.0.1:0"}, "health"); code != 2 || !strings.Contains(stderr, "pass --url") {
		t.Errorf("health with port 0: exit %d, %q", code, stderr)
	}
	for listen, want := range map[string]string{"0.0.0.0:1": "http://127.0.0.1:1/healthz", "[::]:1": "http://[::1]:1/healthz", ":1": "http://127.0.0.1:1/healthz", "[::1]:1": "http://[::1]:1/healthz", "10.0.0.7:1": "http://10.0.0.7:1/healthz"} {
		if got, err := healthURL(listen); err != nil || got != want {
			t.Errorf("healthURL(%s) = %q, %v; want %s", listen, got, err, want)
		}
	}
}

// TestBuildInfo: resourced_build_info is 1 with the version, the stamped
// revision and the Go version; version prints the stamped revision and
// date (issue 28: release binaries carried no revision).
func TestBuildInfo(t *testing.T) {
	oldRev, oldDate := revision, buildDate
	revision, buildDate = "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z"
	defer func() { revision, buildDate = oldRev, oldDate }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo())
	want := fmt.Sprintf(`# HELP resourced_build_info Always 1; the labels say which build runs: version, VCS revision (-modified for a dirty tree) and Go version.
# TYPE resourced_build_info gauge
resourced_build_info{goversion=%q,revision="0123456789abcdef0123456789abcdef01234567",version=%q} 1
`, goVersionOf(), version)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "resourced_build_info"); err != nil {
		t.Error(err)
	}
	if got := versionLine(); !strings.Contains(got, "(revision 0123456789abcdef0123456789abcdef01234567, 2026-12-01T10:00:00Z, go") {
		t.Errorf("versionLine() = %q, want the stamped revision and date", got)
	}
}

func goVersionOf() string { return strings.TrimSuffix(strings.Split(versionLine(), ", ")[2], ")") }

// configFiles are the files of configs/.
func configFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("configs/: %v, %v", files, err)
	}
	return files
}

// TestConfigCheckShippedConfigs: config check accepts every file in
// configs/ and prints an effective configuration that checks again to
// the same output.
func TestConfigCheckShippedConfigs(t *testing.T) {
	for _, f := range configFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "config", "check", "--syntax-only", "--config", f)
			if code != 0 || !strings.Contains(stderr, "the configuration is valid") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			again := filepath.Join(t.TempDir(), "effective.yaml")
			if err := os.WriteFile(again, []byte(stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout2, stderr := runCmd(t, "config", "check", "--syntax-only", "--config", again)
			if code != 0 || stdout2 != stdout {
				t.Errorf("the printed configuration checks as exit %d (%s), output differs: %v", code, stderr, stdout2 != stdout)
			}
		})
	}
	// Without --syntax-only the header values are read: the gateway
	// example's key file is not on this machine, and that is named by key.
	code, stdout, stderr := runCmdEnv(t, map[string]string{"EVERYTHING_TOKEN": "tok-s3cr3t"}, "config", "check", "--config", "../../configs/gateway.example.yaml")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "gateway.upstreams[1].headers.X-Api-Key: file /etc/resourced/everything.key") ||
		strings.Contains(stderr, "headers.Authorization") || strings.Contains(stderr, "tok-s3cr3t") {
		t.Errorf("full check of the gateway example: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCmd(t, "config", "check", "--config", "../../configs/resourced.example.yaml"); code != 0 {
		t.Errorf("full check of the example: exit %d, %s", code, stderr)
	}
}

// keyPathRE is a key path followed by its message: "limits.maxHits: ",
// "gateway.upstreams[0].headers.Authorization: ".
var keyPathRE = regexp.MustCompile(`(^|: )[a-zA-Z][a-zA-Z0-9]*((\.[a-zA-Z0-9_-]+)|(\[\d+\]))*: `)

// TestConfigCheckBrokenConfigs: on a catalogue of broken configurations
// config check exits 1, prints nothing on stdout, and every problem names
// its key path, the expected one among them.
func TestConfigCheckBrokenConfigs(t *testing.T) {
	for _, c := range []struct{ yaml, key string }{
		{"limits:\n  maxHits: lots\n", "line 2: limits.maxHits: want an integer"},
		{"listne: 127.0.0.1:1\n", "line 1: listne: unknown key; did you mean listen?"},
		{"store:\n  bbolt: {pth: x}\n", "line 2: store.bbolt.pth: unknown key; did you mean path?"},
		{"sweep: {interval: soon}\n", `sweep.interval: "soon" is not a duration`},
		{"schemes:\n  report: {maxBytes: lots}\n", `schemes.report.maxBytes: "lots" is not a size`},
		{"auth: {allowedHosts: example.com}\n", "auth.allowedHosts: want a list"},
		{"logLevel: loud\n", "logLevel: want debug"},
		{"listen: 0.0.0.0:8765\n", "baseURL: required when listen"},
		{"listen: nowhere\n", "listen: want host:port"},
		{"store: {backend: s3}\n", "store.s3.bucket: required"},
		{"auth: {leeway: 1h}\n", "auth.leeway: must be between"},
		{"schemes:\n  search: {maxBytes: 0}\n", "schemes.search.maxBytes: must be positive"},
		{"links: {maxTTL: 1s}\n", "links.maxTTL: want 1m to 168h"},
		{"budgets: {bodyMinRate: 10}\n", "budgets.bodyMinRate: want at least 1KiB"},
		{"gateway:\n  upstreams:\n    - {name: a, command: x, isolation: solo}\n", "gateway.upstreams[0].isolation"},
		{"gateway:\n  upstreams:\n    - {name: a, url: 'http://127.0.0.1:1/mcp', headers: {Authorization: {env: NOT_SET_ANYWHERE}}}\n", "gateway.upstreams[0].headers.Authorization: environment variable NOT_SET_ANYWHERE is not set"},
		{"gateway:\n  upstreams:\n    - {name: a, url: 'http://x', headers: {Authorization: \"Bearer sk-live-1\"}}\n", "gateway.upstreams[0].headers.Authorization: a header value comes from"},
		{"auth: {mode: none}\nlisten: 192.0.2.1:1\nbaseURL: http://x\n", "auth.mode: none is allowed only"},
		{"tracing: {sampleRatio: 2}\n", "tracing.sampleRatio: want a number from 0 to 1"},
		{"tracing: {sampleRatio: lots}\n", "tracing.sampleRatio: want a number"},
		{"tracing: {endpoint: 'ftp://sk-live-user@collector'}\n", "tracing.endpoint: want the collector's OTLP/HTTP base URL"},
		{"tracing: {endpoint: 'http://u:sk-live-pass@collector:4318'}\n", "tracing.endpoint: must not carry a user"},
		{"tracing: {enable: true}\n", "tracing.enable: unknown key; did you mean enabled?"},
	} {
		t.Run(c.key, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "broken.yaml")
			if err := os.WriteFile(f, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCmd(t, "config", "check", "--config", f)
			if code != 1 || stdout != "" || !strings.Contains(stderr, c.key) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, c.key)
			}
			if strings.Contains(stderr, "sk-live") {
				t.Errorf("stderr repeats a secret: %q", stderr)
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				line = strings.TrimPrefix(strings.TrimPrefix(line, "resourced: "), "invalid configuration: ")
				if !keyPathRE.MatchString(strings.TrimPrefix(line, "config "+f+": ")) {
					t.Errorf("a problem names no key path: %q", line)
				}
			}
		})
	}
	// A document that does not parse has no key to name; its line is.
	f := filepath.Join(t.TempDir(), "syntax.yaml")
	if err := os.WriteFile(f, []byte("listen: x\nlimits: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "config", "check", "--config", f); code != 1 || !strings.Contains(stderr, "line 2: did not find expected node content") {
		t.Errorf("a syntax error: exit %d, %q; want 1 and its line", code, stderr)
	}
}

// TestConfigCheckRedactsSecrets: the printed configuration has no URL
// credentials, query values or upstream env values, and the environment's
// overrides are in it.
func TestConfigCheckRedactsSecrets(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.yaml")
	doc := `auth:
  jwksURL: https://idp.example.com/jwks?client_secret=sk-live-jwks
  issuer: https://idp.example.com
gateway:
  upstreams:
    - {name: a, url: "https://mcp.example.com/mcp?api_key=sk-live-query#sk-live-frag"}
    - {name: b, command: /bin/true, env: {API_TOKEN: sk-live-env, LOG_LEVEL: debug}}
`
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RESOURCED_CONFIG": f, "RESOURCED_BASE_URL": "https://rd.example.com", "RESOURCED_LISTEN": "0.0.0.0:9000"}
	code, stdout, stderr := runCmdEnv(t, env, "config", "check", "--backend", "memory")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if strings.Contains(stdout, "sk-live") {
		t.Errorf("the printed configuration holds a secret:\n%s", stdout)
	}
	for _, want := range []string{"listen: 0.0.0.0:9000", "baseURL: https://rd.example.com", "backend: memory",
		"api_key=REDACTED", "client_secret=REDACTED", "API_TOKEN: REDACTED", "LOG_LEVEL: REDACTED", "leeway: 30s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the printed configuration lacks %q:\n%s", want, stdout)
		}
	}
	for in, want := range map[string]string{
		"https://AKID:s3cr3t@s3.example.com/x": "https://REDACTED@s3.example.com/x",
		"http://127.0.0.1:9000":                "",
		"not a url":                            "",
	} {
		got, ok := redactURL(in)
		if ok != (want != "") || ok && got != want {
			t.Errorf("redactURL(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// flagsOf are the flags `resourced args... --help` lists.
func flagsOf(t *testing.T, args ...string) []string {
	t.Helper()
	code, stdout, stderr := runCmd(t, append(args, "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d, %s", args, code, stderr)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(stdout, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeUsageListsEveryFlag: the README's usage block and the
// top-level help name every command and every flag of each (issue 28:
// reconcile and several flags were missing, and token listed an unused
// -backend).
func TestReadmeUsageListsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n## Configuration\n")
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	line := func(doc, prefix string) string {
		// The command's lines: its first and any continuation lines.
		var out []string
		in := false
		for _, l := range strings.Split(doc, "\n") {
			t := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(t, prefix):
				in = true
			case strings.HasPrefix(t, "resourced "):
				in = false
			}
			if in {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	serveFlags := flagsOf(t, "serve")
	for _, c := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"serve"}, "resourced [serve]"},
		{[]string{"gateway"}, "resourced gateway "},
		{[]string{"token"}, "resourced token "},
		{[]string{"config", "check"}, "resourced config check "},
		{[]string{"backup"}, "resourced backup "},
		{[]string{"fsck"}, "resourced fsck "},
		{[]string{"reconcile"}, "resourced reconcile "},
		{[]string{"reindex"}, "resourced reindex "},
		{[]string{"check"}, "resourced check "},
		{[]string{"health"}, "resourced health "},
		{[]string{"version"}, "resourced version"},
	} {
		flags := flagsOf(t, c.args...)
		for doc, text := range map[string]string{"README": block, "resourced --help": usage} {
			l := line(text, c.prefix)
			if l == "" {
				t.Errorf("%s does not list %q", doc, c.prefix)
				continue
			}
			for _, f := range flags {
				if strings.Contains(l, "--"+f) {
					continue
				}
				if slices.Contains(serveFlags, f) && (strings.Contains(l, "flags of serve") || strings.Contains(l, "serve's flags")) {
					continue
				}
				t.Errorf("%s's %s line lacks --%s:\n%s", doc, strings.Join(c.args, " "), f, l)
			}
		}
	}
	if slices.Contains(flagsOf(t, "token"), "backend") {
		t.Error("token --help lists -backend, which token does not use")
	}
	if !slices.Equal(flagsOf(t, "gateway"), serveFlags) {
		t.Errorf("gateway's flags %v differ from serve's %v, which the usage says they are", flagsOf(t, "gateway"), serveFlags)
	}
}

// TestServeSetsTheCollectorsHeadroom: serve starts internal/gcheadroom
// with gcHeadroom (a goal of live + 32 MiB on a small heap is a GOGC far
// above 100), leaves a GOGC of the environment alone, and puts the
// runtime's setting back when it ends.
func TestServeSetsTheCollectorsHeadroom(t *testing.T) {
	gogc := gcheadroom.GOGC
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, c := range []struct {
		name string
		env  func(string) string
		want func(int) bool
	}{
		{"default", noEnv, func(p int) bool { return p > 100 }},
		{"GOGC set", func(k string) string {
			if k == "GOGC" {
				return "100"
			}
			return ""
		}, func(p int) bool { return p == 100 }},
	} {
		// The tuner starts from the live heap of the last collection: one
		// now, so that what earlier tests of this process held (past
		// gcHeadroom, GOGC=100 is the right percent) does not count.
		runtime.GC()
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--backend", "memory"}, c.env, &stdout, &stderr)
		}()
		waitFor(t, "the listening line", func() bool { return listeningRE.MatchString(stderr.String()) })
		if p := gogc(); !c.want(p) {
			t.Errorf("%s: GOGC while serving is %d", c.name, p)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: serve: %v", c.name, err)
		}
		if p := gogc(); p != 100 {
			t.Errorf("%s: GOGC after serve ended is %d, want the 100 it found", c.name, p)
		}
	}
}
