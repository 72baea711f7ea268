package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/resourced/resourced/grammar"
)

// Gateway is the gateway: section (docs/gateway.md): resourced in front of
// other MCP servers. Its presence makes `resourced serve` run the gateway;
// `resourced gateway` requires it.
type Gateway struct {
	// Scheme is the resourced scheme offloaded parts are saved in; default
	// "result". When it is not under schemes:, it is added as kind report
	// (retention 24h, maxRetention 168h, ttl 5m, maxBytes the larger of
	// 64MiB and the largest configured scheme's).
	Scheme string `yaml:"scheme"`
	// PreviewChars is how many characters of an offloaded text part stay
	// inline; default 500.
	PreviewChars int `yaml:"previewChars"`
	// MaxTenantSessions caps the perTenant sessions (processes) of each
	// upstream; default 32. At the cap a new tenant closes the least
	// recently used idle one, or is answered unavailable.
	MaxTenantSessions int `yaml:"maxTenantSessions"`
	// MaxBytesInFlight bounds the bytes of upstream answers the gateway
	// holds at once (read, not yet answered); default 4 × the message
	// limit (GatewayMaxMessageBytes). MaxTenantBytesInFlight bounds one
	// tenant's; default half of MaxBytesInFlight. An answer over either is
	// refused at once, unavailable and retry-safe (docs/gateway.md).
	MaxBytesInFlight       *Size `yaml:"maxBytesInFlight"`
	MaxTenantBytesInFlight *Size `yaml:"maxTenantBytesInFlight"`
	// Upstreams are the servers behind the gateway; at least one.
	Upstreams []GatewayUpstream `yaml:"upstreams"`

	// ConfigFile is the file this config was read from ("" none), set by
	// cmd/resourced: upstreams must not see it (ProtectedPaths).
	ConfigFile string `yaml:"-"`
}

// GatewayUpstream is one upstream: a stdio command or a Streamable HTTP
// URL, exactly one of them.
type GatewayUpstream struct {
	// Name namespaces the upstream's tools and URIs
	// (UpstreamNamePattern), unique.
	Name string `yaml:"name"`
	// Command, Args, Env and Dir start a stdio upstream. Env holds
	// literal, non-secret values added to a minimal environment (PATH,
	// HOME); the gateway's own environment never reaches the process.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	// Sandbox is on (default) or off: a stdio upstream runs confined
	// (docs/gateway.md, Trust model): it reads the system's paths, its
	// command, its path arguments, Dir and AllowPaths, writes its private
	// HOME and TMPDIR, and cannot reach resourced's process, keys or data.
	Sandbox string `yaml:"sandbox"`
	// AllowPaths are further paths a sandboxed upstream may use: a path
	// (read-only) or {path: P, mode: rw}. None may hold or lie inside the
	// data directory, the config file or a key file.
	AllowPaths []AllowPath `yaml:"allowPaths"`
	// User and Group run a sandboxed upstream as another account (names
	// or ids) when resourced runs as root; Group defaults to User's.
	User  string `yaml:"user"`
	Group string `yaml:"group"`
	// URL is a Streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers are sent with every request to URL; their values are read
	// from the environment or a file, never written here.
	Headers map[string]HeaderValue `yaml:"headers"`
	// Isolation is shared (default: one session for every caller) or
	// perTenant (one per tenant, closed after IdleTimeout).
	Isolation string `yaml:"isolation"`
	// IdleTimeout closes a perTenant session unused this long; default 5m.
	IdleTimeout Duration `yaml:"idleTimeout"`
	// CallTimeout bounds one forwarded request; default 2m.
	CallTimeout Duration `yaml:"callTimeout"`
	// Required upstreams fail /readyz while they cannot be reached;
	// default true.
	Required *bool `yaml:"required"`
	// Offload says when a tools/call result is saved and linked.
	Offload Offload `yaml:"offload"`
}

// AllowPath is one of an upstream's allowPaths: a path, read-only, or
// {path: P, mode: ro|rw}.
type AllowPath struct {
	Path string `yaml:"path"`
	// Mode is "ro" (default) or "rw".
	Mode string `yaml:"mode"`
}

