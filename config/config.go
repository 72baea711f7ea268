// Package config owns resourced's configuration file: its typed form, strict
// YAML decoding, defaults, environment and flag overrides, and validation.
//
// Decoding is strict: an unknown key is an error that names it. Validate is
// fast and pure and reports every problem at once, each naming its path
// (e.g. "schemes.search.ttl: must not be negative").
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/resourced/resourced/grammar"
	"github.com/resourced/resourced/internal/gcheadroom"
)

// Config is the whole configuration file.
type Config struct {
	// Listen is the TCP address to serve on.
	Listen string `yaml:"listen"`
	// DataDir holds the bbolt file and, later, generated keys.
	DataDir string `yaml:"dataDir"`
	// BaseURL is the server's canonical URL (token audience, RFC 9728
	// resource, signed links). Default: http://<listen>.
	BaseURL string `yaml:"baseURL"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"logLevel"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight requests.
	ShutdownTimeout Duration `yaml:"shutdownTimeout"`
	// NotifyPollInterval is how often URIs with listeners are checked for
	// changes made through other instances.
	NotifyPollInterval Duration `yaml:"notifyPollInterval"`
	// NotifyMaxListenURIs and NotifyMaxListensPerTenant cap what
	// subscriptions/listen may hold: distinct URIs per listen, open listens
	// per tenant on one instance (0: the server's defaults).
	NotifyMaxListenURIs       int     `yaml:"notifyMaxListenURIs"`
	NotifyMaxListensPerTenant int     `yaml:"notifyMaxListensPerTenant"`
	Limits                    Limits  `yaml:"limits"`
	Budgets                   Budgets `yaml:"budgets"`
	Links                     Links   `yaml:"links"`
	Quota                     Quota   `yaml:"quota"`
	Sweep                     Sweep   `yaml:"sweep"`
	Store                     Store   `yaml:"store"`
	Index                     Index   `yaml:"index"`
	Auth                      Auth    `yaml:"auth"`
	Metrics                   Metrics `yaml:"metrics"`
	Cache                     Cache   `yaml:"cache"`
	// GCHeadroom is how far the Go heap may grow past what the last
	// collection found live before the next one starts: the goal is
	// live + max(live, gcHeadroom) instead of GOGC=100's 2×live
	// (internal/gcheadroom). Unset: 32MiB; 0: the runtime's own GOGC.
	// The GOGC environment variable, when set, wins.
	GCHeadroom *Size   `yaml:"gcHeadroom"`
	Tracing    Tracing `yaml:"tracing"`
	// Schemes maps a URI scheme to its policy.
	Schemes map[string]*Scheme `yaml:"schemes"`
	// Fixtures adds the fixture tools and their public resources in tenant
	// "fixtures" (docs/fixtures.md), for testing hosts; off by default.
	Fixtures bool `yaml:"fixtures"`
	// Gateway puts resourced in front of other MCP servers
	// (docs/gateway.md); nil: no gateway.
	Gateway *Gateway `yaml:"gateway"`
}

// Budgets bound what one caller may take of the server (server.Budgets;
// a zero field is the server's default). A negative count turns its cap
// off.
type Budgets struct {
	// BodyMinRate (bytes per second) and BodyGrace: a request body must be
	// in within BodyGrace + length/BodyMinRate, or it is answered 408.
	BodyMinRate Size     `yaml:"bodyMinRate"`
	BodyGrace   Duration `yaml:"bodyGrace"`
	// WriteMinRate and WriteGrace: a client must take a response within
	// WriteGrace + length/WriteMinRate, or loses the connection.
	WriteMinRate Size     `yaml:"writeMinRate"`
	WriteGrace   Duration `yaml:"writeGrace"`
	// MaxConnections caps open connections (past it: 503 and close).
	MaxConnections int `yaml:"maxConnections"`
	// MaxUploads caps uploads spooling at once, over all tenants.
	MaxUploads int `yaml:"maxUploads"`
	// TenantInflight caps one tenant's requests in progress (429).
	TenantInflight int `yaml:"tenantInflight"`
	// TenantSaveRate (per second) and TenantSaveBurst limit one tenant's
	// saves (429 with Retry-After).
	TenantSaveRate  float64 `yaml:"tenantSaveRate"`
	TenantSaveBurst int     `yaml:"tenantSaveBurst"`
	// TenantSaveWait: a save that gets its token within it waits for it
	// instead of being refused (negative: never wait).
	TenantSaveWait Duration `yaml:"tenantSaveWait"`
	// StorePanicHold is how long /readyz answers 503 after the storage
	// backend panicked.
	StorePanicHold Duration `yaml:"storePanicHold"`
}

// Limits bound what one save may carry (per-scheme body sizes are in
// schemes.<name>.maxBytes).
type Limits struct {
	// MaxHits is the most hits one search snapshot may hold.
	MaxHits int `yaml:"maxHits"`
	// MaxTitleBytes and MaxDescriptionBytes bound those fields of a save.
	MaxTitleBytes       int `yaml:"maxTitleBytes"`
	MaxDescriptionBytes int `yaml:"maxDescriptionBytes"`
	// MaxPathBytes bounds a report's path below its tenant.
	MaxPathBytes int `yaml:"maxPathBytes"`
	// MaxReadChars bounds one read_resource result, in characters.
	MaxReadChars int `yaml:"maxReadChars"`
}

// Links configures signed download links (GET /v1/blobs/...).
type Links struct {
	// KeyFile holds the HMAC-SHA256 key (base64, mode 0600). Default:
	// <dataDir>/links-hmac.key, created on first start. Instances behind
	// one load balancer must share it.
	KeyFile string `yaml:"keyFile"`
	// DefaultTTL is a link's life when the caller does not ask for one.
	DefaultTTL Duration `yaml:"defaultTTL"`
	// MaxTTL is the longest life a caller may ask for.
	MaxTTL Duration `yaml:"maxTTL"`
}

// Metrics protects GET /metrics.
type Metrics struct {
	// BearerTokenFile holds a token (mode 0600, one line, at least 16
	// bytes) that scrapers must send as "Authorization: Bearer <token>"
	// (Prometheus: authorization.credentials_file). "": /metrics is open.
	BearerTokenFile string `yaml:"bearerTokenFile"`
}

// Cache is the memory kept for read responses' content members, on every
// backend (server.Options.FormCache).
type Cache struct {
	// MaxBytes bounds it; one body's member takes at most an eighth.
	// Unset: 64MiB; 0: off.
	MaxBytes *Size `yaml:"maxBytes"`
}

// DefaultCacheMaxBytes is cache.maxBytes when unset.
const DefaultCacheMaxBytes = 64 << 20

// DefaultGCHeadroom is gcHeadroom when unset.
const DefaultGCHeadroom = 32 << 20

// Quota bounds what each tenant stores; 0 is unlimited. Expired resources
// count until the sweeper removes them. Every backend enforces it; on s3
// see s3store's package doc ("Quotas") for the cost and `resourced
// reconcile`.
type Quota struct {
	Bytes   Size  `yaml:"bytes"`
	Objects int64 `yaml:"objects"`
	// ReconcileInterval is how often the s3 backend recounts each tenant's
	// usage from a listing (default 1h; negative: never, resourced
	// reconcile does it by hand).
	ReconcileInterval Duration `yaml:"reconcileInterval"`
}

// Sweep configures the removal of expired resources.
type Sweep struct {
	// Interval between sweeps.
	Interval Duration `yaml:"interval"`
	// Batch bounds how many resources one transaction removes.
	Batch int `yaml:"batch"`
}

// Store selects and configures the storage backend.
type Store struct {
	// Backend is bbolt, s3 or memory.
	Backend string `yaml:"backend"`
	Bbolt   Bbolt  `yaml:"bbolt"`
	S3      S3     `yaml:"s3"`
}

// S3 configures the S3 backend. Credentials come from the standard AWS
// chain (environment, shared files, instance roles), never from this file.
type S3 struct {
	Bucket string `yaml:"bucket"`
	// Prefix of every object key, e.g. "resourced"; "" for the bucket root.
	Prefix string `yaml:"prefix"`
	// Region; default us-east-1.
	Region string `yaml:"region"`
	// Endpoint of an S3-compatible server (MinIO, Ceph RGW, versitygw);
	// "" for AWS.
	Endpoint string `yaml:"endpoint"`
	// PathStyle addressing (bucket in the path), which most S3-compatible
	// servers need.
	PathStyle bool `yaml:"pathStyle"`
	// CallTimeout bounds every S3 call.
	CallTimeout Duration `yaml:"callTimeout"`
	// SpoolDir holds the temporary files of streamed uploads (unlinked at
	// once); "" is the system's temporary directory.
	SpoolDir string `yaml:"spoolDir"`
	// ReadCache is the memory kept for objects read recently; a read of
	// one still asks S3 whether it changed (If-None-Match), but gets no
	// body back when it did not. (The JSON forms of the bodies served
	// are cache.maxBytes'.) Unset: 64MiB; 0: off.
	ReadCache *Size `yaml:"readCache"`
	// UnsafeAllowSingleWriter runs on a service that fails the start-up
	// probe of its guarantees (docs/s3.md), for one instance only: that
	// instance holds a lease object on the prefix, every other one
	// refuses to start, and it keeps no read cache.
	UnsafeAllowSingleWriter bool `yaml:"unsafeAllowSingleWriter"`
}

// Bbolt configures the embedded bbolt backend.
type Bbolt struct {
	// Path of the database file. Default: <dataDir>/resourced.db.
	Path string `yaml:"path"`
	// OpenTimeout bounds the wait for the file lock held by another process.
	OpenTimeout Duration `yaml:"openTimeout"`
}

// Auth configures how callers are identified.
type Auth struct {
	// Mode is "jwt" (default): every /mcp request needs a bearer JWT; or
	// "none": every caller is tenant "default" with both scopes, allowed on
	// loopback addresses only.
	Mode string `yaml:"mode"`
	// Issuer is the required "iss" claim. Default: baseURL.
	Issuer string `yaml:"issuer"`
	// Audiences: a token's "aud" must contain one of them. Default: baseURL.
	Audiences []string `yaml:"audiences"`
	// Algorithms allowed in tokens. Default: HS256 with an HMAC key;
	// RS256, ES256 and EdDSA with public keys or a JWKS URL.
	Algorithms []string `yaml:"algorithms"`
	// Leeway for exp/nbf clock skew.
	Leeway Duration `yaml:"leeway"`
	// TenantClaim names the claim that carries the tenant.
	TenantClaim string `yaml:"tenantClaim"`
	// HMACSecretFile holds the HMAC key (base64, mode 0600). With no key
	// source configured, <dataDir>/auth-hmac.key is created on first start.
	HMACSecretFile string `yaml:"hmacSecretFile"`
	// PublicKeyFiles are PEM public keys (RSA, ECDSA, Ed25519).
	PublicKeyFiles []string `yaml:"publicKeyFiles"`
	// JWKSURL is a JSON Web Key Set of your identity provider.
	JWKSURL string `yaml:"jwksURL"`
	// JWKSRefresh is how often the JWKS is fetched again.
	JWKSRefresh Duration `yaml:"jwksRefresh"`
	// TokenCache is how long a token that verified is remembered (never
	// beyond its exp), so later requests with it skip verification. Unset:
	// 1m; 0s: off; at most 10m.
	TokenCache *Duration `yaml:"tokenCache"`
	// AuthorizationServers are advertised in the RFC 9728 metadata.
	AuthorizationServers []string `yaml:"authorizationServers"`
	// AllowedOrigins may send browser requests (Origin header). The
	// baseURL's origin is always allowed; "*" allows any.
	AllowedOrigins []string `yaml:"allowedOrigins"`
	// AllowedHosts are accepted in the Host header, besides the baseURL's
	// host and, on loopback, localhost names.
	AllowedHosts []string `yaml:"allowedHosts"`
}

// HasKeySource reports whether a verification key is configured.
func (a *Auth) HasKeySource() bool {
	return a.HMACSecretFile != "" || len(a.PublicKeyFiles) > 0 || a.JWKSURL != ""
}

// LinksKeyFile is the key of signed download links: links.keyFile, or
// links-hmac.key in DataDir.
func (c *Config) LinksKeyFile() string {
	if c.Links.KeyFile != "" {
		return c.Links.KeyFile
	}
	return filepath.Join(c.DataDir, "links-hmac.key")
}

// DefaultHMACKeyFile is where the first start writes the dev signing key.
func (c *Config) DefaultHMACKeyFile() string { return filepath.Join(c.DataDir, "auth-hmac.key") }

// Scheme kinds.
const (
	KindSearch = "search" // immutable snapshots with server-chosen ids
	KindReport = "report" // caller-chosen paths, replaceable
)

// Scheme is the policy of one URI scheme.
type Scheme struct {
	// Kind is "search" or "report". Default: "search" for the scheme named
	// search, "report" for any other.
	Kind string `yaml:"kind"`
	// TTL is the ttlMs hint of resources/read (cache freshness, not retention).
	TTL *Duration `yaml:"ttl"`
	// Retention is how long a saved resource lives unless the save asks otherwise.
	Retention *Duration `yaml:"retention"`
	// MaxRetention caps the retention a save may ask for.
	MaxRetention *Duration `yaml:"maxRetention"`
	// MaxBytes is the largest body a save may store.
	MaxBytes *Size `yaml:"maxBytes"`
}

// Defaults for a scheme of each kind.
var schemeDefaults = map[string]Scheme{
	KindSearch: {TTL: dur(time.Hour), Retention: dur(24 * time.Hour), MaxRetention: dur(720 * time.Hour), MaxBytes: size(16 << 20)},
	KindReport: {TTL: dur(0), Retention: dur(168 * time.Hour), MaxRetention: dur(8760 * time.Hour), MaxBytes: size(16 << 20)},
}

func dur(d time.Duration) *Duration { v := Duration(d); return &v }
func size(n int64) *Size            { v := Size(n); return &v }

// Default returns the configuration used when no file is given.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

// Load reads and decodes the file at path strictly, then applies defaults.
// It does not validate; call Validate after applying overrides.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, err := Decode(f)
	if err != nil {
		return nil, prefixEach("config "+path+": ", err)
	}
	return c, nil
}

