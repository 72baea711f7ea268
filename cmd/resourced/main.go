// Command resourced serves stored MCP resources (search snapshots, reports)
// over Streamable HTTP. See README.md.
//
//	resourced [serve] [--config FILE] [--listen ADDR] [--data-dir DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/store/s3store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "resourced:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !isFlag(args[0]) {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "token":
		return token(args, getenv, stdout, stderr)
	case "fsck":
		return fsck(args, getenv, stdout, stderr)
	case "backup":
		return backup(args, getenv, stdout, stderr)
	case "check":
		return check(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "resourced", version)
		return nil
	case "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

const usage = `usage:
  resourced [serve] [--config FILE] [--listen ADDR] [--data-dir DIR] [--backend bbolt|s3|memory] [--log-level LEVEL]
  resourced fsck [--config FILE] [--data-dir DIR]      (consistency check of a stopped server's bbolt file)
  resourced backup --out FILE [--config FILE] [--data-dir DIR]   (online backup of the bbolt file)
  resourced token [--tenant T] [--scope "resources:read resources:write"] [--ttl 1h] [--config FILE] [--data-dir DIR]
  resourced check --url URL [--header "Name: value"]... [--protocol auto|2026-07-28|2025-11-25] [--json FILE] [--markdown FILE]
  resourced version
environment: RESOURCED_CONFIG, RESOURCED_LISTEN, RESOURCED_DATA_DIR, RESOURCED_BACKEND, RESOURCED_LOG_LEVEL
(flags win over environment, environment over the config file)`

func isFlag(s string) bool { return len(s) > 0 && s[0] == '-' }

// loadConfig reads the config file named by --config or RESOURCED_CONFIG
// (none: defaults), then applies environment and flag overrides, and
// validates the result.
func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (*config.Config, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var path string
	var flags config.Overrides
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&flags.Listen, "listen", "", "address to listen on (default 127.0.0.1:8765)")
	fs.StringVar(&flags.DataDir, "data-dir", "", "data directory (default ./data)")
	fs.StringVar(&flags.Backend, "backend", "", "storage backend: bbolt, s3 or memory")
	fs.StringVar(&flags.LogLevel, "log-level", "", "debug, info, warn or error")
	fixtures := fs.Bool("fixtures", false, "add the fixture tools for testing MCP hosts (docs/fixtures.md); same as fixtures: true")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg, err := loadFile(path, getenv)
	if err != nil {
		return nil, err
	}
	cfg.Apply(flags)
	if *fixtures {
		cfg.Fixtures = true
	}
	if err := validate(cfg); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return cfg, nil
}

// validate checks cfg: config's own rules, then the options each
// component builds from it with that component's Validate, each problem
// named by its key path.
func validate(cfg *config.Config) error {
	errs := []error{cfg.Validate()}
	if cfg.Store.Backend == "s3" {
		errs = append(errs,
			config.Under("store.s3", s3Options(cfg).Validate()),
			config.Under("store.s3", s3Client(cfg).Validate()))
	}
	if cfg.Auth.Mode == "jwt" {
		errs = append(errs, config.Under("auth", authSettings(cfg).Validate()))
	}
	return errors.Join(errs...)
}

// loadFile reads the config file at path (none: defaults) and applies the
// RESOURCED_* environment.
func loadFile(path string, getenv func(string) string) (*config.Config, error) {
	cfg := config.Default()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return nil, err
		}
	}
	cfg.Apply(config.EnvOverrides(getenv))
	return cfg, nil
}

// newLogger returns a JSON logger at level writing to w through a
// logWriter (logwriter.go); the caller flushes it before it returns.
func newLogger(w io.Writer, level string) (*slog.Logger, *logWriter) {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	lw := newLogWriter(w, logFlushDelay)
	return slog.New(flushingHandler{slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: l}), lw}), lw
}

// openStore is the one place that knows every backend; each returns the
// portable store.Bucket over its driver (store.Driver).
func openStore(ctx context.Context, cfg *config.Config) (store.Backend, error) {
	switch cfg.Store.Backend {
	case "bbolt":
		return boltstore.Open(cfg.BboltPath(), boltstore.Options{Timeout: cfg.Store.Bbolt.OpenTimeout.Std()})
	case "s3":
		client, err := newS3Client(ctx, s3Client(cfg))
		if err != nil {
			return nil, config.Under("store.s3", err)
		}
		return s3store.Open(client, s3Options(cfg))
	case "memory":
		return memstore.New(memstore.Options{}), nil
	}
	return nil, fmt.Errorf("store.backend: unknown backend %q", cfg.Store.Backend)
}

