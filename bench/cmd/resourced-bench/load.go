package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// target is one HTTP endpoint under load: the MCP server, or the in-process
// ceiling handler. Each target has its own keep-alive connection pool, kept
// across slices, so connections are set up once.
type target struct {
	name   string
	url    string
	client *http.Client
	// get: the target is a plain GET of url (the direct S3 ceiling), whose
	// success is a 200 with the whole body.
	get bool
	// put, when set, makes the target a PUT of putBody to the URL it
	// returns for each request (the direct S3 ceiling of a save), whose
	// success is a 200.
	put     func(w *worker) (string, error)
	putBody []byte
	// pid, when set, is the process serving the target (the ceiling
	// process): its CPU is accounted in the target's slices instead of
	// the server's.
	pid int
}

// newTarget returns a target whose transport keeps up to conns idle
// connections to the host, so that every worker reuses its own.
func newTarget(name, url string, conns int, timeout time.Duration) *target {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
	return &target{name: name, url: url, client: &http.Client{Transport: tr, Timeout: timeout}}
}

// op produces the requests of one kind of load.
type op interface {
	// next appends the JSON-RPC body of w's next request to b and returns
	// it with the method and the Mcp-Name of the request.
	next(w *worker, b []byte) (body []byte, method, name string)
	// tool reports whether responses are tool results (checked for isError).
	tool() bool
}

// worker is one simulated client: one goroutine, one connection at a time
// from its target's pool, and buffers reused for every request.
type worker struct {
	id int
	// run names the measurement this worker belongs to (one per
	// newWorkers): the paths it creates are unique across the attempts of
	// a run (a measurement repeated on a noisy machine starts new workers
	// with seq at 0) and across runs against one store.
	run  string
	seq  int64
	idx  int64 // the index -prepare is saving
	rng  *rand.Rand
	req  []byte
	resp []byte
}

func newWorkers(n int) []*worker {
	ws := make([]*worker, n)
	run := randomHex(4)
	for i := range ws {
		ws[i] = &worker{id: i, run: run, rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))}
	}
	return ws
}

// nextID returns a JSON-RPC id unique across workers.
func (w *worker) nextID() int64 {
	w.seq++
	return int64(w.id)<<40 | w.seq
}

// exchange is the outcome of one request.
type exchange struct {
	latency time.Duration
	bytes   int64  // response body bytes
	body    []byte // the response body, valid until w's next request
	ctype   string // Content-Type of the response
	status  int    // HTTP status; 0 when no response arrived
	err     string // "" on success
}

// do sends one request of o to t and reads the whole response.
func (w *worker) do(t *target, m *mcpRequest, o op) exchange {
	if t.get {
		return w.get(t)
	}
	if t.put != nil {
		return w.putObject(t)
	}
	body, method, name := o.next(w, w.req[:0])
	w.req = body
	req, err := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return exchange{err: err.Error()}
	}
	req.Header = m.header(method, name)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return exchange{latency: time.Since(start), err: "transport: " + err.Error()}
	}
	w.resp, err = readAll(resp.Body, resp.ContentLength, w.resp[:0])
	resp.Body.Close()
	x := exchange{latency: time.Since(start), bytes: int64(len(w.resp)), body: w.resp, ctype: resp.Header.Get("Content-Type"), status: resp.StatusCode}
	if err != nil {
		x.err = "reading response: " + err.Error()
		return x
	}
	x.err = classify(resp.StatusCode, w.resp, o.tool())
	return x
}

// get is do for a plain GET target.
func (w *worker) get(t *target) exchange {
	req, err := http.NewRequest(http.MethodGet, t.url, nil)
	if err != nil {
		return exchange{err: err.Error()}
	}
	return w.plain(t, req)
}

// putObject is do for a PUT target.
func (w *worker) putObject(t *target) exchange {
	u, err := t.put(w)
	if err != nil {
		return exchange{err: err.Error()}
	}
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(t.putBody))
	if err != nil {
		return exchange{err: err.Error()}
	}
	req.Header.Set("If-None-Match", "*")
	req.ContentLength = int64(len(t.putBody))
	return w.plain(t, req)
}

