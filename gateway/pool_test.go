package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// logRecorder is a slog.Handler that keeps every entry, for the tests to
// look for restarts and stderr lines.
type logRecorder struct {
	mu      *sync.Mutex
	entries *[]logEntry
	attrs   []slog.Attr
}

type logEntry struct {
	msg   string
	attrs map[string]string
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, entries: &[]logEntry{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		e.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { e.attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.entries = append(*h.entries, e)
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, entries: h.entries, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// find returns the entries whose message is msg and whose attributes
// include want.
func (h *logRecorder) find(msg string, want map[string]string) []logEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logEntry
next:
	for _, e := range *h.entries {
		if e.msg != msg {
			continue
		}
		for k, v := range want {
			if e.attrs[k] != v {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// stdioUpstream is the test binary as a stdio upstream (pool_upstream_test.go).
func stdioUpstream(t *testing.T, name string, iso Isolation) Upstream {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Upstream{
		Name: name, Command: exe, Env: map[string]string{poolUpstreamEnv: "1"},
		Isolation: iso, CallTimeout: 20 * time.Second, Required: true,
	}
}

// rawStdioUpstream is rawUpstream (pool_upstream_test.go) as a stdio
// upstream.
func rawStdioUpstream(t *testing.T, name string, iso Isolation) Upstream {
	u := stdioUpstream(t, name, iso)
	u.Env = map[string]string{rawUpstreamEnv: "1"}
	return u
}

// newTestPool is a pool with short backoffs and a short wait for a stdio
// upstream to exit after its stdin closes, closed when the test ends.
func newTestPool(t *testing.T, logs *logRecorder, opts PoolOptions) *Pool {
	t.Helper()
	if logs == nil {
		logs = newLogRecorder()
	}
	opts.Logger = slog.New(logs)
	if opts.backoffBase == 0 {
		opts.backoffBase = 50 * time.Millisecond
	}
	if opts.terminate == 0 {
		opts.terminate = time.Second
	}
	p, err := NewPool(opts)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("CallTool(%s) = %+v, want one text item", tool, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func session(t *testing.T, p *Pool, upstream, tenant string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := p.Session(ctx, upstream, tenant)
	if err != nil {
		t.Fatalf("Session(%q, %q): %v", upstream, tenant, err)
	}
	return cs
}

func pidOf(t *testing.T, p *Pool, upstream, tenant string) int {
	t.Helper()
	pid, err := strconv.Atoi(callText(t, session(t, p, upstream, tenant), "pid", nil))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// alive reports whether process pid exists (a zombie counts: the pool
// must have reaped its children).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after %s", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPoolChildEnvIsPathHomeAndEnvOnly: unconfined, a stdio upstream's
// environment is the gateway's PATH and HOME and its Env; sandboxed (the
// default), HOME and TMPDIR are its private directories under SandboxDir.
func TestPoolChildEnvIsPathHomeAndEnvOnly(t *testing.T) {
	t.Setenv("RESOURCED_POOL_TEST_SECRET", "do-not-leak")
	for _, off := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandboxOff=%v", off), func(t *testing.T) {
			up := stdioUpstream(t, "fs", Shared)
			up.Env["LOG_LEVEL"] = "info"
			up.Sandbox.Off = off
			dir := t.TempDir()
			p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{up}, SandboxDir: dir})
			env := callText(t, session(t, p, "fs", ""), "env", nil)
			got := map[string]string{}
			for _, kv := range strings.Split(env, "\n") {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			want := map[string]string{"LOG_LEVEL": "info", poolUpstreamEnv: "1"}
			for _, k := range []string{"PATH", "HOME"} {
				if v := os.Getenv(k); v != "" {
					want[k] = v
				}
			}
			if !off {
				want["HOME"] = filepath.Join(dir, "fs", "home")
				want["TMPDIR"] = filepath.Join(dir, "fs", "tmp")
			}
			for k, v := range got {
				if want[k] != v {
					t.Errorf("the child's environment has %s=%q, which is not PATH, HOME, TMPDIR or its Env", k, v)
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("the child's environment has %s=%q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestPoolConcurrentFirstCallsShareOneProcess(t *testing.T) {
	logs := newLogRecorder()
	reg := prometheus.NewRegistry()
	p := newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", Shared)}, Registerer: reg})
	const n = 8
	sessions := make([]*mcp.ClientSession, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := p.Session(context.Background(), "fs", "tenant"+strconv.Itoa(i))
			if err != nil {
				t.Errorf("Session: %v", err)
			}
			sessions[i] = cs
		}()
	}
	wg.Wait()
	for i, cs := range sessions {
		if cs != sessions[0] {
			t.Fatalf("call %d got another session than call 0", i)
		}
	}
	pid := pidOf(t, p, "fs", "other")
	if ups := logs.find("upstream stderr", map[string]string{"upstream": "fs"}); len(ups) != 1 ||
		ups[0].attrs["line"] != "test upstream up, pid "+strconv.Itoa(pid) {
		t.Fatalf("stderr of fs = %v, want one start line of pid %d", ups, pid)
	}
	if g := testutil.ToFloat64(p.sessions.WithLabelValues("fs")); g != 1 {
		t.Fatalf("resourced_gateway_upstream_sessions{upstream=fs} = %v, want 1", g)
	}
	if n, err := testutil.GatherAndCount(reg, "resourced_gateway_upstream_sessions", "resourced_gateway_upstream_restarts_total"); err != nil || n != 2 {
		t.Fatalf("registered series = %d, %v; want 2", n, err)
	}
}

func TestPoolConcurrentFirstCallsOfOneTenantShareOneProcess(t *testing.T) {
	logs := newLogRecorder()
	p := newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", PerTenant)}})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Session(context.Background(), "fs", "acme"); err != nil {
				t.Errorf("Session: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := len(logs.find("upstream stderr", map[string]string{"upstream": "fs", "tenant": "acme"})); n != 1 {
		t.Fatalf("six first calls of one tenant started %d processes, want 1", n)
	}
}

func TestPoolPerTenantProcesses(t *testing.T) {
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", PerTenant)}})
	a1 := pidOf(t, p, "fs", "acme")
	b := pidOf(t, p, "fs", "globex")
	a2 := pidOf(t, p, "fs", "acme")
	if a1 == b {
		t.Fatalf("tenants acme and globex share process %d", a1)
	}
	if a1 != a2 {
		t.Fatalf("tenant acme got process %d, then %d", a1, a2)
	}
	if _, err := p.Session(context.Background(), "fs", ""); err == nil {
		t.Fatal("Session of a perTenant upstream without a tenant succeeded")
	}
}

func TestPoolIdleTenantSessionIsClosed(t *testing.T) {
	up := stdioUpstream(t, "fs", PerTenant)
	// CallTimeout also bounds the upstream's start, so it is seconds: a
	// loaded machine starts a process slowly (4.7 s under -race beside four
	// builds, where 3 s timed out). The session closes after
	// max(IdleTimeout, CallTimeout).
	up.IdleTimeout, up.CallTimeout = 500*time.Millisecond, 10*time.Second
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{up}})
	pid := pidOf(t, p, "fs", "acme")
	waitGone(t, pid, 30*time.Second)
	if g := testutil.ToFloat64(p.sessions.WithLabelValues("fs")); g != 0 {
		t.Fatalf("sessions gauge after the idle close = %v, want 0", g)
	}
	if again := pidOf(t, p, "fs", "acme"); again == pid {
		t.Fatalf("after the idle close tenant acme got process %d again", pid)
	}
}

func TestPoolCrashedProcessIsRestartedAfterBackoff(t *testing.T) {
	logs := newLogRecorder()
	p := newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", Shared)}, backoffBase: time.Second})
	cs := session(t, p, "fs", "")
	pid := pidOf(t, p, "fs", "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash"}); err == nil {
		t.Fatal("a call during which the upstream exited succeeded")
	}
	waitGone(t, pid, 5*time.Second)
	// Within the backoff: fail at once with ErrUnavailable. "At once" is
	// well under the backoff's second: a Session that waited for the
	// backoff to run out would take most of it, and a loaded machine can
	// stall a goroutine for tens of milliseconds.
	var err error
	var failed time.Time
	deadline := time.Now().Add(10 * time.Second)
	for {
		start := time.Now()
		_, err = p.Session(context.Background(), "fs", "")
		failed = time.Now()
		if took := failed.Sub(start); err != nil && took > 500*time.Millisecond {
			t.Fatalf("Session within the backoff took %s", took)
		}
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond) // the watcher has not seen the end yet
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Session right after the crash = %v, want ErrUnavailable", err)
	}
	// The backoff runs from when the pool's watcher saw the end, which is
	// before Session failed (the failure is the watcher's doing), not from
	// when the call saw it: a watcher scheduled late on a loaded machine
	// starts the backoff later than the crash.
	time.Sleep(time.Until(failed.Add(1100 * time.Millisecond)))
	again := pidOf(t, p, "fs", "")
	if again == pid {
		t.Fatalf("the restarted upstream has the dead process's pid %d", pid)
	}
	if r := testutil.ToFloat64(p.restarts.WithLabelValues("fs")); r != 1 {
		t.Fatalf("restarts = %v, want 1", r)
	}
	if len(logs.find("restarting upstream session", map[string]string{"upstream": "fs"})) != 1 {
		t.Fatal("the restart was not logged once")
	}
}

func TestPoolBackoffDoublesAndCaps(t *testing.T) {
	p := &Pool{opts: PoolOptions{backoffBase: 250 * time.Millisecond, backoffMax: 30 * time.Second}}
	for n, want := range map[int]time.Duration{1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 8: 30 * time.Second, 100: 30 * time.Second} {
		if got := p.backoff(n); got != want {
			t.Errorf("backoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestPoolTenantCapEvictsOnlyIdleSessions(t *testing.T) {
	up := stdioUpstream(t, "fs", PerTenant)
	// CallTimeout is the window after which a handed-out session counts as
	// idle, and it also bounds a session's start: a start of this race-built
	// upstream took 4.7 s beside four builds (load average 20), so the
	// window is three starts measured here, at least 2 s.
	start := time.Now()
	pidOf(t, newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{up}}), "fs", "warm-up")
	up.IdleTimeout, up.CallTimeout = time.Hour, max(2*time.Second, 3*time.Since(start))
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{up}, MaxTenantSessions: 2})
	aBefore := time.Now() // a's session was last used after this
	a := pidOf(t, p, "fs", "a")
	time.Sleep(20 * time.Millisecond)
	b := pidOf(t, p, "fs", "b")
	_, err := p.Session(context.Background(), "fs", "c")
	if !errors.Is(err, ErrUnavailable) {
		// Evicting a is right once it has been idle for CallTimeout, which
		// b's start on a loaded machine may take: only earlier is it a bug.
		if err == nil && time.Since(aBefore) >= up.CallTimeout {
			t.Skipf("tenant a's session was idle (%s) by the time b had started: too slow a machine to check the in-use window", up.CallTimeout)
		}
		t.Fatalf("a third tenant while two sessions are in use: %v, want ErrUnavailable", err)
	}
	time.Sleep(up.CallTimeout + 100*time.Millisecond) // a and b are idle now: no call can still use them
	c := pidOf(t, p, "fs", "c")
	waitGone(t, a, 5*time.Second) // the least recently used one
	if !alive(b) {
		t.Fatalf("tenant b's process %d was stopped, want a's (least recently used)", b)
	}
	if c == a || c == b {
		t.Fatalf("tenant c shares process %d", c)
	}
	if g := testutil.ToFloat64(p.sessions.WithLabelValues("fs")); g != 2 {
		t.Fatalf("sessions = %v, want 2", g)
	}
}

func TestPoolCloseStopsEveryProcessAndIsIdempotent(t *testing.T) {
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "one", Shared), stdioUpstream(t, "two", PerTenant)}})
	pids := []int{pidOf(t, p, "one", ""), pidOf(t, p, "two", "a"), pidOf(t, p, "two", "b")}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d runs after Close returned", pid)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := p.Session(context.Background(), "one", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Session after Close = %v, want ErrUnavailable", err)
	}
	if errs := p.Ready(context.Background()); !errors.Is(errs["one"], ErrUnavailable) || !errors.Is(errs["two"], ErrUnavailable) {
		t.Fatalf("Ready after Close = %v, want ErrUnavailable for both", errs)
	}
}

