package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/resourced/resourced/internal/sandbox"
	"github.com/resourced/resourced/internal/telemetry"
)

// Defaults of the Pool; PoolOptions and Upstream fields left zero take them.
const (
	// DefaultMaxTenantSessions caps the perTenant sessions (processes) of
	// one upstream, so that a caller with many tenants cannot start
	// processes without bound.
	DefaultMaxTenantSessions = 32
	// DefaultIdleTimeout closes a perTenant session unused this long.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultCallTimeout bounds one forwarded request, and a connect.
	DefaultCallTimeout = 2 * time.Minute
)

// Restart backoff: a session that died or failed to connect is not tried
// again before backoffBase, doubling with each further failure up to
// backoffMax; a session that stayed up healthyAfter starts over at
// backoffBase.
const (
	backoffBase  = 250 * time.Millisecond
	backoffMax   = 30 * time.Second
	healthyAfter = time.Minute
	// readyPing bounds the ping of a live shared session in Ready.
	readyPing = 5 * time.Second
	// probeEvery is how often Ready may start a probe session of a
	// perTenant upstream (see Ready).
	probeEvery = time.Minute
)

// PoolOptions configure NewPool.
type PoolOptions struct {
	// Upstreams, in config order; names must match NamePattern and be
	// unique, and each must have exactly one of URL and Command.
	Upstreams []Upstream
	// Logger receives restarts, session ends and the stderr of stdio
	// upstreams; nil is silent.
	Logger *slog.Logger
	// Registerer gets the pool's metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	// Version is the gateway's clientInfo.version towards upstreams.
	Version string
	// MaxTenantSessions caps the perTenant sessions of each upstream
	// (0: DefaultMaxTenantSessions).
	MaxTenantSessions int
	// MaxMessageBytes bounds one message read from an upstream (a stdio
	// line, an HTTP JSON body, one server-sent event or a whole event
	// stream); a call whose answer is larger gets the gateway's too-large
	// error (limit.go) and the session goes on. Set it to what the gateway
	// can keep: 2 × the offload scheme's maxBytes + 1 MiB (0:
	// DefaultMaxMessageBytes).
	MaxMessageBytes int64
	// MaxBytesInFlight bounds the bytes of upstream answers the gateway
	// holds at once, read and not yet answered to their callers (0:
	// 4 × MaxMessageBytes); MaxTenantBytesInFlight bounds one tenant's
	// (0: half of MaxBytesInFlight). An answer that would go over either
	// is not read: its call gets the gateway's busy error (budget.go),
	// retry-safe, and the session goes on.
	MaxBytesInFlight, MaxTenantBytesInFlight int64
	// Protected are the paths resourced keeps to itself (its data
	// directory, config file, key files, header secret files): no
	// sandboxed upstream may see them. An upstream whose dir or
	// allowPaths holds one, or lies inside one, is refused by NewPool.
	Protected []sandbox.Protected
	// SandboxDir holds the private HOME and TMPDIR of each sandboxed
	// upstream (and perTenant tenant), kept across restarts (npx's
	// cache); "" is a temporary directory that Close removes.
	SandboxDir string
	// SpillDir holds what a stdio upstream's large answer strings hold
	// past their first MiB, in files unlinked as they are created
	// (spill.go); "" is os.TempDir(). Under the data directory, no
	// sandboxed upstream can reach it; NewPool creates it (0700).
	SpillDir string

	// landlockABI replaces sandbox.ABI, for tests.
	landlockABI func() int
	// Backoff of restarts, for tests (zero: the constants above).
	backoffBase, backoffMax, healthyAfter time.Duration
	// terminate is how long a stdio upstream gets after its stdin closes
	// before SIGTERM (zero: go-sdk's 5s); for tests.
	terminate time.Duration
}

// Pool is the Sessions of the gateway: it owns one go-sdk client session
// per upstream (Shared) or per upstream and tenant (PerTenant), starting
// stdio processes and connecting to HTTP servers on first use.
//
//   - Concurrent first uses share one connect.
//   - A session that ends (its process exited, its HTTP session was lost)
//     is replaced on the next Session call, but not before a backoff
//     (250ms doubling to 30s, reset after a session stayed up a minute);
//     within the backoff Session fails at once with ErrUnavailable.
//   - A perTenant session is closed when unused for the larger of
//     IdleTimeout and CallTimeout (so no call it was handed out for can
//     still be running). At MaxTenantSessions, a new tenant evicts the
//     least recently used session that is idle in that sense, else gets
//     ErrUnavailable.
//
// A Pool is safe for concurrent use. Close stops every session and
// process; after it Session answers ErrUnavailable.
type Pool struct {
	opts     PoolOptions
	log      *slog.Logger
	ups      []*upstream
	byName   map[string]*upstream
	progress ProgressRouter

	sessions *prometheus.GaugeVec
	restarts *prometheus.CounterVec
	refused  *prometheus.CounterVec

	budget *budget       // answer bytes in flight (budget.go)
	keys   *placeholders // of spilled strings (spill.go)
	files  *spillFiles   // where spilled strings go past their head

	ctx    context.Context // canceled by Close: aborts connects under way
	cancel context.CancelFunc
	wg     sync.WaitGroup // session watchers, connects, closes, the reaper

	// privateRoot holds the upstreams' private HOME and TMPDIR
	// directories (privateDirs), userRoot those of upstreams with a user;
	// privateRoots are both; removeDirs were made by NewPool and are
	// removed by Close.
	privateRoot, userRoot string
	privateRoots          []string
	removeDirs            []string

	mu     sync.Mutex
	closed bool
	once   sync.Once
}

