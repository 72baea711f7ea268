package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store/memstore"
)

// twoTenants authenticates "Bearer a" as tenant acme and "Bearer b" as
// tenant beta.
type twoTenants struct{}

func (twoTenants) Authenticate(r *http.Request) (auth.Principal, error) {
	tenant := map[string]string{"Bearer a": "acme", "Bearer b": "beta"}[r.Header.Get("Authorization")]
	if tenant == "" {
		return auth.Principal{}, errors.New("unknown token")
	}
	return auth.Principal{Tenant: tenant, Subject: tenant, Scopes: []string{auth.ScopeRead, auth.ScopeWrite}}, nil
}

// startTwoTenantServer is startServer with two tenants.
func startTwoTenantServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := server.New(server.Options{
		Store:   memstore.New(memstore.Options{}),
		BaseURL: base,
		Auth:    twoTenants{},
		Schemes: []server.Scheme{
			{Name: "report", Kind: server.KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 16 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return base + "/mcp"
}

// TestAbuseScenarios runs every scenario, tiny, against an in-process
// server (this test's pid is the server's), and checks that each measured
// what it says.
func TestAbuseScenarios(t *testing.T) {
	url := startTwoTenantServer(t)
	common := []string{"-url", url, "-token", "a", "-tenant", "acme", "-token-b", "b", "-tenant-b", "beta",
		"-pid", strconv.Itoa(os.Getpid()), "-smoke", "-json"}
	cases := map[string][]string{
		"slowbody":     {"-conns", "6", "-mcp-conns", "2", "-hold", "400ms", "-settle", "50ms"},
		"noread":       {"-conns", "2", "-size", "256KiB", "-hold", "300ms", "-settle", "50ms"},
		"listen":       {"-repeat", "20", "-size", "64KiB", "-timeout", "5s"},
		"noisy-tenant": {"-c", "4", "-read-c", "1", "-d", "200ms", "-warmup", "50ms"},
		"timing":       {"-samples", "5", "-size", "64KiB"},
		"query":        {"-d", "100ms"},
		"uploads":      {"-conns", "4", "-settle", "300ms"},
	}
	for _, name := range abuseScenarios {
		if name == "gateway-flood" {
			continue // it needs a gateway: TestAbuseGatewayFlood
		}
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"abuse", name}, common...), cases[name]...)
			if code, err := run(args, &stdout, &stderr); code != 0 || err != nil {
				t.Fatalf("exit %d, %v\n%s", code, err, &stderr)
			}
			if n := bytes.Count(bytes.TrimSpace(stdout.Bytes()), []byte("\n")); n != 0 {
				t.Errorf("-json printed %d lines, want one:\n%s", n+1, &stdout)
			}
			var res map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("%v\n%s", err, &stdout)
			}
			if res["scenario"] != name {
				t.Errorf("scenario %v", res["scenario"])
			}
			checkAbuse(t, name, stdout.Bytes())
			checkBounds(t, name, stdout.Bytes())
		})
	}
}

func checkAbuse(t *testing.T, name string, out []byte) {
	t.Helper()
	switch name {
	case "slowbody":
		var r SlowBodyResult
		mustJSON(t, out, &r)
		if r.Open.Opened != 8 || r.Uploads.Held != 6 || r.MCP.Held != 2 || r.ProbeQuiet.OK != 20 || r.ProbeLoaded.OK == 0 {
			t.Errorf("%+v", r)
		}
		// Each slow upload holds a socket in the server: fds must rise.
		if r.Server == nil || r.Server.FDsPeak < r.Server.FDsIdle+8 {
			t.Errorf("server fds: %+v", r.Server)
		}
	case "noread":
		var r NoReadResult
		mustJSON(t, out, &r)
		if r.Open.Opened != 2 || r.Server == nil || r.Server.RSSPeakMiB <= 0 || r.Server.RSSAnonPeakMiB <= 0 || r.Server.RSSAnonPeakMiB > r.Server.RSSPeakMiB || r.Server.FDsPeak < r.Server.FDsIdle+2 {
			t.Errorf("%+v, server %+v", r, r.Server)
		}
	case "listen":
		var r ListenResult
		mustJSON(t, out, &r)
		if r.Repeated.Answer == "" || r.Repeated.CPUSeconds == nil || r.RequestBytes < 20*len(r.URI) {
			t.Errorf("%+v", r)
		}
	case "noisy-tenant":
		var r NoisyResult
		mustJSON(t, out, &r)
		if r.BQuiet.OK == 0 || r.BNoisy.OK == 0 || r.ASaves.OK+r.A429 == 0 || r.P99Ratio <= 0 {
			t.Errorf("%+v", r)
		}
	case "timing":
		var r TimingResult
		mustJSON(t, out, &r)
		if r.Foreign.Errors != 0 || r.Never.Errors != 0 || r.Foreign.MedianMs <= 0 || r.Never.MedianMs <= 0 || !r.SameErrorBytes {
			t.Errorf("%+v", r)
		}
	}
}