// The notifications an upstream sends before its answer are delivered
// before the call's done returns, over stdio (lineGuard counts them) and
// HTTP (sseGuard), however late go-sdk's handler goroutine runs: here each
// delivery takes 50 ms.
func TestPoolProgressReachesTheRouter(t *testing.T) {
	url, _ := httpUpstream(t)
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", Shared), {Name: "web", URL: url}}})
	for _, up := range []string{"fs", "web"} {
		var mu sync.Mutex
		var got []string
		cs := session(t, p, up, "")
		token, done := p.Progress().Route(cs, func(n *mcp.ProgressNotificationParams) {
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			got = append(got, n.Message)
			mu.Unlock()
		})
		params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"n": 3}}
		params.SetProgressToken(token)
		if _, err := cs.CallTool(context.Background(), params); err != nil {
			t.Fatal(err)
		}
		done(context.Background())
		mu.Lock()
		if strings.Join(got, ",") != "step 1,step 2,step 3" {
			t.Errorf("%s: progress delivered by done = %q, want steps 1 to 3", up, got)
		}
		mu.Unlock()
	}
}

// Issue 15: tenant B's own perTenant process sends a progress notification
// with the token of tenant A's call; it must not reach A's route.
func TestPoolProgressOfAnotherSessionIsNotDelivered(t *testing.T) {
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", PerTenant)}})
	a, b := session(t, p, "fs", "a"), session(t, p, "fs", "b")
	var mu sync.Mutex
	var got []string
	token, done := p.Progress().Route(a, func(n *mcp.ProgressNotificationParams) {
		mu.Lock()
		got = append(got, n.Message)
		mu.Unlock()
	})
	defer done(context.Background())
	if callText(t, b, "inject", map[string]any{"token": token}) != "injected" {
		t.Fatal("inject did not run")
	}
	// The same notification on A's own session is delivered: the test
	// would pass for a router that delivers nothing otherwise.
	if callText(t, a, "inject", map[string]any{"token": token}) != "injected" {
		t.Fatal("inject did not run")
	}
	deadline := time.Now().Add(20 * time.Second) // go-sdk delivers on a goroutine of its own
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // B's, had it been delivered, came first
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("delivered %d notifications to A's route (%q), want only the one A's own session sent", len(got), got)
	}
}

