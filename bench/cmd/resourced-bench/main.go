// Command resourced-bench loads a running resourced server with raw JSON-RPC
// over Streamable HTTP and reports throughput and exact latency percentiles,
// optionally as a ratio to an in-process plain net/http ceiling measured in
// the same run.
//
// Many concurrent keep-alive clients (-c) send resources/read or tools/call
// requests back to back for -d after a -warmup. Requests are built by
// appending bytes, and responses are checked at fixed positions only
// (JSON-RPC "result" vs "error", a trailing "isError":true), so the client
// costs as little as it can; it still shares the machine with the server,
// which is why the ceiling is loaded by the same client.
//
// With -ceiling the tool captures one response of the server, serves exactly
// those bytes from memory with net/http on 127.0.0.1, and alternates between
// the server and that handler in -slice slices until each has run -d. The
// ratio server/ceiling is what one request/response of this size costs in
// resourced, relative to the cheapest possible HTTP exchange on this machine
// at the same moment. For -op save the ceiling also stores what it reads
// (writeceiling.go): the write ceiling, in a database of its own in
// -ceiling-dir, through the same group commit on the same disk.
//
// Usage (see bench/README.md for the scenarios):
//
//	resourced-bench -url http://127.0.0.1:8765/mcp -token $TOKEN -op read -size 1KiB -c 16 -d 10s -ceiling
//	resourced-bench -op save -size 1KiB -c 16 -d 10s
//	resourced-bench -op read -prepare 100000 -size 1KiB -c 16 -d 10s      # scale: random reads among 100k
//	resourced-bench -op read -size 8MiB -c 16 -d 10s -pid $(pgrep -x resourced)   # peak RSS
//
// The exit status is 0 when the load ran and every request succeeded, 1 when
// the tool could not run, and 3 when some requests failed (see -allow-errors).
//
// `resourced-bench abuse <scenario>` plays a hostile tenant instead (slow
// bodies, clients that never read, a costly listen, a noisy tenant, timing
// of foreign reads); see abuse.go and bench/README.md. `resourced-bench
// gateway` compares `resourced gateway` with its upstreams called directly;
// see gateway.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	url, token, protocol string
	op, uri, tool, mime  string
	scheme, prefix       string
	tenant, tenantClaim  string
	size                 int
	c, prepareC          int
	d, warmup, slice     time.Duration
	timeout              time.Duration
	ceiling              bool
	ceilingProcess       bool
	ceilingDir           string
	prepare, prepareFrom int
	keys                 int
	pid                  int
	jsonOut, allowErrors bool
	md                   string
	mdHeader             bool
	quiet                float64
	quietWait            time.Duration
	retries              int
	s3                   s3Direct
	prepareS3            string // -prepare through s3store at this endpoint
	prepareBolt          string // -prepare into this data directory's bbolt file
	vs, indexDir         string
}

