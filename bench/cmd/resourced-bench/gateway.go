package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Gateway mode: `resourced-bench gateway` measures `resourced gateway`
// against the same upstream called directly, with the go-sdk client on
// both sides (issue 15, "Measured"):
//
//   - pass-through: one small tools/call (-tool, -args) made -n times one
//     after another, alternating gateway and direct in -rounds slices, and
//     the ratio of their p50s;
//   - large: read_text_file of -file (a 2 MB log) through the gateway
//     (which offloads it to a link) and directly from server-filesystem
//     over stdio (-fs-command, -fs-args), -large-n times each, alternated:
//     the bytes of the result that reach the caller against the file's,
//     and the median time to the answer against the direct one.
//
// The direct pass-through side is a Streamable HTTP session with the
// upstream (-direct, server-everything); the gateway side speaks -protocol
// to -gateway, with -token if its auth wants one. Every call is bounded
// by -timeout. The figures are printed as one JSON object; the exit
// status is 0 when every call succeeded, 1 otherwise.

type gatewayOptions struct {
	gateway, direct, token, protocol string
	tool, gatewayTool, args          string
	largeTool                        string
	n, rounds, largeN                int
	fsCommand                        string
	fsArgs                           []string
	file                             string
	timeout                          time.Duration
	jsonOut, proxyFloor              bool
}

// GatewayResult is what one gateway run measured.
type GatewayResult struct {
	Protocol    string              `json:"protocol"`
	PassThrough *GatewayPassThrough `json:"passThrough,omitempty"`
	Large       *GatewayLarge       `json:"large,omitempty"`
}

// GatewayPassThrough compares one small call through the gateway and
// directly.
type GatewayPassThrough struct {
	Tool     string `json:"tool"`
	Calls    int    `json:"callsEach"`
	Rounds   int    `json:"rounds"`
	Gateway  Millis `json:"gatewayP50Ms"`
	Direct   Millis `json:"directP50Ms"`
	GatewayP Millis `json:"gatewayP99Ms"`
	DirectP  Millis `json:"directP99Ms"`
	// P50Ratio is gateway p50 / direct p50 (issue 15 asks ≤ 1.3).
	P50Ratio float64 `json:"p50Ratio"`
	// With -proxy-floor: p50 through a plain reverse proxy in a process
	// of its own (proxyfloor.go), its ratio to direct (the floor of any
	// hop) and the gateway's to it (what the gateway adds beyond a hop).
	Proxy          Millis  `json:"proxyP50Ms,omitempty"`
	ProxyRatio     float64 `json:"proxyP50Ratio,omitempty"`
	GatewayOverHop float64 `json:"gatewayOverProxy,omitempty"`
}

// GatewayLarge compares read_text_file of one large file.
type GatewayLarge struct {
	File          string  `json:"file"`
	OriginalBytes int64   `json:"originalBytes"`
	GatewayBytes  int     `json:"gatewayResultBytes"`
	DirectBytes   int     `json:"directResultBytes"`
	BytesRatio    float64 `json:"bytesRatio"` // gateway result / original
	Calls         int     `json:"callsEach"`
	Gateway       Millis  `json:"gatewayMedianMs"`
	Direct        Millis  `json:"directMedianMs"`
	TimeRatio     float64 `json:"timeRatio"` // gateway / direct
	ReadBack      Millis  `json:"readBackMedianMs"`
	Link          string  `json:"link"`
}

