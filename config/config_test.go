package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c := Default()
	if c.Listen != "127.0.0.1:8765" || c.Store.Backend != "bbolt" || c.Auth.Mode != "jwt" || c.BboltPath() != "data/resourced.db" {
		t.Errorf("defaults: %+v", c)
	}
	s := c.Schemes["search"]
	if s.Kind != KindSearch || s.TTL.Std() != time.Hour || int64(*s.MaxBytes) != 16<<20 {
		t.Errorf("search defaults: %+v", s)
	}
	if r := c.Schemes["report"]; r.Kind != KindReport || r.TTL.Std() != 0 || r.Retention.Std() != 168*time.Hour {
		t.Errorf("report defaults: %+v", r)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if *c.Cache.MaxBytes != DefaultCacheMaxBytes {
		t.Errorf("cache.maxBytes defaults to %d", *c.Cache.MaxBytes)
	}
	off, err := Decode(strings.NewReader("cache: {maxBytes: 0}\n"))
	if err != nil || *off.Cache.MaxBytes != 0 {
		t.Errorf("cache.maxBytes: 0 is not off: %v", err)
	}
	if *c.GCHeadroom != DefaultGCHeadroom {
		t.Errorf("gcHeadroom defaults to %d", *c.GCHeadroom)
	}
	if off, err := Decode(strings.NewReader("gcHeadroom: 0\n")); err != nil || *off.GCHeadroom != 0 {
		t.Errorf("gcHeadroom: 0 is not kept: %v", err)
	}
	for _, ok := range []string{"4MiB", "1TiB", "0"} {
		if c, err := Decode(strings.NewReader("gcHeadroom: " + ok + "\n")); err != nil || c.Validate() != nil {
			t.Errorf("gcHeadroom: %s refused: %v", ok, err)
		}
	}
	if c, err := Decode(strings.NewReader("gcHeadroom: 1MiB\n")); err != nil || c.Validate() == nil || !strings.Contains(c.Validate().Error(), "or 4MiB to 1TiB") {
		t.Errorf("gcHeadroom: 1MiB (a no-op) is not refused: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"listne: x\n", "line 1: listne: unknown key; did you mean listen?"},
		{"store:\n  backend: bbolt\n  bbolt: {pth: x}\n", "line 3: store.bbolt.pth: unknown key; did you mean path?"},
		{"store: {bbolt: {zzz: 1}}\n", "store.bbolt.zzz: unknown key; under store.bbolt: openTimeout, path"},
		{"schemes:\n  report: {ttl: soon}\n", `line 2: schemes.report.ttl: "soon" is not a duration`},
		{"schemes:\n  report: {maxBytes: 12 apples}\n", "schemes.report.maxBytes: \"12 apples\" is not a size"},
		{"shutdownTimeout: [1]\n", "line 1: shutdownTimeout: want a duration (e.g. 30s, 1h), got a list"},
		{"listen: x\nlimits:\n  maxHits: lots\n", `line 3: limits.maxHits: want an integer, got "lots"`},
		{"fixtures: maybe\n", `line 1: fixtures: want true or false, got "maybe"`},
		{"auth: {audiences: x}\n", `auth.audiences: want a list, got "x"`},
		{"budgets: {tenantSaveRate: fast}\n", `budgets.tenantSaveRate: want a number, got "fast"`},
		{"store: s3\n", `store: want a mapping of keys, got "s3"`},
		{"Listen: x\n", "Listen: unknown key; did you mean listen?"},
		{"a: [\n", "line 1: did not find expected node content"},
	}
	for _, c := range cases {
		_, err := Decode(strings.NewReader(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want error containing %q", c.yaml, err, c.want)
		}
		// Issue 28: no Go type names reach the operator.
		if err != nil && goTypeRE.MatchString(err.Error()) {
			t.Errorf("Decode(%q) = %v, names a Go type", c.yaml, err)
		}
	}
}

var goTypeRE = regexp.MustCompile(`config\.[A-Z]|\binto \S+|!!\w+|cannot unmarshal|not found in type`)

// TestDecodeReportsEveryProblem: every problem of a document is reported
// at once, in document order, each with its line and key path.
func TestDecodeReportsEveryProblem(t *testing.T) {
	_, err := Decode(strings.NewReader("listen: x\nlogLevl: info\nlimits:\n  maxHits: lots\n  maxTitleBytes: 12\n  maxReadChar: 1\n"))
	want := "line 2: logLevl: unknown key; did you mean logLevel?\n" +
		"line 4: limits.maxHits: want an integer, got \"lots\"\n" +
		"line 6: limits.maxReadChar: unknown key; did you mean maxReadChars?"
	if err == nil || err.Error() != want {
		t.Errorf("Decode = %v\nwant %s", err, want)
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	c, err := Decode(strings.NewReader(`
listen: "0.0.0.0:8765"
auth: {mode: none}
logLevel: loud
store: {backend: cassandra}
schemes:
  Bad: {}
  report: {kind: blob}
  search: {ttl: -1s, retention: 2h, maxRetention: 1h, maxBytes: 0}
cache: {maxBytes: 2000GiB}
gcHeadroom: 2000GiB
`))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad config")
	}
	for _, want := range []string{
		"logLevel: want debug",
		"store.backend: want bbolt, s3 or memory",
		"auth.mode: none is allowed only when listen is a loopback address",
		"schemes.Bad: not a scheme name: scheme must be lower-case",
		"schemes.report.kind: want search or report",
		"schemes.search.ttl: must not be negative",
		"schemes.search.maxRetention: must be at least retention",
		"schemes.search.maxBytes: must be positive",
		"cache.maxBytes: want 0 (off) to 1TiB",
		"gcHeadroom: want 0 (the runtime's GOGC) or 4MiB to 1TiB",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error lacks %q:\n%v", want, err)
		}
	}
}

func TestOverrides(t *testing.T) {
	c := Default()
	env := map[string]string{"RESOURCED_LISTEN": "127.0.0.1:9999", "RESOURCED_BACKEND": "memory"}
	c.Apply(EnvOverrides(func(k string) string { return env[k] }))
	c.Apply(Overrides{Listen: "127.0.0.1:1234"})
	if c.Listen != "127.0.0.1:1234" || c.Store.Backend != "memory" || c.DataDir != "./data" {
		t.Errorf("after overrides: listen %s backend %s dataDir %s", c.Listen, c.Store.Backend, c.DataDir)
	}
}

// TestEnvBaseURL: RESOURCED_BASE_URL sets baseURL (issue 28: it was
// silently ignored), and a flag's override wins over it.
func TestEnvBaseURL(t *testing.T) {
	c := Default()
	env := map[string]string{"RESOURCED_BASE_URL": "https://rd.example.com"}
	c.Apply(EnvOverrides(func(k string) string { return env[k] }))
	if c.BaseURL != "https://rd.example.com" || c.CanonicalBaseURL() != "https://rd.example.com" {
		t.Errorf("after RESOURCED_BASE_URL: baseURL %q", c.BaseURL)
	}
	c.Apply(Overrides{BaseURL: "https://other.example.com"})
	if c.BaseURL != "https://other.example.com" {
		t.Errorf("after a flag override: baseURL %q", c.BaseURL)
	}
}

// TestWildcardListenNeedsBaseURL: a wildcard listen address is no URL, so
// without a baseURL it is refused with the fix (issue 28: 0.0.0.0:8765 gave
// http://0.0.0.0:8765 and :8765 gave http://:8765, silently).
func TestWildcardListenNeedsBaseURL(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:8765", ":8765", "[::]:8765", "[::]:0"} {
		c := Default()
		c.Listen = listen
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "baseURL: required when listen") || !strings.Contains(err.Error(), "RESOURCED_BASE_URL") {
			t.Errorf("Validate(listen %s, no baseURL) = %v, want baseURL required, with the fix", listen, err)
		}
		c.BaseURL = "https://rd.example.com"
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(listen %s, baseURL set) = %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:8765", "[::1]:8765", "localhost:0", "192.0.2.7:8765"} {
		c := Default()
		c.Listen = listen
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(listen %s) = %v", listen, err)
		}
	}
}

