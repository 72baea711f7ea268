//go:build linux || darwin

package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connCounter counts the connections a test server accepted and has
// seen closed.
type connCounter struct{ opened, closed atomic.Int64 }

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

func syncServer(t *testing.T, h http.HandlerFunc, idle time.Duration) (*httptest.Server, *connCounter) {
	t.Helper()
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = cc.track
	srv.Config.IdleTimeout = idle
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cc
}

// post sends body to url through rt and returns the answer's body, read
// to its end. Its context ends after that, as a gateway call's does.
func post(t *testing.T, rt http.RoundTripper, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// echo answers a POST with its body: as JSON of a declared length, as an
// event stream (chunked), or 202 with none, by the path.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/stream":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: end\n\n")
	case "/accepted":
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// recorder is a base transport that records what it was given.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.String())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func TestSyncTransportUsesOneConnection(t *testing.T) {
	srv, cc := syncServer(t, echo, 0)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	for i := range 30 {
		path := []string{"/json", "/stream", "/accepted"}[i%3]
		body := fmt.Sprintf(`{"n":%d}`, i)
		code, got := post(t, rt, srv.URL+path, body)
		want := map[string]string{"/json": body, "/stream": "event: message\ndata: " + body + "\n\ndata: end\n\n", "/accepted": ""}[path]
		if got != want || code != map[string]int{"/accepted": 202}[path]+map[bool]int{true: 200}[path != "/accepted"] {
			t.Fatalf("%s %d: %d %q, want %q", path, i, code, got, want)
		}
	}
	if n := cc.opened.Load(); n != 1 {
		t.Fatalf("30 POSTs one after another opened %d connections, want 1", n)
	}
}

func TestSyncTransportLeavesOthersToBase(t *testing.T) {
	srv, cc := syncServer(t, echo, 0)
	base := &recorder{}
	rt := newSyncTransport(base)
	defer rt.CloseIdleConnections()
	post(t, rt, srv.URL+"/json", "{}")
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/json", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	u := strings.Replace(srv.URL, "http://", "http://user:pw@", 1)
	post(t, rt, u+"/json", "{}")
	want := []string{"GET " + srv.URL + "/json", "DELETE " + srv.URL + "/json", "POST " + u + "/json"}
	if fmt.Sprint(base.seen) != fmt.Sprint(want) {
		t.Fatalf("base transport saw %q, want %q", base.seen, want)
	}
	if cc.opened.Load() < 2 {
		t.Fatal("the POST did not have a connection of its own")
	}
	tls := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	tls.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake this test fails on purpose
	tls.StartTLS()
	defer tls.Close()
	tb := &recorder{}
	trt := newSyncTransport(tb)
	req, _ := http.NewRequest(http.MethodPost, tls.URL+"/json", strings.NewReader("{}"))
	if _, err := trt.RoundTrip(req); err == nil {
		t.Fatal("an https POST went through a transport without the test server's certificate")
	}
	if len(tb.seen) != 1 || !strings.HasPrefix(tb.seen[0], "POST https://") {
		t.Fatalf("an https POST: base saw %q", tb.seen)
	}
}

// A server that closes an idle connection (its keep-alive ran out) must
// not cost a request: the next POST goes on a new connection.
func TestSyncTransportAfterTheServerClosedAnIdleConnection(t *testing.T) {
	srv, cc := syncServer(t, echo, 30*time.Millisecond)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	for i := range 3 {
		if _, got := post(t, rt, srv.URL+"/json", "{}"); got != "{}" {
			t.Fatalf("round %d: %q", i, got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for cc.closed.Load() < int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatal("the server did not close the idle connection")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n := cc.opened.Load(); n != 3 {
		t.Fatalf("opened %d connections, want 3", n)
	}
}

func TestSyncTransportIdleConnectionsExpire(t *testing.T) {
	srv, cc := syncServer(t, echo, 0)
	rt := newSyncTransport(http.DefaultTransport)
	rt.maxIdle = 20 * time.Millisecond
	post(t, rt, srv.URL+"/json", "{}")
	deadline := time.Now().Add(5 * time.Second)
	for cc.closed.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("an idle connection was kept past maxIdle")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rt.mu.Lock()
	n := len(rt.idle)
	rt.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d hosts still listed as idle", n)
	}
	post(t, rt, srv.URL+"/json", "{}")
	rt.CloseIdleConnections()
	for cc.closed.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("CloseIdleConnections left a connection open")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSyncTransportConnectionCloseAndEarlyClose(t *testing.T) {
	srv, cc := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		if r.URL.Path == "/long" {
			w.Write([]byte(strings.Repeat("x", 256<<10)))
			return
		}
		echo(w, r)
	}, 0)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	post(t, rt, srv.URL+"/close", "a")
	rt.mu.Lock()
	kept := len(rt.idle)
	rt.mu.Unlock()
	if kept != 0 {
		t.Fatal("a connection answered with Connection: close was kept")
	}
	post(t, rt, srv.URL+"/json", "b")
	// Closed after 10 bytes of 256 KiB: the rest is not read, the
	// connection is not used again.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/long", strings.NewReader("c"))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, got := post(t, rt, srv.URL+"/json", "d"); got != "d" {
		t.Fatalf("after an early close: %q", got)
	}
	if n := cc.opened.Load(); n != 3 {
		t.Fatalf("opened %d connections, want 3 (one after Connection: close, one after the early close)", n)
	}
}

func TestSyncTransportCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	gone := make(chan struct{}, 2)
	srv, _ := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // net/http watches for the client going only after the body
		if r.URL.Path == "/body" {
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-release:
		}
	}, 0)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()

	// Waiting for the answer's head.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/head", strings.NewReader("{}"))
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := within(t, func() error { _, err := rt.RoundTrip(req); return err }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v, want context.Canceled", err)
	}

	// Reading the body.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/body", strings.NewReader("{}"))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := within(t, func() error { _, err := resp.Body.Read(make([]byte, 10)); return err }); err == nil {
		t.Fatal("a read past the cancellation did not fail")
	}
	resp.Body.Close()
	for range 2 {
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server did not see a cancelled request's connection close")
		}
	}
	// An already cancelled call is not sent.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/head", strings.NewReader("{}"))
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call cancelled before: %v", err)
	}
	rt.mu.Lock()
	n := len(rt.idle)
	rt.mu.Unlock()
	if n != 0 {
		t.Fatal("a cancelled call's connection was kept")
	}
}

// within is f's error, failing the test if f has not returned in 5 s.
func within(t *testing.T, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after the call was cancelled")
		return nil
	}
}

// A connection with bytes nobody asked for (past an answer's length, or
// sent while it was idle) is not trusted with the next request.
func TestSyncTransportDropsConnectionsWithStrayBytes(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	// Past the answer's length.
	h := rawAnswer(t, ok+"HTTP/1.1 200 OK\r\n", false)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	for range 3 {
		if _, got := post(t, rt, h.url, "{}"); got != "ok" {
			t.Fatalf("got %q", got)
		}
	}
	if n := h.conns.Load(); n != 3 {
		t.Fatalf("past the length: opened %d connections, want 3", n)
	}

	// Idle bytes: the server writes after its answer, before the next
	// request.
	var mu sync.Mutex
	var last net.Conn
	h = hostileServer(t, func(h *hostile, c net.Conn, br *bufio.Reader) {
		mu.Lock()
		last = c
		mu.Unlock()
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, ok)
		}
	})
	post(t, rt, h.url, "{}")
	mu.Lock()
	io.WriteString(last, "stray")
	mu.Unlock()
	time.Sleep(50 * time.Millisecond) // on its way over loopback
	if _, got := post(t, rt, h.url, "{}"); got != "ok" {
		t.Fatalf("got %q", got)
	}
	if n := h.conns.Load(); n != 2 {
		t.Fatalf("opened %d connections, want 2: the one with stray bytes was used again", n)
	}
}

func TestSyncTransportConcurrentCalls(t *testing.T) {
	srv, cc := syncServer(t, echo, 0)
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				body := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+[]string{"/json", "/stream"}[i%2], strings.NewReader(body))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !strings.Contains(string(b), body) {
					t.Errorf("%s: %q, %v", body, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	rt.mu.Lock()
	idle := 0
	for _, conns := range rt.idle {
		idle += len(conns)
	}
	rt.mu.Unlock()
	if idle > syncMaxIdlePerHost || cc.opened.Load() > 16+16 {
		t.Fatalf("%d idle, %d opened", idle, cc.opened.Load())
	}
}
