package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Abuse mode: `resourced-bench abuse <scenario>` plays a hostile tenant
// against a running resourced on loopback and prints what it cost the server
// and the other callers (issue 13). Every scenario is bounded in count and
// time; -smoke shrinks it to a few seconds. The figures are printed as one
// JSON object (indented; -json: one line). The exit status is 0 when the
// scenario ran, whatever the figures, and 1 when the tool could not run it
// (bad flags, a setup request failed, a token of the wrong tenant).
//
//	slowbody      N connections each send an upload's headers with Content-Length 1 MiB and 1 byte of
//	              body, M more do the same with POST /mcp; a probe reads 1 KiB meanwhile
//	noread        K connections each ask for a 16 MiB body of '"' (32 MiB escaped) and never read
//	listen        one subscriptions/listen naming one 16 MiB resource many times
//	noisy-tenant  tenant A saturates saves while tenant B reads 1 KiB, B quiet vs under the noise
//	timing        tenant B reads tenant A's private 15 MiB report and a URI that never existed
//	query         tenant A runs 2 quadratic JSONPath queries (N=4000, the value cap); tenant B runs $.a[0]
//	uploads       tenant A holds -conns slow uploads; tenant B uploads 11 bytes
//	gateway-flood against `resourced gateway`: tenant A calls -tool on -large-file at -c in a loop;
//	              tenant B calls it on -small-file, alone and beside A (abuse_gateway.go)

var abuseScenarios = []string{"slowbody", "noread", "listen", "noisy-tenant", "timing", "query", "uploads", "gateway-flood"}

type abuseOptions struct {
	scenario                   string
	url, protocol              string
	tokenA, tokenB             string
	tenantA, tenantB           string
	tenantClaim                string
	pid                        int
	smoke, jsonOut             bool
	conns, mcpConns            int
	size, contentLength        int
	repeat, samples            int
	c, readC                   int
	hold, settle, d, warmup    time.Duration
	probeEvery, probeTimeout   time.Duration
	timeout                    time.Duration
	maxGrowthMiB               float64
	hostPort, runID, reportDir string
	tool, largeFile, smallFile string
}

// abuseDefaults are each scenario's defaults, full and -smoke, for the
// flags a caller did not set.
var abuseDefaults = map[string][2]map[string]string{
	"slowbody": {
		{"conns": "2000", "mcp-conns": "200", "content-length": "1MiB", "hold": "30s", "settle": "3s", "probe-every": "100ms", "probe-timeout": "10s"},
		{"conns": "20", "mcp-conns": "5", "content-length": "1MiB", "hold": "2s", "settle": "300ms", "probe-every": "100ms", "probe-timeout": "2s"},
	},
	"noread": {
		{"conns": "200", "size": "16MiB", "hold": "30s", "settle": "5s", "max-growth": "4096"},
		{"conns": "3", "size": "1MiB", "hold": "2s", "settle": "300ms", "max-growth": "1024"},
	},
	"listen": {
		{"repeat": "2000", "size": "16MiB", "timeout": "2m"},
		{"repeat": "50", "size": "1MiB", "timeout": "20s"},
	},
	"noisy-tenant": {
		{"c": "64", "read-c": "4", "size": "16KiB", "d": "10s", "warmup": "2s", "probe-timeout": "30s"},
		{"c": "8", "read-c": "2", "size": "1KiB", "d": "1s", "warmup": "300ms", "probe-timeout": "10s"},
	},
	"timing": {
		{"samples": "300", "size": "15MiB", "probe-timeout": "30s"},
		{"samples": "20", "size": "1MiB", "probe-timeout": "10s"},
	},
	"query": {
		{"d": "2s", "probe-timeout": "30s", "timeout": "5m"},
		{"d": "200ms", "probe-timeout": "10s", "timeout": "30s"},
	},
	"uploads": {
		{"conns": "80", "content-length": "1MiB", "settle": "3s", "probe-timeout": "30s"},
		{"conns": "8", "content-length": "1MiB", "settle": "500ms", "probe-timeout": "10s"},
	},
	"gateway-flood": {
		{"c": "8", "read-c": "1", "d": "10s", "warmup": "3s", "probe-timeout": "30s", "timeout": "5m"},
		{"c": "2", "read-c": "1", "d": "1s", "warmup": "300ms", "probe-timeout": "10s", "timeout": "30s"},
	},
}

