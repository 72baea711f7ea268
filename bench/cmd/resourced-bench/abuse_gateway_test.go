package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startFakeGateway serves read_text_file over Streamable HTTP to the
// tokens "a" and "b" (any other is 401): "small" is two bytes; "large"
// is 64 KiB, or every third call the gateway's refusal by a tenant's
// in-flight share, every fifth by the gateway's; "broken" is an error.
func startFakeGateway(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-gateway", Version: "1"}, nil)
	var n atomic.Int64
	type in struct {
		Path string `json:"path"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "read_text_file"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		refused := func(whose string) *mcp.CallToolResult {
			return &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"errorKind": "unavailable"}, Content: []mcp.Content{&mcp.TextContent{
				Text: "The answer of the upstream server a-long-upstream-name-that-pushes-the-words-past-ninety-characters was not read: " + whose + " its limit of 1 MiB of upstream answers in flight."}}}
		}
		switch a.Path {
		case "small":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
		case "large":
			switch i := n.Add(1); {
			case i%5 == 0:
				return refused("the gateway holds"), nil, nil
			case i%3 == 0:
				return refused("your tenant holds"), nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 64<<10)}}}, nil, nil
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "Bearer a" && a != "Bearer b" {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// gateway-flood counts B's calls alone and beside A, and A's answers by
// kind: the budget's refusals by whose bound was full, whatever the
// upstream's name.
func TestAbuseGatewayFlood(t *testing.T) {
	url := startFakeGateway(t)
	var stdout, stderr bytes.Buffer
	args := []string{"abuse", "gateway-flood", "-url", url, "-token", "a", "-tenant", "acme", "-token-b", "b", "-tenant-b", "beta",
		"-pid", strconv.Itoa(os.Getpid()), "-smoke", "-json", "-c", "3", "-d", "300ms", "-warmup", "100ms",
		"-large-file", "large", "-small-file", "small"}
	if code, err := run(args, &stdout, &stderr); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, &stderr)
	}
	var r FloodResult
	mustJSON(t, stdout.Bytes(), &r)
	if r.Scenario != "gateway-flood" || r.TenantA != "acme" || r.TenantB != "beta" || r.RSS == nil || r.RSS.PeakMiB <= 0 {
		t.Errorf("header and RSS: %+v", r)
	}
	for name, c := range map[string]FloodCalls{"bQuiet": r.BQuiet, "bFlood": r.BFlood} {
		if c.Calls == 0 || c.Outcomes["ok"] != c.Calls || c.Refused != 0 || c.Errors != 0 || c.P50 <= 0 || c.P99 < c.P50 || c.Max < c.P99 {
			t.Errorf("%s: %+v", name, c)
		}
	}
	a := r.A
	if a.Calls < 5 || a.Outcomes["refused: tenant"] == 0 || a.Outcomes["refused: gateway"] == 0 || a.Outcomes["ok"] == 0 ||
		a.Refused != a.Outcomes["refused: tenant"]+a.Outcomes["refused: gateway"] || a.Errors != 0 || a.Calls != a.Refused+a.Outcomes["ok"] {
		t.Errorf("A: %+v", a)
	}
}

// What gateway-flood cannot run is an error, exit 1.
func TestAbuseGatewayFloodFailures(t *testing.T) {
	url := startFakeGateway(t)
	common := []string{"-url", url, "-token", "a", "-tenant", "acme", "-token-b", "b", "-tenant-b", "beta", "-smoke"}
	for name, args := range map[string][]string{
		"no large file":     {"-small-file", "small"},
		"no small file":     {"-large-file", "large"},
		"too many":          {"-large-file", "large", "-small-file", "small", "-c", "65"},
		"B's call fails":    {"-large-file", "large", "-small-file", "broken"},
		"B's token refused": {"-large-file", "large", "-small-file", "small", "-token-b", "nope", "-tenant-b", "other"},
		"one tenant twice":  {"-large-file", "large", "-small-file", "small", "-token-b", "a", "-tenant-b", "acme"},
	} {
		var out bytes.Buffer
		code, err := run(append(append([]string{"abuse", "gateway-flood"}, common...), args...), &out, &out)
		if code != 1 || err == nil {
			t.Errorf("%s: exit %d, %v\n%s", name, code, err, &out)
		}
	}
}
