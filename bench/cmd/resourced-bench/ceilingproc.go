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
	url, pid, stop, err := startServeProcess("ceiling", "ceiling-serve", "-body", name, "-type", contentType)
	if err != nil {
		os.Remove(name)
		return nil, 0, err
	}
	return &ceiling{url: url, close: func() { stop(); os.Remove(name) }}, pid, nil
}

// startServeProcess runs this program with args, a *-serve subcommand
// that prints "<word> URL" and serves until its standard input ends, and
// returns that URL, the child's pid and what stops it.
func startServeProcess(word string, args ...string) (url string, pid int, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // closed with this process: the child then exits
	if err != nil {
		return "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), word+" ")
	if err != nil || !ok {
		stop()
		return "", 0, nil, fmt.Errorf("%s process: no address (%q, %v)", word, line, err)
	}
	return url, cmd.Process.Pid, stop, nil

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
