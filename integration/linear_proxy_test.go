package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy is an HTTP reverse proxy on 127.0.0.1 in front of an S3
// server that fails requests at random, so that the resourced processes
// (pointed at it by store.s3.endpoint) meet faults through their ordinary
// S3 client, with no hook in the binary. The Host header is passed through
// unchanged, so SigV4 signatures made for the proxy's address verify.
type faultProxy struct {
	URL    string
	target *url.URL
	tr     *http.Transport
	srv    *http.Server
	// Slow is how long a "slow" request waits before it is forwarded:
	// longer than the instances' callTimeout.
	Slow time.Duration
	// Rates are the per-request probabilities, in percent, of each fault.
	Rates map[string]int
	// Match, when set, limits the faults to the requests it accepts.
	Match  func(*http.Request) bool
	active atomic.Bool // faults are injected only while active

	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int
	// matched counts the requests Match accepted.
	matched int
	late    sync.WaitGroup // slow requests still to be forwarded
	closed  bool           // the test is over: slow requests fail at once
	start   time.Time
	trace   []string // one line per request, for a failing test
}

// record adds a line to the trace.
func (p *faultProxy) record(r *http.Request, began time.Time, fault string, status int) {
	line := fmt.Sprintf("%9.3fms %9.3fms %-10s %s %s if-match=%q if-none-match=%q range=%q → %d",
		float64(began.Sub(p.start))/1e6, float64(time.Since(p.start))/1e6, fault, r.Method, r.URL.RequestURI(),
		r.Header.Get("If-Match"), r.Header.Get("If-None-Match"), r.Header.Get("Range"), status)
	p.mu.Lock()
	p.trace = append(p.trace, line)
	p.mu.Unlock()
}

// WriteTrace writes the trace to a temporary file and logs its path.
func (p *faultProxy) WriteTrace(t *testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.CreateTemp("", "resourced-linear-s3-*.log")
	if err != nil {
		t.Logf("S3 trace: %v", err)
		return
	}
	defer f.Close()
	for _, l := range p.trace {
		fmt.Fprintln(f, l)
	}
	t.Logf("S3 requests as the proxy saw them (start, end, fault, request → status): %s", f.Name())
}

// The faults.
const (
	faultNone      = "forwarded"
	faultError     = "500-before" // 500 InternalError; nothing forwarded
	faultSlow      = "slow"       // forwarded after Slow, whatever the caller did meanwhile
	faultDrop      = "dropped"    // forwarded, then the connection is closed without a response
	faultErrorSent = "500-after"  // forwarded, then 500 InternalError instead of the response
)

func startFaultProxy(t *testing.T, target string, seed uint64) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{
		URL:    "http://" + l.Addr().String(),
		target: u,
		tr:     &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		rng:    rand.New(rand.NewPCG(seed, 0x5eed)),
		counts: map[string]int{},
		Slow:   1500 * time.Millisecond,
		Rates:  map[string]int{},
		start:  time.Now(),
	}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(l)
	t.Cleanup(func() {
		p.active.Store(false)
		p.mu.Lock()
		p.closed = true // no late request starts after this (late.Add must not race Wait)
		p.mu.Unlock()
		p.late.Wait()
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

func (p *faultProxy) choose(r *http.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := faultNone
	match := p.Match == nil || p.Match(r)
	if p.Match != nil && match {
		p.matched++
	}
	if p.active.Load() && match {
		x := p.rng.IntN(100)
		for _, name := range []string{faultError, faultSlow, faultDrop, faultErrorSent} {
			if x < p.Rates[name] {
				f = name
				break
			}
			x -= p.Rates[name]
		}
	}
	p.counts[f]++
	return f
}

// Matched is how many requests Match accepted, counted as they arrive.
func (p *faultProxy) Matched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.matched
}

// Summary is how many requests met each fault.
func (p *faultProxy) Summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.counts))
	for n := range p.counts {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for _, n := range names {
		s += fmt.Sprintf(" %s=%d", n, p.counts[n])
	}
	return s
}

var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func writeS3Error(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected by the test's fault proxy</Message></Error>`)
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	fault := p.choose(r)
	status := 0
	defer func() { p.record(r, began, fault, status) }()
	if fault == faultError {
		writeS3Error(w)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = r.Host
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.TransferEncoding = nil
	if fault == faultSlow {
		// The request reaches S3 after the caller's deadline, whether or not
		// the caller is still there: a write that may land after the
		// instance answered unavailable.
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			writeS3Error(w)
			return
		}
		p.late.Add(1)
		p.mu.Unlock()
		defer p.late.Done()
		time.Sleep(p.Slow)
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	status = resp.StatusCode
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	switch fault {
	case faultDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without a response
	case faultErrorSent:
		writeS3Error(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(respBody)
}
