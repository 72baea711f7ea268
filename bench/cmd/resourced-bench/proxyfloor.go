package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// The floor of one extra hop (gateway -proxy-floor). What a gateway adds
// to a call is its own work plus one more loopback HTTP exchange, which
// any hop pays: the request read and written again, the answer read and
// written again, two more processes woken. A plain reverse proxy
// (net/http/httputil, answers streamed as they come) in a process of its
// own, loaded in the same alternation as the gateway and the upstream,
// measures that hop alone, so the gateway's ratio to direct can be read
// against what no gateway can go below.

// runProxyServe is `resourced-bench proxy-serve -target URL`: a reverse
// proxy to URL's host on 127.0.0.1. It prints "proxy URL" (the target's
// path on the proxy) and serves until its standard input ends.
func runProxyServe(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("resourced-bench proxy-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "the upstream's URL (http://host:port/path)")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return 2, fmt.Errorf("proxy-serve: -target wants an http:// URL, got %q", *target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1, err
	}
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p.FlushInterval = -1 // event streams as they come
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(stdout, "proxy http://%s%s\n", ln.Addr(), u.EscapedPath())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0, nil
}

// startProxyFloor runs proxy-serve in front of target and returns the
// proxied URL and what stops it.
func startProxyFloor(target string) (string, func(), error) {
	if target == "" {
		return "", nil, errors.New("-proxy-floor needs -direct")
	}
	url, _, stop, err := startServeProcess("proxy", "proxy-serve", "-target", target)
	return url, stop, err
}
