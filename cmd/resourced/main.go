// Command resourced serves stored MCP resources (search snapshots, reports)
// over Streamable HTTP. See README.md.
//
//	resourced [serve] [--config FILE] [--listen ADDR] [--data-dir DIR]
package main

import (
	"bytes"
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
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/gateway"
	"github.com/resourced/resourced/internal/gcheadroom"
	"github.com/resourced/resourced/internal/sandbox"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/store/s3store"
)

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, main takes it from the build information (buildVersion). The
// revision and date are stamped beside it (buildinfo.go).
var version = ""

func main() {
	// First: a sandboxed gateway upstream starts as this binary, which
	// enters the sandbox and execs it (internal/sandbox); then no other
	// process of this user can read our memory, environment or fds.
	sandbox.Main()
	if err := sandbox.SetUndumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "resourced: prctl(PR_SET_DUMPABLE, 0):", err)
	}
	version = buildVersion(version, debug.ReadBuildInfo)
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// exitError is an error with the exit code it ends the process with:
// usageError and missingError are 2 (a wrong command line, or a path with
// nothing there); every other error is 1. With err nil the command has
// already said what happened.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a command line that cannot be run as written.
func usageError(err error) error { return &exitError{2, err} }

// missingError is an operator command pointed at a path where the state it
// works on does not exist; nothing was created there.
func missingError(format string, a ...any) error { return &exitError{2, fmt.Errorf(format, a...)} }

