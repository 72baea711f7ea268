package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// flakyDriver is the memory driver, every method of which panics while
// on is set: the Bucket over it recovers them (store.Guard).
type flakyDriver struct {
	*memstore.Driver
	on atomic.Bool
}

func (p *flakyDriver) boom() {
	if p.on.Load() {
		panic("flakyDriver: on demand")
	}
}

func (p *flakyDriver) Put(ctx context.Context, obj *store.Object, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	p.boom()
	return p.Driver.Put(ctx, obj, cond, now)
}
func (p *flakyDriver) Read(ctx context.Context, k store.Key, fn func(m *store.Meta, body []byte) error) error {
	p.boom()
	return p.Driver.Read(ctx, k, fn)
}
func (p *flakyDriver) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	p.boom()
	return p.Driver.Stat(ctx, k)
}
func (p *flakyDriver) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	p.boom()
	return p.Driver.View(ctx, k, fn)
}
func (p *flakyDriver) DeleteExpired(ctx context.Context, limit int, now func() time.Time) (int, error) {
	p.boom()
	return p.Driver.DeleteExpired(ctx, limit, now)
}

// panicAuth authenticates like tenantAuth and panics on X-Panic.
type panicAuth struct{}

func (panicAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	if r.Header.Get("X-Panic") != "" {
		panic("panicAuth: on demand")
	}
	return tenantAuth{}.Authenticate(r)
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type guardEnv struct {
	t     *testing.T
	s     *Server
	st    store.Backend
	url   string
	clock *atomic.Pointer[time.Time]
	logs  *syncBuffer
}

// newGuardEnv starts a server on st behind a real TCP listener, callers
// being the tenant of X-Tenant (panicAuth).
func newGuardEnv(t *testing.T, st store.Backend, b Budgets) *guardEnv {
	t.Helper()
	e := &guardEnv{t: t, st: st, clock: &atomic.Pointer[time.Time]{}, logs: &syncBuffer{}}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e.clock.Store(&start)
	if st == nil {
		e.st = memstore.New(memstore.Options{Now: e.now})
	}
	s, err := New(Options{
		Store: e.st, BaseURL: "http://127.0.0.1", Auth: panicAuth{}, Now: e.now, Budgets: b,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Schemes: []Scheme{
			{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 32 << 20},
			{Name: "report", Kind: KindReport, Retention: 24 * time.Hour, MaxRetention: 48 * time.Hour, MaxBytes: 32 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

func (e *guardEnv) now() time.Time { return *e.clock.Load() }

func (e *guardEnv) advance(d time.Duration) {
	n := e.now().Add(d)
	e.clock.Store(&n)
}

// rpc posts one JSON-RPC request (protocol 2025-11-25) as tenant and
// returns the HTTP status, headers and the decoded body.
func (e *guardEnv) rpc(tenant, method string, params any, hdr ...string) (int, http.Header, map[string]any) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("X-Tenant", tenant)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		e.t.Fatalf("%s: HTTP %d, not JSON: %q", method, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, v
}

func (e *guardEnv) save(tenant, path string) (int, http.Header, map[string]any) {
	e.t.Helper()
	return e.rpc(tenant, "tools/call", map[string]any{"name": "save_report", "arguments": map[string]any{"path": path, "mimeType": "text/plain", "text": "body of " + path}})
}

func (e *guardEnv) get(path string) (int, string) {
	e.t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *guardEnv) panics(where string) float64 {
	return testutil.ToFloat64(e.s.metrics.Panics.WithLabelValues(where))
}

func structured(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	res, _ := v["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("no tool result in %v", v)
	}
	return sc
}

// TestStorePanicIsContained: a backend that panics fails the call with an
// unavailable result, keeps the process serving, turns /readyz to 503
// until the hold-down passes and a ping succeeds, and is counted.
func TestStorePanicIsContained(t *testing.T) {
	ps := &flakyDriver{Driver: memstore.NewDriver()}
	var now func() time.Time
	e := newGuardEnv(t, store.NewBucket(ps, store.Options{Now: func() time.Time { return now() }}), Budgets{StorePanicHold: time.Minute})
	now = e.now
	if code, _, v := e.save("t1", "before"); code != 200 || structured(t, v)["status"] != "created" {
		t.Fatalf("save before the panic = %d %v", code, v)
	}
	if code, _ := e.get("/readyz"); code != 200 {
		t.Fatalf("readyz before = %d", code)
	}

	ps.on.Store(true)
	code, _, v := e.save("t1", "during")
	sc := structured(t, v)
	if code != 200 || sc["errorKind"] != service.KindUnavailable || sc["retrySafe"] != true {
		t.Errorf("save while the store panics = %d %v, want an unavailable, retry-safe tool error", code, v)
	}
	if strings.Contains(string(mustJSON(v)), "flakyDriver") {
		t.Errorf("the answer names the panic: %v", v)
	}
	// A read (the fast path: View) and the sweeper panic in the store too.
	_, _, v = e.rpc("t1", "resources/read", map[string]any{"uri": "report://t1/before"})
	if v["error"] == nil {
		t.Errorf("read while the store panics = %v, want an error", v)
	}
	e.s.job("sweep", e.s.sweep)(context.Background())
	ps.on.Store(false)

	if got := e.panics(panicStore); got < 3 {
		t.Errorf("resourced_panics_total{where=store} = %v, want >= 3", got)
	}
	if !strings.Contains(e.logs.String(), "panic recovered") || !strings.Contains(e.logs.String(), "guard_test.go") {
		t.Errorf("the panic was not logged with its stack:\n%.2000s", e.logs.String())
	}
	// Still serving, but not ready until the hold-down has passed.
	if code, _, v := e.rpc("t1", "tools/list", map[string]any{}); code != 200 || v["result"] == nil {
		t.Errorf("tools/list after the panics = %d %v", code, v)
	}
	if code, _, v := e.save("t1", "after"); code != 200 || structured(t, v)["status"] != "created" {
		t.Errorf("save after the panics = %d %v", code, v)
	}
	if code, body := e.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz right after a store panic = %d %q, want 503", code, body)
	}
	e.advance(2 * time.Minute)
	if code, body := e.get("/readyz"); code != 200 {
		t.Errorf("readyz after the hold-down = %d %q, want 200", code, body)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestViewCallbackPanic: a panic in View's callback (the caller's code) is
// not the store's: View fails, the store stays ready, it counts as http.
func TestViewCallbackPanic(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	if code, _, _ := e.save("t1", "r"); code != 200 {
		t.Fatal("save failed")
	}
	err := e.s.store.View(context.Background(), store.MustKey("t1", "report", "r"), func(*store.Meta, []byte, []byte) error {
		panic("callback")
	})
	if err == nil {
		t.Fatal("View with a panicking callback = nil error")
	}
	if e.panics(panicHTTP) != 1 || e.panics(panicStore) != 0 {
		t.Errorf("panics http %v store %v, want 1 and 0", e.panics(panicHTTP), e.panics(panicStore))
	}
	if code, _ := e.get("/readyz"); code != 200 {
		t.Errorf("readyz after a callback panic = %d, want 200", code)
	}
}

// TestHTTPPanicIsContained: a panicking HTTP handler answers 500 (a
// JSON-RPC internal error on /mcp) and the server keeps serving.
func TestHTTPPanicIsContained(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	code, hdr, v := e.rpc("t1", "tools/list", map[string]any{}, "X-Panic", "1")
	if code != 500 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("/mcp with a panicking handler = %d %s", code, hdr.Get("Content-Type"))
	}
	if errv, _ := v["error"].(map[string]any); errv == nil || errv["code"] != float64(-32603) || errv["message"] != "Internal error" {
		t.Errorf("/mcp body = %v, want a JSON-RPC -32603 Internal error", v)
	}
	req, _ := http.NewRequest(http.MethodPut, e.url+"/v1/resources/report/x", strings.NewReader("x"))
	req.Header.Set("X-Panic", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("upload with a panicking handler: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || strings.Contains(string(b), "panic") {
		t.Errorf("upload with a panicking handler = %d %q", resp.StatusCode, b)
	}
	if code, _, v := e.rpc("t1", "tools/list", map[string]any{}); code != 200 || v["result"] == nil {
		t.Errorf("after the panics: %d %v", code, v)
	}
	if got := e.panics(panicHTTP); got != 2 {
		t.Errorf("resourced_panics_total{where=http} = %v, want 2", got)
	}
}

// TestMCPPanicIsContained: go-sdk runs method handlers on goroutines of
// its own; a tool that panics there gives an unavailable isError result,
// another method a JSON-RPC internal error, and the process lives on.
func TestMCPPanicIsContained(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	e.s.mcp.AddTool(&mcp.Tool{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("tool: on demand")
	})
	e.s.mcp.AddPrompt(&mcp.Prompt{Name: "boom"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		panic("prompt: on demand")
	})
	code, _, v := e.rpc("t1", "tools/call", map[string]any{"name": "boom", "arguments": map[string]any{}})
	res, _ := v["result"].(map[string]any)
	if sc := structured(t, v); code != 200 || res["isError"] != true || sc["errorKind"] != service.KindUnavailable || sc["retrySafe"] != true {
		t.Errorf("tools/call of a panicking tool = %d %v", code, v)
	}
	_, _, v = e.rpc("t1", "prompts/get", map[string]any{"name": "boom"})
	if errv, _ := v["error"].(map[string]any); errv == nil || errv["code"] != float64(-32603) || strings.Contains(errv["message"].(string), "on demand") {
		t.Errorf("prompts/get of a panicking prompt = %v, want -32603 naming nothing", v)
	}
	if code, _, v := e.save("t1", "after"); code != 200 || structured(t, v)["status"] != "created" {
		t.Errorf("save after the panics = %d %v", code, v)
	}
	if got := e.panics(panicMCP); got != 2 {
		t.Errorf("resourced_panics_total{where=mcp} = %v, want 2", got)
	}
}

// TestJobPanicIsContained: a background job's panic ends its tick only.
func TestJobPanicIsContained(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	// The job cancels it after its third tick; the timeout only ends a
	// job that stopped ticking, and a loaded machine may take seconds
	// over three ticks of a panicking job.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ticks atomic.Int32
	every(ctx, 5*time.Millisecond, e.s.job("test", func(context.Context) {
		if ticks.Add(1) >= 3 {
			cancel()
		}
		panic("job: on demand")
	}))
	if ticks.Load() < 3 || e.panics(panicJob) < 3 {
		t.Errorf("ticks %d, panics %v: the job did not go on after a panic", ticks.Load(), e.panics(panicJob))
	}
}

// TestMetricsHostGuard: /metrics answers only the Host names /mcp does on
// a loopback listener, so a DNS-rebinding page cannot read it (hostile
// review, finding 10).
func TestMetricsHostGuard(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	for host, want := range map[string]int{"": 200, "evil.example:80": 403} {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/metrics", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /metrics with Host %q = %d, want %d", host, resp.StatusCode, want)
		}
	}
}