// parseAbuseFlags is long but flat (gocyclo 50): one flag definition and
// one bounds check per option of five scenarios, in the order -h prints
// them; splitting it would scatter one table over several functions.
func parseAbuseFlags(args []string, stderr io.Writer) (*abuseOptions, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("usage: resourced-bench abuse <%s> [flags]", strings.Join(abuseScenarios, "|"))
	}
	o := &abuseOptions{scenario: args[0]}
	defs, ok := abuseDefaults[o.scenario]
	if !ok {
		return nil, fmt.Errorf("abuse scenario %q: want one of %s", o.scenario, strings.Join(abuseScenarios, ", "))
	}
	fs := flag.NewFlagSet("resourced-bench abuse "+o.scenario, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var size, contentLength string
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8765/mcp", "MCP endpoint of the server (loopback only)")
	fs.StringVar(&o.protocol, "protocol", v2026, "protocol version: "+v2026+" or "+v2025)
	fs.StringVar(&o.tokenA, "token", os.Getenv("RESOURCED_TOKEN"), "bearer token of tenant A, the abuser (default $RESOURCED_TOKEN)")
	fs.StringVar(&o.tokenB, "token-b", os.Getenv("RESOURCED_TOKEN_B"), "bearer token of tenant B, the bystander (default $RESOURCED_TOKEN_B); noisy-tenant and timing need it")
	fs.StringVar(&o.tenantA, "tenant", "", "tenant of -token (default: read from the token, else \"default\")")
	fs.StringVar(&o.tenantB, "tenant-b", "", "tenant of -token-b (default: read from the token)")
	fs.StringVar(&o.tenantClaim, "tenant-claim", "tenant", "claim of the tokens that names the tenant")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id: its open fds, RSS and CPU (/proc) are reported; 0: those figures are left out")
	fs.BoolVar(&o.smoke, "smoke", false, "tiny counts and times (a few seconds): checks the scenario runs, measures nothing worth keeping")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as one JSON line (default: indented)")
	fs.IntVar(&o.conns, "conns", 0, "slowbody: slow uploads [2000]; noread: non-reading connections, at most 1000 [200]")
	fs.IntVar(&o.mcpConns, "mcp-conns", 0, "slowbody: slow POST /mcp bodies [200]")
	fs.StringVar(&contentLength, "content-length", "", "slowbody: the Content-Length each slow request announces (it sends 1 byte) [1MiB]")
	fs.StringVar(&size, "size", "", "body of the resource: noread [16MiB of '\"'], listen [16MiB], timing [15MiB]; noisy-tenant: each save [16KiB]")
	fs.IntVar(&o.repeat, "repeat", 0, "listen: how many times the listen names the URI [2000]")
	fs.IntVar(&o.samples, "samples", 0, "timing: reads of each kind, interleaved [300]")
	fs.IntVar(&o.c, "c", 0, "noisy-tenant: tenant A's concurrent saves [64]")
	fs.IntVar(&o.readC, "read-c", 0, "noisy-tenant: tenant B's concurrent 1 KiB reads [4]")
	fs.DurationVar(&o.hold, "hold", 0, "slowbody, noread: how long the connections are held open [30s]")
	fs.DurationVar(&o.settle, "settle", 0, "slowbody, noread: wait after closing them before the last figures [3s, 5s]")
	fs.DurationVar(&o.d, "d", 0, "noisy-tenant: measured time, quiet and under noise [10s]")
	fs.DurationVar(&o.warmup, "warmup", 0, "noisy-tenant: unmeasured load before each measurement [2s]")
	fs.DurationVar(&o.probeEvery, "probe-every", 0, "slowbody: interval of the probe's 1 KiB reads [100ms]")
	fs.DurationVar(&o.probeTimeout, "probe-timeout", 0, "timeout of one probe/bystander read [slowbody 10s, others 30s]")
	fs.DurationVar(&o.timeout, "timeout", 0, "listen: how long to wait for the answer and for the server's CPU to settle [2m]")
	fs.StringVar(&o.tool, "tool", "read_text_file", "gateway-flood: the gateway's tool that reads a file (argument path)")
	fs.StringVar(&o.largeFile, "large-file", "", "gateway-flood: the path tenant A reads (a large file, as the upstream serves it)")
	fs.StringVar(&o.smallFile, "small-file", "", "gateway-flood: the path tenant B reads (a small one)")
	fs.Float64Var(&o.maxGrowthMiB, "max-growth", 0, "noread: stop opening connections once the server's RSS grew this many MiB (protects the shared machine) [4096]")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	d := defs[0]
	if o.smoke {
		d = defs[1]
	}
	for name, v := range d {
		if set[name] {
			continue
		}
		switch name {
		case "size":
			size = v
		case "content-length":
			contentLength = v
		default:
			if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("default -%s %s: %w", name, v, err)
			}
		}
	}
	var err error
	if size != "" {
		if o.size, err = parseSize(size); err != nil || o.size <= 0 {
			return nil, fmt.Errorf("-size %q: want a positive size such as 1KiB or 16MiB", size)
		}
	}
	if contentLength != "" {
		if o.contentLength, err = parseSize(contentLength); err != nil || o.contentLength < 2 {
			return nil, fmt.Errorf("-content-length %q: want a size of at least 2 bytes", contentLength)
		}
	}
	u, err := url.Parse(o.url)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("-url %q: want http://127.0.0.1:PORT/mcp", o.url)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "::1" && h != "localhost" {
		return nil, fmt.Errorf("-url %q: abuse scenarios only target loopback", o.url)
	}
	o.hostPort = u.Host
	switch {
	case o.scenario == "noread" && (o.conns < 1 || o.conns > 1000):
		return nil, errors.New("-conns: noread takes 1 to 1000 connections")
	case o.scenario == "slowbody" && (o.conns < 0 || o.mcpConns < 0 || o.conns+o.mcpConns == 0):
		return nil, errors.New("-conns, -mcp-conns: slowbody needs at least one slow connection")
	case o.scenario == "listen" && o.protocol != v2026:
		return nil, errors.New("listen: subscriptions/listen needs -protocol " + v2026)
	case o.scenario == "listen" && o.repeat < 1:
		return nil, errors.New("-repeat must be at least 1")
	case o.scenario == "timing" && o.samples < 1:
		return nil, errors.New("-samples must be at least 1")
	case o.scenario == "noisy-tenant" && (o.c < 1 || o.readC < 1 || o.d <= 0):
		return nil, errors.New("noisy-tenant: -c, -read-c and -d must be positive")
	case o.scenario == "uploads" && o.conns < 1:
		return nil, errors.New("-conns: uploads needs at least one slow upload")
	case o.scenario == "gateway-flood" && (o.largeFile == "" || o.smallFile == "" || o.tool == ""):
		return nil, errors.New("gateway-flood: -tool, -large-file and -small-file are needed")
	case o.scenario == "gateway-flood" && (o.c < 1 || o.c > 64 || o.readC < 1 || o.readC > 64 || o.d <= 0 || o.warmup < 0):
		return nil, errors.New("gateway-flood: -c and -read-c take 1 to 64, -d must be positive")
	case twoTenantScenario(o.scenario) && o.tokenB == "":
		return nil, errors.New(o.scenario + " needs tenant B's token: -token-b or $RESOURCED_TOKEN_B")
	}
	if o.tenantA == "" {
		if o.tenantA = tokenTenant(o.tokenA, o.tenantClaim); o.tenantA == "" {
			o.tenantA = "default"
		}
	}
	if o.tenantB == "" {
		if o.tenantB = tokenTenant(o.tokenB, o.tenantClaim); o.tenantB == "" {
			o.tenantB = o.tenantA
		}
	}
	if twoTenantScenario(o.scenario) && o.tenantA == o.tenantB {
		return nil, fmt.Errorf("%s: -token and -token-b are both tenant %q; want two tenants", o.scenario, o.tenantA)
	}
	o.runID = randomHex(4)
	o.reportDir = "abuse/" + o.scenario + "/" + o.runID
	return o, nil
}