// Decode decodes YAML strictly (unknown keys are errors naming the key) and
// applies defaults. An empty document gives the defaults.
func Decode(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if err := checkLiteralHeaders(data); err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := checkDocument(&root); err != nil {
		return nil, err
	}
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

// applyDefaults sets the defaults config owns: those of main and of the
// server. A key a component defaults itself (store.bbolt.openTimeout,
// store.s3.callTimeout and readCache, auth.leeway, tenantClaim, jwksRefresh
// and tokenCache) stays zero (nil) here and means "the component's
// default"; configs/resourced.example.yaml shows those values, and a test
// in cmd/resourced holds it to the components' Default constants.
func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8765"
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = Duration(15 * time.Second)
	}
	if c.NotifyPollInterval == 0 {
		c.NotifyPollInterval = Duration(2 * time.Second)
	}
	if c.Store.Backend == "" {
		c.Store.Backend = "bbolt"
	}
	if c.Sweep.Interval == 0 {
		c.Sweep.Interval = Duration(time.Minute)
	}
	if c.Quota.ReconcileInterval == 0 {
		c.Quota.ReconcileInterval = Duration(time.Hour)
	}
	if c.Sweep.Batch == 0 {
		c.Sweep.Batch = 500
	}
	if c.Cache.MaxBytes == nil {
		c.Cache.MaxBytes = size(DefaultCacheMaxBytes)
	}
	if c.GCHeadroom == nil {
		c.GCHeadroom = size(DefaultGCHeadroom)
	}
	if c.Limits.MaxHits == 0 {
		c.Limits.MaxHits = 10000
	}
	if c.Limits.MaxTitleBytes == 0 {
		c.Limits.MaxTitleBytes = 512
	}
	if c.Limits.MaxDescriptionBytes == 0 {
		c.Limits.MaxDescriptionBytes = 4096
	}
	if c.Limits.MaxPathBytes == 0 {
		c.Limits.MaxPathBytes = 512
	}
	if c.Limits.MaxReadChars == 0 {
		c.Limits.MaxReadChars = 40000
	}
	if c.Links.DefaultTTL == 0 {
		c.Links.DefaultTTL = Duration(15 * time.Minute)
	}
	if c.Links.MaxTTL == 0 {
		c.Links.MaxTTL = Duration(time.Hour)
	}
	if c.Auth.Mode == "" {
		c.Auth.Mode = "jwt"
	}
	if c.Schemes == nil {
		c.Schemes = map[string]*Scheme{"search": {}, "report": {}}
	}
	for name, s := range c.Schemes {
		if s == nil {
			s = &Scheme{}
			c.Schemes[name] = s
		}
		if s.Kind == "" {
			s.Kind = KindReport
			if name == KindSearch {
				s.Kind = KindSearch
			}
		}
		d, ok := schemeDefaults[s.Kind]
		if !ok {
			continue // Validate reports the kind
		}
		if s.TTL == nil {
			s.TTL = d.TTL
		}
		if s.Retention == nil {
			s.Retention = d.Retention
		}
		if s.MaxRetention == nil {
			s.MaxRetention = d.MaxRetention
		}
		if s.MaxBytes == nil {
			s.MaxBytes = d.MaxBytes
		}
	}
	c.applyGatewayDefaults()
	c.applyIndexDefaults()
	c.applyTracingDefaults()
}

