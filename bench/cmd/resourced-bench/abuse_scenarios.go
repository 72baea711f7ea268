package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SlowBodyResult is what slowbody measured.
type SlowBodyResult struct {
	abuseHeader
	Conns         int     `json:"conns"`
	MCPConns      int     `json:"mcpConns"`
	ContentLength int     `json:"contentLength"`
	HoldS         float64 `json:"holdS"`
	FDLimitTool   uint64  `json:"fdLimitTool"`
	// Open is how the slow connections were opened (all of them, uploads
	// and /mcp); Uploads and MCP which of them the server dropped.
	Open    OpenStats    `json:"open"`
	Uploads DropStats    `json:"uploads"`
	MCP     DropStats    `json:"mcp"`
	Server  *ProcFigures `json:"server,omitempty"`
	// The probe: 1 KiB resources/read, each on a new connection, before
	// the slow connections and while they are held.
	ProbeQuiet  Summary `json:"probeQuiet"`
	ProbeLoaded Summary `json:"probeLoaded"`
	// ProbeTenant is the probe's tenant: B when -token-b is given.
	ProbeTenant string `json:"probeTenant"`
}

func abuseSlowBody(o *abuseOptions, stderr io.Writer) (*SlowBodyResult, error) {
	res := &SlowBodyResult{abuseHeader: o.header(), Conns: o.conns, MCPConns: o.mcpConns, ContentLength: o.contentLength, HoldS: o.hold.Seconds()}
	var err error
	if res.FDLimitTool, err = raiseNoFile(o.conns + o.mcpConns + 64); err != nil {
		return nil, err
	}
	m, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	// The probe is another client, of tenant B when its token is given (the
	// slow client's own tenant meets its own in-flight cap): a new
	// connection for every read, which the server must accept while the
	// slow ones hold its descriptors.
	mProbe, probeTenant := m, o.tenantA
	if o.tokenB != "" {
		if mProbe, err = newMCPRequest(o.protocol, o.tokenB); err != nil {
			return nil, err
		}
		probeTenant = o.tenantB
	}
	res.ProbeTenant = probeTenant
	probeURI, err := o.save(mProbe, probeTenant, o.reportDir+"/probe", bodyText(1024))
	if err != nil {
		return nil, err
	}
	probe := newTarget("probe", o.url, 1, o.probeTimeout)
	probe.client.Transport.(*http.Transport).DisableKeepAlives = true
	pw := newWorkers(1)[0]
	read := newReadOp(mProbe, probeURI, 0)
	var quiet stats
	t0 := time.Now()
	for range 20 {
		quiet.add(pw.do(probe, mProbe, read))
	}
	quiet.elapsed = time.Since(t0)
	res.ProbeQuiet = summarize("probeQuiet", &quiet)

	pwatch, err := watchProc(o.pid, 250*time.Millisecond)
	if err != nil {
		return nil, err
	}
	uploadHead := http.Header{"Content-Type": {"text/plain"}}
	if o.tokenA != "" {
		uploadHead.Set("Authorization", "Bearer "+o.tokenA)
	}
	mcpHead := m.header("resources/read", o.reportDir+"/held")
	fmt.Fprintf(stderr, "slowbody: opening %d slow uploads and %d slow /mcp bodies (Content-Length %d, 1 byte sent), holding them %s\n",
		o.conns, o.mcpConns, o.contentLength, o.hold)
	conns, open := openHeld(o.hostPort, o.conns+o.mcpConns, 0, func(i int) []byte {
		if i < o.conns {
			return rawRequest("PUT", "/v1/resources/report/"+o.reportDir+"/slow-"+strconv.Itoa(i)+"?overwrite=true",
				o.hostPort, uploadHead, o.contentLength, []byte("x"))
		}
		return rawRequest("POST", "/mcp", o.hostPort, mcpHead, o.contentLength, []byte("{"))
	}, nil)
	res.Open = open
	if pwatch != nil {
		pwatch.start = time.Now().Add(-time.Duration(open.Seconds * float64(time.Second)))
	}
	var uploads, mcps []*heldConn
	for _, h := range conns {
		if h.index >= o.conns {
			mcps = append(mcps, h)
		} else {
			uploads = append(uploads, h)
		}
	}

	// Hold, probing and watching for drops, until -hold has passed.
	var loaded stats
	var mu sync.Mutex
	deadline := time.Now().Add(o.hold)
	var wg sync.WaitGroup
	wg.Go(func() {
		for time.Now().Before(deadline) {
			x := pw.do(probe, mProbe, read)
			mu.Lock()
			loaded.add(x)
			mu.Unlock()
			time.Sleep(o.probeEvery)
		}
	})
	known := true
	for time.Now().Before(deadline) {
		known = pollDrops(conns) && known
		time.Sleep(250 * time.Millisecond)
	}
	known = pollDrops(conns) && known
	wg.Wait()
	loaded.elapsed = o.hold
	res.ProbeLoaded = summarize("probeLoaded", &loaded)
	res.Uploads, res.MCP = dropStats(uploads, known), dropStats(mcps, known)
	if pwatch != nil {
		pwatch.holdEnd()
	}
	closeHeld(conns)
	probe.client.CloseIdleConnections()
	time.Sleep(o.settle)
	if pwatch != nil {
		f := pwatch.after()
		res.Server = &f
	}
	return res, nil
}

