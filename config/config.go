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
	Limits             Limits   `yaml:"limits"`
	Links              Links    `yaml:"links"`
	Quota              Quota    `yaml:"quota"`
	Sweep              Sweep    `yaml:"sweep"`
	Store              Store    `yaml:"store"`
	Auth               Auth     `yaml:"auth"`
	// Schemes maps a URI scheme to its policy.
	Schemes map[string]*Scheme `yaml:"schemes"`
	// Fixtures adds the fixture tools and their public resources in tenant
	// "fixtures" (docs/fixtures.md), for testing hosts; off by default.
	Fixtures bool `yaml:"fixtures"`
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

// Quota bounds what each tenant stores; 0 is unlimited. Expired resources
// count until the sweeper removes them. Not available with the s3 backend.
type Quota struct {
	Bytes   Size  `yaml:"bytes"`
	Objects int64 `yaml:"objects"`
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
	// body back when it did not. Unset: 64MiB; 0: off.
	ReadCache *Size `yaml:"readCache"`
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
		return nil, fmt.Errorf("config %s: %w", path, err)
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
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

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
	if c.Sweep.Batch == 0 {
		c.Sweep.Batch = 500
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
	if c.Store.Bbolt.OpenTimeout == 0 {
		c.Store.Bbolt.OpenTimeout = Duration(5 * time.Second)
	}
	if c.Store.S3.CallTimeout == 0 {
		c.Store.S3.CallTimeout = Duration(10 * time.Second)
	}
	if c.Store.S3.ReadCache == nil {
		sz := Size(64 << 20)
		c.Store.S3.ReadCache = &sz
	}
	if c.Auth.Mode == "" {
		c.Auth.Mode = "jwt"
	}
	if c.Auth.Leeway == 0 {
		c.Auth.Leeway = Duration(30 * time.Second)
	}
	if c.Auth.TenantClaim == "" {
		c.Auth.TenantClaim = "tenant"
	}
	if c.Auth.JWKSRefresh == 0 {
		c.Auth.JWKSRefresh = Duration(5 * time.Minute)
	}
	if c.Auth.TokenCache == nil {
		d := Duration(time.Minute)
		c.Auth.TokenCache = &d
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
}

// Overrides are the few settings that flags and RESOURCED_* environment
// variables may change. Empty fields change nothing.
type Overrides struct {
	Listen, DataDir, Backend, LogLevel string
}

// EnvOverrides reads RESOURCED_LISTEN, RESOURCED_DATA_DIR, RESOURCED_BACKEND
// and RESOURCED_LOG_LEVEL with getenv (os.Getenv in production).
func EnvOverrides(getenv func(string) string) Overrides {
	return Overrides{
		Listen:   getenv("RESOURCED_LISTEN"),
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

// Validate reports every problem of c, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		bad("listen", "want host:port, got %q", c.Listen)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		bad("logLevel", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.ShutdownTimeout < 0 {
		bad("shutdownTimeout", "must not be negative")
	}
	if c.NotifyPollInterval < Duration(100*time.Millisecond) {
		bad("notifyPollInterval", "want at least 100ms")
	}
	if c.Quota.Bytes < 0 || c.Quota.Objects < 0 {
		bad("quota", "must not be negative")
	}
	if c.Store.Backend == "s3" && (c.Quota.Bytes > 0 || c.Quota.Objects > 0) {
		bad("quota", "is not available with the s3 backend (S3 has no atomic counter across objects); use bbolt, or leave quota at 0")
	}
	if c.Sweep.Interval < Duration(time.Second) {
		bad("sweep.interval", "want at least 1s")
	}
	if c.Sweep.Batch < 1 || c.Sweep.Batch > 100000 {
		bad("sweep.batch", "want 1 to 100000")
	}
	if c.Limits.MaxHits < 0 || c.Limits.MaxHits > 1_000_000 {
		bad("limits.maxHits", "want 1 to 1000000")
	}
	if c.Limits.MaxTitleBytes < 0 || c.Limits.MaxTitleBytes > 4096 {
		bad("limits.maxTitleBytes", "want 1 to 4096")
	}
	if c.Limits.MaxDescriptionBytes < 0 || c.Limits.MaxDescriptionBytes > 65536 {
		bad("limits.maxDescriptionBytes", "want 1 to 65536")
	}
	if c.Limits.MaxPathBytes < 0 || c.Limits.MaxPathBytes > 900 {
		bad("limits.maxPathBytes", "want 1 to 900 (a whole URI is at most 1024 bytes)")
	}
	if c.Limits.MaxReadChars < 4096 || c.Limits.MaxReadChars > 10_000_000 {
		bad("limits.maxReadChars", "want 4096 to 10000000")
	}
	if c.Links.MaxTTL < Duration(time.Minute) || c.Links.MaxTTL > Duration(7*24*time.Hour) {
		bad("links.maxTTL", "want 1m to 168h, got %s", c.Links.MaxTTL.Std())
	}
	if c.Links.DefaultTTL < Duration(time.Second) || c.Links.DefaultTTL > c.Links.MaxTTL {
		bad("links.defaultTTL", "want 1s to links.maxTTL (%s), got %s", c.Links.MaxTTL.Std(), c.Links.DefaultTTL.Std())
	}
	switch c.Store.Backend {
	case "bbolt":
		if c.DataDir == "" && c.Store.Bbolt.Path == "" {
			bad("dataDir", "required for the bbolt backend when store.bbolt.path is empty")
		}
		if c.Store.Bbolt.OpenTimeout <= 0 {
			bad("store.bbolt.openTimeout", "must be positive")
		}
	case "s3":
		s3 := &c.Store.S3
		if s3.Bucket == "" {
			bad("store.s3.bucket", "required when store.backend is s3")
		}
		if s3.Endpoint != "" && !strings.HasPrefix(s3.Endpoint, "http://") && !strings.HasPrefix(s3.Endpoint, "https://") {
			bad("store.s3.endpoint", "want an http(s) URL, got %q", s3.Endpoint)
		}
		if strings.HasPrefix(s3.Prefix, "/") || strings.HasSuffix(s3.Prefix, "/") || strings.Contains(s3.Prefix, "//") {
			bad("store.s3.prefix", "no leading, trailing or double '/', got %q", s3.Prefix)
		}
		if s3.CallTimeout <= 0 {
			bad("store.s3.callTimeout", "must be positive")
		}
	case "memory":
	default:
		bad("store.backend", "want bbolt, s3 or memory, got %q", c.Store.Backend)
	}
	switch c.Auth.Mode {
	case "none":
		if err == nil && !IsLoopback(host) {
			bad("auth.mode", "none is allowed only when listen is a loopback address, got %q", c.Listen)
		}
	case "jwt":
		a := &c.Auth
		if a.HMACSecretFile != "" && (len(a.PublicKeyFiles) > 0 || a.JWKSURL != "") {
			bad("auth.hmacSecretFile", "an HMAC key cannot be combined with publicKeyFiles or jwksURL (algorithm confusion)")
		}
		if a.JWKSURL != "" && !strings.HasPrefix(a.JWKSURL, "https://") && !strings.HasPrefix(a.JWKSURL, "http://") {
			bad("auth.jwksURL", "want an http(s) URL, got %q", a.JWKSURL)
		}
		if a.Leeway < 0 || a.Leeway > Duration(5*time.Minute) {
			bad("auth.leeway", "want 0 to 5m, got %s", a.Leeway.Std())
		}
		if a.TokenCache != nil && (*a.TokenCache < 0 || *a.TokenCache > Duration(10*time.Minute)) {
			bad("auth.tokenCache", "want 0s (off) to 10m, got %s", a.TokenCache.Std())
		}
		if a.JWKSRefresh < Duration(10*time.Second) || a.JWKSRefresh > Duration(24*time.Hour) {
			bad("auth.jwksRefresh", "want 10s to 24h, got %s", a.JWKSRefresh.Std())
		}
		if a.JWKSURL != "" && len(a.PublicKeyFiles) > 0 {
			bad("auth.jwksURL", "configure jwksURL or publicKeyFiles, not both")
		}
		for _, alg := range a.Algorithms {
			if !slices.Contains(knownAlgorithms, alg) {
				bad("auth.algorithms", "unknown algorithm %q; want one of %s", alg, strings.Join(knownAlgorithms, ", "))
			}
		}
		if (a.JWKSURL != "" || len(a.PublicKeyFiles) > 0) && a.Issuer == "" {
			bad("auth.issuer", "required with publicKeyFiles or jwksURL: the iss claim your identity provider sets")
		}
	default:
		bad("auth.mode", "want jwt or none, got %q", c.Auth.Mode)
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		bad("baseURL", "want an http:// or https:// URL, got %q", c.BaseURL)
	}
	if len(c.Schemes) == 0 {
		bad("schemes", "at least one scheme is required")
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
			bad(key, "not a scheme name: %v", err)
		}
		if s.Kind != KindSearch && s.Kind != KindReport {
			bad(key+".kind", "want search or report, got %q", s.Kind)
			continue
		}
		if *s.TTL < 0 {
			bad(key+".ttl", "must not be negative")
		}
		if *s.Retention <= 0 {
			bad(key+".retention", "must be positive")
		}
		if *s.MaxRetention < *s.Retention {
			bad(key+".maxRetention", "must be at least retention (%s)", time.Duration(*s.Retention))
		}
		if *s.MaxBytes <= 0 {
			bad(key+".maxBytes", "must be positive")
		}
	}
	return errors.Join(errs...)
}

var knownAlgorithms = []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// CanonicalBaseURL is BaseURL without a trailing slash, or http://<listen>.
func (c *Config) CanonicalBaseURL() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	return "http://" + c.Listen
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

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Size is a byte count written as 1024, "64KiB", "16MiB" or "1GiB" in YAML.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

// ParseSize parses a size such as "16MiB".
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. 1048576, 64KiB, 16MiB)", s)
	}
	return Size(n * mult), nil
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