func main() {
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "resourced-bench:", err)
	}
	os.Exit(code)
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("resourced-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var size, prepare, prepareFrom, keys string
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8765/mcp", "MCP endpoint")
	fs.StringVar(&o.token, "token", os.Getenv("RESOURCED_TOKEN"), "bearer token (default $RESOURCED_TOKEN); empty sends none (auth: none)")
	fs.StringVar(&o.protocol, "protocol", v2026, "protocol version: "+v2026+" or "+v2025)
	fs.StringVar(&o.op, "op", "read", "read (resources/read), save (tools/call of -tool), list (list_resources pages at random places among -prepare/-keys reports) or search (search_resources of a word of one report or of 1 in 100, among -prepare/-keys reports)")
	fs.StringVar(&o.vs, "vs", "", "also load this second server's MCP endpoint with the same requests, alternated in -slice slices, and report the ratio (e.g. the same configuration with index.backend: off)")
	fs.StringVar(&o.indexDir, "index-dir", "", "with -prepare or -keys: report the bytes of this directory (the server's index) per byte of those reports of -size")
	fs.StringVar(&o.uri, "uri", "", "read: URI to read; with -keys, \"{i}\" is replaced by a random index. Default: save one report of -size first and read it")
	fs.StringVar(&size, "size", "1KiB", "body size of saved resources (B, KiB, MiB)")
	fs.StringVar(&o.mime, "mime", "text/markdown", "media type of saved reports (a textual type reads back as text, others as base64 blob)")
	fs.StringVar(&o.tool, "tool", "save_search_snapshot", "save: save_search_snapshot (server-chosen ids) or save_report (a new path per request)")
	fs.StringVar(&o.scheme, "scheme", "report", "scheme of the reports the tool saves and reads")
	fs.StringVar(&o.prefix, "prefix", "", "path prefix of saved reports (default bench/<random>; -prepare: bench/scale)")
	fs.StringVar(&o.tenant, "tenant", "", "tenant of the token (default: read from the token, else \"default\")")
	fs.StringVar(&o.tenantClaim, "tenant-claim", "tenant", "claim of the token that names the tenant")
	fs.IntVar(&o.c, "c", 16, "concurrent clients (keep-alive connections)")
	fs.DurationVar(&o.d, "d", 10*time.Second, "measured duration per target (server, and ceiling with -ceiling); 0 skips the load")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before measuring, per target")
	fs.DurationVar(&o.slice, "slice", 2*time.Second, "with -ceiling: alternate server and ceiling in slices this long")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "per-request timeout")
	fs.BoolVar(&o.ceiling, "ceiling", false, "also load an in-process net/http handler returning the same bytes, and report ratios to it; for -op save it stores each body first (the write ceiling)")
	fs.BoolVar(&o.ceilingProcess, "ceiling-process", false, "with -ceiling (read): also load the same ceiling run in a process of its own, like the server (ceilingproc.go), and report the ratio to it and its CPU per request")
	fs.StringVar(&o.ceilingDir, "ceiling-dir", "", "with -op save -ceiling: where the write ceiling keeps its bbolt database; use the server's disk (default: a new directory in $TMPDIR, removed after)")
	fs.StringVar(&o.s3.endpoint, "s3-direct", "", "the ceiling is this S3 endpoint itself: for -op read a presigned GET of the resource's object, for -op save a presigned create-only PUT of a new object of -size (needs -s3-bucket, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&o.s3.bucket, "s3-bucket", "", "with -s3-direct: the server's store.s3.bucket")
	fs.StringVar(&o.s3.prefix, "s3-prefix", "", "with -s3-direct: the server's store.s3.prefix")
	fs.StringVar(&o.s3.region, "s3-region", "", "with -s3-direct: the region (default us-east-1)")
	fs.StringVar(&prepare, "prepare", "0", "save N reports of -size at <prefix>/<i> first (overwriting), e.g. 100k or 1M; reads then pick among them")
	fs.StringVar(&prepareFrom, "prepare-from", "0", "with -prepare: start at this index (the ones below exist from an earlier run)")
	fs.StringVar(&o.prepareS3, "prepare-s3", "", "with -prepare: store the reports straight through resourced's S3 store at this endpoint (-s3-bucket, -s3-prefix, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) instead of saving them through -url: the objects a save stores, written by s3store's bulk Load (unconditional PUTs, -prepare-c at a time, one usage update per 5000); the count of a progress line plus -prepare-from is where -prepare-from continues")
	fs.StringVar(&o.prepareBolt, "prepare-bbolt", "", "with -prepare: store the reports straight into the bbolt database of a stopped server's data directory (created when missing) instead of saving them through -url; with -op search each carries its words, and `resourced reindex --workers N` then builds the index in bulk (bench/README.md); -d 0 stops after it")
	fs.IntVar(&o.prepareC, "prepare-c", 0, "concurrency of -prepare (default -c)")
	fs.StringVar(&keys, "keys", "0", "read: pick the URI at random among this many indexes (default -prepare)")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id: sample its RSS during the load (warmup included) and account its CPU in the measured slices")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as JSON")
	fs.StringVar(&o.md, "md", "", "also print a Markdown table row with this label")
	fs.BoolVar(&o.mdHeader, "md-header", false, "print the header of the -md rows and exit")
	fs.Float64Var(&o.quiet, "quiet", 0, "before the load, wait until other processes use at most this many cores (0: don't wait)")
	fs.DurationVar(&o.quietWait, "quiet-wait", 3*time.Minute, "with -quiet: wait at most this long, then run anyway")
	fs.IntVar(&o.retries, "retries", 0, "with -quiet: measure again up to this many times while other processes used more than -quiet cores during the measurement; keep the quietest")
	fs.BoolVar(&o.allowErrors, "allow-errors", false, "exit 0 even if some requests failed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.size, err = parseSize(size); err != nil || o.size <= 0 {
		return nil, fmt.Errorf("-size %q: want a positive size such as 1KiB, 64KiB, 8MiB", size)
	}
	for _, f := range []struct {
		name, s string
		dst     *int
	}{{"prepare", prepare, &o.prepare}, {"prepare-from", prepareFrom, &o.prepareFrom}, {"keys", keys, &o.keys}} {
		if *f.dst, err = parseCount(f.s); err != nil {
			return nil, fmt.Errorf("-%s %q: want a count such as 10000, 100k or 1M", f.name, f.s)
		}
	}
	switch {
	case o.c < 1:
		return nil, errors.New("-c must be at least 1")
	case o.op != "read" && o.op != "save" && o.op != "list" && o.op != "search":
		return nil, fmt.Errorf("-op %q: want read, save, list or search", o.op)
	case o.tool != "save_search_snapshot" && o.tool != "save_report":
		return nil, fmt.Errorf("-tool %q: want save_search_snapshot or save_report", o.tool)
	case o.prepareS3 != "" && (o.prepare == 0 || o.s3.bucket == "" || o.op == "search"):
		return nil, errors.New("-prepare-s3 needs -prepare and -s3-bucket, and -op read or list")
	case o.prepareBolt != "" && (o.prepare == 0 || o.prepareS3 != ""):
		return nil, errors.New("-prepare-bbolt needs -prepare, and not -prepare-s3")
	case o.prepareFrom > o.prepare:
		return nil, errors.New("-prepare-from is beyond -prepare")
	case o.keys > 0 && o.uri != "" && !strings.Contains(o.uri, "{i}"):
		return nil, errors.New("-keys with -uri needs \"{i}\" in the URI")
	}
	if o.prepareC == 0 {
		o.prepareC = o.c
	}
	if o.keys == 0 && o.prepare > 0 && (o.op == "read" || o.op == "list" || o.op == "search") && o.uri == "" {
		o.keys = o.prepare
	}
	if o.prefix == "" {
		o.prefix = "bench/" + randomHex(4)
		if o.prepare > 0 || o.keys > 0 {
			o.prefix = "bench/scale"
		}
	}
	if o.tenant == "" {
		if o.tenant = tokenTenant(o.token, o.tenantClaim); o.tenant == "" {
			o.tenant = "default"
		}
	}
	return o, nil
}