// NoReadResult is what noread measured.
type NoReadResult struct {
	abuseHeader
	Conns        int     `json:"conns"`
	BodyBytes    int     `json:"bodyBytes"`
	HoldS        float64 `json:"holdS"`
	MaxGrowthMiB float64 `json:"maxGrowthMiB"`
	// GuardHit is true when the tool stopped opening connections because
	// the server's RSS had grown by -max-growth.
	GuardHit bool      `json:"guardHit"`
	Open     OpenStats `json:"open"`
	// Dropped is read from the tool's side (TCP state); a server that
	// closes a socket with unsent data may show only in Server.FDs.
	Dropped DropStats    `json:"dropped"`
	Server  *ProcFigures `json:"server,omitempty"`
	// GrowthPerConnMiB is (peak − idle RSS) ÷ connections opened.
	GrowthPerConnMiB float64 `json:"growthPerConnMiB,omitempty"`
}

func abuseNoRead(o *abuseOptions, stderr io.Writer) (*NoReadResult, error) {
	res := &NoReadResult{abuseHeader: o.header(), Conns: o.conns, BodyBytes: o.size, HoldS: o.hold.Seconds(), MaxGrowthMiB: o.maxGrowthMiB}
	if _, err := raiseNoFile(o.conns + 64); err != nil {
		return nil, err
	}
	m, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "noread: saving %d bytes of '\"'\n", o.size)
	u, err := o.save(m, o.tenantA, o.reportDir+"/quotes", bytes.Repeat([]byte{'"'}, o.size))
	if err != nil {
		return nil, err
	}
	// One complete read first: the server can serve it, and the answer is
	// a result (not an error that would make the scenario measure nothing).
	t := newTarget("check", o.url, 1, 5*time.Minute)
	if x := newWorkers(1)[0].do(t, m, newReadOp(m, u, 0)); x.err != "" {
		return nil, fmt.Errorf("reading %s: %s", u, x.err)
	}
	t.client.CloseIdleConnections()
	time.Sleep(time.Second) // let the check's buffers go before "idle"

	pwatch, err := watchProc(o.pid, 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	body := m.appendRead(nil, 1, u)
	req := rawRequest("POST", "/mcp", o.hostPort, m.header("resources/read", u), len(body), body)
	var stop func() bool
	if pwatch != nil {
		stop = func() bool {
			if pwatch.rss()-pwatch.fig.RSSIdleMiB > o.maxGrowthMiB {
				res.GuardHit = true
				return true
			}
			return false
		}
	}
	fmt.Fprintf(stderr, "noread: %d connections each ask for it and never read; holding them %s\n", o.conns, o.hold)
	conns, open := openHeld(o.hostPort, o.conns, 4096, func(int) []byte { return req }, stop)
	res.Open = open
	if pwatch != nil {
		pwatch.start = time.Now().Add(-time.Duration(open.Seconds * float64(time.Second)))
	}
	deadline := time.Now().Add(o.hold)
	known := true
	for time.Now().Before(deadline) {
		known = pollDrops(conns) && known
		time.Sleep(250 * time.Millisecond)
	}
	known = pollDrops(conns) && known
	res.Dropped = dropStats(conns, known)
	if pwatch != nil {
		pwatch.holdEnd()
	}
	closeHeld(conns)
	time.Sleep(o.settle)
	if pwatch != nil {
		f := pwatch.after()
		res.Server = &f
		if open.Opened > 0 {
			res.GrowthPerConnMiB = (f.RSSPeakMiB - f.RSSIdleMiB) / float64(open.Opened)
		}
	}
	return res, nil
}