func runGateway(args []string, stdout, stderr io.Writer) (int, error) {
	o := &gatewayOptions{}
	fs := flag.NewFlagSet("resourced-bench gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var fsArgs string
	fs.StringVar(&o.gateway, "gateway", "", "the gateway's MCP endpoint (required)")
	fs.StringVar(&o.direct, "direct", "", "pass-through: the upstream's own Streamable HTTP endpoint (server-everything); empty skips it")
	fs.StringVar(&o.token, "token", os.Getenv("RESOURCED_TOKEN"), "bearer token for the gateway (default $RESOURCED_TOKEN); empty sends none")
	fs.StringVar(&o.protocol, "protocol", v2026, "protocol version spoken to the gateway")
	fs.StringVar(&o.tool, "tool", "echo", "pass-through: the upstream tool to call")
	fs.StringVar(&o.gatewayTool, "gateway-tool", "", "pass-through: its name at the gateway (default -tool; upstream__tool with several upstreams)")
	fs.StringVar(&o.args, "args", `{"message":"ping"}`, "pass-through: the tool's arguments as JSON")
	fs.IntVar(&o.n, "n", 1000, "pass-through: calls on each side")
	fs.IntVar(&o.rounds, "rounds", 10, "pass-through: alternate gateway and direct in this many slices")
	fs.StringVar(&o.fsCommand, "fs-command", "", "large: command that starts server-filesystem over stdio for the direct side; empty skips the large case")
	fs.StringVar(&fsArgs, "fs-args", "", "large: its arguments, separated by spaces")
	fs.StringVar(&o.file, "file", "", "large: the file to read_text_file (inside the served directory)")
	fs.StringVar(&o.largeTool, "large-tool", "read_text_file", "large: the tool's name at the gateway")
	fs.IntVar(&o.largeN, "large-n", 5, "large: calls on each side")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "per-call timeout")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as one JSON line")
	fs.BoolVar(&o.proxyFloor, "proxy-floor", false, "pass-through: also call -direct through a plain reverse proxy in a process of its own, in the same alternation: the floor of one extra hop")
	if err := fs.Parse(args); err != nil {
		return 1, err
	}
	o.fsArgs = strings.Fields(fsArgs)
	if o.gatewayTool == "" {
		o.gatewayTool = o.tool
	}
	switch {
	case o.gateway == "":
		return 1, errors.New("gateway: -gateway is required")
	case o.direct == "" && o.fsCommand == "":
		return 1, errors.New("gateway: nothing to measure: give -direct and/or -fs-command")
	case o.fsCommand != "" && o.file == "":
		return 1, errors.New("gateway: -fs-command needs -file")
	case o.proxyFloor && o.direct == "":
		return 1, errors.New("gateway: -proxy-floor needs -direct")
	case o.n < 1 || o.rounds < 1 || o.largeN < 1:
		return 1, errors.New("gateway: -n, -rounds and -large-n must be at least 1")
	}
	ctx := context.Background()
	res := &GatewayResult{Protocol: o.protocol}
	gw, err := connectGateway(ctx, o)
	if err != nil {
		return 1, err
	}
	defer gw.Close()
	if o.direct != "" {
		if res.PassThrough, err = o.passThrough(ctx, gw); err != nil {
			return 1, err
		}
	}
	if o.fsCommand != "" {
		if res.Large, err = o.large(ctx, gw); err != nil {
			return 1, err
		}
	}
	enc := json.NewEncoder(stdout)
	if !o.jsonOut {
		enc.SetIndent("", "  ")
	}
	return 0, enc.Encode(res)
}

func benchClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "resourced-bench", Version: "1"}, nil)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func connectGateway(ctx context.Context, o *gatewayOptions) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: o.gateway}
	if o.token != "" {
		tr.HTTPClient = &http.Client{Transport: bearer{token: o.token, next: http.DefaultTransport}}
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cs, err := benchClient().Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: o.protocol})
	if err != nil {
		return nil, fmt.Errorf("connecting to the gateway %s: %w", o.gateway, err)
	}
	return cs, nil
}

