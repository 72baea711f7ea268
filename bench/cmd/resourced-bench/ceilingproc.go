package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The ceiling in a process of its own (-ceiling-process). The in-process
// ceiling shares the load tool's Go runtime: its handler and the workers
// are woken by one netpoller and run on one set of threads, a cheaper
// hand-off than the one between two processes that the MCP server pays on
// every request. A ceiling in its own process pays it too, as a plain
// net/http server deployed beside the client would, and its CPU can be
// accounted like the server's (µs per request). The run loads both
// ceilings, alternated with the server, so the two ratios come from the
// same minutes (bench/README.md says what they showed).

// startCeilingProcess runs `resourced-bench ceiling-serve` serving body
// with contentType, and returns it as a ceiling with its pid.
func startCeilingProcess(body []byte, contentType string) (*ceiling, int, error) {
	f, err := os.CreateTemp("", "resourced-bench-ceiling-*.body")
	if err != nil {
		return nil, 0, err
	}
	name := f.Name()
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	cmd := exec.Command(exe, "ceiling-serve", "-body", name, "-type", contentType)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // closed with this process: the child then exits
	if err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.Remove(name)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ceiling ")
	if err != nil || !ok {
		stop()
		return nil, 0, fmt.Errorf("ceiling process: no address (%q, %v)", line, err)
	}
	return &ceiling{url: url, close: stop}, cmd.Process.Pid, nil
}

// runCeilingServe is `resourced-bench ceiling-serve -body FILE -type T`:
// the ceiling's handler (startCeiling) in this process, serving FILE. It
// prints "ceiling URL" and serves until its standard input ends.
func runCeilingServe(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("resourced-bench ceiling-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bodyFile := fs.String("body", "", "file holding the response body")
	ctype := fs.String("type", "application/json", "Content-Type of the response")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *bodyFile == "" {
		return 2, errors.New("ceiling-serve: -body is required")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return 1, err
	}
	c, err := startCeiling(body, *ctype)
	if err != nil {
		return 1, err
	}
	defer c.Close()
	fmt.Fprintf(stdout, "ceiling %s\n", c.url)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0, nil
}