// Overrides are the few settings that flags and RESOURCED_* environment
// variables may change. Empty fields change nothing.
type Overrides struct {
	Listen, BaseURL, DataDir, Backend, LogLevel string
}

// EnvOverrides reads RESOURCED_LISTEN, RESOURCED_BASE_URL,
// RESOURCED_DATA_DIR, RESOURCED_BACKEND and RESOURCED_LOG_LEVEL with getenv
// (os.Getenv in production).
func EnvOverrides(getenv func(string) string) Overrides {
	return Overrides{
		Listen:   getenv("RESOURCED_LISTEN"),
		BaseURL:  getenv("RESOURCED_BASE_URL"),
		DataDir:  getenv("RESOURCED_DATA_DIR"),
		Backend:  getenv("RESOURCED_BACKEND"),
		LogLevel: getenv("RESOURCED_LOG_LEVEL"),
	}
}

// Apply sets every non-empty field of o on c.
func (c *Config) Apply(o Overrides) {
	if o.Listen != "" {
		c.Listen = o.Listen
	}
	if o.BaseURL != "" {
		c.BaseURL = o.BaseURL
	}
	if o.DataDir != "" {
		c.DataDir = o.DataDir
	}
	if o.Backend != "" {
		c.Store.Backend = o.Backend
	}
	if o.LogLevel != "" {
		c.LogLevel = o.LogLevel
	}
}

