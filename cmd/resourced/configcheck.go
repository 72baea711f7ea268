package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/s3store"
)

const configCheckAbout = "Loads the configuration as serve would (--config or RESOURCED_CONFIG, the RESOURCED_*\n" +
	"environment, these flags), validates it, reads every gateway header value and the metrics\n" +
	"token (never printing one; not with --syntax-only), and prints the effective configuration as YAML, every default\n" +
	"filled in, with secrets redacted. Exit 0 when it is valid; 1 when not, each problem naming its\n" +
	"key; 2 for a bad command line. It opens no store, binds no port and creates nothing."

const configUsage = `usage: resourced config check [--syntax-only] [serve's flags]

` + configCheckAbout + "\n"

// configCmd is `resourced config check`, as promtool check config and
// caddy validate: the answer a deployment script can act on before a
// restart.
func configCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, configUsage)
			return nil
		}
	}
	if len(args) == 0 || args[0] != "check" {
		what := "no subcommand"
		if len(args) > 0 {
			what = fmt.Sprintf("unknown subcommand %q", args[0])
		}
		return usageError(fmt.Errorf("config: %s\nrun 'resourced config check --help'", what))
	}
	var syntaxOnly bool
	cfg, err := loadConfig("config check", args[1:], getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&syntaxOnly, "syntax-only", false, "do not read the gateway's header values and the metrics token from the environment and files (as promtool check config --syntax-only)")
	})
	var bad configProblem
	switch {
	case errors.As(err, &bad):
		return &exitError{1, bad.err}
	case err != nil:
		return err // --help, a bad flag
	}
	if cfg.Gateway != nil && !syntaxOnly {
		if _, err := gatewayUpstreams(cfg.Gateway, getenv); err != nil {
			return &exitError{1, fmt.Errorf("invalid configuration: %w", err)}
		}
	}
	if !syntaxOnly {
		if _, err := metricsToken(cfg); err != nil {
			return &exitError{1, fmt.Errorf("invalid configuration: %w", err)}
		}
	}
	out, err := printable(effective(cfg))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# the effective configuration, secrets redacted\n%s", out)
	fmt.Fprintln(stderr, "resourced config check: the configuration is valid")
	return nil
}

// configProblem is a configuration that does not load or validate: exit
// 2 for the commands that need one (a value error), 1 for config check,
// whose answer it is.
type configProblem struct{ err error }

func (e configProblem) Error() string { return e.err.Error() }
func (e configProblem) Unwrap() error { return e.err }

func invalidConfig(err error) error { return usageError(configProblem{err}) }

// effective is cfg with the defaults the components apply themselves
// filled in (config leaves them zero: config.applyDefaults), so that what
// config check prints is what runs. configs/resourced.example.yaml is
// effective(config.Default()) (TestConfigExampleMatchesDefaults).
func effective(cfg *config.Config) *config.Config {
	c := *cfg
	if c.Store.Bbolt.OpenTimeout == 0 {
		c.Store.Bbolt.OpenTimeout = config.Duration(boltstore.DefaultTimeout)
	}
	if c.Store.S3.CallTimeout == 0 {
		c.Store.S3.CallTimeout = config.Duration(s3store.DefaultCallTimeout)
	}
	if c.Store.S3.ReadCache == nil {
		rc := config.Size(s3store.DefaultReadCache)
		c.Store.S3.ReadCache = &rc
	}
	if c.Auth.Leeway == 0 {
		c.Auth.Leeway = config.Duration(auth.DefaultLeeway)
	}
	if c.Auth.TenantClaim == "" {
		c.Auth.TenantClaim = auth.DefaultTenantClaim
	}
	if c.Auth.JWKSRefresh == 0 {
		c.Auth.JWKSRefresh = config.Duration(auth.DefaultJWKSRefresh)
	}
	if c.Auth.TokenCache == nil {
		tc := config.Duration(auth.DefaultTokenCache)
		c.Auth.TokenCache = &tc
	}
	setDefault(&c.NotifyMaxListenURIs, server.DefaultMaxListenURIs)
	setDefault(&c.NotifyMaxListensPerTenant, server.DefaultMaxListensPerTenant)
	b := &c.Budgets
	setDefault(&b.BodyMinRate, server.DefaultBodyMinRate)
	setDefault(&b.BodyGrace, config.Duration(server.DefaultBodyGrace))
	setDefault(&b.WriteMinRate, server.DefaultWriteMinRate)
	setDefault(&b.WriteGrace, config.Duration(server.DefaultWriteGrace))
	setDefault(&b.MaxConnections, server.DefaultMaxConns)
	setDefault(&b.MaxUploads, server.DefaultMaxUploads)
	setDefault(&b.TenantInflight, server.DefaultMaxInflight)
	setDefault(&b.TenantSaveRate, server.DefaultSaveRate)
	setDefault(&b.TenantSaveBurst, server.DefaultSaveBurst)
	setDefault(&b.TenantSaveWait, config.Duration(server.DefaultSaveWait))
	setDefault(&b.StorePanicHold, config.Duration(store.DefaultPanicHold))
	return &c
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// redacted replaces a secret in printed configuration.
const redacted = "REDACTED"

// printable is cfg as YAML with secrets redacted: the user information
// and query values of every URL (an endpoint's credentials, an upstream's
// api_key parameter), and the values of upstreams' env (documented as not
// secret, but the one place a literal secret could be written).
func printable(cfg *config.Config) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(cfg); err != nil {
		return nil, err
	}
	redact(&doc)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

func redact(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if k == "env" && v.Kind == yaml.MappingNode {
				for j := 1; j < len(v.Content); j += 2 {
					v.Content[j].SetString(redacted)
				}
				continue
			}
			redact(v)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			redact(c)
		}
	case yaml.ScalarNode:
		if s, ok := redactURL(n.Value); ok {
			n.SetString(s)
		}
	}
}

// redactURL is s with its user information and query values replaced,
// when s is a URL that has any.
func redactURL(s string) (string, bool) {
	if !strings.Contains(s, "://") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil {
		// Unparsable but URL-like: keep the scheme only.
		scheme, _, _ := strings.Cut(s, "://")
		return scheme + "://" + redacted, true
	}
	changed := false
	if u.User != nil {
		u.User = url.User(redacted)
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{redacted}
		}
		u.RawQuery = q.Encode()
		changed = true
	}
	if u.Fragment != "" {
		u.Fragment = redacted
		changed = true
	}
	return u.String(), changed
}
