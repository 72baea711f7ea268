package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scenarios of issue 24: a tenant's costly queries and slow uploads.
//
//	query    tenant A runs the quadratic query $..[?count($..*) > 0] over [{"k":0},…] at N=4000 and at the
//	         250 000-value cap, two at a time; tenant B runs $.a[0] meanwhile
//	uploads  tenant A holds -conns slow uploads; tenant B uploads 11 bytes

// QueryResult is what query measured.
type QueryResult struct {
	abuseHeader
	TenantA string `json:"tenantA"`
	TenantB string `json:"tenantB"`
	// Heavy is tenant A's query over each body: its answer, its time, and
	// the server's CPU from the call until the server is idle again.
	Heavy []HeavyQuery `json:"heavy"`
	// BQuiet and BLoaded are tenant B's $.a[0] alone and while A's two
	// queries run.
	BQuiet  Summary `json:"bQuiet"`
	BLoaded Summary `json:"bLoaded"`
}

// HeavyQuery is one of tenant A's costly queries.
type HeavyQuery struct {
	Objects   int      `json:"objects"`
	BodyBytes int      `json:"bodyBytes"`
	Concur    int      `json:"concurrent"`
	Answers   []string `json:"answers"`
	Seconds   float64  `json:"seconds"` // until the last answer
	// CPUSeconds is the server's CPU from the calls until it was idle
	// again (at most -timeout); CPUUntilAnswer that until the last answer.
	CPUSeconds     *float64 `json:"cpuSeconds,omitempty"`
	CPUUntilAnswer *float64 `json:"cpuUntilAnswerSeconds,omitempty"`
}

func quadraticJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k":%d}`, i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func queryArgs(uri, path string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"uri":`)
	writeJSONString(&b, uri)
	b.WriteString(`,"path":`)
	writeJSONString(&b, path)
	b.WriteString(`,"maxMatches":1}`)
	return b.Bytes()
}

// answerOf is a tools/call answer in a few words: "ok", or the start of
// its first text item (a failure's "<errorKind>: <message>").
func answerOf(x exchange) string {
	if x.err == "" && x.status == http.StatusOK {
		return "ok"
	}
	s := x.err
	if _, rest, ok := strings.Cut(s, `"text":"`); ok {
		s = rest
	}
	return s[:min(len(s), 160)]
}

func abuseQuery(o *abuseOptions, stderr io.Writer) (*QueryResult, error) {
	res := &QueryResult{abuseHeader: o.header(), TenantA: o.tenantA, TenantB: o.tenantB}
	mA, err := newMCPRequest(o.protocol, o.tokenA)
	if err != nil {
		return nil, err
	}
	mB, err := newMCPRequest(o.protocol, o.tokenB)
	if err != nil {
		return nil, err
	}
	light := newTarget("setup", o.url, 1, 5*time.Minute)
	save := func(m *mcpRequest, tenant, path string, body []byte) (string, error) {
		x := newWorkers(1)[0].doSave(light, m, path, "application/json", body)
		if x.err != "" || x.status != http.StatusOK {
			return "", fmt.Errorf("saving %s: %s %d", path, x.err, x.status)
		}
		return "report://" + tenant + "/" + path, nil
	}
	uB, err := save(mB, o.tenantB, o.reportDir+"/b.json", []byte(`{"a":[7,8]}`))
	if err != nil {
		return nil, err
	}
	tB := newTarget("tenantB", o.url, 1, o.probeTimeout)
	probeB := &fixedCall{m: mB, name: "query_resource", args: queryArgs(uB, "$.a[0]")}
	wsB := newWorkers(1)
	res.BQuiet = summarize("bQuiet", runSlice(tB, mB, probeB, wsB, o.d))
	var loaded *stats
	for _, n := range []int{4000, 250_000 / 3} {
		body := quadraticJSON(n)
		uA, err := save(mA, o.tenantA, fmt.Sprintf("%s/a-%d.json", o.reportDir, n), body)
		if err != nil {
			return nil, err
		}
		h := HeavyQuery{Objects: n, BodyBytes: len(body), Concur: 2}
		// A's two queries alone (the server's CPU is theirs), then again
		// while B's probe runs (B's latencies).
		for _, withB := range []bool{false, true} {
			fmt.Fprintf(stderr, "query: tenant A runs 2 × the quadratic query over %d objects (tenant B probing: %v)\n", n, withB)
			cpu0, _ := procCPU(strconv.Itoa(o.pid))
			tA := newTarget("tenantA", o.url, 2, o.timeout)
			start := time.Now()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var answers []string
			for i, w := range newWorkers(2) {
				w.id += 1<<10 + i<<8
				wg.Go(func() {
					x := w.do(tA, mA, &fixedCall{m: mA, name: "query_resource", args: queryArgs(uA, `$..[?count($..*) > 0]`)})
					mu.Lock()
					answers = append(answers, answerOf(x))
					mu.Unlock()
				})
			}
			if withB {
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				s := runSliceUntil(tB, mB, probeB, wsB, done, o.d)
				if loaded == nil {
					loaded = s
				} else {
					loaded.merge(s)
				}
				wg.Wait()
				continue
			}
			wg.Wait()
			h.Answers, h.Seconds = answers, time.Since(start).Seconds()
			if o.pid > 0 {
				if c, err := procCPU(strconv.Itoa(o.pid)); err == nil {
					a := round2(c - cpu0)
					h.CPUUntilAnswer = &a
				}
				c := waitCPUIdle(o.pid, cpu0, time.Now().Add(o.timeout))
				h.CPUSeconds = &c
			}
		}
		slices.Sort(h.Answers)
		res.Heavy = append(res.Heavy, h)
	}
	res.BLoaded = summarize("bLoaded", loaded)
	return res, nil
}

