package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/resourced/resourced/checker"
	"github.com/resourced/resourced/server/hostrun"
)

// Exit codes of resourced check.
const (
	checkOK      = 0 // every normative row passed
	checkFailed  = 1 // a normative row failed
	checkCannot  = 2 // usage error, or the server could not be reached or handshaken
	checkCommand = "resourced check --url URL [--header \"Name: value\"]... [--protocol auto|2026-07-28|2025-11-25] [--json FILE] [--markdown FILE] [--timeout 30s] [--list]\n" +
		"       resourced check --new-host-run --url URL --header \"Authorization: Bearer TOKEN\"\n" +
		"       resourced check --host-run ID|PAGE-URL [--url URL] [--json FILE] [--markdown FILE]"
)

// checkHint is the second line of a usage error, as parseFlags writes it
// for every command.
const checkHint = "run 'resourced check --help' for its flags"

// checkSays writes a message of resourced check to stderr with the prefix
// of every command's messages, "resourced: check: ".
func checkSays(stderr io.Writer, format string, a ...any) {
	fmt.Fprintf(stderr, "resourced: check: "+format+"\n", a...)
}

// check runs `resourced check`; its error carries the exit code (check
// needs 1 and 2 apart) and no message: runCheck has said what happened.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if code := runCheck(ctx, args, stdout, stderr); code != checkOK {
		return &exitError{code: code}
	}
	return nil
}

// headerFlag collects repeated --header "Name: value" flags.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" } // never print values: they hold tokens

func (f *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
		return errors.New(`want "Name: value"`)
	}
	if strings.ContainsAny(value, "\r\n") {
		return errors.New("a header value cannot contain a line break")
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, strings.TrimSpace(value))
	return nil
}

// runCheck is `resourced check` with its exit code.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nChecks any MCP server over Streamable HTTP: universal rows for every server, store-contract rows\n"+
			"for servers with resourced's tools, acceptance-sheet rows for servers with the fixture tools.\n"+
			"Exit code 0: every normative row passes; 1: a normative row fails; 2: usage or connection error.\n\n", checkCommand)
		fs.PrintDefaults()
	}
	var (
		hdr      headerFlag
		opts     checker.Options
		jsonOut  string
		mdOut    string
		listRows bool
		hostRun  string
		newRun   bool
	)
	fs.StringVar(&opts.URL, "url", "", "MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
	fs.Var(&hdr, "header", `header sent with every request, "Name: value" (repeatable); values are never printed`)
	fs.StringVar(&opts.Protocol, "protocol", checker.ProtocolAuto, "protocol version: auto, 2026-07-28 or 2025-11-25")
	fs.StringVar(&jsonOut, "json", "", `write the report as JSON to FILE ("-": stdout, the table then goes to stderr)`)
	fs.StringVar(&mdOut, "markdown", "", "write the report as Markdown to FILE")
	durationVar(fs, &opts.Timeout, "timeout", 30*time.Second, "timeout of each request, a `duration` such as 30s")
	fs.BoolVar(&listRows, "list", false, "print the catalogue of rows and exit")
	fs.StringVar(&hostRun, "host-run", "", "print the host run ID (or its page URL) of a resourced with fixtures: what the host did, row by row (docs/fixtures.md)")
	fs.BoolVar(&newRun, "new-host-run", false, "start a host run on the resourced at --url (the token's tenant) and print its URLs")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return checkOK
		}
		fmt.Fprintln(stderr, "resourced:", err) // "check: <problem>" and where the flags are, as every command
		return checkCannot
	}
	if listRows {
		version := opts.Protocol
		if version == checker.ProtocolAuto {
			version = checker.V2026
		}
		for _, row := range checker.Catalogue(version) {
			fmt.Fprintf(stdout, "%-4s  %-10s  %-10s  %s  [%s]\n", row.ID, row.Layer, row.Kind, row.Check, row.Basis)
		}
		return checkOK
	}
	if hostRun != "" || newRun {
		return runHostRun(ctx, hostRun, newRun, opts.URL, hdr.h, opts.Timeout, jsonOut, mdOut, stdout, stderr)
	}
	if opts.URL == "" {
		checkSays(stderr, "--url is required (the MCP endpoint, e.g. http://127.0.0.1:8765/mcp)\n%s", checkHint)
		return checkCannot
	}
	opts.Header = hdr.h
	opts.Version = version
	// On Ctrl-C or SIGTERM the run stops, still deletes what it stored, and
	// exits 2.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := checker.Run(ctx, opts)
	if err != nil {
		checkSays(stderr, "%v", err)
		return checkCannot
	}
	if ctx.Err() != nil {
		checkSays(stderr, "interrupted; the report is incomplete")
		rep.WriteText(stderr)
		return checkCannot
	}
	table := stdout
	if jsonOut == "-" {
		table = stderr
		if err := rep.WriteJSON(stdout); err != nil {
			checkSays(stderr, "%v", err)
			return checkCannot
		}
	} else if jsonOut != "" {
		if err := writeFile(jsonOut, rep.WriteJSON); err != nil {
			checkSays(stderr, "%v", err)
			return checkCannot
		}
	}
	if mdOut != "" {
		if err := writeFile(mdOut, rep.WriteMarkdown); err != nil {
			checkSays(stderr, "%v", err)
			return checkCannot
		}
	}
	if err := rep.WriteText(table); err != nil {
		return checkCannot
	}
	if rep.Failed() {
		return checkFailed
	}
	return checkOK
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runHostRun is `resourced check --new-host-run` and `--host-run`: it
// starts a host run, or fetches one's report (its JSON) and prints it.
// Exit code 1 when a normative row of the run failed.
func runHostRun(ctx context.Context, run string, create bool, rawURL string, hdr http.Header, timeout time.Duration,
	jsonOut, mdOut string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		checkSays(stderr, format, a...)
		return checkCannot
	}
	if create && run != "" {
		return fail("--new-host-run and --host-run exclude each other")
	}
	base, id, err := hostRunTarget(run, rawURL)
	if err != nil {
		return fail("%v\n%s", err, checkHint)
	}
	client := &http.Client{Timeout: timeout}
	do := func(method, u string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, err
		}
		for k, vs := range hdr {
			req.Header[k] = vs
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, redactRun(u), resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return b, nil
	}
	if create {
		b, err := do(http.MethodPost, base+"/fixtures/runs")
		if err != nil {
			return fail("%v", err)
		}
		var c hostrun.Created
		if err := json.Unmarshal(b, &c); err != nil {
			return fail("the server's answer is not a host run: %v", err)
		}
		fmt.Fprintf(stdout, "host run %s (expires %s)\n  point the host at: %s (with the same token)\n  page:     %s\n  terminal: resourced check --host-run %s --url %s\n",
			c.ID, c.Expires.Format(time.RFC3339), c.Endpoint, c.Page, c.ID, base)
		return checkOK
	}
	b, err := do(http.MethodGet, base+"/fixtures/runs/"+id+"/report.json")
	if err != nil {
		return fail("%v", err)
	}
	var rep hostrun.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fail("the server's answer is not a host run report: %v", err)
	}
	if jsonOut != "" {
		write := func(w io.Writer) error { _, err := w.Write(b); return err }
		if jsonOut == "-" {
			write(stdout)
		} else if err := writeFile(jsonOut, write); err != nil {
			return fail("%v", err)
		}
	}
	if mdOut != "" {
		if err := writeFile(mdOut, rep.WriteMarkdown); err != nil {
			return fail("%v", err)
		}
	}
	table := stdout
	if jsonOut == "-" {
		table = stderr
	}
	if err := rep.WriteText(table); err != nil {
		return checkCannot
	}
	for _, r := range rep.Rows {
		if r.Kind == hostrun.KindNormative && r.Result == hostrun.ResultFail {
			return checkFailed
		}
	}
	return checkOK
}

