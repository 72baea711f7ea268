package main

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// ceiling is a plain net/http server in this process that answers every
// POST with the same bytes the MCP server returned for one request, from
// memory. Loaded by the same workers over the same kind of keep-alive
// connections, it measures the most one HTTP request/response of that size
// can do on this machine: the ceiling every server figure is a ratio to.
type ceiling struct {
	srv   *http.Server
	url   string
	close func() // what else to close after the server, or nil
}

// startCeiling serves body with the given Content-Type on 127.0.0.1.
func startCeiling(body []byte, contentType string) (*ceiling, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	length := strconv.Itoa(len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request as the MCP server must, then answer with the
		// headers it sends (go-sdk buffers JSON responses, so it sets
		// Content-Length).
		_, _ = io.Copy(io.Discard, r.Body)
		hd := w.Header()
		hd["Content-Type"] = []string{contentType}
		hd["Cache-Control"] = []string{"no-cache, no-transform"}
		hd["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	})
	c := &ceiling{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute},
		url: "http://" + ln.Addr().String() + "/mcp",
	}
	go c.srv.Serve(ln)
	return c, nil
}

func (c *ceiling) Close() {
	if c.srv != nil { // nil: the ceiling is another process's (ceilingproc.go)
		_ = c.srv.Close()
	}
	if c.close != nil {
		c.close()
	}
}
