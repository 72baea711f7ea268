//go:build linux || darwin

package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// syncTransport sends the POSTs of go-sdk's clients to plain-http
// upstreams (its calls, notifications and answers) over keep-alive
// HTTP/1.1 connections of its own: the request is written and the
// answer's head read on the calling goroutine. net/http.Transport hands
// every request to its connection's write goroutine and every answer back
// from its read goroutine, two wake-ups per call that on a small VM cost
// more than the gateway's own work for the call (bench/README.md, "the
// gateway's POSTs on the calling goroutine"). Everything else (an https
// upstream, a proxy from the environment, a body over syncMaxBody, a
// header net/http refuses, GET and DELETE) goes to base.
//
// net/http's read goroutine also notices a server closing an idle
// connection. Here a connection is checked before it is used again (one
// non-blocking peek, connAlive) and is not kept idle longer than syncMaxIdle,
// below the 5 s keep-alive of Node's and uvicorn's servers, so that a
// request is not sent on a connection its server is closing. A POST that
// failed after it was written is never sent again, as net/http does not.
type syncTransport struct {
	base    http.RoundTripper
	dialer  net.Dialer
	maxIdle time.Duration // syncMaxIdle

	mu   sync.Mutex
	idle map[string][]*syncConn // by host:port, the most recent last
}

const (
	syncMaxIdle        = 4 * time.Second
	syncMaxIdlePerHost = 8
	// syncMaxBody is the largest request body sent here: what the
	// socket buffers of both ends take when the upstream reads none.
	syncMaxBody = 32 << 10
	// syncMaxHead bounds an answer's head, its 1xx answers included:
	// net/http's default MaxResponseHeaderBytes.
	syncMaxHead = 10 << 20
)

// syncDefault is the transport of every HTTP upstream, shared as
// http.DefaultTransport is.
var syncDefault http.RoundTripper = newSyncTransport(http.DefaultTransport)

func newSyncTransport(base http.RoundTripper) *syncTransport {
	return &syncTransport{
		base:    base,
		dialer:  net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, // http.DefaultTransport's
		maxIdle: syncMaxIdle,
		idle:    map[string][]*syncConn{},
	}
}

// syncConn is one connection; idle is its expiry while it is idle.
type syncConn struct {
	t    *syncTransport
	key  string
	c    net.Conn
	br   *bufio.Reader // over headReader
	bw   *bufio.Writer
	idle *time.Timer
	// headLeft is what an answer's head may still read from c; negative
	// once the head is read (the body is bounded by limitTransport).
	headLeft int64
}

var errHeadTooLarge = errors.New("gateway: an upstream's answer head is over 10 MiB")

// headReader is c bounded by headLeft.
type headReader struct{ sc *syncConn }

func (r headReader) Read(p []byte) (int, error) {
	sc := r.sc
	if sc.headLeft < 0 {
		return sc.c.Read(p)
	}
	if sc.headLeft == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > sc.headLeft {
		p = p[:sc.headLeft]
	}
	n, err := sc.c.Read(p)
	sc.headLeft -= int64(n)
	return n, err
}

