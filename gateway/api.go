// Package gateway puts resourced in front of other MCP servers
// ("upstreams") with no change to them: their tools, prompts, resources and
// completions pass through, and a tool result too large for a host is saved
// in the store under the caller's tenant and replaced by a resource_link, a
// short preview and a sentence saying how to read the rest
// (docs/gateway.md).
//
// Two halves meet in this file:
//   - the Pool (pool*.go) owns the upstream sessions: it starts stdio
//     processes and connects to HTTP servers, keeps one session per
//     upstream (isolation "shared") or per upstream and tenant
//     ("perTenant"), restarts dead ones with backoff, closes idle ones and
//     reports readiness;
//   - the Front (front*.go) is what package server mounts on its go-sdk
//     server: a receiving middleware that answers the proxied methods
//     through the Pool, namespaces names and URIs, and offloads large
//     results through the service.
//
// Callers' tokens never reach an upstream (MCP forbids token passthrough):
// an upstream sees only the static headers or environment of its config.
package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Isolation says which callers share an upstream session.
type Isolation string

const (
	// Shared is one upstream session (or process) for every caller.
	Shared Isolation = "shared"
	// PerTenant is one upstream session (or process) per tenant, created
	// on first use and closed when idle.
	PerTenant Isolation = "perTenant"
)

// Upstream is the resolved configuration of one upstream: secrets already
// read from the environment or their files, sizes parsed.
type Upstream struct {
	// Name namespaces the upstream's tools, prompts and URIs; it matches
	// NamePattern.
	Name string
	// URL is a Streamable HTTP endpoint; exactly one of URL and Command is
	// set.
	URL string
	// Headers are sent with every HTTP request to URL (resolved values).
	Headers map[string]string
	// Command, Args, Env and Dir start a stdio upstream. Env is added to a
	// minimal environment (PATH, HOME), never the gateway's own.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// Sandbox confines a stdio upstream (docs/gateway.md, "Trust model");
	// the zero value is on, with nothing allowed beyond what Plan derives.
	Sandbox Sandbox
	// Isolation is Shared or PerTenant.
	Isolation Isolation
	// IdleTimeout closes a PerTenant session unused this long.
	IdleTimeout time.Duration
	// CallTimeout bounds one forwarded request.
	CallTimeout time.Duration
	// Required upstreams fail /readyz when they cannot be reached; others
	// are only reported.
	Required bool
	// Offload says when a tools/call result is saved and linked.
	Offload OffloadPolicy
}

// Sandbox is how a stdio upstream is confined.
type Sandbox struct {
	// Off runs the upstream unconfined: as the gateway's user, able to
	// read whatever that user can (the gateway's keys and data included).
	Off bool
	// AllowPaths are the paths it may use besides the system's, its
	// command, its path arguments, Dir and its private HOME and TMPDIR:
	// read-only unless Write. None may hold or lie inside a path
	// resourced keeps to itself (PoolOptions.Protected).
	AllowPaths []AllowPath
	// User and Group run it as another account (names or numeric ids);
	// only when the gateway runs as root. Group "" is User's primary
	// group.
	User, Group string
}

// AllowPath is one of Sandbox.AllowPaths.
type AllowPath struct {
	Path  string
	Write bool
}

// NamePattern is the grammar of an upstream name: it cannot contain the
// tool separator "__" nor the URI separator "+" (docs/gateway.md).
const NamePattern = `^[a-z][a-z0-9-]{0,31}$`

// OffloadPolicy is an upstream's offloading rule with per-tool overrides.
type OffloadPolicy struct {
	// Threshold is the content size (bytes of text, decoded blobs and
	// structuredContent) above which a result is offloaded; default 16 KiB.
	Threshold int64
	// Tools overrides Threshold by upstream tool name (before
	// namespacing).
	Tools map[string]ToolOffload
}

// ToolOffload is one tool's override: Always, Never, or a threshold.
type ToolOffload struct {
	Mode      OffloadMode
	Threshold int64 // when Mode is OffloadSize
}

// OffloadMode is how a tool's results are offloaded.
type OffloadMode string

const (
	OffloadAlways OffloadMode = "always"
	OffloadNever  OffloadMode = "never"
	OffloadSize   OffloadMode = "size"
)

// Sessions is what the Front needs of the Pool.
type Sessions interface {
	// Upstreams lists the configured upstreams in config order.
	Upstreams() []Upstream
	// Session returns a live session to the named upstream for tenant
	// (ignored under Shared isolation), connecting or restarting it if
	// needed. The error of an upstream that cannot be reached wraps
	// ErrUnavailable.
	Session(ctx context.Context, upstream, tenant string) (*mcp.ClientSession, error)
	// Progress is where the sessions' progress notifications are routed.
	Progress() *ProgressRouter
	// Ready reports, per upstream name, nil or why it cannot be reached.
	Ready(ctx context.Context) map[string]error
	// Close stops every session and process.
	Close() error
}

// FrontOptions are what cmd/resourced gives server.Options.Gateway; the
// server builds the Front from them with its own service, logger and
// metrics registry. A nil server.Options.Gateway means no gateway.
type FrontOptions struct {
	// Sessions reach the upstreams (the Pool).
	Sessions Sessions
	// Scheme is the resourced scheme offloaded parts are saved in (a
	// report-kind scheme; config default "result").
	Scheme string
	// PreviewChars is how many characters of an offloaded text part stay
	// inline as its preview (config default 500).
	PreviewChars int
}