// exitCode prints err (if any) to stderr and returns the exit status:
// 0 for none and for --help (flag.ErrHelp: the help was printed).
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var e *exitError
	if errors.As(err, &e) && e.err == nil {
		return e.code
	}
	fmt.Fprintln(stderr, "resourced:", err)
	if e != nil {
		return e.code
	}
	return 1
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return nil
		case "-v", "-version", "--version":
			fmt.Fprintln(stdout, versionLine())
			return nil
		}
		if !isFlag(args[0]) {
			cmd, args = args[0], args[1:]
		}
	}
	switch cmd {
	case "serve":
		return serveAs(ctx, "serve", args, getenv, stdout, stderr)
	case "gateway":
		return gatewayCmd(ctx, args, getenv, stdout, stderr)
	case "token":
		return token(args, getenv, stdout, stderr)
	case "fsck":
		return fsck(args, getenv, stdout, stderr)
	case "reconcile":
		return reconcile(ctx, args, getenv, stdout, stderr)
	case "reindex":
		return reindex(ctx, args, getenv, stdout, stderr)
	case "s3":
		return s3Cmd(ctx, args, getenv, stdout, stderr)
	case "backup":
		return backup(args, getenv, stdout, stderr)
	case "check":
		return check(ctx, args, stdout, stderr)
	case "health":
		return health(args, getenv, stdout, stderr)
	case "config":
		return configCmd(args, getenv, stdout, stderr)
	case "version":
		fs := newFlagSet("version", "resourced version", "Prints the version, VCS revision and Go version of this build.")
		if err := parseFlags(fs, args, stdout, stderr); err != nil {
			return err
		}
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "help":
		if len(args) == 1 && args[0] != "help" {
			return run(ctx, []string{args[0], "--help"}, getenv, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return usageError(fmt.Errorf("unknown command %q\nrun 'resourced --help' for the commands", cmd))
	}
}

const usage = `resourced stores large MCP tool results (search snapshots, reports) and serves them
by resources/read over Streamable HTTP.

usage:
  resourced [serve] [--config FILE] [--listen ADDR] [--base-url URL] [--data-dir DIR]
                    [--backend bbolt|s3|memory] [--log-level LEVEL] [--fixtures]
                                        run the server (the default command)
  resourced gateway [serve's flags]     run the server in front of the MCP servers of the config's
                                        gateway: section (docs/gateway.md)
  resourced token [--tenant T] [--scope "resources:read resources:write"] [--ttl 1h] [--subject S]
                  [--config FILE] [--listen ADDR] [--base-url URL] [--data-dir DIR]
                                        mint a token with the server's HMAC key, for the URL of the
                                        server running on the data directory or last served from it
  resourced config check [--syntax-only] [serve's flags]
                                        load and validate the configuration, print it (secrets redacted)
  resourced fsck [--quiet] [--config FILE] [--data-dir DIR]
                                        check a stopped server's bbolt database and search index
                                        (on s3: the search index against the bucket)
  resourced reindex [--quiet] [--workers N] [--config FILE] [--data-dir DIR]
                                        rebuild the search index from a stopped server's database
                                        or from the s3 bucket
  resourced reconcile [--quiet] [--config FILE] [--tenant T]
                                        recount per-tenant usage on the s3 backend
  resourced s3 check [--config FILE]    check that the S3 service keeps the guarantees resourced needs
  resourced backup --out FILE [--force] [--quiet] [--config FILE] [--data-dir DIR]
                                        online backup of the bbolt database
  resourced check --url URL [--header "Name: value"]... [--protocol auto|2026-07-28|2025-11-25]
                  [--json FILE] [--markdown FILE] [--timeout 30s] [--list]
                  [--new-host-run | --host-run ID|PAGE-URL]
                                        check any MCP server against the protocol and contract
  resourced health [--url URL] [--timeout 5s] [--config FILE] [--listen ADDR]
                                        exit 0 if the server's /healthz answers 200 (container healthchecks)
  resourced version                     print the version (also: --version, -v)
  resourced help [COMMAND]              this overview, or a command's flags (also: COMMAND --help)

environment: RESOURCED_CONFIG, RESOURCED_LISTEN, RESOURCED_BASE_URL, RESOURCED_DATA_DIR, RESOURCED_BACKEND,
RESOURCED_LOG_LEVEL (flags win over environment, environment over the config file)
exit status: 0 success, 1 failure, 2 usage error, invalid configuration or value, or no such data
directory/database/key
`

func isFlag(s string) bool { return len(s) > 0 && s[0] == '-' }

// newFlagSet is a subcommand's flag set whose usage names the command, says
// what it does, and lists its flags.
func newFlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n", synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args with fs. --help and -h print the usage to stdout
// and return flag.ErrHelp (exit 0); a bad flag or a stray argument is a
// usageError (exit 2) that says what is wrong and, on a second line, where
// the flags are listed: not the whole usage, which would bury the problem.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = out.WriteTo(stdout)
		return flag.ErrHelp
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err != nil {
		return usageError(fmt.Errorf("%s: %w\nrun 'resourced %s --help' for its flags", fs.Name(), err, fs.Name()))
	}
	return nil
}

// durationFlag is a time.Duration flag whose bad value is answered with
// what is wanted: flag's own DurationVar says only "parse error", which
// leaves a user who typed --ttl 5 guessing at the unit.
type durationFlag struct{ d *time.Duration }

// durationVar defines a duration flag name with the default value.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

func (f durationFlag) String() string {
	if f.d == nil { // flag's PrintDefaults asks a zero value
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 1h or 30m")
	}
	*f.d = d
	return nil
}

// serverFlags are the flags that say which server a command is for, the
// same for serve and token, so that both derive the same baseURL (and so
// the same token audience and issuer) from the same command line.
type serverFlags struct {
	config string
	o      config.Overrides
}

func addServerFlags(fs *flag.FlagSet, getenv func(string) string) *serverFlags {
	f := &serverFlags{}
	fs.StringVar(&f.config, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&f.o.Listen, "listen", "", "address to listen on (default 127.0.0.1:8765)")
	fs.StringVar(&f.o.BaseURL, "base-url", "", "canonical URL: token audience and issuer, RFC 9728 resource, signed links (default http://<listen>; required with a wildcard listen)")
	fs.StringVar(&f.o.DataDir, "data-dir", "", "data directory (default ./data)")
	return f
}