func (t *syncTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Scheme != "http" || req.URL.User != nil {
		return t.base.RoundTrip(req)
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p != nil {
		return t.base.RoundTrip(req)
	}
	// The request is written whole before the answer is read. An upstream
	// may answer (413, 401) without reading a body, and only the socket
	// buffers hold a body then: past syncMaxBody, or of unknown length,
	// net/http writes it while it reads the answer. A header net/http
	// refuses to send is refused by it, as a request go-sdk can drop
	// without ending the session.
	if req.ContentLength < 0 || req.ContentLength > syncMaxBody || (req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody) || !validHeader(req.Header) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	key := req.URL.Host
	if req.URL.Port() == "" {
		key = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	sc, err := t.get(ctx, key)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// A cancelled call closes the connection: a write or a read waiting on
	// it ends at once, and the connection is not used again.
	cancelled := context.AfterFunc(ctx, func() { sc.c.Close() })
	fail := func(err error) (*http.Response, error) {
		cancelled()
		sc.c.Close()
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return nil, err
	}
	err = req.Write(sc.bw) // closes req.Body
	if err == nil {
		err = sc.bw.Flush()
	}
	if err != nil {
		return fail(err)
	}
	var resp *http.Response
	sc.headLeft = syncMaxHead - int64(sc.br.Buffered())
	for {
		if resp, err = http.ReadResponse(sc.br, req); err != nil {
			return fail(err)
		}
		// An interim answer (100 Continue, 103 Early Hints) is followed
		// by the real one; net/http skips it too.
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	sc.headLeft = -1
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("gateway: an upstream switched protocols on a POST"))
	}
	reuse := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		sc.done(cancelled, reuse)
		return resp, nil
	}
	resp.Body = &syncBody{rc: resp.Body, sc: sc, cancelled: cancelled, reuse: reuse}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// get is an idle connection to key that is still open, or a new one.
func (t *syncTransport) get(ctx context.Context, key string) (*syncConn, error) {
	for {
		t.mu.Lock()
		conns := t.idle[key]
		n := len(conns)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		sc := conns[n-1]
		conns[n-1] = nil
		t.idle[key] = conns[:n-1]
		t.mu.Unlock()
		if !sc.idle.Stop() {
			continue // its expiry has it: closed, or about to be
		}
		if connAlive(sc.c) {
			return sc, nil
		}
		sc.c.Close()
	}
	c, err := t.dialer.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	sc := &syncConn{t: t, key: key, c: c, bw: bufio.NewWriterSize(c, 4<<10), headLeft: -1}
	sc.br = bufio.NewReaderSize(headReader{sc}, 4<<10)
	return sc, nil
}

// done ends a round trip on sc: the connection goes back to the idle ones
// when reuse holds and the call was not cancelled, and is closed if not.
func (sc *syncConn) done(cancelled func() bool, reuse bool) {
	if !cancelled() || !reuse || sc.br.Buffered() > 0 {
		sc.c.Close()
		return
	}
	t := sc.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle[sc.key]) >= syncMaxIdlePerHost {
		sc.c.Close()
		return
	}
	if sc.idle == nil {
		sc.idle = time.AfterFunc(t.maxIdle, sc.expire)
	} else {
		sc.idle.Reset(t.maxIdle)
	}
	t.idle[sc.key] = append(t.idle[sc.key], sc)
}

// expire closes sc when it has been idle for syncMaxIdle.
func (sc *syncConn) expire() {
	t := sc.t
	t.mu.Lock()
	conns := t.idle[sc.key]
	for i, c := range conns {
		if c == sc {
			t.idle[sc.key] = append(conns[:i], conns[i+1:]...)
			break
		}
	}
	if len(t.idle[sc.key]) == 0 {
		delete(t.idle, sc.key)
	}
	t.mu.Unlock()
	sc.c.Close()
}

// CloseIdleConnections closes the idle connections, as net/http's
// transports do (http.Client.CloseIdleConnections).
func (t *syncTransport) CloseIdleConnections() {
	t.mu.Lock()
	var all []*syncConn
	for key, conns := range t.idle {
		all = append(all, conns...)
		delete(t.idle, key)
	}
	t.mu.Unlock()
	for _, sc := range all {
		if sc.idle.Stop() {
			sc.c.Close()
		}
	}
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// syncBody is an answer's body: read to its end, its connection is used
// again; closed before, the connection is closed (what is left of the
// answer is not read on the caller's time).
type syncBody struct {
	rc        io.ReadCloser
	sc        *syncConn
	cancelled func() bool
	reuse     bool
	ended     atomic.Bool
}

func (b *syncBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && b.ended.CompareAndSwap(false, true) {
		b.sc.done(b.cancelled, b.reuse && err == io.EOF)
	}
	return n, err
}

func (b *syncBody) Close() error {
	if b.ended.CompareAndSwap(false, true) {
		b.cancelled()
		b.sc.c.Close()
	}
	return nil
}

// connAlive reports whether c, idle, is still open and has nothing to read:
// a peek that does not wait. A server that closed it has sent a FIN (the
// peek reads 0 bytes); one that sent anything while no request was out is
// not to be trusted with the next.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && ok
}

// validHeader reports whether net/http would send h: its names are tokens
// and its values free of control characters.
func validHeader(h http.Header) bool {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}