var _ Sessions = (*Pool)(nil)

var namePattern = regexp.MustCompile(NamePattern)

// NewPool checks opts and returns a Pool that has started nothing yet:
// sessions are connected on first use (Session or Ready).
func NewPool(opts PoolOptions) (*Pool, error) {
	if opts.MaxTenantSessions == 0 {
		opts.MaxTenantSessions = DefaultMaxTenantSessions
	}
	if opts.MaxTenantSessions < 0 {
		return nil, fmt.Errorf("gateway: MaxTenantSessions %d is negative", opts.MaxTenantSessions)
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxMessageBytes < 0 {
		return nil, fmt.Errorf("gateway: MaxMessageBytes %d is negative", opts.MaxMessageBytes)
	}
	if opts.MaxBytesInFlight == 0 {
		opts.MaxBytesInFlight = 4 * opts.MaxMessageBytes
	}
	if opts.MaxTenantBytesInFlight == 0 {
		opts.MaxTenantBytesInFlight = opts.MaxBytesInFlight / 2
	}
	if opts.MaxBytesInFlight < 0 || opts.MaxTenantBytesInFlight < 0 || opts.MaxTenantBytesInFlight > opts.MaxBytesInFlight {
		return nil, fmt.Errorf("gateway: MaxBytesInFlight %d and MaxTenantBytesInFlight %d: want 0 < tenant ≤ gateway",
			opts.MaxBytesInFlight, opts.MaxTenantBytesInFlight)
	}
	if opts.backoffBase <= 0 {
		opts.backoffBase = backoffBase
	}
	if opts.backoffMax <= 0 {
		opts.backoffMax = backoffMax
	}
	if opts.healthyAfter <= 0 {
		opts.healthyAfter = healthyAfter
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{opts: opts, log: log, byName: map[string]*upstream{},
		budget: newBudget(opts.MaxBytesInFlight, opts.MaxTenantBytesInFlight), keys: newPlaceholders(),
		files: &spillFiles{dir: opts.SpillDir, at: spillFileAt}}
	if opts.SpillDir != "" {
		if err := os.MkdirAll(opts.SpillDir, 0o700); err != nil {
			return nil, fmt.Errorf("gateway: the spill directory: %w", err)
		}
	}
	var errs []error
	for i, u := range opts.Upstreams {
		if err := checkUpstream(&u); err != nil {
			errs = append(errs, fmt.Errorf("gateway: upstream %d (%q): %w", i, u.Name, err))
			continue
		}
		if p.byName[u.Name] != nil {
			errs = append(errs, fmt.Errorf("gateway: upstream %d: the name %q is used twice", i, u.Name))
			continue
		}
		up := &upstream{cfg: u, tenants: map[string]*slot{}}
		p.ups = append(p.ups, up)
		p.byName[u.Name] = up
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := p.sandboxSetup(); err != nil {
		return nil, err
	}
	p.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "resourced_gateway_upstream_sessions",
		Help: "Open upstream sessions (stdio processes or HTTP sessions) by upstream.",
	}, []string{"upstream"})
	p.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_gateway_upstream_restarts_total",
		Help: "Connects that replace an upstream session that ended or failed to connect, by upstream.",
	}, []string{"upstream"})
	p.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "resourced_gateway_upstream_messages_refused_total",
		Help: "Upstream messages the gateway did not pass on, by upstream and reason: too_large (over the message limit), busy (over the in-flight budget), bad (not JSON), noisy (notifications over the rate), stderr (stderr lines over the log rate).",
	}, []string{"upstream", "reason"})
	for _, up := range p.ups {
		p.sessions.WithLabelValues(up.cfg.Name)
		p.restarts.WithLabelValues(up.cfg.Name)
		for _, r := range []string{"too_large", "busy", "bad", "noisy", "stderr"} {
			p.refused.WithLabelValues(up.cfg.Name, r)
		}
	}
	if opts.Registerer != nil {
		for _, c := range append([]prometheus.Collector{p.sessions, p.restarts, p.refused}, p.budget.collectors()...) {
			if err := opts.Registerer.Register(c); err != nil {
				for _, d := range p.removeDirs {
					_ = os.RemoveAll(d)
				}
				return nil, fmt.Errorf("gateway: registering the pool's metrics: %w", err)
			}
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if tick := p.reapEvery(); tick > 0 {
		p.wg.Add(1)
		go p.reap(tick)
	}
	return p, nil
}

// checkUpstream fills u's defaults and checks what the pool relies on;
// the config package reports the same problems by key first.
func checkUpstream(u *Upstream) error {
	if !namePattern.MatchString(u.Name) {
		return fmt.Errorf("the name must match %s", NamePattern)
	}
	if (u.URL == "") == (u.Command == "") {
		return errors.New("want exactly one of URL and Command")
	}
	switch u.Isolation {
	case "":
		u.Isolation = Shared
	case Shared, PerTenant:
	default:
		return fmt.Errorf("isolation %q is neither %q nor %q", u.Isolation, Shared, PerTenant)
	}
	if u.IdleTimeout <= 0 {
		u.IdleTimeout = DefaultIdleTimeout
	}
	if u.CallTimeout <= 0 {
		u.CallTimeout = DefaultCallTimeout
	}
	return nil
}

// upstream is one configured upstream and its sessions.
type upstream struct {
	cfg  Upstream
	acct account // a sandboxed upstream's user and group (sandboxSetup)

	mu      sync.Mutex
	shared  *slot            // Shared isolation
	tenants map[string]*slot // PerTenant isolation, by tenant
	probe   *slot            // PerTenant: Ready's probe (see Ready)
}

// slot is the state of one session of an upstream (the shared one, or one
// tenant's): the live session, a connect under way, the backoff.
type slot struct {
	tenant string // "" for the shared session and the probe

	cs         *mcp.ClientSession // nil when none is live
	pgid       int                // the stdio process group, 0 if none
	connecting chan struct{}      // closed when the connect under way ends
	connectErr error              // the last connect's error, nil after a success

	started  bool      // a session was connected (or tried) before: the next connect is a restart
	failures int       // consecutive deaths and failed connects
	retryAt  time.Time // no connect before then
	upSince  time.Time // when cs connected
	lastUsed time.Time // when Session last handed cs out
	checked  time.Time // probe: when it last ran
}

// live reports whether s holds a session or is connecting one (what the
// perTenant cap counts).
func (s *slot) live() bool { return s.cs != nil || s.connecting != nil }

// Upstreams lists the configured upstreams in config order, defaults
// filled in.
func (p *Pool) Upstreams() []Upstream {
	out := make([]Upstream, len(p.ups))
	for i, up := range p.ups {
		out[i] = up.cfg
	}
	return out
}

// Progress is where the sessions' progress notifications are delivered.
func (p *Pool) Progress() *ProgressRouter { return &p.progress }

// Session returns the live session of upstream for tenant (ignored under
// Shared isolation), connecting one when there is none. Errors of an
// upstream that cannot be reached, is in its restart backoff, is at its
// perTenant cap, or of a closed pool wrap ErrUnavailable.
func (p *Pool) Session(ctx context.Context, upstream, tenant string) (*mcp.ClientSession, error) {
	up := p.byName[upstream]
	if up == nil {
		return nil, fmt.Errorf("gateway: no upstream named %q", upstream)
	}
	if up.cfg.Isolation == PerTenant && tenant == "" {
		return nil, fmt.Errorf("gateway: upstream %q is perTenant and the call has no tenant", upstream)
	}
	for {
		up.mu.Lock()
		// Checked under up.mu: Close marks the pool closed before it
		// takes up.mu, so no connect starts after Close has swept up.
		if p.isClosed() {
			up.mu.Unlock()
			return nil, fmt.Errorf("upstream %s: the gateway is shutting down: %w", upstream, ErrUnavailable)
		}
		s, err := p.slotFor(up, tenant)
		if err != nil {
			up.mu.Unlock()
			return nil, err
		}
		now := time.Now()
		if s.cs != nil {
			s.lastUsed = now
			cs := s.cs
			up.mu.Unlock()
			return cs, nil
		}
		if wait := s.connecting; wait != nil {
			up.mu.Unlock()
			select {
			case <-wait:
				continue // the connect ended: take its session or its error
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream %s: waiting for its connect: %w: %w", upstream, ctx.Err(), ErrUnavailable)
			}
		}
		if now.Before(s.retryAt) {
			err := s.connectErr
			retry := s.retryAt.Sub(now).Round(time.Millisecond)
			up.mu.Unlock()
			if err == nil {
				return nil, fmt.Errorf("upstream %s: its session ended; restarting in %s: %w", upstream, retry, ErrUnavailable)
			}
			return nil, fmt.Errorf("upstream %s: %v; retrying in %s: %w", upstream, err, retry, ErrUnavailable)
		}
		done := p.startConnect(up, s)
		up.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("upstream %s: waiting for its connect: %w: %w", upstream, ctx.Err(), ErrUnavailable)
		}
	}
}