// twoTenantScenario reports whether scenario needs tenant B's token.
func twoTenantScenario(scenario string) bool {
	switch scenario {
	case "noisy-tenant", "timing", "query", "uploads", "gateway-flood":
		return true
	}
	return false
}

func runAbuse(args []string, stdout, stderr io.Writer) (int, error) {
	o, err := parseAbuseFlags(args, stderr)
	if err != nil {
		return 1, err
	}
	var res any
	switch o.scenario {
	case "slowbody":
		res, err = abuseSlowBody(o, stderr)
	case "noread":
		res, err = abuseNoRead(o, stderr)
	case "listen":
		res, err = abuseListen(o, stderr)
	case "noisy-tenant":
		res, err = abuseNoisyTenant(o, stderr)
	case "timing":
		res, err = abuseTiming(o, stderr)
	case "query":
		res, err = abuseQuery(o, stderr)
	case "uploads":
		res, err = abuseUploads(o, stderr)
	case "gateway-flood":
		res, err = abuseGatewayFlood(o, stderr)
	}
	if err != nil {
		return 1, fmt.Errorf("abuse %s: %w", o.scenario, err)
	}
	var b []byte
	if o.jsonOut {
		b, err = json.Marshal(res)
	} else {
		b, err = json.MarshalIndent(res, "", "  ")
	}
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0, nil
}