// BboltPath is the bbolt file: store.bbolt.path, or resourced.db in DataDir.
func (c *Config) BboltPath() string {
	if c.Store.Bbolt.Path != "" {
		return c.Store.Bbolt.Path
	}
	return filepath.Join(c.DataDir, "resourced.db")
}

// Validate reports every problem of c that config owns, each naming its
// key. The options of components (store.s3 for s3store and the S3 client,
// auth for the JWT verifier) are checked by the component's own Validate;
// cmd/resourced calls them with the key path as prefix ([Under]).
func (c *Config) Validate() error {
	var p problems
	c.validateServe(&p)
	c.validateLimits(&p)
	c.validateBudgets(&p)
	c.validateStore(&p)
	c.validateIndex(&p)
	c.validateAuth(&p)
	c.validateSchemes(&p)
	c.validateGateway(&p)
	c.validateTracing(&p)
	return errors.Join(p...)
}

// problems collects the errors of Validate.
type problems []error

func (p *problems) bad(key, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

// prefixEach prefixes every error joined in err with prefix, so that each
// line of a joined error names the file it is about.
func prefixEach(prefix string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s%w", prefix, e)
	}
	return errors.Join(out...)
}

// Under prefixes every error joined in err with path and ".", so that a
// component's "prefix: ..." becomes "store.s3.prefix: ...". nil stays nil.
func Under(path string, err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Errorf("%s.%w", path, e))
	}
	return errors.Join(out...)
}