// slotFor returns up's slot for tenant, creating a perTenant one within
// the cap. up.mu is held.
func (p *Pool) slotFor(up *upstream, tenant string) (*slot, error) {
	if up.cfg.Isolation != PerTenant {
		if up.shared == nil {
			up.shared = &slot{}
		}
		return up.shared, nil
	}
	s := up.tenants[tenant]
	if s != nil && (s.live() || time.Now().Before(s.retryAt)) {
		return s, nil
	}
	// No session yet, or one that ended and may be connected again:
	// connecting it needs room under the cap.
	if p.countLive(up) >= p.opts.MaxTenantSessions && !p.evictIdle(up) {
		return nil, fmt.Errorf("upstream %s: %d tenant sessions are open and in use (gateway.maxTenantSessions): %w",
			up.cfg.Name, p.opts.MaxTenantSessions, ErrUnavailable)
	}
	if s == nil {
		s = &slot{tenant: tenant}
		up.tenants[tenant] = s
	}
	return s, nil
}

func (p *Pool) countLive(up *upstream) int {
	n := 0
	for _, s := range up.tenants {
		if s.live() {
			n++
		}
	}
	return n
}

// idleAt is when a session last handed out at lastUsed may be closed
// without cutting a call short: calls are bounded by CallTimeout.
func idleAt(u *Upstream, lastUsed time.Time, idle time.Duration) time.Time {
	return lastUsed.Add(max(idle, u.CallTimeout))
}

