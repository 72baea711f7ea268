package server

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestListenerCapsConnections: past the cap a connection is answered 503
// with Retry-After at once (the accept loop does not wait), and a slot
// freed by a closed connection is taken by the next one.
func TestListenerCapsConnections(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: e.s, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(e.s.Listener(ln, 2))
	t.Cleanup(func() { hs.Close() })
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) *http.Response {
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		resp.Body.Close()
		return resp
	}
	a, b := dial(), dial()
	if get(a).StatusCode != 200 || get(b).StatusCode != 200 {
		t.Fatal("connections within the cap refused")
	}
	c := dial()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a connection past the cap got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("past the cap = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := testutil.ToFloat64(e.s.metrics.Limited.WithLabelValues(limitConnections)); got != 1 {
		t.Errorf("resourced_limited_total{reason=connections} = %v", got)
	}
	a.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := dial()
		if get(d).StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a closed connection was not freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