// TestListenPortInRange: a numeric port past 65535 is a configuration
// error naming listen, so config check finds it and serve exits 2; it
// passed validation and failed only at bind time (exit 1).
func TestListenPortInRange(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:99999", "127.0.0.1:65536", "[::1]:-1"} {
		c := Default()
		c.Listen = listen
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "listen: port") {
			t.Errorf("Validate(listen %s) = %v, want listen: port out of range", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:65535", "127.0.0.1:0", "localhost:http"} {
		c := Default()
		c.Listen = listen
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(listen %s) = %v", listen, err)
		}
	}
}

func TestSizeMarshal(t *testing.T) {
	for in, want := range map[Size]any{16 << 20: "16MiB", 1 << 30: "1GiB", 3 << 10: "3KiB", 1536: int64(1536), 1000: int64(1000), 0: int64(0)} {
		got, err := in.MarshalYAML()
		if err != nil || got != want {
			t.Errorf("Size(%d).MarshalYAML() = %v, %v; want %v", in, got, err, want)
		}
		if back, err := ParseSize(fmt.Sprint(got)); err != nil || back != in {
			t.Errorf("ParseSize(%v) = %d, %v; want %d", got, back, err, in)
		}
	}
}

func TestDurationMarshal(t *testing.T) {
	for in, want := range map[time.Duration]string{0: "0s", time.Hour: "1h", 168 * time.Hour: "168h", 15 * time.Minute: "15m",
		90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s"} {
		got, err := Duration(in).MarshalYAML()
		if err != nil || got != want {
			t.Errorf("Duration(%s).MarshalYAML() = %v, %v; want %s", in, got, err, want)
		}
		if back, err := time.ParseDuration(want); err != nil || back != in {
			t.Errorf("ParseDuration(%s) = %s, %v; want %s", want, back, err, in)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"1024": 1024, "64KiB": 64 << 10, "16MiB": 16 << 20, "1 GiB": 1 << 30, "2MB": 2e6, "1TiB": 1 << 40, "3TB": 3e12} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "MiB", "99999999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
	// The error quotes what was written, unit and all.
	if _, err := ParseSize("1.5 MiB"); err == nil || !strings.Contains(err.Error(), `"1.5 MiB" is not a size`) {
		t.Errorf("ParseSize(1.5 MiB): %v", err)
	}
}

func TestUnder(t *testing.T) {
	err := Under("store.s3", errors.Join(errors.New("bucket: required"), errors.New("prefix: bad")))
	if got, want := err.Error(), "store.s3.bucket: required\nstore.s3.prefix: bad"; got != want {
		t.Errorf("Under = %q, want %q", got, want)
	}
	if got, want := Under("auth", errors.New("leeway: x")).Error(), "auth.leeway: x"; got != want {
		t.Errorf("Under(single) = %q, want %q", got, want)
	}
	if Under("auth", nil) != nil {
		t.Error("Under(nil) != nil")
	}
}

func TestValidateAuthPolicy(t *testing.T) {
	c, err := Decode(strings.NewReader("auth:\n  jwksURL: https://idp/jwks\n  tokenCache: -1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, want := range []string{"auth.issuer: required with publicKeyFiles or jwksURL", "auth.tokenCache: want 0s (off) to 10m"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error lacks %q:\n%v", want, err)
		}
	}
	if c, _ := Decode(strings.NewReader("auth: {mode: basic}\n")); c.Validate() == nil {
		t.Error("auth.mode basic accepted")
	}
}