// evictIdle closes the least recently used perTenant session of up that
// no call can still be using (handed out more than CallTimeout ago) and
// reports whether there was one. up.mu is held.
func (p *Pool) evictIdle(up *upstream) bool {
	now := time.Now()
	var lru *slot
	for _, s := range up.tenants {
		if s.cs == nil || s.connecting != nil || now.Before(idleAt(&up.cfg, s.lastUsed, 0)) {
			continue
		}
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	p.log.Info("closing the least recently used tenant session of an upstream for another tenant",
		"upstream", up.cfg.Name, "tenant", lru.tenant, "maxTenantSessions", p.opts.MaxTenantSessions)
	p.dropSession(up, lru)
	delete(up.tenants, lru.tenant)
	return true
}

// dropSession detaches s's session and closes it in the background.
// up.mu is held.
func (p *Pool) dropSession(up *upstream, s *slot) {
	cs, pgid := s.cs, s.pgid
	s.cs, s.pgid = nil, 0
	if cs == nil {
		return
	}
	p.sessions.WithLabelValues(up.cfg.Name).Dec()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.closeSession(up, cs, pgid)
	}()
}

// closeSession closes cs (for stdio: closes stdin, waits, then SIGTERM,
// then SIGKILL, as go-sdk's CommandTransport does) and kills whatever is
// left of the process group (the children of an npx, say).
func (p *Pool) closeSession(up *upstream, cs *mcp.ClientSession, pgid int) {
	if err := cs.Close(); err != nil {
		p.log.Debug("upstream session closed", "upstream", up.cfg.Name, "err", err)
	}
	killGroup(pgid)
}

// startConnect starts connecting s in the background and returns the
// channel closed when it ends. up.mu is held.
func (p *Pool) startConnect(up *upstream, s *slot) <-chan struct{} {
	done := make(chan struct{})
	s.connecting = done
	restart := s.started
	s.started = true
	if restart {
		p.restarts.WithLabelValues(up.cfg.Name).Inc()
		p.log.Warn("restarting upstream session", "upstream", up.cfg.Name, "tenant", s.tenant, "failures", s.failures)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.ctx, up.cfg.CallTimeout)
		cs, pgid, err := p.connect(ctx, up, s.tenant)
		cancel()
		up.mu.Lock()
		defer up.mu.Unlock()
		s.connecting = nil
		close(done)
		now := time.Now()
		if err != nil {
			s.connectErr = err
			s.failures++
			s.retryAt = now.Add(p.backoff(s.failures))
			p.log.Warn("upstream connect failed", "upstream", up.cfg.Name, "tenant", s.tenant, "err", err,
				"retryIn", p.backoff(s.failures).Seconds()) // seconds, as every duration in the log
			return
		}
		if p.isClosed() {
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.closeSession(up, cs, pgid) }()
			return
		}
		s.cs, s.pgid, s.connectErr = cs, pgid, nil
		s.upSince, s.lastUsed = now, now
		p.sessions.WithLabelValues(up.cfg.Name).Inc()
		p.wg.Add(1)
		go p.watch(up, s, cs)
	}()
	return done
}

// backoff is the wait before the next connect after n consecutive
// failures (n ≥ 1).
func (p *Pool) backoff(n int) time.Duration {
	d := p.opts.backoffBase
	for i := 1; i < n && d < p.opts.backoffMax; i++ {
		d *= 2
	}
	return min(d, p.opts.backoffMax)
}

