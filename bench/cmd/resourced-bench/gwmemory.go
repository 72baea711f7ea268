package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gwmemory (issue 24): what large upstream answers cost the gateway. It
// calls read_text_file through `resourced gateway` (server-filesystem
// behind it, over stdio) for each -files entry in turn, then -concurrent
// calls at once of -concurrent-file, and reports each call's outcome and
// time and the gateway's peak RSS during each phase (-pid).

// GatewayMemory is what gwmemory measured.
type GatewayMemory struct {
	Date     string            `json:"date"`
	Gateway  string            `json:"gateway"`
	Protocol string            `json:"protocol"`
	Phases   []GatewayMemPhase `json:"phases"`
}

// GatewayMemPhase is one file read by one or more calls at once.
type GatewayMemPhase struct {
	File      string   `json:"file"`
	FileBytes int64    `json:"fileBytes"`
	Calls     int      `json:"calls"`
	Outcomes  []string `json:"outcomes"` // ok (offloaded), or errorKind: text
	Seconds   float64  `json:"seconds"`  // until the last answer
	RSS       RSS      `json:"rss"`
	// GrowthPerAnswerByte is (peak RSS - baseline) / the bytes the
	// upstream sent for the calls (server-filesystem sends a file's text
	// twice: content and structuredContent).
	GrowthPerAnswerByte float64 `json:"growthPerAnswerByte"`
}

func runGatewayMemory(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("gwmemory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		gw, protocol, tool, files, concFile string
		pid, conc                           int
		timeout                             time.Duration
	)
	fs.StringVar(&gw, "gateway", "", "the gateway's /mcp URL (auth none)")
	fs.StringVar(&protocol, "protocol", "2025-11-25", "MCP protocol version")
	fs.StringVar(&tool, "tool", "fs__read_text_file", "the read tool at the gateway")
	fs.StringVar(&files, "files", "", "comma-separated paths (as the upstream serves them) read one call each, in turn")
	fs.StringVar(&concFile, "concurrent-file", "", "a path read by -concurrent calls at once")
	fs.IntVar(&conc, "concurrent", 4, "calls at once of -concurrent-file")
	fs.IntVar(&pid, "pid", 0, "the gateway's process id (its RSS is sampled)")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "per call")
	if err := fs.Parse(args); err != nil {
		return 1, err
	}
	if gw == "" || pid == 0 || (files == "" && concFile == "") {
		return 1, errors.New("gwmemory: want -gateway, -pid and -files or -concurrent-file")
	}
	ctx := context.Background()
	o := &gatewayOptions{gateway: gw, protocol: protocol, timeout: timeout}
	res := &GatewayMemory{Date: time.Now().UTC().Format(time.RFC3339), Gateway: gw, Protocol: protocol}
	phase := func(path string, n int) error {
		sessions := make([]*mcp.ClientSession, n)
		for i := range sessions {
			cs, err := connectGateway(ctx, o)
			if err != nil {
				return err
			}
			defer cs.Close()
			sessions[i] = cs
		}
		size, err := fileSize(path)
		if err != nil {
			return err
		}
		s, err := startRSS(pid)
		if err != nil {
			return err
		}
		start := time.Now()
		out := make([]string, n)
		var wg sync.WaitGroup
		for i, cs := range sessions {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				r, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": path}})
				out[i] = outcome(r, err)
			})
		}
		wg.Wait()
		p := GatewayMemPhase{File: path, FileBytes: size, Calls: n, Outcomes: out, Seconds: time.Since(start).Seconds()}
		time.Sleep(200 * time.Millisecond) // the last sample after the answers
		p.RSS = s.Stop()
		p.GrowthPerAnswerByte = (p.RSS.PeakMiB - p.RSS.BaselineMiB) * (1 << 20) / float64(2*size*int64(n))
		res.Phases = append(res.Phases, p)
		fmt.Fprintf(stderr, "gwmemory: %s x%d: %v in %.1fs, RSS %.0f -> %.0f MiB (%.2f per answer byte)\n",
			path, n, out, p.Seconds, p.RSS.BaselineMiB, p.RSS.PeakMiB, p.GrowthPerAnswerByte)
		return nil
	}
	for _, f := range strings.Split(files, ",") {
		if f = strings.TrimSpace(f); f != "" {
			if err := phase(f, 1); err != nil {
				return 1, err
			}
		}
	}
	if concFile != "" {
		if err := phase(concFile, conc); err != nil {
			return 1, err
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0, nil
}

// outcome is a call's answer in a few words.
func outcome(r *mcp.CallToolResult, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()[:min(len(err.Error()), 120)]
	case !r.IsError:
		return "ok"
	}
	kind := ""
	if m, ok := r.StructuredContent.(map[string]any); ok {
		kind, _ = m["errorKind"].(string)
	}
	text := ""
	if len(r.Content) > 0 {
		if t, ok := r.Content[0].(*mcp.TextContent); ok {
			text = t.Text[:min(len(t.Text), 100)]
		}
	}
	return kind + ": " + text
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