// validateServe checks the top-level keys.
func (c *Config) validateServe(p *problems) {
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		p.bad("listen", "want host:port, got %q", c.Listen)
	} else if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		p.bad("listen", "port %s of %q is not 0 to 65535", port, c.Listen)
	} else if c.BaseURL == "" && IsWildcard(host) {
		// docs/decisions.md, "A wildcard listen needs a base URL".
		p.bad("baseURL", "required when listen %q is every address, which is no URL a client can use "+
			"(the token audience, the RFC 9728 resource and signed links are built from it): "+
			"set baseURL, RESOURCED_BASE_URL or --base-url to the URL clients reach, e.g. http://HOSTNAME:%s", c.Listen, port)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		p.bad("logLevel", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.ShutdownTimeout < 0 {
		p.bad("shutdownTimeout", "must not be negative")
	}
	if c.NotifyPollInterval < Duration(100*time.Millisecond) {
		p.bad("notifyPollInterval", "want at least 100ms")
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		p.bad("baseURL", "want an http:// or https:// URL, got %q", c.BaseURL)
	}
}

// validateBudgets checks budgets and the listen caps.
func (c *Config) validateBudgets(p *problems) {
	b := &c.Budgets
	if b.BodyMinRate < 0 || b.BodyMinRate > 0 && b.BodyMinRate < 1024 {
		p.bad("budgets.bodyMinRate", "want at least 1KiB (bytes per second)")
	}
	if b.WriteMinRate < 0 || b.WriteMinRate > 0 && b.WriteMinRate < 1024 {
		p.bad("budgets.writeMinRate", "want at least 1KiB (bytes per second)")
	}
	if b.TenantSaveWait > Duration(time.Minute) {
		p.bad("budgets.tenantSaveWait", "want at most 1m")
	}
	for key, d := range map[string]Duration{"budgets.bodyGrace": b.BodyGrace, "budgets.writeGrace": b.WriteGrace, "budgets.storePanicHold": b.StorePanicHold} {
		if d < 0 || d > Duration(time.Hour) {
			p.bad(key, "want 0 (the default) to 1h")
		}
	}
	if b.MaxConnections < 0 {
		p.bad("budgets.maxConnections", "want 0 (the default) or more; keep it below the process's open-file limit")
	}
	if b.TenantSaveBurst < 0 {
		p.bad("budgets.tenantSaveBurst", "want 0 (the default) or more")
	}
	if c.NotifyMaxListenURIs < 0 {
		p.bad("notifyMaxListenURIs", "want 0 (the default) or more")
	}
	if c.NotifyMaxListensPerTenant < 0 {
		p.bad("notifyMaxListensPerTenant", "want 0 (the default) or more")
	}
}

// validateLimits checks quota, sweep, limits and links.
func (c *Config) validateLimits(p *problems) {
	if c.Quota.Bytes < 0 || c.Quota.Objects < 0 {
		p.bad("quota", "must not be negative")
	}
	if c.Sweep.Interval < Duration(time.Second) {
		p.bad("sweep.interval", "want at least 1s")
	}
	if c.Sweep.Batch < 1 || c.Sweep.Batch > 100000 {
		p.bad("sweep.batch", "want 1 to 100000")
	}
	if m := c.Cache.MaxBytes; m != nil && (*m < 0 || *m > 1<<40) {
		p.bad("cache.maxBytes", "want 0 (off) to 1TiB, got %d bytes", int64(*m))
	}
	if m := c.GCHeadroom; m != nil && *m != 0 && (*m < gcheadroom.MinHeap || *m > gcheadroom.MaxHeadroom) {
		p.bad("gcHeadroom", "want 0 (the runtime's GOGC) or 4MiB to 1TiB, got %d bytes (below 4MiB it would change nothing: Go's smallest heap goal is 4MiB)", int64(*m))
	}
	if c.Limits.MaxHits < 0 || c.Limits.MaxHits > 1_000_000 {
		p.bad("limits.maxHits", "want 1 to 1000000")
	}
	if c.Limits.MaxTitleBytes < 0 || c.Limits.MaxTitleBytes > 4096 {
		p.bad("limits.maxTitleBytes", "want 1 to 4096")
	}
	if c.Limits.MaxDescriptionBytes < 0 || c.Limits.MaxDescriptionBytes > 65536 {
		p.bad("limits.maxDescriptionBytes", "want 1 to 65536")
	}
	if c.Limits.MaxPathBytes < 0 || c.Limits.MaxPathBytes > 900 {
		p.bad("limits.maxPathBytes", "want 1 to 900 (a whole URI is at most 1024 bytes)")
	}
	if c.Limits.MaxReadChars < 4096 || c.Limits.MaxReadChars > 10_000_000 {
		p.bad("limits.maxReadChars", "want 4096 to 10000000")
	}
	if c.Links.MaxTTL < Duration(time.Minute) || c.Links.MaxTTL > Duration(7*24*time.Hour) {
		p.bad("links.maxTTL", "want 1m to 168h, got %s", c.Links.MaxTTL.Std())
	}
	if c.Links.DefaultTTL < Duration(time.Second) || c.Links.DefaultTTL > c.Links.MaxTTL {
		p.bad("links.defaultTTL", "want 1s to links.maxTTL (%s), got %s", c.Links.MaxTTL.Std(), c.Links.DefaultTTL.Std())
	}
}

// validateStore checks the backend choice and the bbolt keys; store.s3 is
// s3store's and the S3 client's (see Validate).
func (c *Config) validateStore(p *problems) {
	switch c.Store.Backend {
	case "bbolt":
		if c.DataDir == "" && c.Store.Bbolt.Path == "" {
			p.bad("dataDir", "required for the bbolt backend when store.bbolt.path is empty")
		}
		if c.Store.Bbolt.OpenTimeout < 0 {
			p.bad("store.bbolt.openTimeout", "must not be negative (0 is the default)")
		}
	case "s3", "memory":
	default:
		p.bad("store.backend", "want bbolt, s3 or memory, got %q", c.Store.Backend)
	}
	if c.Store.S3.UnsafeAllowSingleWriter && c.Store.Backend != "s3" {
		p.bad("store.s3.unsafeAllowSingleWriter", "only with store.backend s3 (it relaxes the S3 start-up probe), got backend %q", c.Store.Backend)
	}
}

// validateAuth checks the mode and resourced's own policy on it; the
// verifier's rules are auth.Settings' (see Validate).
func (c *Config) validateAuth(p *problems) {
	a := &c.Auth
	switch a.Mode {
	case "none":
		host, _, err := net.SplitHostPort(c.Listen)
		if err == nil && !IsLoopback(host) {
			p.bad("auth.mode", "none is allowed only when listen is a loopback address, got %q", c.Listen)
		}
	case "jwt":
		if (a.JWKSURL != "" || len(a.PublicKeyFiles) > 0) && a.Issuer == "" {
			p.bad("auth.issuer", "required with publicKeyFiles or jwksURL: the iss claim your identity provider sets")
		}
		if a.TokenCache != nil && *a.TokenCache < 0 {
			p.bad("auth.tokenCache", "want 0s (off) to 10m, got %s", a.TokenCache.Std())
		}
	default:
		p.bad("auth.mode", "want jwt or none, got %q", a.Mode)
	}
}

// validateSchemes checks every scheme's name and policy.
func (c *Config) validateSchemes(p *problems) {
	if len(c.Schemes) == 0 {
		p.bad("schemes", "at least one scheme is required")
	}
	names := make([]string, 0, len(c.Schemes))
	for name := range c.Schemes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := c.Schemes[name]
		key := "schemes." + name
		if err := grammar.Scheme(name); err != nil {
			p.bad(key, "not a scheme name: %v", err)
		}
		if s.Kind != KindSearch && s.Kind != KindReport {
			p.bad(key+".kind", "want search or report, got %q", s.Kind)
			continue
		}
		if *s.TTL < 0 {
			p.bad(key+".ttl", "must not be negative")
		}
		if *s.Retention <= 0 {
			p.bad(key+".retention", "must be positive")
		}
		if *s.MaxRetention < *s.Retention {
			p.bad(key+".maxRetention", "must be at least retention (%s)", time.Duration(*s.Retention))
		}
		if *s.MaxBytes <= 0 {
			p.bad(key+".maxBytes", "must be positive")
		}
	}
}