// watch waits for cs to end. If the pool did not close it (its process
// exited, its HTTP session was lost), the slot is emptied so that the
// next Session connects again after the backoff.
func (p *Pool) watch(up *upstream, s *slot, cs *mcp.ClientSession) {
	defer p.wg.Done()
	err := cs.Wait()
	up.mu.Lock()
	if s.cs != cs { // closed by the pool: idle, evicted, or Close
		up.mu.Unlock()
		return
	}
	now := time.Now()
	if now.Sub(s.upSince) >= p.opts.healthyAfter {
		s.failures = 0
	}
	s.failures++
	s.retryAt = now.Add(p.backoff(s.failures))
	s.connectErr = nil
	p.log.Warn("upstream session ended", "upstream", up.cfg.Name, "tenant", s.tenant, "err", err,
		"restartIn", p.backoff(s.failures).Seconds())
	p.dropSession(up, s) // reaps the process
	up.mu.Unlock()
}

// connect starts or dials one session of up.
func (p *Pool) connect(ctx context.Context, up *upstream, tenant string) (*mcp.ClientSession, int, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "resourced-gateway", Version: p.opts.Version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the front is stateless and
		// cannot carry a server-to-client request to its caller.
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p.progress.Deliver(req)
		},
	})
	var t mcp.Transport
	var cmd *exec.Cmd
	if up.cfg.Command != "" {
		var stderr *os.File
		var err error
		if cmd, stderr, err = p.command(up, tenant); err != nil {
			return nil, 0, err
		}
		// The child has its own copy once started; ours must close so
		// that logStderr sees the end when the child's side closes.
		defer stderr.Close()
		t = &commandTransport{cmd: cmd, terminate: p.opts.terminate, limit: p.opts.MaxMessageBytes,
			dropped: p.dropped(up, tenant), refused: p.refusedBy(up, tenant),
			budget: p.budget, tenant: tenant, keys: p.keys, files: p.files, progress: &p.progress}
	} else {
		t = &mcp.StreamableClientTransport{
			Endpoint: up.cfg.URL,
			HTTPClient: &http.Client{Transport: &limitTransport{
				base: telemetry.Transport(newHeaderTransport(up.cfg.URL, up.cfg.Headers)), limit: p.opts.MaxMessageBytes, dropped: p.dropped(up, tenant),
				refused: p.refusedBy(up, tenant), budget: p.budget, progress: &p.progress,
			}},
			// limitTransport bounds an event first (the margin is the
			// event's field names).
			MaxEventSize:         int(min(p.opts.MaxMessageBytes+64<<10, math.MaxInt)),
			DisableStandaloneSSE: true, // server-initiated messages have nowhere to go
		}
	}
	cs, err := client.Connect(ctx, t, nil)
	pgid := 0
	if cmd != nil && cmd.Process != nil {
		pgid = cmd.Process.Pid
	}
	if err != nil {
		// go-sdk closed the session (stdin, then SIGTERM); kill what is
		// left of the process group.
		killGroup(pgid)
		return nil, 0, err
	}
	return cs, pgid, nil
}

// dropped is what the message limit reports to the log: a message of
// up's session for tenant over MaxMessageBytes (size 0: not read to its
// end), and whether its call was answered with the gateway's error.
func (p *Pool) dropped(up *upstream, tenant string) func(size int64, answered bool) {
	return func(size int64, answered bool) {
		attrs := []any{"upstream", up.cfg.Name, "limit", p.opts.MaxMessageBytes, "answered", answered}
		if size > 0 {
			attrs = append(attrs, "size", size)
		}
		if tenant != "" {
			attrs = append(attrs, "tenant", tenant)
		}
		p.log.Warn("upstream message over the gateway's limit dropped", attrs...)
		p.refused.WithLabelValues(up.cfg.Name, "too_large").Inc()
	}
}

// refusedBy is what a stdio session's lineGuard reports of a line it did
// not pass on for the budget or for not being JSON.
func (p *Pool) refusedBy(up *upstream, tenant string) func(why string, answered bool) {
	var noisy, noisyAt atomic.Int64
	return func(why string, answered bool) {
		attrs := []any{"upstream", up.cfg.Name, "answered", answered}
		if tenant != "" {
			attrs = append(attrs, "tenant", tenant)
		}
		switch why {
		case "noisy":
			// One entry per session at most every stderrSummary: a flood
			// of notifications must not become a flood of log lines.
			p.refused.WithLabelValues(up.cfg.Name, why).Inc()
			if n := noisy.Add(1); time.Since(time.Unix(0, noisyAt.Load())) >= stderrSummary {
				noisyAt.Store(time.Now().UnixNano())
				noisy.Store(0)
				p.log.Warn("upstream notifications dropped: over the gateway's rate",
					append(attrs, "dropped", n, "perSecond", notificationRate)...)
			}
			return
		case "busy":
			used, _ := p.budget.inUse("")
			p.log.Warn("upstream answer refused: the gateway holds its limit of answer bytes in flight",
				append(attrs, "inFlight", used, "limit", p.opts.MaxBytesInFlight, "tenantLimit", p.opts.MaxTenantBytesInFlight)...)
		default:
			p.log.Warn("upstream message that is not JSON dropped", attrs...)
		}
		p.refused.WithLabelValues(up.cfg.Name, why).Inc()
	}
}

