package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gateway-flood (issue 24): per-tenant fairness of the gateway's in-flight
// budget. Against `resourced gateway` (JWT, server-filesystem behind it,
// perTenant), tenant B calls -tool on -small-file at -read-c for -d alone,
// then again while tenant A calls it on -large-file at -c, in a loop, as
// fast as answers come. A's answers are large (offloaded, or refused by
// its share of the budget); what is measured is whether B keeps being
// served: its p50/p99/max and how many of its calls were refused.

// FloodResult is what gateway-flood measured.
type FloodResult struct {
	abuseHeader
	TenantA string `json:"tenantA"`
	TenantB string `json:"tenantB"`
	// BQuiet and BFlood are tenant B's small calls alone and beside A.
	BQuiet FloodCalls `json:"bQuiet"`
	BFlood FloodCalls `json:"bFlood"`
	// A is tenant A's large calls during the flood (until its last
	// answer, after B's measurement).
	A FloodCalls `json:"a"`
	// RSS is the gateway's during the flood (-pid).
	RSS *RSS `json:"rss,omitempty"`
}

// FloodCalls is one side's calls: their count by outcome (ok, or the
// error kind and the first words of its text; "refused" counts the
// gateway's busy answers) and their latencies.
type FloodCalls struct {
	Calls    int            `json:"calls"`
	Seconds  float64        `json:"seconds"`
	Refused  int            `json:"refused"`
	Errors   int            `json:"errors"`
	Outcomes map[string]int `json:"outcomes"`
	P50      Millis         `json:"p50Ms"`
	P99      Millis         `json:"p99Ms"`
	Max      Millis         `json:"maxMs"`
}

// floodRecorder collects calls' outcomes and latencies from many
// goroutines.
type floodRecorder struct {
	mu    sync.Mutex
	lat   []time.Duration
	out   map[string]int
	start time.Time
}

func newFloodRecorder() *floodRecorder {
	return &floodRecorder{out: map[string]int{}, start: time.Now()}
}

func (r *floodRecorder) add(d time.Duration, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat = append(r.lat, d)
	r.out[outcome]++
}

func (r *floodRecorder) calls() FloodCalls {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.lat)
	c := FloodCalls{Calls: len(r.lat), Seconds: round2(time.Since(r.start).Seconds()), Outcomes: r.out,
		P50: ms(percentile(r.lat, 0.50)), P99: ms(percentile(r.lat, 0.99))}
	if n := len(r.lat); n > 0 {
		c.Max = ms(r.lat[n-1])
	}
	for k, n := range r.out {
		switch {
		case k == "ok":
		case strings.HasPrefix(k, "refused: "):
			c.Refused += n
		default:
			c.Errors += n
		}
	}
	return c
}

// floodOutcome is a call's outcome in a few words: ok, "refused:
// tenant" or "refused: gateway" for the gateway's refusal by its
// in-flight budget (an unavailable that says it did not read the answer,
// and whose bound was full), else outcome's words, cut.
func floodOutcome(r *mcp.CallToolResult, err error) string {
	if err == nil && r.IsError && len(r.Content) > 0 {
		if t, ok := r.Content[0].(*mcp.TextContent); ok && strings.Contains(t.Text, " was not read: ") {
			if strings.Contains(t.Text, "your tenant holds its limit") {
				return "refused: tenant"
			}
			return "refused: gateway"
		}
	}
	o := outcome(r, err)
	return o[:min(len(o), 90)]
}

// floodLoop makes calls of path on cs until stop is closed, recording
// each in rec.
func floodLoop(cs *mcp.ClientSession, tool, path string, timeout time.Duration, stop <-chan struct{}, rec *floodRecorder) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": path}})
		cancel()
		rec.add(time.Since(start), floodOutcome(r, err))
	}
}

func abuseGatewayFlood(o *abuseOptions, stderr io.Writer) (*FloodResult, error) {
	res := &FloodResult{abuseHeader: o.header(), TenantA: o.tenantA, TenantB: o.tenantB}
	connect := func(token string, n int) ([]*mcp.ClientSession, error) {
		var out []*mcp.ClientSession
		for range n {
			cs, err := connectGateway(context.Background(), &gatewayOptions{gateway: o.url, token: token, protocol: o.protocol, timeout: o.probeTimeout})
			if err != nil {
				for _, c := range out {
					c.Close()
				}
				return nil, err
			}
			out = append(out, cs)
		}
		return out, nil
	}
	sa, err := connect(o.tokenA, o.c)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range sa {
			c.Close()
		}
	}()
	sb, err := connect(o.tokenB, o.readC)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range sb {
			c.Close()
		}
	}()
	// One call each first: the tool answers, and B's small file is small.
	if r, err := sb[0].CallTool(context.Background(), &mcp.CallToolParams{Name: o.tool, Arguments: map[string]any{"path": o.smallFile}}); err != nil || r.IsError {
		return nil, fmt.Errorf("tenant B's first call of %s %s: %s", o.tool, o.smallFile, outcome(r, err))
	}
	runB := func(d time.Duration) FloodCalls {
		rec := newFloodRecorder()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, cs := range sb {
			wg.Go(func() { floodLoop(cs, o.tool, o.smallFile, o.probeTimeout, stop, rec) })
		}
		time.Sleep(d)
		close(stop)
		wg.Wait()
		return rec.calls()
	}
	fmt.Fprintf(stderr, "gateway-flood: tenant B alone, %d at once, %s\n", o.readC, o.d)
	res.BQuiet = runB(o.d)
	var sampler *rssSampler
	if o.pid > 0 {
		if sampler, err = startRSS(o.pid); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(stderr, "gateway-flood: tenant A floods %s at %d, %s of warmup, then tenant B for %s\n", o.largeFile, o.c, o.warmup, o.d)
	recA := newFloodRecorder()
	stopA := make(chan struct{})
	var wgA sync.WaitGroup
	for _, cs := range sa {
		wgA.Go(func() {
			floodLoop(cs, o.tool, o.largeFile, o.timeout, stopA, recA)
		})
	}
	time.Sleep(o.warmup)
	res.BFlood = runB(o.d)
	close(stopA)
	wgA.Wait()
	res.A = recA.calls()
	if sampler != nil {
		r := sampler.Stop()
		res.RSS = &r
	}
	if res.A.Calls == 0 {
		return nil, errors.New("tenant A made no call")
	}
	return res, nil
}