// Result is everything one run measured, as -json prints it.
type Result struct {
	Op          string         `json:"op"`
	Target      string         `json:"target"` // URI read or tool called
	Protocol    string         `json:"protocol"`
	Concurrency int            `json:"concurrency"`
	Size        int            `json:"size"`
	Keys        int            `json:"keys,omitempty"`
	Seconds     float64        `json:"seconds"`
	Prepare     *PrepareResult `json:"prepare,omitempty"`
	Server      *Summary       `json:"server,omitempty"`
	Ceiling     *Summary       `json:"ceiling,omitempty"`
	// Ratio is server/ceiling successful requests per second.
	Ratio float64 `json:"ratio,omitempty"`
	// CeilingProcess is the ceiling in a process of its own
	// (-ceiling-process), RatioProcess server/it in requests per second,
	// CeilingProcessCPUMicros its CPU time per request in µs.
	CeilingProcess          *Summary `json:"ceilingProcess,omitempty"`
	RatioProcess            float64  `json:"ratioProcess,omitempty"`
	CeilingProcessCPUMicros float64  `json:"ceilingProcessCPUMicros,omitempty"`
	// ServerCPUMicros is the server's CPU time per successful request in
	// its slices, in µs (with -pid).
	ServerCPUMicros float64 `json:"serverCPUMicros,omitempty"`
	// ResponseBytes is the size of one response (the captured one).
	ResponseBytes int  `json:"responseBytes,omitempty"`
	RSS           *RSS `json:"rss,omitempty"`
	// InFlightMiB is concurrency × body size, the bytes a server must hold
	// at least once per request in flight; RSS.PeakMiB is compared to it.
	InFlightMiB float64 `json:"inFlightMiB,omitempty"`
	// IndexBytes is the size of -index-dir after -prepare and the load,
	// IndexPerStored that over the bytes prepared.
	IndexBytes     int64   `json:"indexBytes,omitempty"`
	IndexPerStored float64 `json:"indexPerStored,omitempty"`
	// With -quiet: how long the tool waited for a quiet machine, and the
	// cores other processes used just before the load started.
	QuietWaitSeconds float64 `json:"quietWaitSeconds,omitempty"`
	OthersBefore     float64 `json:"othersBefore,omitempty"`
	// OthersCores is the average CPU, in cores, that other processes used
	// during the measurement kept (-1 when /proc cannot tell), and Attempts
	// which attempt that was (see -retries).
	OthersCores float64 `json:"othersCores"`
	Attempts    int     `json:"attempts,omitempty"`
}

