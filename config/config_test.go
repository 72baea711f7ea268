package config

import (
	"errors"
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
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"listne: x\n", "field listne not found"},
		{"store:\n  backend: bbolt\n  bbolt: {pth: x}\n", "field pth not found"},
		{"schemes:\n  report: {ttl: soon}\n", `"soon" is not a duration`},
		{"schemes:\n  report: {maxBytes: 12 apples}\n", "is not a size"},
		{"shutdownTimeout: [1]\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		_, err := Decode(strings.NewReader(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want error containing %q", c.yaml, err, c.want)
		}
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

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"1024": 1024, "64KiB": 64 << 10, "16MiB": 16 << 20, "1 GiB": 1 << 30, "2MB": 2e6} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "MiB", "99999999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
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