// UnmarshalYAML takes a bare path or {path, mode}.
func (a *AllowPath) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*a = AllowPath{Path: n.Value}
		return nil
	}
	type plain AllowPath
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*a = AllowPath(v)
	return nil
}

// Sandbox modes of an upstream.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// ProtectedPath is a path resourced keeps to itself, with its key.
type ProtectedPath struct {
	Path string
	What string
}

// GatewayProtectedPaths are the paths no sandboxed upstream may see: the
// data directory, the bbolt file, the config file, every key file, the
// upload spool and the files of HTTP upstreams' header values.
func (c *Config) GatewayProtectedPaths() []ProtectedPath {
	var out []ProtectedPath
	add := func(what, p string) {
		if p != "" {
			out = append(out, ProtectedPath{Path: p, What: what})
		}
	}
	add("the data directory", c.DataDir)
	add("store.bbolt.path", c.Store.Bbolt.Path)
	add("store.s3.spoolDir", c.Store.S3.SpoolDir)
	add("auth.hmacSecretFile", c.Auth.HMACSecretFile)
	for _, f := range c.Auth.PublicKeyFiles {
		add("auth.publicKeyFiles", f)
	}
	add("links.keyFile", c.Links.KeyFile)
	if c.Gateway != nil {
		add("the config file", c.Gateway.ConfigFile)
		for i, u := range c.Gateway.Upstreams {
			for _, name := range sortedKeys(u.Headers) {
				add(fmt.Sprintf("gateway.upstreams[%d].headers.%s", i, name), u.Headers[name].File)
			}
		}
	}
	return out
}

// HeaderValue says where a header's value comes from: exactly one of an
// environment variable and a file (mode 0600; surrounding white space is
// trimmed). cmd/resourced reads it.
type HeaderValue struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// literalHeader is why a header value written in the YAML is refused;
// the value itself is never repeated (it is likely a secret).
const literalHeader = "a header value comes from {env: VAR} or {file: PATH}, never the YAML"

// UnmarshalYAML takes {env: VAR} or {file: PATH} and refuses anything
// else, a literal value above all, without echoing it (go-yaml's own
// error quotes the value's start). It reads the mapping itself: keys
// other than env and file are errors, as in the strict decoding.
func (h *HeaderValue) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s", n.Line, literalHeader)
	}
	var v HeaderValue
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		var dst *string
		switch k.Value {
		case "env":
			dst = &v.Env
		case "file":
			dst = &v.File
		default:
			return fmt.Errorf("line %d: field %s not found in type config.HeaderValue (want env or file)", k.Line, k.Value)
		}
		if val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		if val.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want a string", val.Line, k.Value)
		}
		if val.Tag != "!!null" {
			*dst = val.Value
		}
	}
	*h = v
	return nil
}