// plain sends req, a request straight to the S3 server or the ceiling,
// and reads its whole answer: anything but 200 is an error.
func (w *worker) plain(t *target, req *http.Request) exchange {
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return exchange{latency: time.Since(start), err: "transport: " + err.Error()}
	}
	w.resp, err = readAll(resp.Body, resp.ContentLength, w.resp[:0])
	resp.Body.Close()
	x := exchange{latency: time.Since(start), bytes: int64(len(w.resp)), body: w.resp, ctype: resp.Header.Get("Content-Type"), status: resp.StatusCode}
	switch {
	case err != nil:
		x.err = "reading response: " + err.Error()
	case resp.StatusCode != http.StatusOK:
		x.err = "HTTP " + strconv.Itoa(resp.StatusCode) + ": " + snippet(w.resp)
	}
	return x
}

// readAll reads r into buf, which it grows to the Content-Length n when
// that is known, so a worker allocates for its largest response only once.
func readAll(r io.Reader, n int64, buf []byte) ([]byte, error) {
	if n >= 0 {
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	b := bytes.NewBuffer(buf)
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// stats accumulates the exchanges of one target over all its slices.
type stats struct {
	ok, errors int64
	bytes      int64
	elapsed    time.Duration
	latencies  []time.Duration // of every completed exchange, errors included
	errSamples map[string]int  // first distinct error texts
	statuses   map[int]int64   // HTTP status of every exchange (0: none arrived)
	timeouts   int64           // errors that were the client's timeout
	cpu        cpuUse          // CPU used during the target's slices
}

func (s *stats) add(x exchange) {
	s.latencies = append(s.latencies, x.latency)
	if s.statuses == nil {
		s.statuses = map[int]int64{}
	}
	s.statuses[x.status]++
	s.bytes += x.bytes
	if x.err == "" {
		s.ok++
		return
	}
	s.errors++
	if strings.Contains(x.err, "Timeout") || strings.Contains(x.err, "deadline exceeded") {
		s.timeouts++
	}
	if s.errSamples == nil {
		s.errSamples = map[string]int{}
	}
	if _, seen := s.errSamples[x.err]; seen || len(s.errSamples) < 5 {
		s.errSamples[x.err]++
	}
}

func (s *stats) merge(o *stats) {
	s.ok += o.ok
	s.errors += o.errors
	s.timeouts += o.timeouts
	s.bytes += o.bytes
	s.elapsed += o.elapsed
	s.cpu.add(o.cpu)
	s.latencies = append(s.latencies, o.latencies...)
	for k, v := range o.statuses {
		if s.statuses == nil {
			s.statuses = map[int]int64{}
		}
		s.statuses[k] += v
	}
	for k, v := range o.errSamples {
		if s.errSamples == nil {
			s.errSamples = map[string]int{}
		}
		if _, seen := s.errSamples[k]; seen || len(s.errSamples) < 5 {
			s.errSamples[k] += v
		}
	}
}

// runSlice runs every worker against t for d: each worker sends requests
// back to back and starts no new one after d. Requests in flight at d
// complete and count; the slice lasts until the last one is done.
func runSlice(t *target, m *mcpRequest, o op, ws []*worker, d time.Duration) *stats {
	per := make([]stats, len(ws))
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			s := &per[i]
			s.latencies = make([]time.Duration, 0, 1024)
			for time.Now().Before(deadline) {
				s.add(w.do(t, m, o))
			}
		})
	}
	wg.Wait()
	total := &stats{elapsed: time.Since(start)}
	for i := range per {
		per[i].elapsed = 0
		total.merge(&per[i])
	}
	return total
}