// abuseHeader is what every scenario's result starts with.
type abuseHeader struct {
	Scenario string `json:"scenario"`
	Smoke    bool   `json:"smoke,omitempty"`
	Date     string `json:"date"`
	URL      string `json:"url"`
	Protocol string `json:"protocol"`
	PID      int    `json:"pid,omitempty"`
}

func (o *abuseOptions) header() abuseHeader {
	return abuseHeader{Scenario: o.scenario, Smoke: o.smoke, Date: time.Now().UTC().Format(time.RFC3339),
		URL: o.url, Protocol: o.protocol, PID: o.pid}
}

// save stores text at path for the tenant of m (overwriting) and returns
// its URI.
// Saves are private, the default.
func (o *abuseOptions) save(m *mcpRequest, tenant, path string, text []byte) (string, error) {
	args := reportArgs(path, "text/plain", text, true)
	t := newTarget("setup", o.url, 1, 5*time.Minute)
	x := newWorkers(1)[0].do(t, m, &fixedCall{m: m, name: "save_report", args: args})
	t.client.CloseIdleConnections()
	u := "report://" + tenant + "/" + path
	if x.err != "" {
		return "", fmt.Errorf("saving %s (%d bytes): %s", u, len(text), x.err)
	}
	return u, nil
}

// ProcFigures is what /proc says of the server during a scenario.
type ProcFigures struct {
	PID     int `json:"pid"`
	FDLimit int `json:"fdLimit"` // soft "Max open files"; -1 unlimited
	// Open file descriptors and VmRSS: before the abuse, the most seen
	// while it lasted, at its end (before the tool closed its side), and
	// -settle after the tool closed everything.
	FDsIdle       int     `json:"fdsIdle"`
	FDsPeak       int     `json:"fdsPeak"`
	FDsHoldEnd    int     `json:"fdsHoldEnd"`
	FDsAfter      int     `json:"fdsAfter"`
	RSSIdleMiB    float64 `json:"rssIdleMiB"`
	RSSPeakMiB    float64 `json:"rssPeakMiB"`
	RSSHoldEndMiB float64 `json:"rssHoldEndMiB"`
	RSSAfterMiB   float64 `json:"rssAfterMiB"`
	// RSSAnonIdleMiB and RSSAnonPeakMiB are RssAnon (heap, stacks)
	// before the abuse and the most seen while it lasted: what the server
	// allocated, without the pages of its own executable that VmRSS also
	// counts (a kernel that keeps the executable's page cache in large
	// folios maps nearly all of it at start, so VmRSS grows with the
	// binary's size).
	RSSAnonIdleMiB float64 `json:"rssAnonIdleMiB"`
	RSSAnonPeakMiB float64 `json:"rssAnonPeakMiB"`
	// FDsReleasedS is when, after the first connection opened, the
	// server's fds first fell back by half of what the connections had
	// added (it closed them); absent when that never happened in -hold.
	FDsReleasedS *float64 `json:"fdsHalfReleasedAfterS,omitempty"`
	// CPUSeconds is the server's user+system CPU over the whole scenario.
	CPUSeconds float64 `json:"cpuSeconds"`
	Samples    int     `json:"samples"`
}

