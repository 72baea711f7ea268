package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
)

// TestMain lets the test binary stand in for resourced-bench when
// -ceiling-process starts it as `ceiling-serve` and -proxy-floor as
// `proxy-serve` (os.Executable).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "ceiling-serve" || os.Args[1] == "proxy-serve") {
		serve := runCeilingServe
		if os.Args[1] == "proxy-serve" {
			serve = runProxyServe
		}
		code, err := serve(os.Args[2:], os.Stdout, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startServer serves a server.Server with the memory store and auth none on
// a loopback port until the test ends, and returns its MCP endpoint.
func startServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := server.New(server.Options{
		Store:   memstore.New(memstore.Options{}),
		BaseURL: base,
		Schemes: []server.Scheme{
			{Name: "report", Kind: server.KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 16 << 20},
			{Name: "search", Kind: server.KindSearch, TTL: time.Hour, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 16 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})
	return base + "/mcp"
}

// TestRun runs the tool end to end, briefly, for each operation and
// protocol, and checks that every request succeeded and the JSON result
// holds what it measured.
func TestRun(t *testing.T) {
	url := startServer(t)
	cases := [][]string{
		{"-op", "read", "-size", "1KiB", "-ceiling"},
		{"-op", "read", "-size", "1KiB", "-ceiling", "-ceiling-process"},
		{"-op", "read", "-size", "64KiB", "-protocol", v2025},
		{"-op", "read", "-prepare", "50", "-c", "4"},
		{"-op", "save", "-tool", "save_search_snapshot"},
		{"-op", "save", "-tool", "save_report", "-protocol", v2025},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args = append([]string{"-url", url, "-token", "", "-c", "2", "-d", "300ms", "-warmup", "50ms", "-slice", "100ms", "-json"}, args...)
			code, err := run(args, &stdout, &stderr)
			if code != 0 || err != nil {
				t.Fatalf("run: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, &stdout, &stderr)
			}
			var res Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("-json output: %v\n%s", err, &stdout)
			}
			if res.Server == nil || res.Server.OK == 0 || res.Server.Errors != 0 || res.Server.P50 <= 0 {
				t.Errorf("server summary: %+v", res.Server)
			}
			if slicesContain(args, "-ceiling") && (res.Ceiling == nil || res.Ceiling.OK == 0 || res.Ratio <= 0) {
				t.Errorf("ceiling summary: %+v, ratio %v", res.Ceiling, res.Ratio)
			}
			if slicesContain(args, "-ceiling-process") && (res.CeilingProcess == nil || res.CeilingProcess.OK == 0 || res.CeilingProcess.Errors != 0 ||
				res.RatioProcess <= 0) {
				t.Errorf("ceiling process: %+v, ratio %v, %v µs", res.CeilingProcess, res.RatioProcess, res.CeilingProcessCPUMicros)
			}
			if slicesContain(args, "-prepare") && (res.Prepare == nil || res.Prepare.Saved != 50 || res.Keys != 50) {
				t.Errorf("prepare: %+v, keys %d", res.Prepare, res.Keys)
			}
		})
	}
}

// TestRunFailures checks that a tool that cannot do its job says so with a
// non-zero exit: a refused token, an unknown URI.
func TestRunFailures(t *testing.T) {
	url := startServer(t)
	var out bytes.Buffer
	code, err := run([]string{"-url", url, "-token", "", "-d", "100ms", "-uri", "report://default/nope"}, &out, &out)
	if code == 0 || err == nil || !strings.Contains(err.Error(), "-32602") {
		t.Errorf("unknown URI: exit %d, %v", code, err)
	}
	code, err = run([]string{"-url", strings.Replace(url, "/mcp", "/nothing", 1), "-token", "", "-d", "100ms"}, &out, &out)
	if code == 0 || err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("wrong endpoint: exit %d, %v", code, err)
	}
}

