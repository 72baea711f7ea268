package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsSetupHint is what to run when the TypeScript client is not installed.
const tsSetupHint = "run `npm ci --prefix integration/ts` (Node 20+) to install the official MCP TypeScript client"

// requireTS skips (or, with RESOURCED_REQUIRE_TS=1, fails) when the
// TypeScript client cannot run here. It returns the path of node.
func requireTS(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("RESOURCED_REQUIRE_TS") == "1" {
			t.Fatalf("%s: %s", why, tsSetupHint)
		}
		t.Skipf("%s: %s", why, tsSetupHint)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "client", "package.json")); err != nil {
		missing("integration/ts/node_modules is missing")
	}
	return node
}

// TestTypeScriptClient runs the official TypeScript MCP client
// (@modelcontextprotocol/client, pinned in ts/package.json) against a real
// resourced: it saves an unlisted search snapshot, checks that resources/list
// does not show it, reads it back through the resource_link, checks the
// not-found error code and a binary report round trip. "auto" negotiates
// 2026-07-28 via server/discover, "legacy" uses initialize (2025-11-25).
// The checks live in ts/unlisted-read.mjs.
func TestTypeScriptClient(t *testing.T) {
	node := requireTS(t)
	for _, mode := range []string{"auto", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			in := startServer(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "unlisted-read.mjs"), in.URL+"/mcp", mode)
			cmd.Env = append(os.Environ(), "RESOURCED_TOKEN="+in.Token)
			// combined keeps stdout and stderr interleaved as the script wrote
			// them; stdout alone carries the summary line.
			// Two goroutines copy stdout and stderr: the shared buffer locks.
			var stdout bytes.Buffer
			combined := &syncBuffer{}
			cmd.Stdout = io.MultiWriter(&stdout, combined)
			cmd.Stderr = combined
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("node ts/unlisted-read.mjs %s timed out after 60s; output:\n%s", mode, combined)
			}
			if err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatalf("running node: %v", err)
				}
				t.Fatalf("node ts/unlisted-read.mjs %s failed (%v); output:\n%s", mode, err, combined)
			}
			summary := lastLine(stdout.String())
			if !strings.HasPrefix(summary, "{") || !strings.Contains(summary, `"ok":true`) {
				t.Fatalf("no JSON summary line on stdout; output:\n%s", combined)
			}
			t.Logf("summary: %s", summary)
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