func checkBounds(t *testing.T, name string, out []byte) {
	t.Helper()
	switch name {
	case "query":
		var r QueryResult
		mustJSON(t, out, &r)
		if len(r.Heavy) != 2 || len(r.Heavy[0].Answers) != 2 || r.BQuiet.OK == 0 || r.BLoaded.OK == 0 {
			t.Errorf("%+v", r)
		}
	case "uploads":
		var r UploadsResult
		mustJSON(t, out, &r)
		if r.Slow.Opened != 4 || r.BStatus == 0 {
			t.Errorf("%+v", r)
		}
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

// TestAbuseFailures: what the tool cannot do is an error, exit 1.
func TestAbuseFailures(t *testing.T) {
	url := startTwoTenantServer(t)
	for name, args := range map[string][]string{
		"no scenario":          {},
		"unknown scenario":     {"nope"},
		"not loopback":         {"timing", "-url", "http://example.com/mcp", "-token-b", "b"},
		"too many noread":      {"noread", "-conns", "1001"},
		"timing without B":     {"timing", "-url", url, "-token", "a", "-token-b", ""},
		"one tenant twice":     {"timing", "-url", url, "-token", "a", "-token-b", "a", "-tenant", "acme", "-tenant-b", "acme"},
		"listen on 2025-11-25": {"listen", "-protocol", v2025},
		"refused token":        {"listen", "-url", url, "-token", "nope", "-smoke"},
		// Tokens that claim two tenants but are one: the foreign read succeeds.
		"tenants not separate": {"timing", "-url", url, "-token", "a", "-tenant", "acme", "-token-b", "a", "-tenant-b", "beta", "-smoke"},
	} {
		var out bytes.Buffer
		code, err := run(append([]string{"abuse"}, args...), &out, &out)
		t.Logf("%s: exit %d, %v", name, code, err)
		if code != 1 || err == nil {
			t.Errorf("%s: exit %d, %v", name, code, err)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	if percentile(d, 0.5) != 0 {
		t.Error("empty")
	}
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 0.1: 10, 1: 100, 0.001: 1} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("one sample: %d", got)
	}
}

func TestParseFDLimit(t *testing.T) {
	const limits = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                40000                files
Max locked memory         8388608              8388608              bytes
`
	if n, err := parseFDLimit([]byte(limits)); err != nil || n != 20000 {
		t.Errorf("got %d, %v", n, err)
	}
	if n, err := parseFDLimit([]byte("Max open files            unlimited            unlimited            files\n")); err != nil || n != -1 {
		t.Errorf("unlimited: %d, %v", n, err)
	}
	if _, err := parseFDLimit([]byte("Max cpu time unlimited unlimited seconds\n")); err == nil {
		t.Error("no line: no error")
	}
	// This process's own, from /proc.
	if n, err := fdLimit(os.Getpid()); err != nil || (n < 1 && n != -1) {
		t.Errorf("own limit: %d, %v", n, err)
	}
}

func TestHalfReleased(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64, fds int) fdSample {
		return fdSample{t0.Add(time.Duration(s * float64(time.Second))), fds}
	}
	// idle 10, up to 110, back under 60 at 3 s.
	got := halfReleased([]fdSample{at(0, 10), at(1, 110), at(2, 80), at(3, 40), at(4, 10)}, t0, 10, 110)
	if got == nil || *got != 3 {
		t.Errorf("got %v, want 3", got)
	}
	if got := halfReleased([]fdSample{at(0, 10), at(1, 110), at(2, 100)}, t0, 10, 110); got != nil {
		t.Errorf("never released: %v", *got)
	}
	// Lower before the peak does not count.
	if got := halfReleased([]fdSample{at(0, 20), at(1, 5), at(2, 110)}, t0, 10, 110); got != nil {
		t.Errorf("before the peak: %v", *got)
	}
}

// TestTCPState: a connection is ESTABLISHED, then CLOSE_WAIT once the peer
// closed it, and pollDrops records that and what the peer sent.
func TestTCPState(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &heldConn{c: c.(*net.TCPConn), opened: time.Now()}
	st, ok := tcpState(h.c)
	if !ok {
		t.Skip("no TCP_INFO on this platform")
	}
	if st != 1 {
		t.Fatalf("state %d, want 1 (ESTABLISHED)", st)
	}
	if !pollDrops([]*heldConn{h}) || h.dropped != 0 {
		t.Fatalf("open connection counted as dropped: %+v", h)
	}
	peer := <-accepted
	peer.Write([]byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"))
	peer.Close()
	deadline := time.Now().Add(5 * time.Second)
	for h.dropped == 0 && time.Now().Before(deadline) {
		pollDrops([]*heldConn{h})
		time.Sleep(10 * time.Millisecond)
	}
	s := dropStats([]*heldConn{h}, true)
	if s.Dropped != 1 || s.Answers["HTTP/1.1 408 Request Timeout"] != 1 {
		t.Errorf("%+v", s)
	}
}

func TestListenBody(t *testing.T) {
	m, _ := newMCPRequest(v2026, "")
	b := listenBody(m, "report://acme/x", 3)
	var req struct {
		Method string `json:"method"`
		Params struct {
			Meta          map[string]any `json:"_meta"`
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if req.Method != "subscriptions/listen" || len(req.Params.Notifications.ResourceSubscriptions) != 3 ||
		req.Params.Meta["io.modelcontextprotocol/protocolVersion"] != v2026 {
		t.Errorf("%s", b)
	}
	if raw := string(rawRequest("PUT", "/v1/x", "h:1", http.Header{"A": {"b"}}, 10, []byte("x"))); !strings.HasPrefix(raw, "PUT /v1/x HTTP/1.1\r\nHost: h:1\r\nContent-Length: 10\r\nA: b\r\n\r\nx") {
		t.Errorf("raw request %q", raw)
	}
}