func TestPoolClientAdvertisesNoClientFeatures(t *testing.T) {
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", Shared)}})
	if caps := callText(t, session(t, p, "fs", ""), "caps", nil); caps != "roots=false sampling=false elicitation=false" {
		t.Fatalf("client capabilities: %s, want none of roots, sampling, elicitation", caps)
	}
}

func TestPoolLogsStderrPerUpstream(t *testing.T) {
	logs := newLogRecorder()
	p := newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", PerTenant)}})
	long := strings.Repeat("é", maxStderrLine) // 2 bytes each: cut mid-character
	callText(t, session(t, p, "fs", "acme"), "stderr", map[string]any{"text": "first\r\n" + long + "\nlast"})
	_ = p.Close() // the last line has no newline: logged when stderr closes
	deadline := time.Now().Add(5 * time.Second)
	for len(logs.find("upstream stderr", map[string]string{"line": "last"})) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	want := map[string]string{"upstream": "fs", "tenant": "acme"}
	var lines []string
	for _, e := range logs.find("upstream stderr", want) {
		lines = append(lines, e.attrs["line"])
	}
	if len(lines) != 4 || lines[1] != "first" || lines[3] != "last" {
		t.Fatalf("stderr lines = %q, want the start line, first, the cut line, last", lines)
	}
	if cut := lines[2]; len(cut) > maxStderrLine || !strings.HasPrefix(long, cut) || len(cut) < maxStderrLine-1 {
		t.Fatalf("the long line was logged as %d bytes, want its first %d without a split character", len(cut), maxStderrLine)
	}
}