func schemes(cfg *config.Config) []server.Scheme {
	var out []server.Scheme
	for name, sc := range cfg.Schemes {
		out = append(out, server.Scheme{
			Name:         name,
			Kind:         sc.Kind,
			TTL:          sc.TTL.Std(),
			Retention:    sc.Retention.Std(),
			MaxRetention: sc.MaxRetention.Std(),
			MaxBytes:     int64(*sc.MaxBytes),
		})
	}
	slices.SortFunc(out, func(a, b server.Scheme) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	log, logw := newLogger(stderr, cfg.LogLevel)
	defer logw.Flush()
	st, err := openStore(ctx, cfg)
	if err != nil {
		return fmt.Errorf("opening the %s store: %w", cfg.Store.Backend, err)
	}
	defer st.Close()
	if stopAdmin, err := serveAdmin(cfg, st, log); err != nil {
		log.Warn("no admin socket: online backups need the server stopped", "err", err)
	} else {
		defer stopAdmin()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	if cfg.BaseURL == "" {
		// The canonical URL is where we really listen (also for port 0).
		cfg.BaseURL = "http://" + ln.Addr().String()
	}
	authn, closeAuth, err := authenticator(ctx, cfg, log, stdout)
	if err != nil {
		return err
	}
	defer closeAuth()
	linkKey, err := linksKey(cfg, log)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Store: st, Schemes: schemes(cfg), Auth: authn, Logger: log, Version: version,
		BaseURL:              cfg.CanonicalBaseURL(),
		AuthorizationServers: cfg.Auth.AuthorizationServers,
		AllowedOrigins:       cfg.Auth.AllowedOrigins,
		AllowedHosts:         cfg.Auth.AllowedHosts,
		Backend:              cfg.Store.Backend,
		PollInterval:         cfg.NotifyPollInterval.Std(),
		Fixtures:             cfg.Fixtures,
		Quota:                store.Quota{Bytes: int64(cfg.Quota.Bytes), Objects: cfg.Quota.Objects},
		SweepInterval:        cfg.Sweep.Interval.Std(),
		SweepBatch:           cfg.Sweep.Batch,
		LinkKey:              linkKey,
		LinkTTL:              cfg.Links.DefaultTTL.Std(),
		LinkMaxTTL:           cfg.Links.MaxTTL.Std(),
		Limits: server.Limits{
			MaxHits: cfg.Limits.MaxHits, MaxTitleBytes: cfg.Limits.MaxTitleBytes,
			MaxDescriptionBytes: cfg.Limits.MaxDescriptionBytes, MaxPathBytes: cfg.Limits.MaxPathBytes,
			MaxReadChars: cfg.Limits.MaxReadChars,
		},
	})
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	go srv.Run(ctx)
	log.Info("listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/mcp",
		"backend", cfg.Store.Backend, "auth", cfg.Auth.Mode, "version", version)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.Std().String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.Std())
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Error("shutdown did not finish in time; closing connections", "err", err)
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// s3Options are the s3store options of store.s3. An unset readCache is
// s3store.DefaultReadCache (a zero Options.ReadCache is no cache).
func s3Options(cfg *config.Config) s3store.Options {
	s3 := &cfg.Store.S3
	o := s3store.Options{
		Bucket: s3.Bucket, Prefix: s3.Prefix, CallTimeout: s3.CallTimeout.Std(), SpoolDir: s3.SpoolDir,
		ReadCache: s3store.DefaultReadCache,
	}
	if s3.ReadCache != nil {
		o.ReadCache = int64(*s3.ReadCache)
	}
	return o
}

// s3Client is what store.s3 says about the S3 client.
func s3Client(cfg *config.Config) s3ClientOptions {
	s3 := &cfg.Store.S3
	return s3ClientOptions{Region: s3.Region, Endpoint: s3.Endpoint, PathStyle: s3.PathStyle}
}