// procWatch samples the server's fds and RSS until stopped.
type procWatch struct {
	pid   int
	fig   ProcFigures
	cpu0  float64
	start time.Time // when the abuse began (the first connection)
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	fds   []fdSample
}

type fdSample struct {
	at  time.Time
	fds int
}

// watchProc takes the idle figures and starts sampling every interval;
// nil when pid is 0.
func watchProc(pid int, interval time.Duration) (*procWatch, error) {
	if pid <= 0 {
		return nil, nil
	}
	w := &procWatch{pid: pid, stop: make(chan struct{}), start: time.Now()}
	w.fig.PID = pid
	var err error
	if w.fig.FDLimit, err = fdLimit(pid); err != nil {
		return nil, err
	}
	if w.fig.FDsIdle, err = fdCount(pid); err != nil {
		return nil, err
	}
	st, err := readStatus(pid)
	if err != nil {
		return nil, err
	}
	w.fig.RSSIdleMiB, w.fig.RSSAnonIdleMiB = st.rss, st.anon
	w.cpu0, _ = procCPU(strconv.Itoa(pid))
	w.observe()
	w.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.observe()
			}
		}
	})
	return w, nil
}

func (w *procWatch) observe() {
	n, err1 := fdCount(w.pid)
	st, err2 := readStatus(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err1 == nil {
		w.fig.FDsPeak = max(w.fig.FDsPeak, n)
		w.fig.FDsHoldEnd = n
		w.fds = append(w.fds, fdSample{time.Now(), n})
	}
	if err2 == nil {
		w.fig.RSSPeakMiB = max(w.fig.RSSPeakMiB, st.rss)
		w.fig.RSSAnonPeakMiB = max(w.fig.RSSAnonPeakMiB, st.anon)
		w.fig.RSSHoldEndMiB = st.rss
	}
	w.fig.Samples++
}

// rss returns the last sampled VmRSS.
func (w *procWatch) rss() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fig.RSSHoldEndMiB
}

// holdEnd stops sampling: the figures so far are those of the hold.
func (w *procWatch) holdEnd() {
	close(w.stop)
	w.wg.Wait()
	w.observe()
	w.fig.FDsReleasedS = halfReleased(w.fds, w.start, w.fig.FDsIdle, w.fig.FDsPeak)
}

// after takes the last figures, once the tool closed its connections.
func (w *procWatch) after() ProcFigures {
	if n, err := fdCount(w.pid); err == nil {
		w.fig.FDsAfter = n
	}
	if st, err := readStatus(w.pid); err == nil {
		w.fig.RSSAfterMiB = st.rss
	}
	if c, err := procCPU(strconv.Itoa(w.pid)); err == nil {
		w.fig.CPUSeconds = round2(c - w.cpu0)
	}
	return w.fig
}

// halfReleased returns the seconds after start at which the fd count,
// having peaked, first fell below halfway between idle and peak; nil if it
// never did (or never rose).
func halfReleased(samples []fdSample, start time.Time, idle, peak int) *float64 {
	if peak-idle < 2 {
		return nil
	}
	half := idle + (peak-idle)/2
	peaked := false
	for _, s := range samples {
		if s.fds == peak {
			peaked = true
		}
		if peaked && s.fds < half {
			v := s.at.Sub(start).Seconds()
			return &v
		}
	}
	return nil
}

// round2 rounds CPU seconds (multiples of 10 ms in /proc) to what they mean.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// raiseNoFile raises this process's soft open-file limit to its hard one
// (Go does so at start on most platforms; this says so and checks) and
// fails when need descriptors do not fit.
func raiseNoFile(need int) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	if uint64(need) > l.Cur {
		return l.Cur, fmt.Errorf("needs about %d open files, the limit is %d: lower -conns or raise `ulimit -Hn`", need, l.Cur)
	}
	return l.Cur, nil
}

// heldConn is one connection the tool holds open without finishing its
// request or reading its response.
type heldConn struct {
	c       *net.TCPConn
	index   int // the i of openHeld's req(i)
	opened  time.Time
	dropped time.Duration // when the server dropped it, after opened; 0: not (yet)
	answer  string        // the status line the server sent before dropping it
}

