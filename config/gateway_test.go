package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// The format of the gateway section, as docs/gateway.md and the
// integration tests write it.
const gatewayYAML = `
gateway:
  upstreams:
    - name: fs
      command: node
      args: ["/path/server-filesystem/dist/index.js", "/data"]
      env: {LOG_LEVEL: info}
      isolation: perTenant
      idleTimeout: 1m
      callTimeout: 30s
      required: false
      offload:
        threshold: 32KiB
        tools: {read_text_file: always, list_directory: never, search_files: 64KiB}
    - name: everything
      url: http://127.0.0.1:3001/mcp
      headers:
        Authorization: {env: EVERYTHING_TOKEN}
        X-Api-Key: {file: /etc/resourced/key}
`

func TestGatewayDecodesAndDefaults(t *testing.T) {
	c, err := Decode(strings.NewReader(gatewayYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	g := c.Gateway
	if g.Scheme != "result" || g.PreviewChars != 500 || g.MaxTenantSessions != 32 {
		t.Fatalf("gateway defaults: scheme %q, previewChars %d, maxTenantSessions %d", g.Scheme, g.PreviewChars, g.MaxTenantSessions)
	}
	fs, ev := g.Upstreams[0], g.Upstreams[1]
	if fs.Isolation != "perTenant" || fs.IdleTimeout.Std() != time.Minute || fs.CallTimeout.Std() != 30*time.Second || *fs.Required {
		t.Errorf("fs: %+v", fs)
	}
	wantTools := map[string]ToolOffload{
		"read_text_file": {Mode: OffloadAlways}, "list_directory": {Mode: OffloadNever},
		"search_files": {Mode: OffloadSize, Threshold: 64 << 10},
	}
	if diff := cmp.Diff(wantTools, fs.Offload.Tools); diff != "" || *fs.Offload.Threshold != 32<<10 {
		t.Errorf("fs offload (-want +got):\n%s threshold %d", diff, *fs.Offload.Threshold)
	}
	if ev.Isolation != "shared" || ev.IdleTimeout.Std() != 5*time.Minute || ev.CallTimeout.Std() != 2*time.Minute ||
		!*ev.Required || *ev.Offload.Threshold != 16<<10 {
		t.Errorf("everything defaults: %+v", ev)
	}
	if diff := cmp.Diff(map[string]HeaderValue{"Authorization": {Env: "EVERYTHING_TOKEN"}, "X-Api-Key": {File: "/etc/resourced/key"}}, ev.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	// The scheme added for offloaded parts.
	r := c.Schemes["result"]
	if r == nil || r.Kind != KindReport || r.TTL.Std() != 5*time.Minute || r.Retention.Std() != 24*time.Hour ||
		r.MaxRetention.Std() != 7*24*time.Hour || *r.MaxBytes != 64<<20 {
		t.Fatalf("schemes.result = %+v, want the gateway's report scheme", r)
	}
	if c.Schemes["search"] == nil || c.Schemes["report"] == nil {
		t.Fatal("the default schemes are gone")
	}
}

func TestGatewaySchemeRule(t *testing.T) {
	// A larger configured scheme sets the added one's maxBytes.
	c, err := Decode(strings.NewReader("schemes:\n  big: {maxBytes: 100MiB}\ngateway:\n  scheme: parts\n  upstreams: [{name: a, command: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Schemes["parts"]; p == nil || *p.MaxBytes != 100<<20 || len(c.Schemes) != 2 {
		t.Fatalf("schemes = %v, want big and parts with maxBytes 100MiB", c.Schemes)
	}
	// A configured scheme is used as it is.
	c, err = Decode(strings.NewReader("schemes:\n  result: {retention: 1h, maxBytes: 1MiB}\ngateway:\n  upstreams: [{name: a, command: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Schemes["result"]; r.Retention.Std() != time.Hour || *r.MaxBytes != 1<<20 || len(c.Schemes) != 1 {
		t.Fatalf("schemes.result = %+v, want the configured one", r)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// The message limit follows the offload scheme's maxBytes.
	if got := c.GatewayMaxMessageBytes(); got != 2*(1<<20)+1<<20 {
		t.Errorf("GatewayMaxMessageBytes = %d, want 2 × 1 MiB + 1 MiB", got)
	}
	// No gateway: no scheme added.
	if c := Default(); c.Schemes["result"] != nil || c.Gateway != nil {
		t.Fatal("the default config has a gateway")
	}
}

func TestGatewayDecodeIsStrict(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"gateway:\n  upstreams:\n    - {name: a, command: x, isolaton: shared}\n", "gateway.upstreams[0].isolaton: unknown key; did you mean isolation?"},
		{"gateway:\n  upstream: []\n", "gateway.upstream: unknown key; did you mean upstreams?"},
		{"gateway:\n  upstreams:\n    - {name: a, url: 'http://x', headers: {K: {value: secret}}}\n", "gateway.upstreams[0].headers.K.value: unknown key; under gateway.upstreams[0].headers.K: env, file"},
		{"gateway:\n  upstreams:\n    - {name: a, command: x, offload: {tools: {t: sometimes}}}\n", "want always, never or a size"},
		{"gateway:\n  upstreams:\n    - {name: a, command: x, offload: {treshold: 1KiB}}\n", "gateway.upstreams[0].offload.treshold: unknown key; did you mean threshold?"},
	} {
		_, err := Decode(strings.NewReader(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", c.yaml, err, c.want)
		}
	}
}

// Issue 15: a secret written in the YAML was refused by go-yaml's own
// error, which quotes the value's start and names no key.
func TestGatewayLiteralHeaderIsRefusedByKeyWithoutTheValue(t *testing.T) {
	for _, doc := range []string{
		"gateway:\n  upstreams:\n    - {name: a, command: x}\n    - name: b\n      url: http://x\n      headers: {X-Ok: {env: K}, Authorization: \"Bearer sk-live-123456\"}\n",
		"gateway:\n  upstreams:\n    - {name: a, command: x}\n    - name: b\n      url: http://x\n      headers:\n        Authorization: [\"Bearer sk-live-123456\"]\n",
		"tok: &t \"Bearer sk-live-123456\"\ngateway:\n  upstreams:\n    - {name: a, command: x}\n    - {name: b, url: http://x, headers: {Authorization: *t}}\n",
	} {
		_, err := Decode(strings.NewReader(doc))
		if err == nil {
			t.Fatalf("Decode(%q) accepted a literal header value", doc)
		}
		want := "gateway.upstreams[1].headers.Authorization: a header value comes from {env: VAR} or {file: PATH}, never the YAML"
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sk-live") || strings.Contains(err.Error(), "Bearer") {
			t.Errorf("Decode(%q) = %v, want %q and not the value", doc, err, want)
		}
	}
	// The type refuses a scalar on its own too, without the value.
	var h HeaderValue
	if err := yaml.Unmarshal([]byte(`"Bearer sk-live-123456"`), &h); err == nil || !strings.Contains(err.Error(), "never the YAML") || strings.Contains(err.Error(), "sk-live") {
		t.Errorf("HeaderValue from a scalar: %v", err)
	}
	if err := yaml.Unmarshal([]byte(`{env: K, file: /f}`), &h); err != nil || h != (HeaderValue{Env: "K", File: "/f"}) {
		t.Errorf("HeaderValue from a mapping: %+v, %v", h, err)
	}
}

func TestGatewayValidateNamesTheKey(t *testing.T) {
	c, err := Decode(strings.NewReader(`
schemes:
  search: {}
gateway:
  scheme: search
  previewChars: -1
  upstreams:
    - {name: Fs, command: x}
    - {name: dup, command: x, headers: {X-K: {env: K}}}
    - {name: dup, url: "ftp://x", args: [a]}
    - {name: both, command: x, url: "http://x"}
    - {name: neither}
    - name: web
      url: http://user:pw@127.0.0.1/mcp
      headers:
        Host: {env: H}
        X-Both: {env: A, file: /b}
        "Bad Name": {env: A}
      isolation: perUser
      idleTimeout: 10ms
      callTimeout: 2h
      offload: {threshold: 0, tools: {t: 0}}
    - {name: ev, command: x, offload: {tools: {ev__embed: always, embed__x: never}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad gateway section")
	}
	for _, want := range []string{
		`gateway.scheme: scheme "search" is of kind search`,
		"gateway.previewChars: want 1 to 100000",
		`gateway.upstreams[0].name: "Fs" is not an upstream name`,
		"gateway.upstreams[1].headers: only for a url upstream",
		`gateway.upstreams[2].name: "dup" is also the name of gateway.upstreams[1]`,
		`gateway.upstreams[2].url: want an http:// or https:// URL, got "ftp://x"`,
		"gateway.upstreams[2].args: only for a command upstream",
		"gateway.upstreams[3]: want one of command and url, not both",
		"gateway.upstreams[4]: want command (a stdio upstream) or url",
		"gateway.upstreams[5].url: must not hold credentials",
		"gateway.upstreams[5].headers.Host: set by the MCP transport",
		"gateway.upstreams[5].headers.X-Both: want exactly one of env",
		"gateway.upstreams[5].headers.Bad Name: not a header name",
		`gateway.upstreams[5].isolation: want shared or perTenant, got "perUser"`,
		"gateway.upstreams[5].idleTimeout: want at least 1s",
		"gateway.upstreams[5].callTimeout: want 1s to 1h",
		"gateway.upstreams[5].offload.threshold: must be positive",
		"gateway.upstreams[5].offload.tools.t: a size must be positive",
		`gateway.upstreams[6].offload.tools.ev__embed: name the tool as the upstream lists it ("embed"), without the "ev__" the gateway adds in front`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() lacks %q; got:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "embed__x") {
		t.Errorf("a tool name without the upstream's prefix is refused: %v", err)
	}
	c, err = Decode(strings.NewReader("gateway:\n  previewChars: 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "gateway.upstreams: at least one upstream is required") {
		t.Fatalf("Validate of a gateway without upstreams = %v", err)
	}
}

func TestGatewayBadSchemeIsReportedOnce(t *testing.T) {
	c, err := Decode(strings.NewReader("gateway:\n  scheme: Bad_Scheme\n  upstreams: [{name: a, command: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "gateway.scheme: not a scheme name") || strings.Contains(err.Error(), "schemes.Bad_Scheme") {
		t.Fatalf("Validate = %v, want the bad name under gateway.scheme only", err)
	}
}

func TestGatewaySandboxKeys(t *testing.T) {
	c, err := Decode(strings.NewReader(`
dataDir: /var/lib/resourced
links: {keyFile: /etc/resourced/links.key}
auth: {hmacSecretFile: /etc/resourced/auth.key}
gateway:
  upstreams:
    - name: fs
      command: npx
      allowPaths: [/srv/docs, {path: /srv/out, mode: rw}]
      user: mcp
    - {name: raw, command: x, sandbox: off}
    - name: web
      url: http://127.0.0.1/mcp
      headers: {X-Key: {file: /etc/resourced/web.key}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	fs, raw, web := c.Gateway.Upstreams[0], c.Gateway.Upstreams[1], c.Gateway.Upstreams[2]
	if fs.Sandbox != SandboxOn || raw.Sandbox != SandboxOff || web.Sandbox != "" {
		t.Errorf("sandbox: fs %q, raw %q, web %q; want on (the default), off, nothing (a url upstream)", fs.Sandbox, raw.Sandbox, web.Sandbox)
	}
	want := []AllowPath{{Path: "/srv/docs", Mode: "ro"}, {Path: "/srv/out", Mode: "rw"}}
	if diff := cmp.Diff(want, fs.AllowPaths); diff != "" || fs.User != "mcp" {
		t.Errorf("fs allowPaths (-want +got):\n%s user %q", diff, fs.User)
	}
	c.Gateway.ConfigFile = "/etc/resourced/resourced.yaml"
	got := map[string]string{}
	for _, p := range c.GatewayProtectedPaths() {
		got[p.What] = p.Path
	}
	for what, path := range map[string]string{
		"the data directory": "/var/lib/resourced", "links.keyFile": "/etc/resourced/links.key",
		"auth.hmacSecretFile": "/etc/resourced/auth.key", "the config file": "/etc/resourced/resourced.yaml",
		"gateway.upstreams[2].headers.X-Key": "/etc/resourced/web.key",
	} {
		if got[what] != path {
			t.Errorf("GatewayProtectedPaths: %s = %q, want %q (all: %v)", what, got[what], path, got)
		}
	}

	c, err = Decode(strings.NewReader(`
gateway:
  upstreams:
    - {name: a, command: x, sandbox: maybe}
    - {name: b, command: x, sandbox: off, allowPaths: [/x], user: u}
    - {name: c, command: x, allowPaths: [relative, {path: /y, mode: wx}, {mode: rw}], group: g}
    - {name: d, url: "http://127.0.0.1/mcp", sandbox: on, allowPaths: [/z], user: u}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad sandbox keys")
	}
	for _, want := range []string{
		`gateway.upstreams[0].sandbox: want on or off, got "maybe"`,
		"gateway.upstreams[1].allowPaths: only with sandbox: on",
		"gateway.upstreams[1].user: only with sandbox: on",
		`gateway.upstreams[2].allowPaths[0]: want an absolute path, got "relative"`,
		`gateway.upstreams[2].allowPaths[1].mode: want ro or rw, got "wx"`,
		"gateway.upstreams[2].allowPaths[2]: a path is required",
		"gateway.upstreams[2].group: only with user",
		"gateway.upstreams[3].sandbox: only for a command upstream",
		"gateway.upstreams[3].allowPaths: only for a command upstream",
		"gateway.upstreams[3].user: only for a command upstream",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() lacks %q; got:\n%v", want, err)
		}
	}
}

// Issue 24: the in-flight bounds must hold one answer of the message
// limit, and a tenant's share cannot exceed the gateway's.
func TestGatewayInFlightBounds(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"maxBytesInFlight: 1MiB", "gateway.maxBytesInFlight: want at least the message limit"},
		{"maxTenantBytesInFlight: 1MiB", "gateway.maxTenantBytesInFlight: want from the message limit"},
		{"maxBytesInFlight: 1GiB\n  maxTenantBytesInFlight: 2GiB", "gateway.maxTenantBytesInFlight: want from the message limit"},
		{"maxBytesInFlight: 1GiB\n  maxTenantBytesInFlight: 512MiB", ""},
	} {
		c, err := Decode(strings.NewReader("gateway:\n  " + tc.yaml + "\n  upstreams:\n    - {name: fs, command: x}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate() = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
