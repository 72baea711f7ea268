package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/gateway"
	"github.com/resourced/resourced/internal/sandbox"
	"github.com/resourced/resourced/server"
)

const gatewayAbout = "Runs the server in front of the MCP servers listed under gateway.upstreams of the config\n" +
	"(docs/gateway.md): their tools, prompts, resources and completions pass through, namespaced\n" +
	"when there are several, and a tool result too large for a host is saved under the caller's\n" +
	"tenant and replaced by a resource_link and a preview. Besides the upstreams' tools it lists\n" +
	"read_resource, grep_resource and query_resource. The same flags, auth, backends, /readyz and\n" +
	"/metrics as serve; serve with a gateway: section does the same. Stdio upstreams are started on\n" +
	"first use, restarted with backoff when they exit, and stopped on shutdown."

// gatewayCmd is `resourced gateway`: serve, with a gateway section that
// has upstreams.
func gatewayCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return serveAs(ctx, "gateway", args, getenv, stdout, stderr)
}

// maxHeaderFile bounds a header value's file.
const maxHeaderFile = 16 << 10

// gatewayUpstreams converts the gateway section into the pool's
// upstreams, reading header values from the environment (getenv) and
// their files. Every problem names its key; no value is ever in an error.
func gatewayUpstreams(g *config.Gateway, getenv func(string) string) ([]gateway.Upstream, error) {
	var errs []error
	out := make([]gateway.Upstream, 0, len(g.Upstreams))
	for i, u := range g.Upstreams {
		key := fmt.Sprintf("gateway.upstreams[%d]", i)
		up := gateway.Upstream{
			Name: u.Name, URL: u.URL, Command: u.Command, Args: u.Args, Env: u.Env, Dir: u.Dir,
			Isolation: gateway.Isolation(u.Isolation), IdleTimeout: u.IdleTimeout.Std(), CallTimeout: u.CallTimeout.Std(),
			Required: u.Required == nil || *u.Required,
			Offload:  gateway.OffloadPolicy{Threshold: int64(*u.Offload.Threshold)},
			Sandbox:  gateway.Sandbox{Off: u.Sandbox == config.SandboxOff, User: u.User, Group: u.Group},
		}
		for _, a := range u.AllowPaths {
			up.Sandbox.AllowPaths = append(up.Sandbox.AllowPaths, gateway.AllowPath{Path: a.Path, Write: a.Mode == "rw"})
		}
		if len(u.Offload.Tools) > 0 {
			up.Offload.Tools = map[string]gateway.ToolOffload{}
			for tool, o := range u.Offload.Tools {
				up.Offload.Tools[tool] = gateway.ToolOffload{Mode: gateway.OffloadMode(o.Mode), Threshold: int64(o.Threshold)}
			}
		}
		if len(u.Headers) > 0 {
			up.Headers = map[string]string{}
			for name, h := range u.Headers {
				v, err := headerValue(h, getenv)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s.headers.%s: %w", key, name, err))
					continue
				}
				up.Headers[name] = v
			}
		}
		out = append(out, up)
	}
	// Problems come out in the same order every time, whatever the
	// order of the headers map.
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return out, errors.Join(errs...)
}

// headerValue reads one header's value from its environment variable or
// its file (which must be readable by its owner only).
func headerValue(h config.HeaderValue, getenv func(string) string) (string, error) {
	var v string
	if h.Env != "" {
		v = getenv(h.Env)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", h.Env)
		}
	} else {
		b, err := readPrivateFile(h.File)
		if err != nil {
			return "", err
		}
		v = string(bytes.TrimSpace(b))
		if v == "" {
			return "", fmt.Errorf("file %s is empty", h.File)
		}
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return "", errors.New("the value has a control character (a line break?); a header value must be one line")
	}
	return v, nil
}

// readPrivateFile reads a small secret file that must be a regular file
// of mode 0600 (no group or other bits).
func readPrivateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("file %s has mode %04o; it must be 0600 (chmod 600 %s)", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxHeaderFile+1))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, err)
	}
	if len(b) > maxHeaderFile {
		return nil, fmt.Errorf("file %s is larger than %d bytes", path, maxHeaderFile)
	}
	return b, nil
}

// gatewayRun is the gateway part of a serve: the pool of upstreams, what
// the server mounts, and the registry /metrics serves (which the pool's
// metrics join).
type gatewayRun struct {
	pool    *gateway.Pool
	front   *gateway.FrontOptions
	metrics *prometheus.Registry
}

// startGateway builds the pool of cfg's gateway section (nil, nil without
// one). It starts nothing: upstreams are connected on first use. The
// caller closes the pool after the HTTP server has stopped.
func startGateway(cfg *config.Config, getenv func(string) string, log *slog.Logger) (*gatewayRun, error) {
	if cfg.Gateway == nil {
		return nil, nil
	}
	ups, err := gatewayUpstreams(cfg.Gateway, getenv)
	if err != nil {
		return nil, invalidConfig(fmt.Errorf("invalid configuration: %w", err))
	}
	reg := newRegistry()
	var protected []sandbox.Protected
	for _, p := range cfg.GatewayProtectedPaths() {
		protected = append(protected, sandbox.Protected{Path: p.Path, What: p.What})
	}
	pool, err := gateway.NewPool(gateway.PoolOptions{
		Upstreams: ups, Logger: log, Registerer: reg, Version: version,
		MaxTenantSessions:      cfg.Gateway.MaxTenantSessions,
		MaxMessageBytes:        cfg.GatewayMaxMessageBytes(),
		MaxBytesInFlight:       sizeOr0(cfg.Gateway.MaxBytesInFlight),
		MaxTenantBytesInFlight: sizeOr0(cfg.Gateway.MaxTenantBytesInFlight),
		Protected:              protected,
		// Kept across restarts (npx's cache); inside the data
		// directory, which no upstream sees but its own HOME.
		SandboxDir: filepath.Join(cfg.DataDir, "gateway"),
		SpillDir:   filepath.Join(cfg.DataDir, "gateway-spill"),
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ups))
	for i, u := range ups {
		names[i] = u.Name
	}
	limit, set := gateway.SetSoftMemoryLimit(pool.MaxBytesInFlight(), getenv)
	procs, procsSet := gateway.SetProcs(getenv)
	log.Info("gateway", "upstreams", names, "scheme", cfg.Gateway.Scheme, "softMemoryLimit", limit, "fromInFlightBudget", set,
		"procs", procs, "oneCoreLeft", procsSet)
	return &gatewayRun{
		pool:    pool,
		front:   &gateway.FrontOptions{Sessions: pool, Scheme: cfg.Gateway.Scheme, PreviewChars: cfg.Gateway.PreviewChars},
		metrics: reg,
	}, nil
}

// frontExtension mounts the Front of opts on the server as its extension;
// nil without a gateway.
func frontExtension(opts *gateway.FrontOptions) func(server.ExtensionDeps) (server.Extension, error) {
	if opts == nil {
		return nil
	}
	return func(d server.ExtensionDeps) (server.Extension, error) {
		f, err := gateway.NewFront(*opts, gateway.Deps{Service: d.Service, Logger: d.Logger, Metrics: d.Metrics,
			RenderFailure: d.RenderFailure, Schemes: d.Schemes})
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}

// sizeOr0 is a size the config may leave out (0: the package's default).
func sizeOr0(s *config.Size) int64 {
	if s == nil {
		return 0
	}
	return int64(*s)
}