// DropStats says which held connections the server dropped, and when.
type DropStats struct {
	Held    int `json:"held"`
	Dropped int `json:"dropped"`
	// Known is false where the tool cannot read the kernel's TCP state.
	Known bool `json:"known"`
	// Seconds after its own opening at which the connections were
	// dropped: the first, the median and the last.
	FirstS  float64 `json:"firstS,omitempty"`
	MedianS float64 `json:"medianS,omitempty"`
	LastS   float64 `json:"lastS,omitempty"`
	// Answers counts what the server sent before it closed ("" is nothing).
	Answers map[string]int `json:"answers,omitempty"`
}

// pollDrops marks the connections whose TCP state is no longer
// ESTABLISHED (the server closed or reset them) and reads the status line
// the server may have sent first. It reports whether the state is known.
func pollDrops(cs []*heldConn) bool {
	known := true
	now := time.Now()
	for _, h := range cs {
		if h.dropped > 0 {
			continue
		}
		st, ok := tcpState(h.c)
		if !ok {
			known = false
			continue
		}
		if st == 1 { // TCP_ESTABLISHED
			continue
		}
		h.dropped = max(now.Sub(h.opened), time.Nanosecond)
		_ = h.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		buf := make([]byte, 256)
		n, _ := io.ReadAtLeast(h.c, buf, 1)
		line, _, _ := bytes.Cut(buf[:n], []byte("\r\n"))
		h.answer = string(line)
	}
	return known
}

func dropStats(cs []*heldConn, known bool) DropStats {
	s := DropStats{Held: len(cs), Known: known}
	var ds []time.Duration
	for _, h := range cs {
		if h.dropped > 0 {
			ds = append(ds, h.dropped)
			if s.Answers == nil {
				s.Answers = map[string]int{}
			}
			s.Answers[h.answer]++
		}
	}
	s.Dropped = len(ds)
	if len(ds) > 0 {
		slices.Sort(ds)
		s.FirstS, s.MedianS, s.LastS = ds[0].Seconds(), percentile(ds, 0.5).Seconds(), ds[len(ds)-1].Seconds()
	}
	return s
}

// rawRequest returns the bytes of an HTTP/1.1 request head announcing
// contentLength, followed by body (which may be shorter: a slow client).
func rawRequest(method, target, host string, h http.Header, contentLength int, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, target, host, contentLength)
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// OpenStats counts the connections the tool tried to open.
type OpenStats struct {
	Tried       int            `json:"tried"`
	Opened      int            `json:"opened"`
	Errors      int            `json:"errors"`
	ErrorSample map[string]int `json:"errorSample,omitempty"`
	Seconds     float64        `json:"seconds"`
}

// openHeld dials n connections to addr, 16 at a time, each with a receive
// buffer of rcvbuf bytes (0: the default), and writes req(i) on each. It
// stops early once stop() says so.
func openHeld(addr string, n, rcvbuf int, req func(i int) []byte, stop func() bool) ([]*heldConn, OpenStats) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	start := time.Now()
	st := OpenStats{Tried: n}
	var mu sync.Mutex
	out := make([]*heldConn, 0, n)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		st.Errors++
		if st.ErrorSample == nil {
			st.ErrorSample = map[string]int{}
		}
		k := err.Error()
		if _, seen := st.ErrorSample[k]; seen || len(st.ErrorSample) < 5 {
			st.ErrorSample[k]++
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					fail(err)
					continue
				}
				tc := c.(*net.TCPConn)
				opened := time.Now()
				if _, err := tc.Write(req(i)); err != nil {
					fail(err)
					tc.Close()
					continue
				}
				mu.Lock()
				out = append(out, &heldConn{c: tc, index: i, opened: opened})
				mu.Unlock()
			}
		})
	}
	for i := range n {
		if stop != nil && stop() {
			st.Tried = i
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	st.Opened = len(out)
	st.Seconds = time.Since(start).Seconds()
	return out, st
}

func closeHeld(cs []*heldConn) {
	for _, h := range cs {
		_ = h.c.Close()
	}
}
