package resourced

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/wwwauth"
)

// Protocol versions the client can speak.
const (
	// Protocol20260728 is negotiated by default (server/discover, no
	// initialize); the client falls back to 2025-11-25 on its own when the
	// server does not speak it.
	Protocol20260728 = "2026-07-28"
	// Protocol20251125 pins the initialize handshake of 2025-11-25.
	Protocol20251125 = "2025-11-25"
)

// Defaults of Options and RetryPolicy.
const (
	DefaultCallTimeout = 60 * time.Second
	DefaultMaxAttempts = 3
	DefaultBaseDelay   = 200 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
)

// TokenSource supplies the bearer token of each request. Token is called
// once per attempt, so a source may refresh tokens; it must be safe for
// concurrent use. The token is sent only to the endpoint's origin and never
// logged.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a TokenSource that always returns the same token.
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

// Options configure a Client; nil means the defaults.
type Options struct {
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Transport is wrapped to add the Authorization header.
	HTTPClient *http.Client
	// ProtocolVersion is "" (negotiate; 2026-07-28 first), Protocol20260728
	// or Protocol20251125 (pin the 2025-11-25 initialize handshake).
	ProtocolVersion string
	// CallTimeout bounds one attempt of one call, connection set-up
	// included; 0 means DefaultCallTimeout, negative means no bound but the
	// caller's context.
	CallTimeout time.Duration
	// Retry bounds the retries of retry-safe failures.
	Retry RetryPolicy
	// Logger receives one debug line per retry (never tokens or bodies);
	// nil means silent.
	Logger *slog.Logger
	// ClientName and ClientVersion are sent as clientInfo; default
	// "resourced-go-client" and "1".
	ClientName    string
	ClientVersion string
}

// RetryPolicy bounds the client's retries. A call is retried only when
// sending it again cannot do harm: the server said so (a *ToolError with
// RetrySafe, HTTP 429 or 503), or nothing reached the server (the
// connection was refused). Reads, Stat and List are idempotent and are
// also retried after 502, 504, a -32603 internal error, and a connection
// lost mid-request; saves and deletes are not, since the first attempt may
// have been applied. The zero value means the defaults.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 1 disables retries; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay doubles with each retry, with full jitter; 0 means
	// DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps one wait, a server's Retry-After included; 0 means
	// DefaultMaxDelay.
	MaxDelay time.Duration
}

// Client calls one resourced over MCP Streamable HTTP. It is safe for
// concurrent use.
//
// Each call opens its own MCP session (server/discover on 2026-07-28,
// initialize on 2025-11-25) and closes it after the call: resourced is
// stateless, so this costs one small round trip, and it keeps go-sdk's
// per-session response cache — keyed by URI alone — from ever serving one
// token's private body to another token.
type Client struct {
	endpoint  string
	origin    string // scheme://host of endpoint
	tokens    TokenSource
	http      *http.Client
	mcp       *mcp.Client
	protocol  string
	timeout   time.Duration
	retry     RetryPolicy
	log       *slog.Logger
	sleepHook func(time.Duration) // tests
}

// NewClient returns a client of the MCP endpoint of a resourced, e.g.
// "http://127.0.0.1:8765/mcp", that authenticates with tokens.
func NewClient(endpoint string, tokens TokenSource, opts *Options) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("resourced: endpoint %q is not an http(s) URL", endpoint)
	}
	if tokens == nil {
		return nil, errors.New("resourced: a TokenSource is required (StaticToken for a fixed token)")
	}
	if opts == nil {
		opts = &Options{}
	}
	switch opts.ProtocolVersion {
	case "", Protocol20260728, Protocol20251125:
	default:
		return nil, fmt.Errorf("resourced: ProtocolVersion %q: use %q or %q", opts.ProtocolVersion, Protocol20260728, Protocol20251125)
	}
	base := opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc := *base
	hc.Transport = &authTransport{next: next, origin: u.Scheme + "://" + u.Host}
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name = "resourced-go-client"
	}
	if version == "" {
		version = "1"
	}
	c := &Client{
		endpoint: endpoint,
		origin:   u.Scheme + "://" + u.Host,
		tokens:   tokens,
		http:     &hc,
		mcp: mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{},
			Logger:       opts.Logger,
		}),
		protocol: opts.ProtocolVersion,
		timeout:  opts.CallTimeout,
		retry:    opts.Retry,
		log:      opts.Logger,
	}
	if c.timeout == 0 {
		c.timeout = DefaultCallTimeout
	}
	if c.retry.MaxAttempts <= 0 {
		c.retry.MaxAttempts = DefaultMaxAttempts
	}
	if c.retry.BaseDelay <= 0 {
		c.retry.BaseDelay = DefaultBaseDelay
	}
	if c.retry.MaxDelay <= 0 {
		c.retry.MaxDelay = DefaultMaxDelay
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// WithTokenSource returns a client that shares c's connections and options
// but authenticates with tokens: one producer client, a token per tenant.
func (c *Client) WithTokenSource(tokens TokenSource) *Client {
	d := *c
	d.tokens = tokens
	return &d
}

// Endpoint returns the MCP endpoint URL.
func (c *Client) Endpoint() string { return c.endpoint }

// idempotence of an operation, for retries.
type opClass int

const (
	idempotent opClass = iota // read, stat, list
	mutating                  // save, delete
)

// exchange records the HTTP side of one attempt for error classification;
// the transport finds it in the request context.
type exchange struct {
	token string

	mu         sync.Mutex
	status     int
	retryAfter time.Duration
	scope      string
	// description is the challenge's error_description.
	description string
}

type exchangeKey struct{}

// authTransport adds the attempt's token to requests for the endpoint's
// origin (never to a redirect elsewhere) and records response statuses.
type authTransport struct {
	next   http.RoundTripper
	origin string
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if x != nil && x.token != "" && r.URL.Scheme+"://"+r.URL.Host == t.origin {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+x.token)
	}
	resp, err := t.next.RoundTrip(r)
	if x != nil && err == nil {
		x.mu.Lock()
		x.status = resp.StatusCode
		x.retryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		ch := wwwauth.Params(resp.Header.Get("WWW-Authenticate"))
		x.scope, x.description = ch["scope"], ch["error_description"]
		x.mu.Unlock()
	}
	return resp, err
}

