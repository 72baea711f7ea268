package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/sandbox"
)

// With cmdUpstreamEnv set (through the upstream's env: in the config),
// the test binary is a go-sdk stdio upstream with one tool, pid, and
// exits before any test runs.
const cmdUpstreamEnv = "RESOURCED_CMD_TEST_UPSTREAM"

func init() {
	sandbox.Main() // the sandboxed upstream starts as this binary, as it does as resourced (main)
	if os.Getenv(cmdUpstreamEnv) == "" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "cmd-test-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestGatewayServesTheUpstreamAndStopsItOnShutdown runs `resourced
// gateway` in process: the upstream's tool is listed beside the read
// tools and answers through the front, and the shutdown stops the
// upstream's process.
func TestGatewayServesTheUpstreamAndStopsItOnShutdown(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	yaml := fmt.Sprintf("auth: {mode: none}\nstore: {backend: memory}\ngateway:\n  upstreams:\n    - name: up\n      command: %q\n      env: {%s: \"1\"}\n",
		exe, cmdUpstreamEnv)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}, noEnv, &stdout, &stderr)
	}()
	listening := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("resourced gateway returned %v before listening:\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("resourced gateway did not listen:\n%s", stderr.String())
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(cctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"pid", "read_resource"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, want %s among them", names, want)
		}
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		b, _ := json.Marshal(res)
		t.Fatalf("pid through the gateway = %s, %v", b, err)
	}
	pid, err := strconv.Atoi(res.Content[0].(*mcp.TextContent).Text)
	if err != nil || pid == os.Getpid() {
		t.Fatalf("pid = %q, want the upstream's", res.Content[0].(*mcp.TextContent).Text)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("resourced gateway returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("resourced gateway did not stop")
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("the upstream's process %d runs after the gateway stopped", pid)
	}
	if !strings.Contains(stderr.String(), "gateway upstreams stopped") {
		t.Fatalf("no shutdown line in the log:\n%s", stderr.String())
	}
}