// TestQuotaOnS3: quotas are enforced by every backend, s3 included
// (s3store's usage objects); only a negative quota is refused.
func TestQuotaOnS3(t *testing.T) {
	c, err := Decode(strings.NewReader("store:\n  backend: s3\n  s3: {bucket: resourced-test}\nquota: {bytes: 1MiB, objects: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate(quota with backend s3) = %v, want nil", err)
	}
	c.Quota.Objects = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "quota: must not be negative") {
		t.Errorf("Validate(negative quota) = %v, want the quota named", err)
	}
}

// TestUnsafeAllowSingleWriter: the key decodes, is valid with the s3
// backend and refused with any other, where it would silently do nothing.
func TestUnsafeAllowSingleWriter(t *testing.T) {
	for _, tc := range []struct {
		backend, want string
	}{
		{"s3", ""},
		{"bbolt", `store.s3.unsafeAllowSingleWriter: only with store.backend s3 (it relaxes the S3 start-up probe), got backend "bbolt"`},
		{"memory", `got backend "memory"`},
	} {
		c, err := Decode(strings.NewReader("store:\n  backend: " + tc.backend + "\n  s3: {bucket: b, unsafeAllowSingleWriter: true}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if !c.Store.S3.UnsafeAllowSingleWriter {
			t.Errorf("%s: unsafeAllowSingleWriter did not decode", tc.backend)
		}
		err = c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tc.backend, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate = %v, want %q", tc.backend, err, tc.want)
		}
	}
}