// hostRunTarget returns the server's base URL and the run id from
// --host-run (an id, or a URL of the run's page or endpoint) and --url
// (the server, its /mcp endpoint or a run's endpoint).
func hostRunTarget(run, rawURL string) (base, id string, err error) {
	if strings.Contains(run, "://") {
		rawURL, run = run, ""
	}
	if rawURL == "" {
		return "", "", errors.New("--url is required (the resourced server, e.g. http://127.0.0.1:8765)")
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", fmt.Errorf("%q is not an http(s) URL", redactRun(rawURL))
	}
	p := strings.TrimSuffix(u.Path, "/")
	for _, prefix := range []string{"/fixtures/runs/", "/mcp/runs/"} {
		if i := strings.Index(p, prefix); i >= 0 {
			rest := p[i+len(prefix):]
			rid, _, _ := strings.Cut(rest, "/")
			if run == "" {
				run = rid
			}
			p = p[:i]
		}
	}
	p = strings.TrimSuffix(p, "/mcp")
	u.Path, u.RawQuery, u.Fragment = p, "", ""
	if run != "" && !validRunID(run) {
		return "", "", errors.New("--host-run: a run id is 32 lowercase hex digits (POST /fixtures/runs or --new-host-run prints it)")
	}
	return strings.TrimSuffix(u.String(), "/"), run, nil
}

func validRunID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// redactRun hides a run id (the run's capability) in a URL for messages.
func redactRun(s string) string {
	for _, prefix := range []string{"/fixtures/runs/", "/mcp/runs/"} {
		if i := strings.Index(s, prefix); i >= 0 {
			rest := s[i+len(prefix):]
			_, tail, _ := strings.Cut(rest, "/")
			if tail != "" {
				tail = "/" + tail
			}
			s = s[:i+len(prefix)] + "…" + tail
		}
	}
	return s
}