// checkLiteralHeaders refuses a header value written in the YAML before
// the document is decoded, naming its key
// (gateway.upstreams[i].headers.<Name>), which HeaderValue's UnmarshalYAML
// cannot know. A document that does not parse is left to the decoder.
func checkLiteralHeaders(data []byte) error {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	ups := member(member(root.Content[0], "gateway"), "upstreams")
	if ups == nil || ups.Kind != yaml.SequenceNode {
		return nil
	}
	var errs []string
	for i, u := range ups.Content {
		h := member(deref(u), "headers")
		if h == nil || h.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(h.Content); j += 2 {
			if deref(h.Content[j+1]).Kind != yaml.MappingNode {
				errs = append(errs, fmt.Sprintf("gateway.upstreams[%d].headers.%s: %s", i, h.Content[j].Value, literalHeader))
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// member is the value of key in the mapping n, or nil.
func member(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// Offload is an upstream's offloading rule.
type Offload struct {
	// Threshold is the content size above which a result is offloaded;
	// default 16KiB.
	Threshold *Size `yaml:"threshold"`
	// Tools overrides Threshold by upstream tool name: always, never or a
	// size.
	Tools map[string]ToolOffload `yaml:"tools"`
}

// ToolOffload is one tool's override: "always", "never" or a size.
type ToolOffload struct {
	// Mode is "always", "never" or "size".
	Mode string
	// Threshold is the size, when Mode is "size".
	Threshold Size
}

// Offload modes of a tool.
const (
	OffloadAlways = "always"
	OffloadNever  = "never"
	OffloadSize   = "size"
)

// UnmarshalYAML parses always, never or a size.
func (o *ToolOffload) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	switch strings.TrimSpace(s) {
	case OffloadAlways, OffloadNever:
		*o = ToolOffload{Mode: strings.TrimSpace(s)}
		return nil
	}
	v, err := ParseSize(s)
	if err != nil {
		return fmt.Errorf("line %d: want always, never or a size: %w", n.Line, err)
	}
	*o = ToolOffload{Mode: OffloadSize, Threshold: v}
	return nil
}

// MarshalYAML writes the mode, or the size in bytes.
func (o ToolOffload) MarshalYAML() (any, error) {
	if o.Mode == OffloadSize {
		return int64(o.Threshold), nil
	}
	return o.Mode, nil
}

// UpstreamNamePattern is the grammar of an upstream name; it is
// gateway.NamePattern (a test in cmd/resourced holds them equal).
const UpstreamNamePattern = `^[a-z][a-z0-9-]{0,31}$`

var upstreamName = regexp.MustCompile(UpstreamNamePattern)

// Gateway defaults.
const (
	DefaultGatewayScheme     = "result"
	DefaultPreviewChars      = 500
	DefaultMaxTenantSessions = 32
	DefaultOffloadThreshold  = Size(16 << 10)
	defaultUpstreamIdle      = Duration(5 * time.Minute)
	defaultUpstreamCall      = Duration(2 * time.Minute)
	gatewaySchemeMinBytes    = Size(64 << 20)
)

// applyGatewayDefaults fills the gateway section's defaults and adds its
// scheme when it is not configured; schemes' own defaults are already
// applied.
func (c *Config) applyGatewayDefaults() {
	g := c.Gateway
	if g == nil {
		return
	}
	if g.Scheme == "" {
		g.Scheme = DefaultGatewayScheme
	}
	if g.PreviewChars == 0 {
		g.PreviewChars = DefaultPreviewChars
	}
	if g.MaxTenantSessions == 0 {
		g.MaxTenantSessions = DefaultMaxTenantSessions
	}
	for i := range g.Upstreams {
		u := &g.Upstreams[i]
		if u.Isolation == "" {
			u.Isolation = "shared"
		}
		if u.IdleTimeout == 0 {
			u.IdleTimeout = defaultUpstreamIdle
		}
		if u.CallTimeout == 0 {
			u.CallTimeout = defaultUpstreamCall
		}
		if u.Command != "" && u.Sandbox == "" {
			u.Sandbox = SandboxOn
		}
		for j := range u.AllowPaths {
			if u.AllowPaths[j].Mode == "" {
				u.AllowPaths[j].Mode = "ro"
			}
		}
		if u.Required == nil {
			t := true
			u.Required = &t
		}
		if u.Offload.Threshold == nil {
			u.Offload.Threshold = size(int64(DefaultOffloadThreshold))
		}
	}
	if _, ok := c.Schemes[g.Scheme]; ok || grammar.Scheme(g.Scheme) != nil {
		return // a bad name is reported once, as gateway.scheme
	}
	maxBytes := gatewaySchemeMinBytes
	for _, s := range c.Schemes {
		if s.MaxBytes != nil && *s.MaxBytes > maxBytes {
			maxBytes = *s.MaxBytes
		}
	}
	c.Schemes[g.Scheme] = &Scheme{
		Kind: KindReport, TTL: dur(5 * time.Minute), Retention: dur(24 * time.Hour),
		MaxRetention: dur(7 * 24 * time.Hour), MaxBytes: size(int64(maxBytes)),
	}
}

// GatewayMaxMessageBytes is the largest message the gateway reads from an
// upstream (gateway.PoolOptions.MaxMessageBytes): what it can keep, twice
// the offload scheme's maxBytes (a blob's base64, a text's JSON escapes)
// and 1 MiB, as the server's request body limit. 0 without a gateway
// section or before defaults are applied.
func (c *Config) GatewayMaxMessageBytes() int64 {
	if c.Gateway == nil {
		return 0
	}
	s := c.Schemes[c.Gateway.Scheme]
	if s == nil || s.MaxBytes == nil {
		return 0
	}
	return 2*int64(*s.MaxBytes) + 1<<20
}

// headers an upstream's config may not set: go-sdk's transport sets them
// per request, or net/http does.
var reservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Last-Event-Id",
	"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// validateGateway checks the gateway section, each problem naming its
// key (gateway.upstreams[1].headers.X-Key: ...).
func (c *Config) validateGateway(p *problems) {
	g := c.Gateway
	if g == nil {
		return
	}
	if err := grammar.Scheme(g.Scheme); err != nil {
		p.bad("gateway.scheme", "not a scheme name: %v", err)
	} else if s := c.Schemes[g.Scheme]; s != nil && s.Kind != KindReport {
		p.bad("gateway.scheme", "scheme %q is of kind %s; offloaded parts need a scheme of kind report", g.Scheme, s.Kind)
	}
	if g.PreviewChars < 0 || g.PreviewChars > 100000 {
		p.bad("gateway.previewChars", "want 1 to 100000 (0 is the default, 500)")
	}
	if g.MaxTenantSessions < 0 || g.MaxTenantSessions > 10000 {
		p.bad("gateway.maxTenantSessions", "want 1 to 10000 (0 is the default, 32)")
	}
	limit := c.GatewayMaxMessageBytes()
	if b := g.MaxBytesInFlight; b != nil && (*b <= 0 || int64(*b) < limit) {
		p.bad("gateway.maxBytesInFlight", "want at least the message limit, %d bytes (twice the offload scheme's maxBytes and 1MiB), so that one answer fits", limit)
	}
	if b := g.MaxTenantBytesInFlight; b != nil {
		total := 4 * limit
		if g.MaxBytesInFlight != nil {
			total = int64(*g.MaxBytesInFlight)
		}
		if *b <= 0 || int64(*b) < limit || int64(*b) > total {
			p.bad("gateway.maxTenantBytesInFlight", "want from the message limit, %d bytes, to gateway.maxBytesInFlight, %d bytes", limit, total)
		}
	}
	if len(g.Upstreams) == 0 {
		p.bad("gateway.upstreams", "at least one upstream is required")
	}
	seen := map[string]int{}
	for i := range g.Upstreams {
		u := &g.Upstreams[i]
		key := fmt.Sprintf("gateway.upstreams[%d]", i)
		switch {
		case u.Name == "":
			p.bad(key+".name", "required")
		case !upstreamName.MatchString(u.Name):
			p.bad(key+".name", "%q is not an upstream name: want a lowercase letter, then up to 31 lowercase letters, digits or '-' (%s)", u.Name, UpstreamNamePattern)
		default:
			if j, dup := seen[u.Name]; dup {
				p.bad(key+".name", "%q is also the name of gateway.upstreams[%d]", u.Name, j)
			}
			seen[u.Name] = i
		}
		validateUpstream(p, key, u)
	}
}

func validateUpstream(p *problems, key string, u *GatewayUpstream) {
	switch {
	case u.Command == "" && u.URL == "":
		p.bad(key, "want command (a stdio upstream) or url (a Streamable HTTP upstream)")
	case u.Command != "" && u.URL != "":
		p.bad(key, "want one of command and url, not both")
	case u.Command != "":
		if len(u.Headers) > 0 {
			p.bad(key+".headers", "only for a url upstream; a stdio upstream gets env")
		}
		validateSandbox(p, key, u)
	default:
		if pu, err := url.Parse(u.URL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			p.bad(key+".url", "want an http:// or https:// URL, got %q", u.URL)
		} else if pu.User != nil {
			p.bad(key+".url", "must not hold credentials; use headers with a value from env or file")
		}
		for _, k := range []struct {
			name string
			set  bool
		}{{"args", len(u.Args) > 0}, {"env", len(u.Env) > 0}, {"dir", u.Dir != ""}, {"sandbox", u.Sandbox != ""},
			{"allowPaths", len(u.AllowPaths) > 0}, {"user", u.User != ""}, {"group", u.Group != ""}} {
			if k.set {
				p.bad(key+"."+k.name, "only for a command upstream")
			}
		}
	}
	for _, k := range sortedKeys(u.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.bad(key+".env", "%q is not an environment variable name", k)
		} else if strings.ContainsRune(u.Env[k], 0) {
			p.bad(key+".env."+k, "must not contain a NUL byte")
		}
	}
	for _, name := range sortedKeys(u.Headers) {
		h := u.Headers[name]
		hkey := key + ".headers." + name
		if !isToken(name) {
			p.bad(hkey, "not a header name")
			continue
		}
		if slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) }) {
			p.bad(hkey, "set by the MCP transport; it cannot be configured")
		}
		if (h.Env == "") == (h.File == "") {
			p.bad(hkey, "want exactly one of env (a variable name) and file (a mode 0600 file)")
		}
	}
	if u.Isolation != "shared" && u.Isolation != "perTenant" {
		p.bad(key+".isolation", "want shared or perTenant, got %q", u.Isolation)
	}
	if u.IdleTimeout < Duration(time.Second) {
		p.bad(key+".idleTimeout", "want at least 1s")
	}
	if u.CallTimeout < Duration(time.Second) || u.CallTimeout > Duration(time.Hour) {
		p.bad(key+".callTimeout", "want 1s to 1h")
	}
	if *u.Offload.Threshold <= 0 {
		p.bad(key+".offload.threshold", "must be positive")
	}
	for _, tool := range sortedKeys(u.Offload.Tools) {
		if tool == "" {
			p.bad(key+".offload.tools", "a tool name is empty")
		} else if u.Name != "" && strings.HasPrefix(tool, u.Name+"__") {
			p.bad(key+".offload.tools."+tool, "name the tool as the upstream lists it (%q), without the %q the gateway adds in front",
				strings.TrimPrefix(tool, u.Name+"__"), u.Name+"__")
		} else if o := u.Offload.Tools[tool]; o.Mode == OffloadSize && o.Threshold <= 0 {
			p.bad(key+".offload.tools."+tool, "a size must be positive (or: always, never)")
		}
	}
}