// call makes one tools/call and returns its duration and the result's
// JSON size.
func call(ctx context.Context, cs *mcp.ClientSession, timeout time.Duration, tool string, args any) (time.Duration, *mcp.CallToolResult, int, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	r, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	d := time.Since(start)
	if err != nil {
		return d, nil, 0, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	if r.IsError {
		b, _ := json.Marshal(r.Content)
		return d, r, 0, fmt.Errorf("tools/call %s: isError: %.300s", tool, b)
	}
	b, _ := json.Marshal(r)
	return d, r, len(b), nil
}

func (o *gatewayOptions) passThrough(ctx context.Context, gw *mcp.ClientSession) (*GatewayPassThrough, error) {
	var args map[string]any
	if err := json.Unmarshal([]byte(o.args), &args); err != nil {
		return nil, fmt.Errorf("-args: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	direct, err := benchClient().Connect(cctx, &mcp.StreamableClientTransport{Endpoint: o.direct}, nil)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("connecting to the upstream %s: %w", o.direct, err)
	}
	defer direct.Close()
	sides := []*mcp.ClientSession{gw, direct}
	var proxied *mcp.ClientSession
	if o.proxyFloor {
		url, stop, err := startProxyFloor(o.direct)
		if err != nil {
			return nil, err
		}
		defer stop()
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		proxied, err = benchClient().Connect(cctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("connecting through the proxy %s: %w", url, err)
		}
		defer proxied.Close()
		sides = append(sides, proxied)
	}
	// Warm every path (connections, the gateway's upstream session).
	name := func(cs *mcp.ClientSession) string {
		if cs == gw {
			return o.gatewayTool
		}
		return o.tool
	}
	for i := 0; i < 20; i++ {
		for _, cs := range sides {
			if _, _, _, err := call(ctx, cs, o.timeout, name(cs), args); err != nil {
				return nil, err
			}
		}
	}
	took := map[*mcp.ClientSession][]time.Duration{}
	per := (o.n + o.rounds - 1) / o.rounds
	for r := 0; r < o.rounds; r++ {
		// Rotate which side goes first, so none always follows another.
		for k := range sides {
			cs := sides[(k+r)%len(sides)]
			for i := 0; i < per; i++ {
				t, _, _, err := call(ctx, cs, o.timeout, name(cs), args)
				if err != nil {
					return nil, err
				}
				took[cs] = append(took[cs], t)
			}
		}
	}
	g, d := took[gw], took[direct]
	slices.Sort(g)
	slices.Sort(d)
	p := &GatewayPassThrough{Tool: o.gatewayTool, Calls: len(g), Rounds: o.rounds,
		Gateway: ms(percentile(g, 0.5)), Direct: ms(percentile(d, 0.5)),
		GatewayP: ms(percentile(g, 0.99)), DirectP: ms(percentile(d, 0.99))}
	if p.Direct > 0 {
		p.P50Ratio = float64(p.Gateway) / float64(p.Direct)
	}
	if x := took[proxied]; proxied != nil {
		slices.Sort(x)
		p.Proxy = ms(percentile(x, 0.5))
		if p.Direct > 0 && p.Proxy > 0 {
			p.ProxyRatio = float64(p.Proxy) / float64(p.Direct)
			p.GatewayOverHop = float64(p.Gateway) / float64(p.Proxy)
		}
	}
	return p, nil
}

func (o *gatewayOptions) large(ctx context.Context, gw *mcp.ClientSession) (*GatewayLarge, error) {
	st, err := os.Stat(o.file)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	cmd := exec.Command(o.fsCommand, o.fsArgs...)
	direct, err := benchClient().Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("starting %s over stdio: %w", o.fsCommand, err)
	}
	defer direct.Close()
	args := map[string]any{"path": o.file}
	l := &GatewayLarge{File: o.file, OriginalBytes: st.Size(), Calls: o.largeN}
	var g, d, rb []time.Duration
	// One unmeasured call each first (process start, caches).
	if _, _, _, err := call(ctx, gw, o.timeout, o.largeTool, args); err != nil {
		return nil, err
	}
	if _, _, _, err := call(ctx, direct, o.timeout, "read_text_file", args); err != nil {
		return nil, err
	}
	for i := 0; i < o.largeN; i++ {
		t, r, n, err := call(ctx, gw, o.timeout, o.largeTool, args)
		if err != nil {
			return nil, err
		}
		g, l.GatewayBytes = append(g, t), n
		var link *mcp.ResourceLink
		for _, c := range r.Content {
			if rl, ok := c.(*mcp.ResourceLink); ok {
				link = rl
			}
		}
		if link == nil {
			return nil, fmt.Errorf("the gateway did not offload %s (%d result bytes): no resource_link", o.file, n)
		}
		l.Link = link.URI
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, o.timeout)
		rr, err := gw.ReadResource(rctx, &mcp.ReadResourceParams{URI: link.URI})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading back %s: %w", link.URI, err)
		}
		rb = append(rb, time.Since(start))
		if len(rr.Contents) != 1 || int64(len(rr.Contents[0].Text)) != st.Size() {
			return nil, fmt.Errorf("reading back %s: not the file's %d bytes", link.URI, st.Size())
		}
		t, _, n, err = call(ctx, direct, o.timeout, "read_text_file", args)
		if err != nil {
			return nil, err
		}
		d, l.DirectBytes = append(d, t), n
	}
	for _, s := range [][]time.Duration{g, d, rb} {
		slices.Sort(s)
	}
	l.Gateway, l.Direct, l.ReadBack = ms(percentile(g, 0.5)), ms(percentile(d, 0.5)), ms(percentile(rb, 0.5))
	l.BytesRatio = float64(l.GatewayBytes) / float64(l.OriginalBytes)
	if l.Direct > 0 {
		l.TimeRatio = float64(l.Gateway) / float64(l.Direct)
	}
	return l, nil
}
