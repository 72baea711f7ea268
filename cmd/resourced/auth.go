package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/grammar"
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
			if a.HMACSecretFile == "" {
				// Not a configured key: naming the key would send the
				// operator looking for a setting they never made.
				return nil, nil, fmt.Errorf("the data directory's token key: %w", err)
			}
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

// token mints a token with the configured HMAC key, for the server that
// the same --config, --listen, --base-url, --data-dir and environment as
// serve's describe. When a server runs on that data directory, its answer
// on the admin socket (the issuer and audience it verifies) wins over the
// config, environment and defaults; when none runs, the URL the data
// directory was last served at (served.go) does. --listen and --base-url
// on the command line win over both, with a warning when they differ. It
// says on stderr which audience it used and why. It never creates a key: a
// data directory without one has had no server started on it. A bad flag
// value (tenant, scope, ttl) or configuration is exit 2.
//
//	resourced token --tenant T --scope "resources:read resources:write" --ttl 1h [--config FILE] [--listen ADDR] [--base-url URL] [--data-dir DIR]
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", "resourced token [--tenant T] [--scope SCOPES] [--ttl 1h] [--subject S] [--config FILE] [--listen ADDR] [--base-url URL] [--data-dir DIR]",
		"Mints a token with the HMAC key of the server's data directory. Its audience and issuer are the\n"+
			"server's canonical URL, derived as serve derives it (--base-url, baseURL, http://<listen>), or\n"+
			"asked from the server running on that data directory. The token goes to stdout, what it is for\n"+
			"to stderr.")
	sf := addServerFlags(fs, getenv)
	var tenant, scope, subject string
	var ttl time.Duration
	fs.StringVar(&tenant, "tenant", auth.DefaultTenant, "tenant the token acts for")
	fs.StringVar(&scope, "scope", auth.ScopeRead+" "+auth.ScopeWrite, "space-separated scopes")
	fs.StringVar(&subject, "subject", "resourced-token", "sub claim")
	durationVar(fs, &ttl, "ttl", time.Hour, "lifetime, a `duration` such as 1h or 30m")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg, err := sf.load(getenv)
	if err != nil {
		return invalidConfig(err)
	}
	if err := cfg.Validate(); err != nil {
		return invalidConfig(fmt.Errorf("invalid configuration: %w", err))
	}
	if cfg.Auth.Mode != "jwt" {
		return usageError(errors.New("auth.mode is not jwt: this server accepts no tokens"))
	}
	if externalKeys(cfg) {
		return usageError(errors.New("this server verifies tokens of an external issuer (jwksURL or publicKeyFiles): mint tokens there"))
	}
	claims := auth.MintClaims{
		Tenant: tenant, TenantClaim: cfg.Auth.TenantClaim,
		Subject: subject, Scopes: strings.Fields(scope), TTL: ttl, Now: time.Now(),
	}
	// The values first, with a placeholder key and audience: a bad tenant
	// or scope is a usage error whether or not a key is there.
	if err := tokenFlagsError(tenant, claims.Scopes, ttl); err != nil {
		return usageError(fmt.Errorf("token: %w", err))
	}
	if _, err := auth.Mint(make([]byte, auth.MinHMACKeyBytes), withAudience(claims, "check", "check")); err != nil {
		return usageError(fmt.Errorf("token: %w", err))
	}
	key, err := tokenKey(cfg)
	if err != nil {
		return err
	}
	iss, aud, why := tokenAudience(cfg, sf, stderr)
	tok, err := auth.Mint(key, withAudience(claims, iss, aud))
	if err != nil {
		return usageError(fmt.Errorf("token: %w", err)) // the key file's length
	}
	fmt.Fprintf(stderr, "resourced token: for audience %s (%s), tenant %q, valid %s\n", aud, why, tenant, ttl)
	fmt.Fprintln(stdout, tok)
	return nil
}

