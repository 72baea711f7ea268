package main

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// health asks a server's /healthz and succeeds on 200: the healthcheck of
// images with no shell or curl (Containerfile).
//
//	resourced health [--url http://127.0.0.1:8765/healthz] [--timeout 5s]
func health(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", "resourced health [--url URL] [--timeout 5s]",
		"Asks a running server's GET /healthz; exit 0 when it answers 200, else 1.")
	url := fs.String("url", "http://127.0.0.1:8765/healthz", "health endpoint")
	timeout := fs.Duration("timeout", 5*time.Second, "timeout of the request")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	c := &http.Client{Timeout: *timeout}
	resp, err := c.Get(*url)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *url, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
