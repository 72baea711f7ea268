package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyClientIsDropped: a client that sends a /mcp body and then
// stalls loses its request with 408 once its body budget (10 s plus its
// length at 64 KiB/s) has passed, and a normal read from another client
// is served meanwhile.
func TestSlowBodyClientIsDropped(t *testing.T) {
	in := startServer(t, "")
	saved := checkSuccess(t, in.call(v2025, "save_report", map[string]any{"path": "guard/read", "mimeType": "text/plain", "text": "still served"}), 1)
	c, err := net.Dial("tcp", strings.TrimPrefix(in.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"jso\r\n",
		strings.TrimPrefix(in.URL, "http://"), in.Token, v2025)

	if got := string(in.read(v2025, saved["uri"].(string)).body(t)); got != "still served" {
		t.Errorf("read while another client stalls = %q", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the read took %s", d)
	}

	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the stalled client got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "Request Timeout") {
		t.Errorf("stalled body = %d %q, want 408", resp.StatusCode, b)
	}
	if d := time.Since(start); d < 9*time.Second || d > 20*time.Second {
		t.Errorf("dropped after %s, want about 10 s", d)
	}
}