// CanonicalBaseURL is BaseURL without a trailing slash, or http://<listen>.
func (c *Config) CanonicalBaseURL() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	return "http://" + c.Listen
}

// IsWildcard reports whether host (from host:port) is every address of
// the machine: empty, 0.0.0.0 or ::.
func IsWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// IsLoopback reports whether host (from host:port) names a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Duration is a time.Duration written as "30s", "1h" or "720h" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 30s, 1h, 720h)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string, without zero minutes and
// seconds after a larger unit ("1h", not "1h0m0s").
func (d Duration) MarshalYAML() (any, error) {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s, nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Size is a byte count written as 1024, "64KiB", "16MiB" or "1GiB" in YAML.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

// ParseSize parses a size such as "16MiB".
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	orig, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. 1048576, 64KiB, 16MiB)", orig)
	}
	return Size(n * mult), nil
}

// MarshalYAML writes the size with the largest binary unit that divides
// it ("16MiB"), so that a printed config reads as one is written.
func (z Size) MarshalYAML() (any, error) {
	for _, u := range sizeUnits {
		if strings.HasSuffix(u.suffix, "iB") && z != 0 && int64(z)%u.mult == 0 {
			return fmt.Sprintf("%d%s", int64(z)/u.mult, u.suffix), nil
		}
	}
	return int64(z), nil
}

// UnmarshalYAML parses a size.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := ParseSize(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*z = v
	return nil
}