// load reads the config file named by --config or RESOURCED_CONFIG (none:
// defaults), then applies environment and flag overrides.
func (f *serverFlags) load(getenv func(string) string) (*config.Config, error) {
	cfg, err := loadFile(f.config, getenv)
	if err != nil {
		return nil, err
	}
	cfg.Apply(f.o)
	return cfg, nil
}

// buildVersion is stamped (set with -ldflags) when set; else the module
// version of the build (a release tag for `go install ...@v1.2.3`, a
// pseudo-version for builds from a checkout); else "devel".
func buildVersion(stamped string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := readBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// versionLine is what `resourced version` prints: the version, then the
// VCS revision, commit time and whether the tree was modified (builds from
// a checkout), and the Go version.
func versionLine() string { return formatVersion(version, debug.ReadBuildInfo) }

func formatVersion(v string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	bi, ok := readBuildInfo()
	if !ok && revision == "" {
		return "resourced " + v
	}
	var details []string
	rev, date, modified := vcsInfo(readBuildInfo)
	if rev != "" {
		details = append(details, "revision "+rev)
	}
	if date != "" {
		details = append(details, date)
	}
	if modified {
		details = append(details, "modified")
	}
	goVersion := runtime.Version()
	if ok {
		goVersion = bi.GoVersion
	}
	details = append(details, goVersion)
	return fmt.Sprintf("resourced %s (%s)", v, strings.Join(details, ", "))
}

// loadConfig parses the flags of serve (cmd "serve"), gateway or config
// check: the config file named by --config or RESOURCED_CONFIG (none:
// defaults), then environment and flag overrides; and validates the
// result. A configuration that does not load or validate is a usageError
// (exit 2).
// more, when not nil, adds the command's own flags.
func loadConfig(cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer, more func(*flag.FlagSet)) (*config.Config, error) {
	var fs *flag.FlagSet
	switch cmd {
	case "gateway":
		fs = newFlagSet("gateway", "resourced gateway [flags]", gatewayAbout)
	case "config check":
		fs = newFlagSet("config check", "resourced config check [--syntax-only] [serve's flags]", configCheckAbout)
	default:
		fs = newFlagSet("serve", "resourced [serve] [flags]",
			"Runs the server: MCP at POST /mcp, signed links, uploads, /healthz, /readyz, /metrics.\n"+
				"On its first start with no key configured it creates the token key in the data directory\n"+
				"and prints one token for tenant \"default\". With a gateway: section in the config it runs\n"+
				"the gateway too (resourced gateway --help).")
	}
	sf := addServerFlags(fs, getenv)
	fs.StringVar(&sf.o.Backend, "backend", "", "storage backend: bbolt, s3 or memory")
	fs.StringVar(&sf.o.LogLevel, "log-level", "", "debug, info, warn or error")
	fixtures := fs.Bool("fixtures", false, "add the fixture tools for testing MCP hosts (docs/fixtures.md); same as fixtures: true")
	if more != nil {
		more(fs)
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return nil, err
	}
	cfg, err := sf.load(getenv)
	if err != nil {
		return nil, invalidConfig(err)
	}
	if *fixtures {
		cfg.Fixtures = true
	}
	if cfg.Gateway != nil {
		cfg.Gateway.ConfigFile = sf.config // upstreams must not read it
	}
	if err := validate(cfg); err != nil {
		return nil, invalidConfig(fmt.Errorf("invalid configuration: %w", err))
	}
	if cmd == "gateway" && cfg.Gateway == nil {
		return nil, invalidConfig(errors.New("invalid configuration: gateway.upstreams: resourced gateway needs a gateway: section with at least one upstream (docs/gateway.md)"))
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

// serveAs runs the server for cmd, "serve" or "gateway" (which requires
// a gateway section; serve runs one when the config has it).
func serveAs(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(cmd, args, getenv, stdout, stderr, nil)
	if err != nil {
		return err
	}
	// A bad token file is a value error, found before anything is bound
	// or created.
	metricsTok, err := metricsToken(cfg)
	if err != nil {
		return usageError(err)
	}
	log, logw := newLogger(stderr, cfg.LogLevel)
	defer logw.Flush()
	stopGC, tuned := gcheadroom.Start(int64(*cfg.GCHeadroom), getenv)
	defer stopGC()
	log.Debug("collector", "gcHeadroom", int64(*cfg.GCHeadroom), "tuned", tuned, "gogc", gcheadroom.GOGC(), "GOGC", getenv("GOGC"))
	// Bind before anything is created: a taken port leaves no data
	// directory, database or key behind.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close() // on an early return; Serve closes it otherwise
	// Tracing first: the gateway's pool, the S3 client and the server
	// wire their spans in as they are built (internal/telemetry).
	stopTracing, err := startTracing(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	gw, err := startGateway(cfg, getenv, log)
	if err != nil {
		return err
	}
	metrics := newRegistry()
	var front *gateway.FrontOptions
	if gw != nil {
		defer gw.pool.Close() // on every return; the shutdown below closes it first
		metrics, front = gw.metrics, gw.front
	}
	metrics.MustRegister(buildInfo())
	st, err := openStore(ctx, cfg)
	if err != nil {
		return fmt.Errorf("opening the %s store: %w", cfg.Store.Backend, err)
	}
	defer st.Close()
	if err := probeS3(ctx, cfg, st, log, metrics); err != nil {
		return err
	}
	admin, err := serveAdmin(cfg, st, log)
	if err != nil {
		log.Warn("no admin socket: online backups need the server stopped", "err", err)
	} else {
		defer admin.stop()
	}

	if cfg.BaseURL == "" {
		// The canonical URL is where we really listen (also for port 0).
		cfg.BaseURL = "http://" + ln.Addr().String()
	}
	admin.setVerifier(issuer(cfg), audiences(cfg)[0], cfg.CanonicalBaseURL()) // for resourced token
	authn, closeAuth, err := authenticator(ctx, cfg, log, stdout)
	if err != nil {
		return err
	}
	defer closeAuth()
	linkKey, err := linksKey(cfg, log)
	if err != nil {
		return err
	}
	idx, err := openIndex(ctx, cfg)
	if err != nil {
		return indexOpenError(cfg, err)
	}
	if idx != nil {
		defer idx.Close()
	}
	srv, err := server.New(server.Options{
		Store: st, Index: idx, DeepResearch: cfg.Index.DeepResearch, IndexPageBytes: cfg.MaxPageBytes(), IndexNote: indexNote(cfg), Schemes: schemes(cfg), Auth: authn, Logger: log, Version: version, Metrics: metrics,
		BaseURL:              cfg.CanonicalBaseURL(),
		AuthorizationServers: cfg.Auth.AuthorizationServers,
		AllowedOrigins:       cfg.Auth.AllowedOrigins,
		AllowedHosts:         cfg.Auth.AllowedHosts,
		Backend:              cfg.Store.Backend,
		PollInterval:         cfg.NotifyPollInterval.Std(),
		MaxListenURIs:        cfg.NotifyMaxListenURIs,
		MaxListensPerTenant:  cfg.NotifyMaxListensPerTenant,
		Budgets:              budgets(cfg),
		Fixtures:             cfg.Fixtures,
		FormCache:            int64(*cfg.Cache.MaxBytes),
		Extension:            frontExtension(front),
		Quota:                store.Quota{Bytes: int64(cfg.Quota.Bytes), Objects: cfg.Quota.Objects},
		SweepInterval:        cfg.Sweep.Interval.Std(),
		SweepBatch:           cfg.Sweep.Batch,
		LinkKey:              linkKey,
		MetricsToken:         metricsTok,
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
	// Only a start that got this far records its URL: one that failed
	// (a bad key, an index that does not open) would leave token minting
	// for a server that never ran.
	if err := recordServed(cfg, ln.Addr().String()); err != nil {
		log.Warn("could not record the URL served in the data directory; resourced token will not know it when no server runs", "err", err)
	}
	// No ReadTimeout or WriteTimeout: subscriptions/listen is a long-lived
	// POST. The server gives each request a body and a write deadline of
	// its own (server/guard_deadline.go); headers, idle connections, header
	// size and the number of connections are bounded here. Past the
	// connection cap a client is answered 503 at once (server.Listener).
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    256 << 10, // tokens are at most 8 KiB (auth); this bounds everything else
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	maxConns := cfg.Budgets.MaxConnections
	if maxConns == 0 {
		maxConns = server.DefaultMaxConns
	}
	ln = srv.Listener(ln, maxConns)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	go srv.Run(ctx)
	go reconcileEvery(ctx, st, cfg.Quota.ReconcileInterval.Std(), log)
	// At every log level: scripts and the harness wait for this line
	// (docs/CONTRACT.md §8).
	announcer(logw).Info("listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/mcp",
		"baseURL", cfg.CanonicalBaseURL(), "backend", cfg.Store.Backend, "auth", cfg.Auth.Mode, "version", version)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.Std().Seconds())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.Std())
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Error("shutdown did not finish in time; closing connections", "err", err)
		_ = hs.Close()
	}
	if gw != nil {
		// After the HTTP server, before the store: calls still under way
		// fail at once, and every upstream process is stopped.
		_ = gw.pool.Close()
		log.Info("gateway upstreams stopped")
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
		ReadCache: s3store.DefaultReadCache, SingleWriter: s3.UnsafeAllowSingleWriter,
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

// budgets is the budgets section as server.Budgets (zero fields are the
// server's defaults).
func budgets(cfg *config.Config) server.Budgets {
	b := cfg.Budgets
	return server.Budgets{
		BodyMinRate: int64(b.BodyMinRate), BodyGrace: b.BodyGrace.Std(),
		WriteMinRate: int64(b.WriteMinRate), WriteGrace: b.WriteGrace.Std(),
		MaxInflight: b.TenantInflight, SaveRate: b.TenantSaveRate, SaveBurst: b.TenantSaveBurst, SaveWait: b.TenantSaveWait.Std(),
		MaxUploads: b.MaxUploads, StorePanicHold: b.StorePanicHold.Std(),
	}
}

// reconcileEvery recounts every tenant's usage on a store that keeps it in
// shared objects (s3store) every interval (0: never), logging the tenants
// whose usage changed: a crash between a quota reservation and its write
// only over-counts, and this gives the room back. Every instance may run
// it; the recount is safe against concurrent saves (store/s3store, Quotas).
func reconcileEvery(ctx context.Context, st store.Backend, interval time.Duration, log *slog.Logger) {
	r, ok := st.(interface {
		ReconcileAll(context.Context) ([]s3store.Reconciled, error)
	})
	if !ok || interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reconcileOnce(ctx, r.ReconcileAll, log)
	}
}

// reconcileOnce runs one reconcile, logging what changed; a panic in it
// is logged with its stack and ends only this round, like the server's
// own background jobs.
func reconcileOnce(ctx context.Context, reconcileAll func(context.Context) ([]s3store.Reconciled, error), log *slog.Logger) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("panic in the usage reconcile; the next round runs as usual", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	res, err := reconcileAll(ctx)
	if err != nil {
		log.Warn("usage reconcile failed; the next one retries", "err", err)
	}
	for _, x := range res {
		if x.Before != x.After {
			log.Info("usage reconciled", "tenant", x.Tenant, "bytesBefore", x.Before.Bytes, "bytesAfter", x.After.Bytes,
				"objectsBefore", x.Before.Objects, "objectsAfter", x.After.Objects)
		}
	}
}
