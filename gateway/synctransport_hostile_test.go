//go:build linux || darwin

package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostile listens on 127.0.0.1 and runs serve for each connection; it
// counts connections and the bytes serve wrote.
type hostile struct {
	url     string
	conns   atomic.Int64
	written atomic.Int64
	reqs    atomic.Int64
}

type countingConn struct {
	net.Conn
	h *hostile
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.h.written.Add(int64(n))
	return n, err
}

func hostileServer(t *testing.T, serve func(h *hostile, c net.Conn, br *bufio.Reader)) *hostile {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(h, countingConn{c, h}, bufio.NewReader(c))
			})
		}
	})
	return h
}

// reference is a fresh net/http transport as http.DefaultTransport is.
func reference() *http.Transport { return http.DefaultTransport.(*http.Transport).Clone() }

// transport is one transport under test, by name.
type transport struct {
	name string
	rt   http.RoundTripper
}

// both is net/http's transport, the reference, and a syncTransport.
func both() []transport {
	return []transport{{"net/http", reference()}, {"sync", newSyncTransport(http.DefaultTransport)}}
}

func postCtx(ctx context.Context, rt http.RoundTripper, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.RoundTrip(req)
}

// An upstream that sends a response head without end: net/http gives up
// after MaxResponseHeaderBytes (10 MiB by default), and so must
// syncTransport, not hold all of it until the call's context ends.
func TestHostileHugeResponseHeader(t *testing.T) {
	const cap = 64 << 20 // what the server is willing to send
	serve := func(h *hostile, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: ")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < cap; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		time.Sleep(10 * time.Second) // then nothing: the head never ends
	}
	for _, tc := range both() {
		h := hostileServer(t, serve)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var peak atomic.Uint64
		stop := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
			}
		}()
		start := time.Now()
		_, err := postCtx(ctx, tc.rt, h.url+"/mcp", []byte(`{}`))
		close(stop)
		cancel()
		t.Logf("%s: after %v: err=%v; server wrote %d MiB; peak heap %d MiB", tc.name, time.Since(start).Round(time.Millisecond), err, h.written.Load()>>20, peak.Load()>>20)
		if tc.name == "sync" && (errors.Is(err, context.DeadlineExceeded) || h.written.Load() > 16<<20) {
			t.Errorf("sync: a response head of %d MiB was read without limit (net/http stops at 10 MiB)", h.written.Load()>>20)
		}
	}
}

// An upstream that sends 1xx interim responses without end: net/http
// counts them against the 10 MiB head limit and fails, and so must
// syncTransport, not read them until the call's context ends.
func TestHostileEndless1xx(t *testing.T) {
	serve := func(h *hostile, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		hint := "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n"
		buf := []byte(strings.Repeat(hint, 1000))
		for sent := 0; sent < 64<<20; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
		time.Sleep(10 * time.Second)
	}
	for _, tc := range both() {
		h := hostileServer(t, serve)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		start := time.Now()
		_, err := postCtx(ctx, tc.rt, h.url+"/mcp", []byte(`{}`))
		cancel()
		el := time.Since(start)
		t.Logf("%s: after %v: err=%v; server wrote %d MiB of 103s", tc.name, el.Round(time.Millisecond), err, h.written.Load()>>20)
		if tc.name == "sync" && errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("sync: endless 1xx answers kept the call until its deadline (%v), %d MiB read", el.Round(time.Millisecond), h.written.Load()>>20)
		}
	}
}