// commandTransport is go-sdk's CommandTransport with the message limit:
// v1.8.0's has a fixed 16 MiB frame limit past which the session ends.
// Its stdout goes through a lineGuard, which answers a longer line's call
// with the gateway's too-large error and keeps the session; go-sdk's own
// limit stays as a backstop, above ours, for a message spread over many
// lines. Close is CommandTransport's: close stdin, wait, SIGTERM, SIGKILL.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	limit     int64
	dropped   func(size int64, answered bool)
	refused   func(why string, answered bool)
	budget    *budget
	tenant    string
	keys      *placeholders
	files     *spillFiles
	progress  *ProgressRouter
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	td := t.terminate
	if td <= 0 {
		td = 5 * time.Second
	}
	g := newLineGuard(stdout, t.limit, t.dropped)
	g.refused, g.budget, g.tenant, g.tickets, g.spillAt = t.refused, t.budget, t.tenant, &tickets{}, defaultSpillAt
	g.notes = rate.NewLimiter(notificationRate, notificationBurst)
	g.progress = t.progress
	g.sc.keys, g.sc.files = t.keys, t.files
	conn, err := (&mcp.IOTransport{
		// Closed by closing stdin, not stdout (as go-sdk does).
		Reader:        io.NopCloser(g),
		Writer:        &stdinCloser{cmd: t.cmd, stdin: stdin, terminate: td},
		MaxLineLength: int(min(t.limit+1<<20, math.MaxInt)),
	}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ticketConn{Connection: conn, tickets: g.tickets}, nil
}

// ticketConn registers the ticket of each call written with one in its
// context (budget.go), so that the reader charges and spills its answer
// for it.
type ticketConn struct {
	mcp.Connection
	tickets *tickets
}

func (c *ticketConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if t := ticketFrom(ctx); t != nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.tickets.add(req.ID, t)
		}
	}
	return c.Connection.Write(ctx, msg)
}

// stdinCloser is a stdio upstream's stdin whose Close ends the process as
// the MCP spec says: close its stdin, wait for it to exit, then SIGTERM,
// then SIGKILL.
type stdinCloser struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (s *stdinCloser) Write(p []byte) (int, error) { return s.stdin.Write(p) }

func (s *stdinCloser) Close() error {
	if err := s.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(s.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// limitTransport applies the message limit to an HTTP upstream's
// responses: a JSON body over it, or an event stream with an event or a
// total over it, is answered by the gateway's too-large error for the
// request's id, and the rest of the body is not read.
type limitTransport struct {
	base    http.RoundTripper
	limit   int64
	dropped func(size int64, answered bool)
	refused func(why string, answered bool)
	budget  *budget
	// progress counts the notifications the event streams pass on.
	progress *ProgressRouter
}

// charged is a response body whose bytes are charged to the in-flight
// budget (budget.go): on Close the charge goes to the call's ticket,
// released when the front answers it, or back at once without one.
type charged struct {
	io.ReadCloser
	ch *charge
	t  *ticket
}

func (c *charged) Close() error {
	if c.ch != nil {
		if c.t != nil {
			c.t.hold(*c.ch, nil)
		} else {
			c.ch.release()
		}
		c.ch = nil
	}
	return c.ReadCloser.Close()
}

// busyHTTP is resp with its body replaced by the gateway's busy error for
// id.
func busyHTTP(resp *http.Response, id []byte, d busyData) *http.Response {
	b := busyResponse(id, d)
	r := *resp
	r.Header = resp.Header.Clone()
	r.Header.Set("Content-Type", "application/json")
	r.Header.Del("Content-Length")
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	return &r
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var id []byte
	if req.Method == http.MethodPost && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			id = requestID(b)
			b.Close()
		}
	}
	plain := plainPOST(req, id)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp, err = t.bound(req, resp, id)
	if plain != nil && err == nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if readPlain(req, resp, mediaType(resp), id, plain) {
			return nil, errPlainAnswered
		}
	}
	return resp, err
}