// tokenKey loads the HMAC key serve would verify with. The data
// directory's key must exist: a fresh one would sign tokens no server
// accepts.
func tokenKey(cfg *config.Config) ([]byte, error) {
	if cfg.Auth.HMACSecretFile != "" {
		return auth.LoadHMACKey(cfg.Auth.HMACSecretFile)
	}
	path := cfg.DefaultHMACKeyFile()
	key, err := auth.LoadHMACKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(cfg.DataDir); errors.Is(derr, fs.ErrNotExist) {
			return nil, missingError("there is no data directory %s: no server has been started there, so there is no key to sign with "+
				"(is --data-dir right? Start `resourced serve` once to create it)", cfg.DataDir)
		}
		return nil, missingError("there is no signing key %s: the server has not been started on %s yet "+
			"(start `resourced serve` once to create it, or pass the --data-dir or --config of your server)", path, cfg.DataDir)
	}
	return key, err
}

// tokenFlagsError says what is wrong with the values of --tenant, --scope
// and --ttl, each problem once, naming its flag, or is nil. auth.Mint
// checks the same, but its error speaks of claims ("auth: mint: tenant:
// ..."), not of what the user typed.
func tokenFlagsError(tenant string, scopes []string, ttl time.Duration) error {
	var errs []error
	if err := grammar.Tenant(tenant); err != nil {
		errs = append(errs, fmt.Errorf("--tenant %q: %s", tenant, strings.TrimPrefix(err.Error(), "tenant ")))
	}
	for _, s := range scopes {
		if s != auth.ScopeRead && s != auth.ScopeWrite {
			errs = append(errs, fmt.Errorf("--scope: %q is not %s or %s", s, auth.ScopeRead, auth.ScopeWrite))
		}
	}
	if len(scopes) == 0 {
		errs = append(errs, fmt.Errorf("--scope: want %s, %s or both, space-separated", auth.ScopeRead, auth.ScopeWrite))
	}
	if ttl <= 0 {
		errs = append(errs, fmt.Errorf("--ttl %s: must be positive", ttl))
	}
	return errors.Join(errs...)
}

func withAudience(c auth.MintClaims, iss, aud string) auth.MintClaims {
	c.Issuer, c.Audience = iss, aud
	return c
}

// tokenAudience is the issuer and audience to mint for, and why: the
// command line's --base-url or --listen; else the server running on the
// data directory; else the URL it was last served at; else the config,
// environment and defaults, as serve derives them.
func tokenAudience(cfg *config.Config, sf *serverFlags, stderr io.Writer) (iss, aud, why string) {
	iss, aud = issuer(cfg), audiences(cfg)[0]
	explicit := sf.o.BaseURL != "" || sf.o.Listen != ""
	running, ok := runningVerifier(cfg)
	switch {
	case ok && !explicit:
		return running.Issuer, running.Audience, "asked the server running on " + cfg.DataDir
	case ok && (running.Audience != aud || running.Issuer != iss):
		fmt.Fprintf(stderr, "resourced token: warning: the server running on %s verifies audience %s and issuer %s; it will refuse this token\n",
			cfg.DataDir, running.Audience, running.Issuer)
	case !ok:
		last, found, err := lastServed(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "resourced token: warning: %v\n", err)
		}
		switch {
		case found && !explicit:
			if last.Audience != aud || last.Issuer != iss {
				fmt.Fprintf(stderr, "resourced token: note: the configuration gives audience %s; minting for the URL the data directory was last served at (pass --base-url to choose)\n", aud)
			}
			return last.Issuer, last.Audience, fmt.Sprintf("no server is running on %s; the URL it was last served at, %s", cfg.DataDir, last.At.Format(time.RFC3339))
		case found && (last.Audience != aud || last.Issuer != iss):
			fmt.Fprintf(stderr, "resourced token: warning: the server last run on %s verified audience %s and issuer %s; started the same way, it will refuse this token\n",
				cfg.DataDir, last.Audience, last.Issuer)
		}
	}
	src := sourceOf(cfg, sf)
	if !ok {
		src += "; no server is running on " + cfg.DataDir
	}
	return iss, aud, src
}

// sourceOf names the setting cfg's audience comes from.
func sourceOf(cfg *config.Config, sf *serverFlags) string {
	switch {
	case len(cfg.Auth.Audiences) > 0:
		return "auth.audiences"
	case sf.o.BaseURL != "":
		return "--base-url"
	case sf.o.Listen != "":
		return "--listen"
	case cfg.BaseURL != "":
		return "baseURL of the config or RESOURCED_BASE_URL"
	}
	return "listen address of the config, RESOURCED_LISTEN or the default"
}
