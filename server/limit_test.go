package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/resourced/resourced/server/internal/edge"
)

// TestTenantInflightCap: a tenant at its in-flight cap gets 429 with
// Retry-After and a JSON-RPC error carrying its id, while another tenant
// is served; when its requests finish it is served again.
func TestTenantInflightCap(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{MaxInflight: 2})
	hold := make(chan struct{})
	entered := make(chan struct{}, 2)
	e.s.mcp.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-hold
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			code, _, _ := e.rpc("t1", "tools/call", map[string]any{"name": "hold", "arguments": map[string]any{}})
			done <- code
		}()
	}
	for range 2 {
		<-entered
	}
	code, hdr, v := e.rpc("t1", "tools/list", map[string]any{})
	errv, _ := v["error"].(map[string]any)
	if code != http.StatusTooManyRequests || errv == nil || errv["code"] != float64(codeLimited) || v["id"] != float64(7) {
		t.Errorf("t1 over its cap = %d %v, want 429 with a JSON-RPC error and the id", code, v)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q, want whole seconds >= 1", hdr.Get("Retry-After"))
	}
	if msg, _ := errv["message"].(string); !strings.Contains(msg, "in progress") || strings.Contains(msg, "t2") {
		t.Errorf("message = %q, want the limit named", msg)
	}
	if code, _, v := e.rpc("t2", "tools/list", map[string]any{}); code != 200 || v["result"] == nil {
		t.Errorf("t2 while t1 is at its cap = %d %v", code, v)
	}
	close(hold)
	for range 2 {
		if c := <-done; c != 200 {
			t.Errorf("held call = %d", c)
		}
	}
	if code, _, _ := e.rpc("t1", "tools/list", map[string]any{}); code != 200 {
		t.Errorf("t1 after its calls finished = %d", code)
	}
	if got := testutil.ToFloat64(e.s.metrics.Limited.WithLabelValues(limitInflight)); got != 1 {
		t.Errorf("resourced_limited_total{reason=inflight} = %v, want 1", got)
	}
	if n := e.s.limiter.Size(); n != 0 {
		t.Errorf("limiter holds %d idle tenants, want 0", n)
	}
}

// TestSaveRateLimit: a burst of saves past the bucket gets 429 with
// Retry-After, for the tools and uploads alike; reads of the same tenant
// and saves of another go on.
func TestSaveRateLimit(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{SaveRate: 0.5, SaveBurst: 3})
	for i := range 3 {
		if code, _, v := e.save("t1", "r"+strconv.Itoa(i)); code != 200 || structured(t, v)["status"] != "created" {
			t.Fatalf("save %d within the burst = %d %v", i, code, v)
		}
	}
	code, hdr, v := e.save("t1", "over")
	errv, _ := v["error"].(map[string]any)
	if code != http.StatusTooManyRequests || errv == nil || !strings.Contains(errv["message"].(string), "saves") {
		t.Errorf("save past the burst = %d %v, want 429", code, v)
	}
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); ra != 2 {
		t.Errorf("Retry-After = %q, want 2 (one token at 0.5/s)", hdr.Get("Retry-After"))
	}
	req, _ := http.NewRequest(http.MethodPut, e.url+"/v1/resources/report/up", strings.NewReader("x"))
	req.Header.Set("X-Tenant", "t1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("upload past the save rate = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if code, _, _ := e.rpc("t1", "resources/read", map[string]any{"uri": "report://t1/r0"}); code != 200 {
		t.Errorf("read while saves are limited = %d", code)
	}
	if code, _, _ := e.save("t2", "r"); code != 200 {
		t.Errorf("another tenant's save = %d", code)
	}
	e.advance(2 * time.Second)
	if code, _, _ := e.save("t1", "later"); code != 200 {
		t.Errorf("save after the bucket refilled = %d", code)
	}
	if got := testutil.ToFloat64(e.s.metrics.Limited.WithLabelValues(limitSaveRate)); got != 2 {
		t.Errorf("resourced_limited_total{reason=save_rate} = %v, want 2", got)
	}
}

// TestTenantLimiterForgetsIdleTenants: state is kept only for tenants
// with requests in flight or a bucket not yet refilled.
func TestTenantLimiterForgetsIdleTenants(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := edge.NewLimiter(edge.Limits{MaxInflight: 1, SaveRate: 10, SaveBurst: 10}, func() time.Time { return now })
	for i := range 100 {
		rel, _, _, _, ok := l.Acquire("t"+strconv.Itoa(i), 0, true)
		if !ok {
			t.Fatal("refused")
		}
		rel()
		rel() // a second release is harmless
	}
	if n := l.Size(); n != 0 {
		t.Errorf("%d tenants kept after reads", n)
	}
	rel, _, _, _, _ := l.Acquire("s", 1, true)
	rel()
	if n := l.Size(); n != 1 {
		t.Errorf("%d tenants kept after a save, want 1 (its bucket is not full)", n)
	}
	if _, _, _, reason, ok := l.Acquire("s", 11, true); ok || reason != limitSaveRate {
		t.Errorf("a request with more saves than the burst = %v %q", ok, reason)
	}
	now = now.Add(time.Second)
	rel, _, _, _, _ = l.Acquire("x", 0, true)
	rel()
	if _, _, _, _, ok := l.Acquire("s", 0, false); !ok || l.Size() != 0 {
		t.Errorf("refilled tenant still kept: %d", l.Size())
	}
}

// TestSaveSlightlyOverTheRateWaits: a save that gets its token within
// SaveWait waits for it instead of being refused, so a tenant a little
// over its rate is slowed to it and a flooding client is held, not
// answered at once.
func TestSaveSlightlyOverTheRateWaits(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{SaveRate: 10, SaveBurst: 1, SaveWait: 500 * time.Millisecond})
	if code, _, v := e.save("t1", "first"); code != 200 {
		t.Fatalf("first save = %d %v", code, v)
	}
	start := time.Now()
	code, _, v := e.save("t1", "second") // its token comes 100 ms later
	if code != 200 || structured(t, v)["status"] != "created" {
		t.Fatalf("save 100 ms over the rate = %d %v, want it to wait and succeed", code, v)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("the save over the rate returned after %v: it did not wait for its token", d)
	}
	e2 := newGuardEnv(t, nil, Budgets{SaveRate: 1, SaveBurst: 1, SaveWait: 500 * time.Millisecond})
	e2.save("t1", "first")
	if code, _, _ := e2.save("t1", "second"); code != http.StatusTooManyRequests {
		t.Errorf("save a second over the rate, with 500 ms of wait = %d, want 429", code)
	}
}
