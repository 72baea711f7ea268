package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/resourced/resourced/checker"
)

// Exit codes of resourced check.
const (
	checkOK      = 0 // every normative row passed
	checkFailed  = 1 // a normative row failed
	checkCannot  = 2 // usage error, or the server could not be reached or handshaken
	checkCommand = "resourced check --url URL [--header \"Name: value\"]... [--protocol auto|2026-07-28|2025-11-25] [--json FILE] [--markdown FILE] [--timeout 30s] [--list]"
)

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
	)
	fs.StringVar(&opts.URL, "url", "", "MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
	fs.Var(&hdr, "header", `header sent with every request, "Name: value" (repeatable); values are never printed`)
	fs.StringVar(&opts.Protocol, "protocol", checker.ProtocolAuto, "protocol version: auto, 2026-07-28 or 2025-11-25")
	fs.StringVar(&jsonOut, "json", "", `write the report as JSON to FILE ("-": stdout, the table then goes to stderr)`)
	fs.StringVar(&mdOut, "markdown", "", "write the report as Markdown to FILE")
	fs.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "timeout of each request")
	fs.BoolVar(&listRows, "list", false, "print the catalogue of rows and exit")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return checkOK
		}
		fmt.Fprintf(stderr, "resourced check: %v\nusage: %s\n", err, checkCommand)
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
	if opts.URL == "" {
		fmt.Fprintf(stderr, "resourced check: --url is required\nusage: %s\n", checkCommand)
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
		fmt.Fprintln(stderr, "resourced check:", err)
		return checkCannot
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "resourced check: interrupted; the report is incomplete")
		rep.WriteText(stderr)
		return checkCannot
	}
	table := stdout
	if jsonOut == "-" {
		table = stderr
		if err := rep.WriteJSON(stdout); err != nil {
			fmt.Fprintln(stderr, "resourced check:", err)
			return checkCannot
		}
	} else if jsonOut != "" {
		if err := writeFile(jsonOut, rep.WriteJSON); err != nil {
			fmt.Fprintln(stderr, "resourced check:", err)
			return checkCannot
		}
	}
	if mdOut != "" {
		if err := writeFile(mdOut, rep.WriteMarkdown); err != nil {
			fmt.Fprintln(stderr, "resourced check:", err)
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