// ListenResult is what listen measured.
type ListenResult struct {
	abuseHeader
	BodyBytes    int    `json:"bodyBytes"`
	Repeat       int    `json:"repeat"`
	RequestBytes int    `json:"requestBytes"`
	URI          string `json:"uri"`
	// Once is a listen naming the URI once, for comparison; Repeated the
	// one naming it -repeat times.
	Once     ListenFigures `json:"once"`
	Repeated ListenFigures `json:"repeated"`
	// CPURatio is Repeated.CPUSeconds ÷ Once.CPUSeconds (when Once > 0).
	CPURatio float64 `json:"cpuRatio,omitempty"`
}

// ListenFigures is one listen request.
type ListenFigures struct {
	// Answer is "accepted" (an event stream opened) or the JSON-RPC
	// error/HTTP status the server gave.
	Answer string `json:"answer"`
	Status int    `json:"status"`
	// AnswerS is the time to the response headers (or the error).
	AnswerS float64 `json:"answerS"`
	// CPUSeconds is the server's CPU from the request until it was idle
	// again (known only with -pid).
	CPUSeconds *float64 `json:"cpuSeconds,omitempty"`
}

func abuseListen(o *abuseOptions, stderr io.Writer) (*ListenResult, error) {
	res := &ListenResult{abuseHeader: o.header(), BodyBytes: o.size, Repeat: o.repeat}
	m, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "listen: saving %d bytes\n", o.size)
	if res.URI, err = o.save(m, o.tenantA, o.reportDir+"/big", bodyText(o.size)); err != nil {
		return nil, err
	}
	if res.Once, _, err = o.listenOnce(m, res.URI, 1); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "listen: one subscriptions/listen naming it %d times\n", o.repeat)
	if res.Repeated, res.RequestBytes, err = o.listenOnce(m, res.URI, o.repeat); err != nil {
		return nil, err
	}
	if a, b := res.Once.CPUSeconds, res.Repeated.CPUSeconds; a != nil && b != nil && *a > 0 {
		res.CPURatio = *b / *a
	}
	return res, nil
}

// listenBody is a 2026-07-28 subscriptions/listen request naming uri n times.
func listenBody(m *mcpRequest, uri string, n int) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`)
	b = append(b, strings.TrimPrefix(m.meta, ",")...)
	b = append(b, `,"notifications":{"resourceSubscriptions":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, uri...)
		b = append(b, '"')
	}
	return append(b, "]}}}"...)
}

var rpcCode = regexp.MustCompile(`"code":(-?\d+)`)

// listenOnce sends one listen naming uri n times, reads its answer, closes
// it, and waits until the server's CPU is idle again (bounded by -timeout).
func (o *abuseOptions) listenOnce(m *mcpRequest, uri string, n int) (ListenFigures, int, error) {
	var f ListenFigures
	body := listenBody(m, uri, n)
	req, err := http.NewRequest(http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return f, 0, err
	}
	req.Header = m.header("subscriptions/listen", "")
	req.Header.Del("Mcp-Name")
	cpu0, cpuErr := procCPU(strconv.Itoa(o.pid))
	start := time.Now()
	client := &http.Client{Timeout: o.timeout}
	tr := &http.Transport{Proxy: nil, ResponseHeaderTimeout: o.timeout}
	client.Transport = tr
	defer tr.CloseIdleConnections()
	resp, err := client.Do(req)
	f.AnswerS = time.Since(start).Seconds()
	switch {
	case err != nil:
		f.Answer = "no answer: " + err.Error()
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		f.Status = resp.StatusCode
		f.Answer = "accepted: event stream open"
		// An error may still come as the stream's first event.
		first := make(chan string, 1)
		go func() {
			buf := make([]byte, 4096)
			k, _ := resp.Body.Read(buf)
			first <- string(buf[:k])
		}()
		select {
		case ev := <-first:
			if c := rpcCode.FindStringSubmatch(ev); c != nil {
				f.Answer = "JSON-RPC error " + c[1] + ": " + snippet([]byte(ev))
			}
		case <-time.After(500 * time.Millisecond):
		}
		resp.Body.Close()
	default:
		f.Status = resp.StatusCode
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if c := rpcCode.FindSubmatch(b); c != nil {
			f.Answer = "JSON-RPC error " + string(c[1]) + ": " + snippet(b)
		} else {
			f.Answer = "HTTP " + strconv.Itoa(resp.StatusCode) + ": " + snippet(b)
		}
	}
	if o.pid > 0 && cpuErr == nil {
		c := waitCPUIdle(o.pid, cpu0, start.Add(o.timeout))
		f.CPUSeconds = &c
	}
	return f, len(body), nil
}