// mediaType is resp's Content-Type without parameters, in lower case.
func mediaType(resp *http.Response) string {
	mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// bound is resp with the message limit and the budget applied.
func (t *limitTransport) bound(req *http.Request, resp *http.Response, id []byte) (*http.Response, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// go-sdk reads an error's body whole to find a JSON-RPC error.
		resp.Body = limitedBody{io.LimitReader(resp.Body, t.limit), resp.Body}
		return resp, nil
	}
	// The answer's bytes are charged to the call's tenant (its ticket)
	// and the gateway; a request without a ticket charges the gateway.
	tk := ticketFrom(req.Context())
	ch := &charge{b: t.budget}
	if tk != nil {
		ch.tenant = tk.tenant
	}
	busy := func(d busyData) (*http.Response, error) {
		resp.Body.Close()
		if t.refused != nil {
			t.refused("busy", id != nil)
		}
		if id == nil {
			return nil, fmt.Errorf("%s: the gateway holds its limit of upstream answer bytes in flight", req.URL.Redacted())
		}
		return busyHTTP(resp, id, d), nil
	}
	switch mediaType(resp) {
	case "application/json":
		if resp.ContentLength > t.limit && id != nil {
			resp.Body.Close()
			t.dropped(resp.ContentLength, true)
			return tooLargeHTTP(resp, id, t.limit), nil
		}
		if resp.ContentLength >= 0 && resp.ContentLength <= t.limit {
			if d, ok := ch.add(resp.ContentLength); !ok {
				return busy(d)
			}
			resp.Body = &charged{ReadCloser: resp.Body, ch: ch, t: tk}
			return resp, nil // net/http reads no more than Content-Length
		}
		body, n, over := limitedJSON(resp.Body, id, t.limit)
		if over {
			t.dropped(0, id != nil)
			if id == nil {
				return nil, fmt.Errorf("%s: a response body over the gateway's limit of %d bytes", req.URL.Redacted(), t.limit)
			}
			return tooLargeHTTP(resp, id, t.limit), nil
		}
		if d, ok := ch.add(n); !ok {
			return busy(d)
		}
		resp.Body, resp.ContentLength = &charged{ReadCloser: body, ch: ch, t: tk}, -1
	case "text/event-stream":
		g := newSSEGuard(resp.Body, id, t.limit, func() { t.dropped(0, id != nil) })
		g.ch = ch
		g.refused, g.progress = t.refused, t.progress
		resp.Body = &charged{ReadCloser: g, ch: ch, t: tk}
	default:
		resp.Body = limitedBody{io.LimitReader(resp.Body, t.limit), resp.Body}
	}
	return resp, nil
}

// limitedBody is a body read through a LimitReader, closed as the body.
type limitedBody struct {
	io.Reader
	io.Closer
}

// tooLargeHTTP is resp with its body replaced by the gateway's too-large
// error for id.
func tooLargeHTTP(resp *http.Response, id []byte, limit int64) *http.Response {
	b := tooLargeResponse(id, 0, limit)
	r := *resp
	r.Header = resp.Header.Clone()
	r.Header.Set("Content-Type", "application/json")
	r.Header.Del("Content-Length")
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	return &r
}

// command is the exec.Cmd of a stdio upstream: its environment is PATH
// and HOME of the gateway's plus the configured Env, never the rest of
// the gateway's environment (which may hold keys); sandboxed (the
// default), it is started through the sandbox helper with a private HOME
// and TMPDIR (pool_sandbox.go); its stderr goes to the log line by line;
// it leads a process group of its own so that Close can stop its
// children too.
func (p *Pool) command(up *upstream, tenant string) (*exec.Cmd, *os.File, error) {
	env := childEnv(up.cfg.Env, os.Getenv)
	var cmd *exec.Cmd
	if up.cfg.Sandbox.Off {
		cmd = exec.Command(up.cfg.Command, up.cfg.Args...)
		cmd.Env = env
	} else {
		var err error
		if cmd, err = p.sandboxedCommand(up, tenant, env); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("a pipe for its stderr: %w", err)
	}
	cmd.Dir = up.cfg.Dir
	cmd.Stderr = w
	setProcessGroup(cmd)
	if up.acct.set {
		setCredential(cmd, up.acct.uid, up.acct.gid)
	}
	attrs := []any{"upstream", up.cfg.Name}
	if tenant != "" {
		attrs = append(attrs, "tenant", tenant)
	}
	stderrDropped := p.refused.WithLabelValues(up.cfg.Name, "stderr")
	go func() {
		defer r.Close()
		logStderr(r, p.log.With(attrs...), stderrDropped.Inc)
	}()
	return cmd, w, nil
}