// runSliceUntil runs op at the workers' concurrency until done is closed,
// for at least min.
func runSliceUntil(t *target, m *mcpRequest, op op, ws []*worker, done <-chan struct{}, least time.Duration) *stats {
	start := time.Now()
	s := runSlice(t, m, op, ws, least)
	for {
		select {
		case <-done:
			return s
		default:
		}
		s.merge(runSlice(t, m, op, ws, 200*time.Millisecond))
		if time.Since(start) > 10*time.Minute {
			return s
		}
	}
}

// UploadsResult is what uploads measured.
type UploadsResult struct {
	abuseHeader
	TenantA string `json:"tenantA"`
	TenantB string `json:"tenantB"`
	// Slow is tenant A's slow uploads: how many the server took (held
	// open) and what it answered the others at once.
	Slow    OpenStats      `json:"open"`
	Held    int            `json:"held"`
	Answers map[string]int `json:"answers"`
	// B is tenant B's 11-byte upload meanwhile: its status and time.
	BStatus int     `json:"bStatus"`
	BMs     float64 `json:"bMs"`
	BBody   string  `json:"bBody"`
}

func abuseUploads(o *abuseOptions, stderr io.Writer) (*UploadsResult, error) {
	res := &UploadsResult{abuseHeader: o.header(), TenantA: o.tenantA, TenantB: o.tenantB, Answers: map[string]int{}}
	base := strings.TrimSuffix(o.url, "/mcp")
	hA := http.Header{"Authorization": {"Bearer " + o.tokenA}}
	fmt.Fprintf(stderr, "uploads: tenant A opens %d uploads announcing %d bytes and sending 1\n", o.conns, o.contentLength)
	held, st := openHeld(o.hostPort, o.conns, 0, func(i int) []byte {
		return rawRequest(http.MethodPut, fmt.Sprintf("/v1/resources/report/%s/slow-%d", o.reportDir, i), o.hostPort, hA, o.contentLength, []byte("x"))
	}, nil)
	defer closeHeld(held)
	res.Slow = st
	// Wait for the answers the server gives at once.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Go(func() {
			_ = h.c.SetReadDeadline(time.Now().Add(o.settle))
			resp, err := http.ReadResponse(bufio.NewReader(h.c), nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Held++
				return
			}
			res.Answers[resp.Status]++
		})
	}
	wg.Wait()
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/resources/report/"+o.reportDir+"/b", strings.NewReader("hello world"))
	req.Header.Set("Authorization", "Bearer "+o.tokenB)
	start := time.Now()
	resp, err := (&http.Client{Timeout: o.probeTimeout}).Do(req)
	res.BMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		res.BBody = err.Error()
		return res, nil
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	res.BStatus, res.BBody = resp.StatusCode, string(b[:min(len(b), 200)])
	return res, nil
}