// do runs fn in a fresh session, retrying retry-safe failures.
func (c *Client) do(ctx context.Context, method string, class opClass, fn func(context.Context, *mcp.ClientSession) error) error {
	return c.doProtocol(ctx, c.protocol, method, class, fn)
}

// doProtocol is do speaking protocol ("" negotiates).
func (c *Client) doProtocol(ctx context.Context, protocol, method string, class opClass, fn func(context.Context, *mcp.ClientSession) error) error {
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, protocol, method, fn)
		if err == nil {
			return nil
		}
		if attempt >= c.retry.MaxAttempts || ctx.Err() != nil || !retrySafe(class, err) {
			return err
		}
		d := c.backoff(attempt, err)
		c.log.DebugContext(ctx, "resourced: retrying", "method", method, "attempt", attempt+1, "delay", d, "err", err)
		if c.sleepHook != nil {
			c.sleepHook(d)
			continue
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *Client) attempt(ctx context.Context, protocol, method string, fn func(context.Context, *mcp.ClientSession) error) error {
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return fmt.Errorf("resourced: %s: getting a token: %w", method, err)
	}
	x := &exchange{token: tok}
	ctx = context.WithValue(ctx, exchangeKey{}, x)
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	t := &mcp.StreamableClientTransport{Endpoint: c.endpoint, HTTPClient: c.http, DisableStandaloneSSE: true}
	cs, err := c.mcp.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return classify(method, x, err)
	}
	defer cs.Close()
	if err := fn(ctx, cs); err != nil {
		return classify(method, x, err)
	}
	return nil
}

// classify turns an error of go-sdk into the client's typed errors.
func classify(method string, x *exchange, err error) error {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("resourced: %s: %w", method, err)
	}
	if we := wireError(err); we != nil {
		return newRPCError(method, we)
	}
	x.mu.Lock()
	status, ra, scope, desc := x.status, x.retryAfter, x.scope, x.description
	x.mu.Unlock()
	if status >= 300 {
		return &HTTPError{Method: method, StatusCode: status, Scope: scope, Description: desc, RetryAfter: ra, Err: err}
	}
	return fmt.Errorf("resourced: %s: %w", method, err)
}

// wireError finds the JSON-RPC error a server answered in err's tree.
// go-sdk also wraps its own transport-local sentinels as *jsonrpc.Error
// ("rejected by transport" -32005, "client is closing" -32003, "server is
// closing" -32004); those did not come from the server and are skipped.
func wireError(err error) *jsonrpc.Error {
	switch e := err.(type) {
	case nil:
		return nil
	case *jsonrpc.Error:
		switch e.Code {
		case -32003, -32004, -32005:
			return nil
		}
		return e
	case interface{ Unwrap() error }:
		return wireError(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			if we := wireError(x); we != nil {
				return we
			}
		}
	}
	return nil
}

// retrySafe reports whether err may be retried for an operation of class.
func retrySafe(class opClass, err error) bool {
	var te *ToolError
	if errors.As(err, &te) {
		return te.RetrySafe
	}
	var he *HTTPError
	if errors.As(err, &he) {
		switch he.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return true
		case http.StatusBadGateway, http.StatusGatewayTimeout:
			return class == idempotent
		}
		return false
	}
	var re *RPCError
	if errors.As(err, &re) {
		return class == idempotent && re.Wire.Code == jsonrpc.CodeInternalError
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true // nothing was sent
	}
	if class == idempotent {
		return errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
	}
	return false
}

// backoff is the wait before retry number attempt: exponential with full
// jitter, at least the server's Retry-After, at most MaxDelay.
func (c *Client) backoff(attempt int, err error) time.Duration {
	d := c.retry.BaseDelay << (attempt - 1)
	if d <= 0 || d > c.retry.MaxDelay {
		d = c.retry.MaxDelay
	}
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	var he *HTTPError
	if errors.As(err, &he) && he.RetryAfter > d {
		d = he.RetryAfter
	}
	return min(d, c.retry.MaxDelay)
}
