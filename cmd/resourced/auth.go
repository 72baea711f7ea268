package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
)

// firstTokenTTL is the life of the token printed on first start.
const firstTokenTTL = 24 * time.Hour

// authenticator builds the configured auth.Authenticator. With mode jwt and
// no key source, it creates the dev HMAC key in the data directory; on that
// first start it prints one token for tenant "default" to stdout (once, for
// the person starting the server; never into the log stream).
func authenticator(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer) (auth.Authenticator, func(), error) {
	if cfg.Auth.Mode == "none" {
		log.Warn("auth.mode is none: every caller is tenant \"default\" with read and write scopes")
		return auth.None{}, func() {}, nil
	}
	a := &cfg.Auth
	st := authSettings(cfg)
	o := auth.JWTOptions{
		Issuer:      issuer(cfg),
		Audiences:   st.Audiences,
		Algorithms:  st.Algorithms,
		Leeway:      st.Leeway,
		TenantClaim: st.TenantClaim,
		JWKSURL:     st.JWKSURL,
		JWKSRefresh: st.JWKSRefresh,
		TokenCache:  st.TokenCache,
		Logger:      log,
	}
	switch {
	case externalKeys(cfg):
		if len(a.PublicKeyFiles) > 0 {
			keys, err := auth.LoadPublicKeys(a.PublicKeyFiles)
			if err != nil {
				return nil, nil, fmt.Errorf("auth.publicKeyFiles: %w", err)
			}
			o.PublicKeys = keys
		}
	default:
		path := a.HMACSecretFile
		var key []byte
		var err error
		created := false
		if path != "" {
			key, err = auth.LoadHMACKey(path)
		} else {
			path = cfg.DefaultHMACKeyFile()
			key, created, err = auth.LoadOrCreateHMACKey(path)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("auth.hmacSecretFile: %w", err)
		}
		o.HMACSecret = key
		if created {
			log.Info("created a signing key for tokens", "path", path)
			tok, err := auth.Mint(key, auth.MintClaims{
				Issuer: o.Issuer, Audience: o.Audiences[0], Tenant: auth.DefaultTenant, TenantClaim: a.TenantClaim,
				Subject: "first-start", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, TTL: firstTokenTTL, Now: time.Now(),
			})
			if err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(stdout, "First start: a token for tenant %q with both scopes, valid %s (mint more with `resourced token`):\n%s\n",
				auth.DefaultTenant, firstTokenTTL, tok)
		}
	}
	j, err := auth.NewJWT(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return j, j.Close, nil
}

// externalKeys reports whether tokens come from another issuer (public
// keys or a JWKS), not from the HMAC key of this server.
func externalKeys(cfg *config.Config) bool {
	return cfg.Auth.JWKSURL != "" || len(cfg.Auth.PublicKeyFiles) > 0
}

// authSettings are the verifier settings of cfg.auth, with the key sources
// named but not loaded: what authenticator gives auth.NewJWT, checked by
// validate before any key file is read. With no key source configured the
// HMAC key of the data directory is used. Unset algorithms are HS256 with
// an HMAC key and RS256, ES256 and EdDSA with external keys; unset
// durations are auth's defaults; tokenCache 0s is off.
func authSettings(cfg *config.Config) auth.Settings {
	a := &cfg.Auth
	st := auth.Settings{
		Audiences:   audiences(cfg),
		Algorithms:  a.Algorithms,
		Leeway:      a.Leeway.Std(),
		TenantClaim: a.TenantClaim,
		PublicKeys:  len(a.PublicKeyFiles),
		JWKSURL:     a.JWKSURL,
		JWKSRefresh: a.JWKSRefresh.Std(),
		HMAC:        a.HMACSecretFile != "" || !externalKeys(cfg),
	}
	if a.TokenCache != nil {
		st.TokenCache = a.TokenCache.Std()
		if st.TokenCache == 0 {
			st.TokenCache = -1 // off
		}
	}
	if len(st.Algorithms) == 0 {
		st.Algorithms = []string{"HS256"}
		if externalKeys(cfg) {
			st.Algorithms = []string{"RS256", "ES256", "EdDSA"}
		}
	}
	return st
}

func issuer(cfg *config.Config) string {
	if cfg.Auth.Issuer != "" {
		return cfg.Auth.Issuer
	}
	return cfg.CanonicalBaseURL()
}

func audiences(cfg *config.Config) []string {
	if len(cfg.Auth.Audiences) > 0 {
		return cfg.Auth.Audiences
	}
	return []string{cfg.CanonicalBaseURL()}
}

// token mints a token with the configured HMAC key:
//
//	resourced token --tenant T --scope "resources:read resources:write" --ttl 1h [--config FILE] [--data-dir DIR]
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var path, dataDir, tenant, scope, subject string
	var ttl time.Duration
	fs.StringVar(&path, "config", getenv("RESOURCED_CONFIG"), "YAML config file")
	fs.StringVar(&dataDir, "data-dir", "", "data directory (default ./data)")
	fs.StringVar(&tenant, "tenant", auth.DefaultTenant, "tenant the token acts for")
	fs.StringVar(&scope, "scope", auth.ScopeRead+" "+auth.ScopeWrite, "space-separated scopes")
	fs.StringVar(&subject, "subject", "resourced-token", "sub claim")
	fs.DurationVar(&ttl, "ttl", time.Hour, "lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg, err := loadFile(path, getenv)
	if err != nil {
		return err
	}
	cfg.Apply(config.Overrides{DataDir: dataDir})
	if cfg.Auth.Mode != "jwt" {
		return errors.New("auth.mode is not jwt: this server accepts no tokens")
	}
	if cfg.Auth.JWKSURL != "" || len(cfg.Auth.PublicKeyFiles) > 0 {
		return errors.New("this server verifies tokens of an external issuer (jwksURL or publicKeyFiles): mint tokens there")
	}
	keyPath := cfg.Auth.HMACSecretFile
	var key []byte
	if keyPath != "" {
		key, err = auth.LoadHMACKey(keyPath)
	} else {
		key, _, err = auth.LoadOrCreateHMACKey(cfg.DefaultHMACKeyFile())
	}
	if err != nil {
		return err
	}
	tok, err := auth.Mint(key, auth.MintClaims{
		Issuer: issuer(cfg), Audience: audiences(cfg)[0], Tenant: tenant, TenantClaim: cfg.Auth.TenantClaim,
		Subject: subject, Scopes: strings.Fields(scope), TTL: ttl, Now: time.Now(),
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