// httpUpstream serves the test upstream over Streamable HTTP and records
// the headers of every request.
func httpUpstream(t *testing.T) (url string, headers func() []http.Header) {
	t.Helper()
	srv := newTestUpstream()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var seen []http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

func TestPoolHTTPUpstreamGetsItsStaticHeadersOnly(t *testing.T) {
	url, headers := httpUpstream(t)
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{
		Name: "web", URL: url, Headers: map[string]string{"X-Api-Key": "k-123", "Authorization": "Bearer upstream-token"},
	}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cs, err := p.Session(ctx, "web", "")
	cancel() // the session outlives its connect's context
	if err != nil {
		t.Fatal(err)
	}
	callText(t, cs, "pid", nil)
	hs := headers()
	if len(hs) < 2 {
		t.Fatalf("the upstream saw %d requests, want the connect and a call", len(hs))
	}
	for i, h := range hs {
		if h.Get("X-Api-Key") != "k-123" || h.Get("Authorization") != "Bearer upstream-token" {
			t.Fatalf("request %d had X-Api-Key %q, Authorization %q; want the configured values", i, h.Get("X-Api-Key"), h.Get("Authorization"))
		}
	}
}

func TestPoolHTTPConnectRefusedIsUnavailableWithBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: "http://" + addr + "/mcp"}}, backoffBase: time.Minute})
	if _, err := p.Session(context.Background(), "web", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Session of a refused upstream = %v, want ErrUnavailable", err)
	}
	start := time.Now()
	_, err = p.Session(context.Background(), "web", "")
	// "At once" is against the backoff's minute: a loaded machine can
	// stall a goroutine for tens of milliseconds.
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "retrying in") || time.Since(start) > 10*time.Second {
		t.Fatalf("Session within the backoff = %v after %s, want ErrUnavailable at once", err, time.Since(start))
	}
	if errs := p.Ready(context.Background()); !errors.Is(errs["web"], ErrUnavailable) {
		t.Fatalf("Ready = %v, want web unavailable", errs)
	}
}