// waitCPUIdle polls the CPU of pid until it grew by under 10 ms in each of
// three 200 ms polls in a row, or until deadline, and returns what it used
// since cpu0.
func waitCPUIdle(pid int, cpu0 float64, deadline time.Time) float64 {
	last, quiet := cpu0, 0
	for quiet < 3 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		c, err := procCPU(strconv.Itoa(pid))
		if err != nil {
			break
		}
		if c-last < 0.01 {
			quiet++
		} else {
			quiet = 0
		}
		last = c
	}
	return round2(last - cpu0)
}

// NoisyResult is what noisy-tenant measured.
type NoisyResult struct {
	abuseHeader
	TenantA   string  `json:"tenantA"`
	TenantB   string  `json:"tenantB"`
	SaveBytes int     `json:"saveBytes"`
	ConcA     int     `json:"concurrencyA"`
	ConcB     int     `json:"concurrencyB"`
	Seconds   float64 `json:"seconds"`
	// B's 1 KiB reads alone, and while A saves.
	BQuiet Summary `json:"bQuiet"`
	BNoisy Summary `json:"bNoisy"`
	// P99Ratio and P50Ratio are noisy ÷ quiet.
	P99Ratio float64 `json:"p99Ratio"`
	P50Ratio float64 `json:"p50Ratio"`
	// A's saves during B's noisy measurement and its warmup; A429 counts
	// the ones refused with HTTP 429.
	ASaves Summary `json:"aSaves"`
	A429   int64   `json:"a429"`
}

// noisySaveOp overwrites a few paths per worker, so that the database does
// not grow with the run.
type noisySaveOp struct{ inner *saveReportOp }

func (o *noisySaveOp) next(w *worker, b []byte) ([]byte, string, string) {
	w.idx = int64(w.id)*4 + w.seq%4
	return o.inner.next(w, b)
}

func (o *noisySaveOp) tool() bool { return true }

func abuseNoisyTenant(o *abuseOptions, stderr io.Writer) (*NoisyResult, error) {
	res := &NoisyResult{abuseHeader: o.header(), TenantA: o.tenantA, TenantB: o.tenantB, SaveBytes: o.size,
		ConcA: o.c, ConcB: o.readC, Seconds: o.d.Seconds()}
	mA, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	mB, err := newMCPRequest(o.protocol, o.tokenB)
	if err != nil {
		return nil, err
	}
	uB, err := o.save(mB, o.tenantB, o.reportDir+"/b-1k", bodyText(1024))
	if err != nil {
		return nil, err
	}
	if _, err := o.save(mA, o.tenantA, o.reportDir+"/a-check", bodyText(o.size)); err != nil {
		return nil, err
	}
	tB := newTarget("tenantB", o.url, o.readC, o.probeTimeout)
	tA := newTarget("tenantA", o.url, o.c, o.probeTimeout)
	readB := newReadOp(mB, uB, 0)
	wsB := newWorkers(o.readC)
	fmt.Fprintf(stderr, "noisy-tenant: tenant B reads 1 KiB at c=%d for %s alone\n", o.readC, o.d)
	runSlice(tB, mB, readB, wsB, o.warmup)
	before := takeCPU(o.pid)
	quiet := runSlice(tB, mB, readB, wsB, o.d)
	quiet.cpu = before.until(takeCPU(o.pid))
	res.BQuiet = summarize("bQuiet", quiet)

	fmt.Fprintf(stderr, "noisy-tenant: and again while tenant A saves %d bytes at c=%d\n", o.size, o.c)
	wsA := newWorkers(o.c)
	for _, w := range wsA {
		w.id += 1 << 10 // ids apart from B's
	}
	saveA := &noisySaveOp{inner: newSaveReportOp(mA, o.reportDir+"/noise", "text/plain", bodyText(o.size), true)}
	var aStats *stats
	var wg sync.WaitGroup
	wg.Go(func() { aStats = runSlice(tA, mA, saveA, wsA, o.warmup+o.d) })
	time.Sleep(o.warmup)
	before = takeCPU(o.pid)
	noisy := runSlice(tB, mB, readB, wsB, o.d)
	noisy.cpu = before.until(takeCPU(o.pid))
	wg.Wait()
	res.BNoisy = summarize("bNoisy", noisy)
	res.ASaves = summarize("aSaves", aStats)
	res.A429 = aStats.statuses[http.StatusTooManyRequests]
	res.P99Ratio = ratio(res.BNoisy.P99, res.BQuiet.P99)
	res.P50Ratio = ratio(res.BNoisy.P50, res.BQuiet.P50)
	if quiet.ok == 0 {
		return nil, fmt.Errorf("tenant B's reads all failed: %v", res.BQuiet.ErrorSample)
	}
	return res, nil
}