// An upstream that answers (413, keep-alive) before reading a large
// request body and does not read it: net/http's RoundTrip returns the
// answer as soon as its head arrives. syncTransport writes a body whole
// before it reads, so a large one must go to net/http, not block until
// the call's deadline with the 413 lost.
func TestHostileEarlyAnswerUnreadBody(t *testing.T) {
	serve := func(h *hostile, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		time.Sleep(10 * time.Second) // not reading the body, not closing
	}
	body := make([]byte, 16<<20)
	for _, tc := range both() {
		h := hostileServer(t, serve)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		start := time.Now()
		resp, err := postCtx(ctx, tc.rt, h.url+"/mcp", body)
		el := time.Since(start)
		code := 0
		if resp != nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		cancel()
		t.Logf("%s: after %v: status %d err=%v", tc.name, el.Round(time.Millisecond), code, err)
		if tc.name == "sync" && code != http.StatusRequestEntityTooLarge {
			t.Errorf("sync: an early 413 was not seen; the call waited %v and failed with %v", el.Round(time.Millisecond), err)
		}
	}
	// The same with a real net/http server whose handler refuses without
	// reading (an auth check, a size check): the server discards up to
	// 256 KiB, then closes the connection (RST, since unread data).
	srv, _ := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}`)
	}, 0)
	for _, tc := range both() {
		ok := 0
		var lastErr error
		for range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			resp, err := postCtx(ctx, tc.rt, srv.URL+"/mcp", body)
			if err == nil {
				if resp.StatusCode == http.StatusUnauthorized {
					ok++
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			} else {
				lastErr = err
			}
			cancel()
		}
		t.Logf("%s against net/http server: 401 seen %d/5, last error %v", tc.name, ok, lastErr)
		if tc.name == "sync" && ok != 5 {
			t.Errorf("sync: a 401 answered before a 16 MiB body was read was seen %d/5 times (%v)", ok, lastErr)
		}
	}
}

// A header value net/http refuses to send (a control character: go-sdk
// puts the caller's resources/read URI, tool or prompt name in Mcp-Name
// unencoded from protocol 2026-07-28 on) is refused by syncTransport too;
// Request.Write would send it, CR/LF turned into spaces, other control
// bytes raw.
func TestSyncTransportRefusesWhatNetHTTPRefuses(t *testing.T) {
	var got atomic.Value
	h := hostileServer(t, func(h *hostile, c net.Conn, br *bufio.Reader) {
		var raw strings.Builder
		for {
			line, err := br.ReadString('\n')
			raw.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
		}
		got.Store(raw.String())
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	for _, tc := range both() {
		got.Store("")
		for _, v := range []string{"file:///a\x01b", "a\r\nX-Injected: 1"} {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", strings.NewReader("{}"))
			req.Header.Set("Mcp-Name", v)
			resp, err := tc.rt.RoundTrip(req)
			code := 0
			if resp != nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			t.Logf("%s: Mcp-Name %q: status %d err=%v; upstream saw %q", tc.name, v, code, err, got.Load())
			if tc.name == "sync" && err == nil {
				t.Errorf("sync: a header value net/http refuses (%q) was sent; the upstream answered %d", v, code)
			}
		}
	}
}

// rawAnswer answers every request with answer, and closes the connection
// after each when closeAfter.
func rawAnswer(t *testing.T, answer string, closeAfter bool) *hostile {
	return hostileServer(t, func(h *hostile, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			h.reqs.Add(1)
			if _, err := io.WriteString(c, answer); err != nil || closeAfter {
				return
			}
		}
	})
}

func TestHostileFramings(t *testing.T) {
	cases := []struct {
		name, answer string
		close        bool
		body         string
		wantConns    int64 // for 3 POSTs
		wantErr      bool
	}{
		{"http/1.0 no keep-alive", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, "ok", 3, false},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false, "ok", 1, false},
		{"no length, read to EOF", "HTTP/1.1 200 OK\r\n\r\nto-eof", true, "to-eof", 3, false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false, "ok", 3, false},
		{"204 with a body", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", false, "", 3, false},
		{"304", "HTTP/1.1 304 Not Modified\r\n\r\n", false, "", 1, false},
		{"100 then 103 then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, "ok", 1, false},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: v\r\n\r\n", false, "ok", 1, false},
		{"closed mid-body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", true, "", 3, true},
		{"closed mid-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok", true, "", 3, true},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n", false, "", 3, true},
		{"CL and TE both", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false, "ok", 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(rt http.RoundTripper) (conns int64, outcome string) {
				h := rawAnswer(t, c.answer, c.close)
				defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
				for i := range 3 {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					resp, err := postCtx(ctx, rt, h.url+"/mcp?x=1&y=%20", []byte(`{}`))
					var b []byte
					if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
						resp.Body.Close() // net/http hands over the connection
						err = errors.New("101")
					} else if err == nil {
						b, err = io.ReadAll(resp.Body)
						resp.Body.Close()
						if c.name == "chunked with trailer" && resp.Trailer.Get("X-T") != "v" {
							t.Errorf("trailer %v", resp.Trailer)
						}
					}
					cancel()
					if _, isRef := rt.(*http.Transport); !isRef && ((err != nil) != c.wantErr || (err == nil && string(b) != c.body)) {
						t.Errorf("POST %d: %q, %v", i, b, err)
					}
					outcome += fmt.Sprintf("[%q %v]", b, err != nil)
				}
				if n := h.reqs.Load(); n != 3 {
					t.Errorf("the server read %d requests for 3 POSTs", n)
				}
				return h.conns.Load(), outcome
			}
			sc, so := run(newSyncTransport(http.DefaultTransport))
			rc, ro := run(reference())
			if sc != c.wantConns {
				t.Errorf("sync: %d connections %s; want %d", sc, so, c.wantConns)
			}
			if so != ro || sc != rc {
				t.Logf("differs from net/http: sync %d %s; net/http %d %s", sc, so, rc, ro)
			}
		})
	}
}

// The request line and Host of a URL with a query, an IPv6 host, and no
// port.
func TestHostileURLs(t *testing.T) {
	var seen atomic.Value
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Host + " " + r.RequestURI)
		w.WriteHeader(202)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	u := "http://" + ln.Addr().String() + "/mcp?session=a%20b&x=1"
	if code, _ := post(t, rt, u, "{}"); code != 202 {
		t.Fatal(code)
	}
	if s := seen.Load().(string); s != ln.Addr().String()+" /mcp?session=a%20b&x=1" {
		t.Fatalf("server saw %q", s)
	}
	// No port: port 80 (refused here, or reached), never "::1" bare.
	req, _ := http.NewRequest(http.MethodPost, "http://[::1]/mcp", strings.NewReader("{}"))
	_, err = rt.RoundTrip(req)
	t.Logf("http://[::1]/mcp: %v", err)
	if err != nil && !strings.Contains(err.Error(), "[::1]:80") {
		t.Fatalf("no port: %v", err)
	}
}

// A request is never sent twice: a server that reads it and closes
// without answering sees it once, on a fresh and on a reused connection.
func TestHostileNotSentTwice(t *testing.T) {
	var n atomic.Int64
	h := hostileServer(t, func(h *hostile, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if n.Add(1) == 2 {
				return // the second request: closed, no answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	rt := newSyncTransport(http.DefaultTransport)
	defer rt.CloseIdleConnections()
	post(t, rt, h.url, "{}")
	req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader("{}"))
	_, err := rt.RoundTrip(req)
	time.Sleep(100 * time.Millisecond)
	if err == nil || n.Load() != 2 {
		t.Fatalf("err %v, server read %d requests, want 2", err, n.Load())
	}
}

// Close racing Read, cancellation and CloseIdleConnections racing expiry,
// under -race; afterwards no goroutine and no descriptor is left.
func TestHostileRaces(t *testing.T) {
	srv, _ := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path == "/slow" {
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
		w.Write([]byte(strings.Repeat("b", 3000)))
	}, 0)
	rt := newSyncTransport(http.DefaultTransport)
	rt.maxIdle = time.Millisecond
	runtime.GC()
	g0 := runtime.NumGoroutine()
	fd0 := countFDs()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rt.CloseIdleConnections()
			time.Sleep(time.Duration(100+time.Now().UnixNano()%900) * time.Microsecond)
		}
	})
	var calls wg2
	for g := range 8 {
		calls.Go(func() {
			for i := range 60 {
				ctx, cancel := context.WithCancel(context.Background())
				path := []string{"/slow", "/fast"}[(g+i)%2]
				resp, err := postCtx(ctx, rt, srv.URL+path, []byte("{}"))
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				switch i % 3 {
				case 0: // Close racing Read
					go resp.Body.Close()
					io.Copy(io.Discard, resp.Body)
				case 1: // cancel racing Read
					go cancel()
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				default:
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || !strings.HasSuffix(string(b), strings.Repeat("b", 3000)) {
						t.Errorf("%s: %d bytes, %v", path, len(b), err)
					}
				}
				cancel()
			}
		})
	}
	calls.Wait()
	close(stop)
	wg.Wait()
	rt.CloseIdleConnections()
	// The test server's goroutines of the connections just closed end
	// when they see the close, which a loaded machine may run well after
	// a fixed moment: wait for the counts to come back (a leak never
	// does) rather than sleep.
	var g, fd int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		runtime.GC()
		g, fd = runtime.NumGoroutine(), countFDs()
		if g <= g0+2 && fd <= fd0+2 || time.Now().After(deadline) {
			break
		}
	}
	if g > g0+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines %d -> %d after 10s\n%s", g0, g, buf[:runtime.Stack(buf, true)])
	}
	if fd > fd0+2 {
		t.Errorf("descriptors %d -> %d after 10s", fd0, fd)
	}
}

type wg2 = sync.WaitGroup

func countFDs() int {
	fds, _ := os.ReadDir("/proc/self/fd")
	return len(fds)
}

// go-sdk's client copies a resources/read URI into the upstream's
// Mcp-Name header as it is (2026-07-28), and the gateway passes a caller's
// URI on. One with a control character must be refused as net/http refuses
// it (an error from Do, which go-sdk treats as "this one request
// rejected"): sent, the upstream's server answers 400 and go-sdk's client
// ends the session every tenant shares (checkResponse: a 4xx without a
// JSON-RPC body is not transient).
func TestSyncTransportControlCharURIKeepsTheSession(t *testing.T) {
	srv := newTestUpstream()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(h)
	defer ts.Close()
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: ts.URL}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := p.Session(ctx, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	callText(t, cs, "pid", nil)
	_, rerr := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///a\x01b"})
	_, cerr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"})
	t.Logf("protocol %s; read: %v; the next call on the same session: %v", cs.InitializeResult().ProtocolVersion, rerr, cerr)
	if rerr == nil {
		t.Error("a URI with a control character was read")
	}
	if cerr != nil {
		t.Errorf("one caller's resources/read URI broke the shared upstream session: %v", cerr)
	}
}