// measure runs warmup on each target, then alternates between the targets
// in slices of at most slice until each has run for d. Alternating in
// short slices exposes both to the same machine noise. CPU use is
// accounted around each slice, with the server process pid (0: unknown).
func measure(targets []*target, m *mcpRequest, o op, c int, d, warmup, slice time.Duration, pid int) []*stats {
	ws := newWorkers(c)
	for _, t := range targets {
		if warmup > 0 {
			runSlice(t, m, o, ws, warmup)
		}
	}
	if len(targets) == 1 || slice <= 0 {
		slice = d
	}
	out := make([]*stats, len(targets))
	for i := range out {
		out[i] = &stats{}
	}
	for done := time.Duration(0); done < d; done += slice {
		for i, t := range targets {
			p := pid
			if t.pid != 0 {
				p = t.pid
			}
			before := takeCPU(p)
			st := runSlice(t, m, o, ws, min(slice, d-done))
			st.cpu = before.until(takeCPU(p))
			out[i].merge(st)
		}
	}
	return out
}

// Summary is the result of one target, as printed and as JSON.
type Summary struct {
	Target      string         `json:"target"`
	OK          int64          `json:"ok"`
	Errors      int64          `json:"errors"`
	Seconds     float64        `json:"seconds"`
	PerSecond   float64        `json:"perSecond"` // successful requests per second
	Bytes       int64          `json:"bytes"`     // response bytes read
	MiBPerSec   float64        `json:"mibPerSecond"`
	P50         Millis         `json:"p50Ms"`
	P90         Millis         `json:"p90Ms"`
	P99         Millis         `json:"p99Ms"`
	Max         Millis         `json:"maxMs"`
	ErrorSample map[string]int `json:"errorSample,omitempty"`
	// Timeouts counts the errors that were the client's -timeout.
	Timeouts int64 `json:"timeouts,omitempty"`
	// Statuses counts responses by HTTP status ("0": none arrived).
	Statuses map[string]int64 `json:"statuses,omitempty"`
	// CPU is the average CPU use, in cores, during this target's slices.
	CPU *Cores `json:"cpu,omitempty"`
}

// Millis is a duration shown in milliseconds.
type Millis float64

func ms(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

func (m Millis) String() string {
	switch {
	case m < 1:
		return strconv.FormatFloat(float64(m)*1000, 'f', 0, 64) + "µs"
	case m < 100:
		return strconv.FormatFloat(float64(m), 'f', 2, 64) + "ms"
	default:
		return strconv.FormatFloat(float64(m), 'f', 0, 64) + "ms"
	}
}

// percentile returns the p-th quantile (0 < p ≤ 1) of sorted by the
// nearest-rank method, or 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// summarize computes exact percentiles by sorting every latency.
func summarize(name string, s *stats) Summary {
	slices.Sort(s.latencies)
	pct := func(p float64) Millis { return ms(percentile(s.latencies, p)) }
	sec := s.elapsed.Seconds()
	sum := Summary{
		Target: name, OK: s.ok, Errors: s.errors, Seconds: sec, Bytes: s.bytes,
		P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), ErrorSample: s.errSamples,
		CPU: s.cpu.cores(), Timeouts: s.timeouts,
	}
	if len(s.statuses) > 0 {
		sum.Statuses = make(map[string]int64, len(s.statuses))
		for k, v := range s.statuses {
			sum.Statuses[strconv.Itoa(k)] = v
		}
	}
	if n := len(s.latencies); n > 0 {
		sum.Max = ms(s.latencies[n-1])
	}
	if sec > 0 {
		sum.PerSecond = float64(s.ok) / sec
		sum.MiBPerSec = float64(s.bytes) / sec / (1 << 20)
	}
	return sum
}

func (s Summary) row() string {
	cpu := "        –"
	if c := s.CPU; c != nil {
		cpu = fmt.Sprintf("%4.2f/%4.2f/%4.2f", c.Server, c.Client, c.Others)
	}
	return fmt.Sprintf("%-8s %10.1f %9s %9s %9s %9s %7d %9.1f %12d  %s",
		s.Target, s.PerSecond, s.P50, s.P90, s.P99, s.Max, s.Errors, s.MiBPerSec, s.Bytes, cpu)
}

const header = "target        req/s       p50       p90       p99       max  errors     MiB/s        bytes  cores server/client/others"

func (s Summary) errorLines() string {
	var b strings.Builder
	for k, v := range s.ErrorSample {
		fmt.Fprintf(&b, "  %s error ×%d: %s\n", s.Target, v, k)
	}
	return b.String()
}