// childEnv is the environment of a stdio upstream: PATH and HOME (when
// set) and env, sorted; env wins.
func childEnv(env map[string]string, getenv func(string) string) []string {
	m := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v := getenv(k); v != "" {
			m[k] = v
		}
	}
	for k, v := range env {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// headerTransport adds an HTTP upstream's static headers to every request
// go-sdk's client sends to the upstream's origin; nothing of the gateway's
// callers reaches it. A redirect to another origin gets none of them (the
// headers are the upstream's credentials).
type headerTransport struct {
	origin  string // scheme://host of the upstream's URL
	headers map[string]string
	base    http.RoundTripper
}

func newHeaderTransport(endpoint string, headers map[string]string) headerTransport {
	t := headerTransport{headers: headers, base: syncDefault}
	if u, err := url.Parse(endpoint); err == nil {
		t.origin = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	return t
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && t.origin != "" && strings.ToLower(req.URL.Scheme+"://"+req.URL.Host) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// reapEvery is the reaper's period: a quarter of the shortest perTenant
// idle time, within [10ms, 15s]; 0 when no upstream is perTenant.
func (p *Pool) reapEvery() time.Duration {
	var d time.Duration
	for _, up := range p.ups {
		if up.cfg.Isolation == PerTenant && (d == 0 || up.cfg.IdleTimeout < d) {
			d = up.cfg.IdleTimeout
		}
	}
	if d == 0 {
		return 0
	}
	return min(max(d/4, 10*time.Millisecond), 15*time.Second)
}

// reap closes perTenant sessions unused for their idle time and forgets
// the backoff of tenants that have been quiet for a while.
func (p *Pool) reap(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, up := range p.ups {
			if up.cfg.Isolation != PerTenant {
				continue
			}
			up.mu.Lock()
			for tenant, s := range up.tenants {
				switch {
				case s.connecting != nil:
				case s.cs != nil && !now.Before(idleAt(&up.cfg, s.lastUsed, up.cfg.IdleTimeout)):
					p.log.Info("closing an idle tenant session", "upstream", up.cfg.Name, "tenant", tenant,
						"idleTimeout", up.cfg.IdleTimeout.Seconds())
					p.dropSession(up, s)
					delete(up.tenants, tenant)
				case s.cs == nil && now.After(s.retryAt.Add(p.opts.healthyAfter)):
					delete(up.tenants, tenant) // its backoff has run out
				}
			}
			up.mu.Unlock()
		}
	}
}

// Ready reports, per upstream name, nil or why it cannot be reached:
//   - Shared: a live session is pinged (within 5s and ctx); without one,
//     Ready connects it, as Session would (so a first /readyz starts the
//     process), and reports the error, which within a restart backoff is
//     the backoff's at once.
//   - PerTenant: a probe session of Ready's own (not a tenant's, not
//     counted in the cap) is connected and closed at most once a minute,
//     and its result reported until the next; a live tenant session
//     counts as a success. So /readyz of a perTenant upstream starts at
//     most one process a minute.
func (p *Pool) Ready(ctx context.Context) map[string]error {
	out := make(map[string]error, len(p.ups))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, up := range p.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.ready(ctx, up)
			mu.Lock()
			out[up.cfg.Name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (p *Pool) ready(ctx context.Context, up *upstream) error {
	if up.cfg.Isolation == PerTenant {
		return p.probe(ctx, up)
	}
	cs, err := p.Session(ctx, up.cfg.Name, "")
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, readyPing)
	defer cancel()
	if err := cs.Ping(pctx, nil); err != nil {
		return fmt.Errorf("upstream %s: ping: %v: %w", up.cfg.Name, err, ErrUnavailable)
	}
	return nil
}

// probe is Ready for a perTenant upstream (see Ready).
func (p *Pool) probe(ctx context.Context, up *upstream) error {
	up.mu.Lock()
	if p.isClosed() {
		up.mu.Unlock()
		return fmt.Errorf("upstream %s: the gateway is shutting down: %w", up.cfg.Name, ErrUnavailable)
	}
	for _, s := range up.tenants {
		if s.cs != nil {
			up.mu.Unlock()
			return nil
		}
	}
	if up.probe == nil {
		up.probe = &slot{}
	}
	s := up.probe
	if s.connecting == nil && (s.checked.IsZero() || time.Since(s.checked) >= probeEvery) {
		s.checked = time.Now()
		done := make(chan struct{})
		s.connecting = done
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			cctx, cancel := context.WithTimeout(p.ctx, up.cfg.CallTimeout)
			cs, pgid, err := p.connect(cctx, up, "")
			cancel()
			if cs != nil {
				p.closeSession(up, cs, pgid)
			}
			up.mu.Lock()
			s.connectErr, s.connecting = err, nil
			close(done)
			up.mu.Unlock()
		}()
	}
	wait := s.connecting
	up.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("upstream %s: probe: %w: %w", up.cfg.Name, ctx.Err(), ErrUnavailable)
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if s.connectErr != nil {
		return fmt.Errorf("upstream %s: probe: %v: %w", up.cfg.Name, s.connectErr, ErrUnavailable)
	}
	return nil
}

// Close stops every session and process, waiting for them, and makes
// Session answer ErrUnavailable. It is safe to call more than once.
func (p *Pool) Close() error {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.cancel()
		for _, up := range p.ups {
			up.mu.Lock()
			if up.shared != nil {
				p.dropSession(up, up.shared)
			}
			for _, s := range up.tenants {
				p.dropSession(up, s)
			}
			up.mu.Unlock()
		}
		p.wg.Wait()
		for _, d := range p.removeDirs {
			_ = os.RemoveAll(d)
		}
	})
	return nil
}