// TimingResult is what timing measured.
type TimingResult struct {
	abuseHeader
	TenantA   string `json:"tenantA"`
	TenantB   string `json:"tenantB"`
	BodyBytes int    `json:"bodyBytes"`
	Samples   int    `json:"samples"`
	// Foreign is B's read of A's private report, Never of a URI of A that
	// never existed; both must be -32602.
	Foreign TimingFigures `json:"foreign"`
	Never   TimingFigures `json:"never"`
	// Ratio is Foreign.MedianMs ÷ Never.MedianMs.
	Ratio float64 `json:"ratio"`
	// SameErrorBytes: the two error responses are byte for byte the same
	// but for the URI and the id.
	SameErrorBytes bool `json:"sameErrorBytes"`
}

// TimingFigures is one kind of read.
type TimingFigures struct {
	URI      string `json:"uri"`
	MedianMs Millis `json:"medianMs"`
	P10Ms    Millis `json:"p10Ms"`
	P90Ms    Millis `json:"p90Ms"`
	Errors   int    `json:"unexpected"` // answers other than -32602
	Sample   string `json:"sample"`     // one answer
	samples  []time.Duration
	bodyNorm []byte
}

var rpcID = regexp.MustCompile(`"id":\d+`)

func abuseTiming(o *abuseOptions, stderr io.Writer) (*TimingResult, error) {
	res := &TimingResult{abuseHeader: o.header(), TenantA: o.tenantA, TenantB: o.tenantB, BodyBytes: o.size, Samples: o.samples}
	mA, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	mB, err := newMCPRequest(o.protocol, o.tokenB)
	if err != nil {
		return nil, err
	}
	// Paths of the same length, so that the two errors can be compared.
	fmt.Fprintf(stderr, "timing: tenant A saves a private %d-byte report\n", o.size)
	if res.Foreign.URI, err = o.save(mA, o.tenantA, o.reportDir+"/private", bodyText(o.size)); err != nil {
		return nil, err
	}
	res.Never.URI = "report://" + o.tenantA + "/" + o.reportDir + "/nothere"
	t := newTarget("tenantB", o.url, 1, o.probeTimeout)
	w := newWorkers(1)[0]
	kinds := []*TimingFigures{&res.Foreign, &res.Never}
	ops := []op{newReadOp(mB, res.Foreign.URI, 0), newReadOp(mB, res.Never.URI, 0)}
	one := func(k int, keep bool) error {
		x := w.do(t, mB, ops[k])
		f := kinds[k]
		if x.err == "" {
			return fmt.Errorf("tenant %s read %s of tenant %s: the tokens do not separate tenants", o.tenantB, f.URI, o.tenantA)
		}
		if !keep {
			return nil
		}
		f.samples = append(f.samples, x.latency)
		if !strings.Contains(x.err, `"code":-32602`) {
			f.Errors++
		}
		if f.bodyNorm == nil {
			f.Sample = snippet(x.body)
			n := bytes.ReplaceAll(x.body, []byte(f.URI), []byte("URI"))
			f.bodyNorm = rpcID.ReplaceAll(n, []byte(`"id":N`))
		}
		return nil
	}
	for i := range 10 { // warmup
		if err := one(i%2, false); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(stderr, "timing: tenant B reads it and a never-existed URI, %d times each, interleaved\n", o.samples)
	for range o.samples {
		first := rand.IntN(2)
		for _, k := range []int{first, 1 - first} {
			if err := one(k, true); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range kinds {
		slices.Sort(f.samples)
		f.MedianMs, f.P10Ms, f.P90Ms = ms(percentile(f.samples, 0.5)), ms(percentile(f.samples, 0.1)), ms(percentile(f.samples, 0.9))
	}
	res.Ratio = ratio(res.Foreign.MedianMs, res.Never.MedianMs)
	res.SameErrorBytes = bytes.Equal(res.Foreign.bodyNorm, res.Never.bodyNorm)
	return res, nil
}