// othersCores is the average CPU other processes used over all slices of
// all targets, or -1 when unknown.
func othersCores(st []*stats) float64 {
	var u cpuUse
	for _, s := range st {
		u.add(s.cpu)
	}
	if u.wall <= 0 {
		return -1
	}
	return u.others / u.wall
}

// waitQuiet waits until processes other than this tool and the server pid
// use at most limit cores, measured over 2 s, or until maxWait has passed.
func waitQuiet(pid int, limit float64, maxWait time.Duration, stderr io.Writer) (waited, others float64) {
	start := time.Now()
	for {
		a := takeCPU(pid)
		time.Sleep(2 * time.Second)
		u := a.until(takeCPU(pid))
		if u.wall <= 0 {
			return time.Since(start).Seconds(), 0 // no /proc: cannot tell
		}
		others = u.others / u.wall
		if others <= limit {
			return time.Since(start).Seconds(), others
		}
		if time.Since(start) >= maxWait {
			fmt.Fprintf(stderr, "machine still busy after %s (others use %.2f cores): running anyway\n", maxWait, others)
			return time.Since(start).Seconds(), others
		}
		fmt.Fprintf(stderr, "machine busy: other processes use %.2f cores (> %.2f); waiting\n", others, limit)
	}
}

// run parses the load tool's flags and runs one target (gocyclo 32): the
// branches are the flags' checks, one after another, kept together so that
// -h and the checks read as one list.
func run(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 && args[0] == "abuse" {
		return runAbuse(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "gateway" {
		return runGateway(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "ceiling-serve" {
		return runCeilingServe(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "proxy-serve" {
		return runProxyServe(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "gwmemory" {
		return runGatewayMemory(args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 1, err
	}
	if o.mdHeader {
		fmt.Fprintln(stdout, mdHeader)
		return 0, nil
	}
	m, err := newMCPRequest(o.protocol, o.token)
	if err != nil {
		return 1, err
	}
	server := newTarget("server", o.url, max(o.c, o.prepareC), o.timeout)
	res := &Result{Op: o.op, Protocol: o.protocol, Concurrency: o.c, Size: o.size, Keys: o.keys, Seconds: o.d.Seconds()}
	text := bodyText(o.size)

	if o.prepare > 0 {
		fmt.Fprintf(stderr, "preparing %s://%s/%s/{%d..%d} (%d bytes each) with %d clients\n",
			o.scheme, o.tenant, o.prefix, o.prepareFrom, o.prepare-1, o.size, o.prepareC)
		var save op = newSaveReportOp(m, o.prefix, o.mime, text, true)
		if o.op == "search" {
			save = &searchDocOp{m: m, prefix: o.prefix, mime: o.mime, text: text}
		}
		var p *PrepareResult
		var err error
		if o.prepareBolt != "" {
			p, err = prepareBolt(o.prepareBolt, o.tenant, o.scheme, o.prefix, o.mime, text, o.op == "search", o.prepareFrom, o.prepare, o.prepareC, stderr)
		} else if o.prepareS3 != "" {
			d := o.s3
			d.endpoint = o.prepareS3
			p, err = prepareS3(&d, o.tenant, o.scheme, o.prefix, o.mime, text, o.prepareFrom, o.prepare, o.prepareC, stderr)
		} else {
			p, err = prepare(server, m, save, o.prepareFrom, o.prepare, o.prepareC, stderr)
		}
		res.Prepare = p
		if err != nil {
			return 1, err
		}
	}

	var load op
	switch {
	case o.op == "save" && o.tool == "save_report":
		load, res.Target = newSaveReportOp(m, o.prefix, o.mime, text, false), "save_report"
	case o.op == "save":
		load, res.Target = &saveSnapshotOp{m: m, args: snapshotArgs(o.size)}, "save_search_snapshot"
	case o.op == "list":
		load, res.Target = &listOp{m: m, prefix: o.prefix, keys: o.keys}, "list_resources "+o.prefix+"/<random>"
	case o.op == "search":
		load, res.Target = &searchOp{m: m, keys: o.keys}, "search_resources d<random> | g<random>"
	default:
		u := o.uri
		if u == "" && o.keys > 0 {
			u = o.scheme + "://" + o.tenant + "/" + o.prefix + "/{i}"
		}
		if u == "" {
			// Save the resource to read, once.
			u = o.scheme + "://" + o.tenant + "/" + o.prefix + "/read-" + strconv.Itoa(o.size)
			x := newWorkers(1)[0].doSave(server, m, o.prefix+"/read-"+strconv.Itoa(o.size), o.mime, text)
			if x.err != "" {
				return 1, fmt.Errorf("saving %s: %s", u, x.err)
			}
		}
		load, res.Target = newReadOp(m, u, o.keys), u
	}
	if o.d <= 0 {
		return finish(o, res, stdout)
	}

	// One exchange checks that the load works, and gives the ceiling its bytes.
	first := newWorkers(1)[0].do(server, m, load)
	if first.err != "" {
		return 1, fmt.Errorf("first request to %s failed: %s", o.url, first.err)
	}
	res.ResponseBytes = len(first.body)
	targets := []*target{server}
	switch {
	case o.vs != "":
		t := newTarget("vs", o.vs, o.c, o.timeout)
		if x := newWorkers(1)[0].do(t, m, load); x.err != "" {
			return 1, fmt.Errorf("first request to -vs %s failed: %s", o.vs, x.err)
		}
		targets = append(targets, t)
	case o.s3.endpoint != "" && o.op == "save":
		put, err := o.s3.putter()
		if err != nil {
			return 1, err
		}
		t := newTarget("s3-direct", o.s3.endpoint, o.c, o.timeout)
		t.put, t.putBody = put, text
		if x := newWorkers(1)[0].do(t, m, load); x.err != "" {
			return 1, fmt.Errorf("direct S3 PUT failed: %s", x.err)
		}
		targets = append(targets, t)
	case o.s3.endpoint != "":
		u, err := o.s3.presign(context.Background(), res.Target, 24*time.Hour)
		if err != nil {
			return 1, err
		}
		t := newTarget("s3-direct", u, o.c, o.timeout)
		t.get = true
		if x := newWorkers(1)[0].do(t, m, load); x.err != "" {
			return 1, fmt.Errorf("direct S3 GET of %s failed: %s", res.Target, x.err)
		}
		targets = append(targets, t)
	case o.ceiling && o.op == "save":
		dir := o.ceilingDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "resourced-bench-ceiling-"); err != nil {
				return 1, err
			}
			defer os.RemoveAll(dir)
		}
		c, err := startWriteCeiling(dir, o.size, append([]byte(nil), first.body...), first.ctype)
		if err != nil {
			return 1, fmt.Errorf("write ceiling: %w", err)
		}
		defer c.Close()
		targets = append(targets, newTarget("ceiling", c.url, o.c, o.timeout))
	case o.ceiling:
		c, err := startCeiling(append([]byte(nil), first.body...), first.ctype)
		if err != nil {
			return 1, err
		}
		defer c.Close()
		targets = append(targets, newTarget("ceiling", c.url, o.c, o.timeout))
		if o.ceilingProcess {
			pc, pid, err := startCeilingProcess(first.body, first.ctype)
			if err != nil {
				return 1, err
			}
			defer pc.Close()
			t := newTarget("ceilproc", pc.url, o.c, o.timeout)
			t.pid = pid
			targets = append(targets, t)
		}
	}

	// Measure; on a shared machine (-quiet) measure again, up to -retries
	// times, while other processes used more than -quiet cores during the
	// measurement, and keep the quietest attempt.
	var st []*stats
	bestNoise := -1.0
	for attempt := 1; ; attempt++ {
		if o.quiet > 0 {
			waited, before := waitQuiet(o.pid, o.quiet, o.quietWait, stderr)
			res.QuietWaitSeconds += waited
			res.OthersBefore = before
		}
		fmt.Fprintf(stderr, "loading %s (%s) with %d clients: %s warmup, %s measured per target\n",
			res.Target, o.protocol, o.c, o.warmup, o.d)
		var sampler *rssSampler
		if o.pid > 0 {
			if sampler, err = startRSS(o.pid); err != nil {
				return 1, err
			}
		}
		got := measure(targets, m, load, o.c, o.d, o.warmup, o.slice, o.pid)
		var rss *RSS
		if sampler != nil {
			r := sampler.Stop()
			rss = &r
		}
		noise := othersCores(got)
		if bestNoise < 0 || noise < bestNoise {
			st, bestNoise, res.RSS, res.Attempts = got, noise, rss, attempt
		}
		if o.quiet <= 0 || noise <= o.quiet || attempt > o.retries {
			break
		}
		fmt.Fprintf(stderr, "noisy: other processes used %.2f cores on average during the measurement (> %.2f); measuring again (%d of %d retries)\n",
			noise, o.quiet, attempt, o.retries)
	}
	if res.RSS != nil {
		res.InFlightMiB = float64(o.c) * float64(o.size) / (1 << 20)
	}
	res.OthersCores = bestNoise
	s := summarize("server", st[0])
	res.Server = &s
	if s.CPU != nil && o.pid > 0 && s.PerSecond > 0 {
		res.ServerCPUMicros = s.CPU.Server / s.PerSecond * 1e6
	}
	if len(st) > 1 {
		c := summarize(targets[1].name, st[1])
		res.Ceiling = &c
		if c.PerSecond > 0 {
			res.Ratio = s.PerSecond / c.PerSecond
		}
	}
	if len(st) > 2 {
		c := summarize(targets[2].name, st[2])
		res.CeilingProcess = &c
		if c.PerSecond > 0 {
			res.RatioProcess = s.PerSecond / c.PerSecond
			if c.CPU != nil {
				res.CeilingProcessCPUMicros = c.CPU.Server / c.PerSecond * 1e6
			}
		}
	}
	if o.indexDir != "" {
		indexSize(o, res, stderr)
	}
	return finish(o, res, stdout)
}

// doSave saves text at path (overwriting), outside any load.
func (w *worker) doSave(t *target, m *mcpRequest, path, mimeType string, text []byte) exchange {
	return w.do(t, m, &fixedCall{m: m, name: "save_report", args: reportArgs(path, mimeType, text, true)})
}

// fixedCall is one tools/call with fixed arguments.
type fixedCall struct {
	m    *mcpRequest
	name string
	args []byte
}

func (o *fixedCall) next(w *worker, b []byte) ([]byte, string, string) {
	return o.m.appendCall(b, w.nextID(), o.name, o.args), "tools/call", o.name
}

func (o *fixedCall) tool() bool { return true }

// PrepareResult reports the saves of -prepare.
type PrepareResult struct {
	From, To  int     `json:"-"`
	Saved     int64   `json:"saved"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
}

// prepare saves indexes [from, to) with c clients, printing progress.
func prepare(t *target, m *mcpRequest, o op, from, to, c int, stderr io.Writer) (*PrepareResult, error) {
	workers := newWorkers(c)
	p, first := prepareEach(from, to, c, "saved", stderr, func(g int, i int64) error {
		w := workers[g]
		w.idx = i
		if x := w.do(t, m, o); x.err != "" {
			return errors.New(x.err)
		}
		return nil
	})
	fmt.Fprintf(stderr, "prepared %d resources in %.1fs (%.0f saves/s, %d errors)\n", p.Saved, p.Seconds, p.PerSecond, p.Errors)
	if p.Errors > 0 {
		return p, fmt.Errorf("-prepare: %d saves failed, first: %v", p.Errors, first)
	}
	return p, nil
}

// prepareEach calls do for every index of [from, to) on c goroutines
// (g is the goroutine's number), shows progress counting what it did, and
// stops early after 100 failures; first is the first failure.
func prepareEach(from, to, c int, verb string, stderr io.Writer, do func(g int, i int64) error) (p *PrepareResult, first error) {
	var next, done, failed atomic.Int64
	next.Store(int64(from))
	var firstErr atomic.Pointer[error]
	start := time.Now()
	stop := progress(stderr, verb, to-from, &done, start)
	var wg sync.WaitGroup
	for g := range c {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(to) || failed.Load() > 100 {
					return
				}
				if err := do(g, i); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	sec := time.Since(start).Seconds()
	if e := firstErr.Load(); e != nil {
		first = *e
	}
	return &PrepareResult{From: from, To: to, Saved: done.Load(), Errors: failed.Load(), Seconds: sec, PerSecond: float64(done.Load()) / sec}, first
}

// finish prints res and chooses the exit status.
func finish(o *options, res *Result, stdout io.Writer) (int, error) {
	if o.jsonOut {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		if err := e.Encode(res); err != nil {
			return 1, err
		}
	} else {
		printText(stdout, res)
	}
	if o.md != "" {
		printMarkdown(stdout, o.md, res)
	}
	if res.Server != nil && res.Server.Errors > 0 && !o.allowErrors {
		return 3, fmt.Errorf("%d of %d requests failed", res.Server.Errors, res.Server.Errors+res.Server.OK)
	}
	if res.Server != nil && res.Server.OK == 0 {
		return 1, errors.New("no request succeeded")
	}
	if c := res.Ceiling; c != nil && (c.Errors > 0 || c.OK == 0) {
		// A ceiling that failed measures nothing, and its ratio misleads.
		return 1, fmt.Errorf("the %s failed %d of %d requests", c.Target, c.Errors, c.Errors+c.OK)
	}
	return 0, nil
}

func printText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "op=%s target=%s protocol=%s c=%d size=%d", r.Op, r.Target, r.Protocol, r.Concurrency, r.Size)
	if r.Keys > 0 {
		fmt.Fprintf(w, " keys=%d", r.Keys)
	}
	fmt.Fprintf(w, " d=%gs response=%dB\n", r.Seconds, r.ResponseBytes)
	if r.QuietWaitSeconds > 0 {
		fmt.Fprintf(w, "quiet    waited %.0fs for a quiet machine; others used %.2f cores before the load\n", r.QuietWaitSeconds, r.OthersBefore)
	}
	if r.Attempts > 1 {
		fmt.Fprintf(w, "attempt  %d kept (the quietest: others used %.2f cores on average)\n", r.Attempts, r.OthersCores)
	}
	if p := r.Prepare; p != nil {
		fmt.Fprintf(w, "prepare  %d saved [%d, %d) in %.1fs: %.1f saves/s, %d errors\n", p.Saved, p.From, p.To, p.Seconds, p.PerSecond, p.Errors)
	}
	if r.IndexBytes > 0 {
		fmt.Fprintf(w, "index    %d bytes, %.3f per byte prepared\n", r.IndexBytes, r.IndexPerStored)
	}
	if r.Server == nil {
		return
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, r.Server.row())
	if r.Ceiling != nil {
		fmt.Fprintln(w, r.Ceiling.row())
		fmt.Fprintf(w, "ratio    %.3f of the ceiling's req/s; latency p50 ×%.2f, p99 ×%.2f\n",
			r.Ratio, ratio(r.Server.P50, r.Ceiling.P50), ratio(r.Server.P99, r.Ceiling.P99))
	}
	if c := r.CeilingProcess; c != nil {
		fmt.Fprintln(w, c.row())
		fmt.Fprintf(w, "ratio    %.3f of the ceiling process's req/s; latency p50 ×%.2f, p99 ×%.2f\n",
			r.RatioProcess, ratio(r.Server.P50, c.P50), ratio(r.Server.P99, c.P99))
	}
	if r.ServerCPUMicros > 0 {
		fmt.Fprintf(w, "cpu      server %.0f µs per request (%.2f cores)\n", r.ServerCPUMicros, r.Server.CPU.Server)
	}
	if r.CeilingProcessCPUMicros > 0 {
		fmt.Fprintf(w, "cpu      ceiling process %.0f µs per request (%.2f cores)\n", r.CeilingProcessCPUMicros, r.CeilingProcess.CPU.Server)
	}
	fmt.Fprint(w, r.Server.errorLines())
	if r.Ceiling != nil {
		fmt.Fprint(w, r.Ceiling.errorLines())
	}
	if x := r.RSS; x != nil {
		fmt.Fprintf(w, "rss      pid %d: peak VmRSS %.1f MiB (baseline %.1f, %d samples; peak RssAnon %.1f, RssFile %.1f), VmHWM %.1f MiB (reset: %v)",
			x.PID, x.PeakMiB, x.BaselineMiB, x.Samples, x.PeakAnonMiB, x.PeakFileMiB, x.HWMMiB, x.HWMReset)
		if r.InFlightMiB >= 1 {
			fmt.Fprintf(w, "; in flight %d × %d B = %.1f MiB → peak/in-flight %.2f (RssAnon %.2f)",
				r.Concurrency, r.Size, r.InFlightMiB, max(x.PeakMiB, x.HWMMiB)/r.InFlightMiB, x.PeakAnonMiB/r.InFlightMiB)
		}
		fmt.Fprintln(w)
	}
}

func ratio(a, b Millis) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// mdHeader is the header of the rows printMarkdown prints.
const mdHeader = "| scenario | req/s | p50 | p90 | p99 | max | errors | ceiling req/s | ratio | ceiling p99 | server cores | others' cores | peak RSS |\n" +
	"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"

// printMarkdown prints one row of the README's tables (mdHeader).
func printMarkdown(w io.Writer, label string, r *Result) {
	if r.Server == nil {
		if p := r.Prepare; p != nil {
			fmt.Fprintf(w, "| %s | %.0f saves/s | | | | | %d | | | | | | |\n", label, p.PerSecond, p.Errors)
		}
		return
	}
	s := r.Server
	ceil, rat, ceilP99 := "–", "–", "–"
	if c := r.Ceiling; c != nil {
		ceil, rat, ceilP99 = fmt.Sprintf("%.0f", c.PerSecond), fmt.Sprintf("%.3f", r.Ratio), c.P99.String()
	}
	cores, others := "–", "–"
	if c := s.CPU; c != nil && r.RSS != nil {
		cores = fmt.Sprintf("%.2f", c.Server)
	}
	if r.OthersCores >= 0 {
		others = fmt.Sprintf("%.2f", r.OthersCores)
	}
	rss := "–"
	if x := r.RSS; x != nil {
		rss = fmt.Sprintf("%.0f (anon %.0f) MiB", max(x.PeakMiB, x.HWMMiB), x.PeakAnonMiB)
	}
	fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
		label, s.PerSecond, s.P50, s.P90, s.P99, s.Max, s.Errors, ceil, rat, ceilP99, cores, others, rss)
	if c := r.CeilingProcess; c != nil {
		// The same server slices against the ceiling in its own process:
		// a row of its own, so that the summary and the SVG show both.
		fmt.Fprintf(w, "| %s, ceiling process | %.0f | %s | %s | %s | %s | %d | %.0f | %.3f | %s | %s | %s | %s |\n",
			label, s.PerSecond, s.P50, s.P90, s.P99, s.Max, s.Errors, c.PerSecond, r.RatioProcess, c.P99, cores, others, rss)
	}
}

// parseSize parses 1024, 1KiB, 64KiB, 1MiB, 8MiB (also K, M, KB, MB as
// binary units).
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.Atoi(s)
	return n * mult, err
}

// parseCount parses 10000, 10k, 100k, 1M.
func parseCount(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		s, mult = s[:len(s)-1], 1000
	case strings.HasSuffix(s, "M"):
		s, mult = s[:len(s)-1], 1000000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("bad count")
	}
	return n * mult, nil
}

// progress prints n/total verb and the rate every 10 s until the returned
// channel is closed.
func progress(stderr io.Writer, verb string, total int, n *atomic.Int64, start time.Time) chan struct{} {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				k := n.Load()
				fmt.Fprintf(stderr, "  %d/%d %s, %.0f/s\n", k, total, verb, float64(k)/time.Since(start).Seconds())
			}
		}
	}()
	return done
}