// validateSandbox checks a stdio upstream's sandbox keys. Whether an
// allowed path holds a protected one, and whether the kernel has
// Landlock, are checked at start (gateway.NewPool), where the paths are
// resolved.
func validateSandbox(p *problems, key string, u *GatewayUpstream) {
	switch u.Sandbox {
	case SandboxOn:
	case SandboxOff:
		for _, k := range []struct {
			name string
			set  bool
		}{{"allowPaths", len(u.AllowPaths) > 0}, {"user", u.User != ""}, {"group", u.Group != ""}} {
			if k.set {
				p.bad(key+"."+k.name, "only with sandbox: on")
			}
		}
	default:
		p.bad(key+".sandbox", "want on or off, got %q", u.Sandbox)
	}
	for j, a := range u.AllowPaths {
		akey := fmt.Sprintf("%s.allowPaths[%d]", key, j)
		switch {
		case a.Path == "":
			p.bad(akey, "a path is required")
		case !strings.HasPrefix(a.Path, "/"):
			p.bad(akey, "want an absolute path, got %q", a.Path)
		case strings.ContainsRune(a.Path, 0):
			p.bad(akey, "must not contain a NUL byte")
		}
		if a.Mode != "ro" && a.Mode != "rw" {
			p.bad(akey+".mode", "want ro or rw, got %q", a.Mode)
		}
	}
	if u.Group != "" && u.User == "" {
		p.bad(key+".group", "only with user")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// isToken reports whether s is an HTTP token (RFC 9110), a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x80 || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}
