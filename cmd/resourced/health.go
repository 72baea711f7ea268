package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/resourced/resourced/config"
)

// health asks a server's /healthz and succeeds on 200: the healthcheck of
// images with no shell or curl (Containerfile). Without --url it asks the
// address the server listens on, from the same --config, --listen and
// RESOURCED_* environment as serve (a wildcard address by loopback). It
// never goes through the base URL: that is a proxy's address, and a
// healthcheck of the process must not fail with the proxy
// (docs/decisions.md, "health asks the listener").
//
//	resourced health [--url URL] [--timeout 5s] [--config FILE] [--listen ADDR]
func health(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", "resourced health [--url URL] [--timeout 5s] [--config FILE] [--listen ADDR]",
		"Asks a running server's GET /healthz; exit 0 when it answers 200, else 1. Without --url, the\n"+
			"server is the one serve would start with the same --config, --listen and environment\n"+
			"(RESOURCED_CONFIG, RESOURCED_LISTEN); on a wildcard address it asks loopback.")
	url := fs.String("url", "", "the server's address or its health endpoint; a URL without a path asks its /healthz (default http://<listen>/healthz)")
	var timeout time.Duration
	durationVar(fs, &timeout, "timeout", 5*time.Second, "timeout of the request, a `duration` such as 5s")
	path := fs.String("config", getenv("RESOURCED_CONFIG"), "YAML config file")
	listen := fs.String("listen", "", "address the server listens on (default 127.0.0.1:8765)")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if *url == "" {
		cfg, err := loadFile(*path, getenv)
		if err != nil {
			return usageError(err)
		}
		cfg.Apply(config.Overrides{Listen: *listen})
		if *url, err = healthURL(cfg.Listen); err != nil {
			return usageError(err)
		}
	}
	if u, err := neturl.Parse(*url); err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return usageError(fmt.Errorf("--url: want http://host:port or a full health URL, got %q", *url))
	} else if u.Path == "" || u.Path == "/" {
		u.Path = "/healthz"
		*url = u.String()
	}
	c := &http.Client{Timeout: timeout}
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

// healthURL is the /healthz of a server listening on listen: a wildcard
// host is asked on loopback of the same family.
func healthURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen: want host:port, got %q", listen)
	}
	if port == "0" {
		return "", errors.New("health: listen has port 0, chosen when the server starts; pass --url")
	}
	if config.IsWildcard(host) {
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			host = "::1"
		} else {
			host = "127.0.0.1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