func TestPoolHTTPServerErrorOnConnectIsUnavailable(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream broken", http.StatusBadGateway)
	}))
	defer ts.Close()
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: ts.URL}}})
	if _, err := p.Session(context.Background(), "web", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Session of an upstream answering 502 = %v, want ErrUnavailable", err)
	}
}

func TestPoolReady(t *testing.T) {
	logs := newLogRecorder()
	bad := Upstream{Name: "bad", Command: "/nonexistent/resourced-test-upstream"}
	p := newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "shared", Shared), stdioUpstream(t, "tenants", PerTenant), bad}})
	errs := p.Ready(context.Background())
	if errs["shared"] != nil || errs["tenants"] != nil {
		t.Fatalf("Ready = %v, want shared and tenants ready", errs)
	}
	if !errors.Is(errs["bad"], ErrUnavailable) {
		t.Fatalf("Ready[bad] = %v, want ErrUnavailable", errs["bad"])
	}
	// The probe of the perTenant upstream is closed at once; the shared
	// session stays for the callers.
	starts := logs.find("upstream stderr", map[string]string{"upstream": "tenants"})
	if len(starts) != 1 {
		t.Fatalf("the perTenant upstream started %d times, want one probe", len(starts))
	}
	pid, _ := strconv.Atoi(strings.TrimPrefix(starts[0].attrs["line"], "test upstream up, pid "))
	waitGone(t, pid, 5*time.Second)
	if g := testutil.ToFloat64(p.sessions.WithLabelValues("tenants")); g != 0 {
		t.Fatalf("the probe counts as a session: %v", g)
	}
	// Within the minute the probe's result stands: no second process.
	if errs := p.Ready(context.Background()); errs["tenants"] != nil {
		t.Fatalf("second Ready = %v", errs)
	}
	if n := len(logs.find("upstream stderr", map[string]string{"upstream": "tenants"})); n != 1 {
		t.Fatalf("a second Ready within a minute started the perTenant upstream again (%d starts)", n)
	}
}

func TestNewPoolRefusesBadUpstreams(t *testing.T) {
	for _, ups := range [][]Upstream{
		{{Name: "Bad", Command: "x"}},
		{{Name: "a__b", Command: "x"}},
		{{Name: "a", Command: "x", URL: "http://x"}},
		{{Name: "a"}},
		{{Name: "a", Command: "x", Isolation: "perUser"}},
		{{Name: "a", Command: "x"}, {Name: "a", URL: "http://x"}},
	} {
		if _, err := NewPool(PoolOptions{Upstreams: ups}); err == nil {
			t.Errorf("NewPool(%+v) succeeded", ups)
		}
	}
}

func TestPoolHTTPHeadersStayWithTheUpstreamsOrigin(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer redirector.Close()
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: redirector.URL + "/mcp", Headers: map[string]string{"X-Api-Key": "k-123"}}}})
	if _, err := p.Session(context.Background(), "web", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Session through a redirect to a 404 = %v, want ErrUnavailable", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) == 0 {
		t.Fatal("the redirect was not followed; the test proves nothing")
	}
	for _, v := range leaked {
		if v != "" {
			t.Fatalf("the redirect target got X-Api-Key %q", v)
		}
	}
}
