package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoServer is a Streamable HTTP MCP server with one tool, named name,
// that echoes its message: a stand-in for both the gateway and the
// upstream of the pass-through measurement.
func echoServer(t *testing.T, name string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// runGatewayJSON runs `resourced-bench gateway args... -json`, which must
// succeed, and returns its result and output.
func runGatewayJSON(t *testing.T, args ...string) (GatewayResult, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code, err := run(append(append([]string{"gateway"}, args...), "-json"), &out, &errs)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, errs.String())
	}
	var r GatewayResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return r, out.String()
}

func TestGatewayModePassThrough(t *testing.T) {
	gw, direct := echoServer(t, "up__echo"), echoServer(t, "echo")
	r, out := runGatewayJSON(t, "-gateway", gw, "-direct", direct, "-gateway-tool", "up__echo", "-n", "40", "-rounds", "4", "-protocol", v2025)
	p := r.PassThrough
	if p == nil || p.Calls != 40 || p.Gateway <= 0 || p.Direct <= 0 || p.P50Ratio <= 0 || r.Large != nil {
		t.Fatalf("result %s", out)
	}
	// A tool the gateway does not have fails the run.
	var errs bytes.Buffer
	code, err := run([]string{"gateway", "-gateway", gw, "-direct", direct, "-n", "2", "-rounds", "1"}, io.Discard, &errs)
	if code != 1 || err == nil || !strings.Contains(err.Error(), "tools/call echo") {
		t.Errorf("unknown tool at the gateway: exit %d, %v", code, err)
	}
}

// TestGatewayModeProxyFloor: -proxy-floor calls the upstream also through
// proxy-serve, a process of its own (the test binary, TestMain), and
// reports its p50 and both ratios.
func TestGatewayModeProxyFloor(t *testing.T) {
	gw, direct := echoServer(t, "up__echo"), echoServer(t, "echo")
	r, out := runGatewayJSON(t, "-gateway", gw, "-direct", direct+"/mcp", "-gateway-tool", "up__echo", "-n", "30", "-rounds", "3", "-protocol", v2025, "-proxy-floor")
	p := r.PassThrough
	if p == nil || p.Calls != 30 || p.Proxy <= 0 || p.ProxyRatio <= 0 || p.GatewayOverHop <= 0 {
		t.Fatalf("result %s", out)
	}
	if want := float64(p.Gateway) / float64(p.Proxy); p.GatewayOverHop != want {
		t.Errorf("gatewayOverProxy %v, want gateway/proxy %v", p.GatewayOverHop, want)
	}
}

func TestGatewayModeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-gateway is required"},
		{[]string{"-gateway", "http://127.0.0.1:1/mcp"}, "nothing to measure"},
		{[]string{"-gateway", "http://127.0.0.1:1/mcp", "-fs-command", "node"}, "-fs-command needs -file"},
		{[]string{"-gateway", "http://127.0.0.1:1/mcp", "-direct", "x", "-n", "0"}, "at least 1"},
		{[]string{"-gateway", "http://127.0.0.1:1/mcp", "-fs-command", "node", "-file", "f", "-proxy-floor"}, "-proxy-floor needs -direct"},
	} {
		var out, errs bytes.Buffer
		code, err := run(append([]string{"gateway"}, c.args...), &out, &errs)
		if code != 1 || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v; want an error with %q", c.args, code, err, c.want)
		}
	}
}