// TestRequests checks that built requests are valid JSON of the expected
// shape for both protocols, and the headers 2026-07-28 needs.
func TestRequests(t *testing.T) {
	for _, v := range []string{v2026, v2025} {
		m, err := newMCPRequest(v, "tok")
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkers(1)[0]
		for _, o := range []op{
			newReadOp(m, "report://acme/a/{i}", 10),
			newSaveReportOp(m, "bench/x", "text/csv", bodyText(100), false),
			&saveSnapshotOp{m: m, args: snapshotArgs(1024)},
		} {
			body, method, name := o.next(w, nil)
			var req struct {
				JSONRPC string `json:"jsonrpc"`
				Method  string `json:"method"`
				Params  struct {
					URI       string         `json:"uri"`
					Name      string         `json:"name"`
					Arguments map[string]any `json:"arguments"`
					Meta      map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatalf("%s %s: %v\n%s", v, method, err, body)
			}
			if req.JSONRPC != "2.0" || req.Method != method || (req.Params.URI != name && req.Params.Name != name) {
				t.Errorf("%s: %s", v, body)
			}
			if got := req.Params.Meta["io.modelcontextprotocol/protocolVersion"]; (v == v2026) != (got == v2026) {
				t.Errorf("%s: _meta protocolVersion = %v", v, got)
			}
			h := m.header(method, name)
			if h.Get("Mcp-Protocol-Version") != v || h.Get("Authorization") != "Bearer tok" {
				t.Errorf("%s: headers %v", v, h)
			}
			if (h.Get("Mcp-Method") == method && h.Get("Mcp-Name") == name) != (v == v2026) {
				t.Errorf("%s: Mcp-Method/Mcp-Name headers %v", v, h)
			}
		}
	}
	// The snapshot's stored document ({query,total,hits}) is about the size asked for.
	var args struct {
		Query string            `json:"query"`
		Hits  []json.RawMessage `json:"hits"`
	}
	if err := json.Unmarshal(snapshotArgs(1024), &args); err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"query": args.Query, "total": len(args.Hits), "hits": args.Hits})
	if n := len(doc); n < 1000 || n > 1050 {
		t.Errorf("snapshot document is %d bytes, want about 1024", n)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		tool   bool
		want   string // prefix of the classification; "" is success
	}{
		{200, `{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}`, false, ""},
		{200, `{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[],"isError":false}}`, true, ""},
		{200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Resource not found"}}`, false, "JSON-RPC error"},
		{200, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, true, "tool isError"},
		{200, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"content":[],"isError":true,"resultType":"complete"}}` + "\n", true, "tool isError"},
		{200, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}}`, true, ""},
		{200, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"\"isError\":true"}]}}`, true, ""},
		{401, `Unauthorized`, false, "HTTP 401"},
		{200, `event: message`, false, "unexpected response"},
	} {
		if got := classify(c.status, []byte(c.body), c.tool); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("classify(%d, %s) = %q, want %q…", c.status, c.body, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]int{"1024": 1024, "1KiB": 1024, "64KiB": 64 << 10, "8MiB": 8 << 20, "1K": 1024} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v", s, got, err)
		}
	}
	for s, want := range map[string]int{"10000": 10000, "100k": 100000, "1M": 1000000} {
		if got, err := parseCount(s); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v", s, got, err)
		}
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSavePathsUniqueAcrossAttempts: a measurement repeated on a noisy
// machine starts new workers (seq from 0); their save_report paths must
// not be those of the first attempt, or the repeat measures conflicts.
func TestSavePathsUniqueAcrossAttempts(t *testing.T) {
	m, err := newMCPRequest("2026-07-28", "")
	if err != nil {
		t.Fatal(err)
	}
	op := newSaveReportOp(m, "bench/save", "text/plain", []byte("x"), false)
	seen := map[string]bool{}
	for range 2 {
		w := newWorkers(1)[0]
		body, _, _ := op.next(w, nil)
		var req struct {
			Params struct {
				Arguments struct{ Path string }
			}
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if seen[req.Params.Arguments.Path] {
			t.Fatalf("path %q again in a second attempt", req.Params.Arguments.Path)
		}
		seen[req.Params.Arguments.Path] = true
	}
}

// TestWriteCeilingStores: with -op save -ceiling the ceiling stores every
// body it answers, fsynced, size bytes each, in its own database, run
// after run.
func TestWriteCeilingStores(t *testing.T) {
	url := startServer(t)
	dir := t.TempDir()
	// Twice into one directory, as bench/run.sh runs its save scenarios.
	var answered int64
	for range 2 {
		var stdout, stderr bytes.Buffer
		args := []string{"-url", url, "-token", "", "-c", "2", "-d", "300ms", "-warmup", "0s", "-slice", "100ms", "-json",
			"-op", "save", "-tool", "save_report", "-size", "1KiB", "-ceiling", "-ceiling-dir", dir}
		if code, err := run(args, &stdout, &stderr); code != 0 || err != nil {
			t.Fatalf("run: exit %d, %v\n%s", code, err, &stderr)
		}
		var res Result
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if res.Ceiling == nil || res.Ceiling.OK == 0 || res.Ceiling.Errors != 0 || res.Ratio <= 0 {
			t.Fatalf("ceiling summary: %+v, ratio %v", res.Ceiling, res.Ratio)
		}
		answered += res.Ceiling.OK
	}
	st, err := boltstore.Open(filepath.Join(dir, "ceiling.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.Usage(t.Context(), "ceiling")
	if err != nil {
		t.Fatal(err)
	}
	if u.Objects != answered || u.Bytes != 1024*answered {
		t.Errorf("the ceiling answered %d saves and stored %d objects of %d bytes in all", answered, u.Objects, u.Bytes)
	}
}
