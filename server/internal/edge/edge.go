// Package edge holds the HTTP stages in front of the MCP endpoint and the
// uploads that need nothing of the server but their options: the Origin
// and Host guard (DNS rebinding), bearer authentication with its RFC 6750
// answers and RFC 9728 metadata, and the connection cap.
package edge

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/resourced/resourced/auth"
)

// MetadataPath is where the RFC 9728 protected resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Origin refuses requests from browser origins and Host names that are
// not allowed.
type Origin struct {
	// AllowedOrigins may send requests besides the base URL's own origin
	// ("*": any).
	AllowedOrigins []string
	// AllowedHosts are Host names accepted besides localhost names and the
	// base URL's host; configured, they apply off loopback too.
	AllowedHosts []string
	BaseURL      string
	Log          *slog.Logger
}

// Wrap refuses requests from browser origins and Host names that are
// not allowed (DNS rebinding protection).
func (o *Origin) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !o.originAllowed(origin) {
			o.Log.Warn("refused origin", "origin", origin)
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if !o.hostAllowed(r) {
			o.Log.Warn("refused host", "host", r.Host)
			http.Error(w, "Forbidden: invalid Host header", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (o *Origin) originAllowed(origin string) bool {
	if slices.Contains(o.AllowedOrigins, "*") || slices.Contains(o.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(o.BaseURL)
	return err == nil && origin == u.Scheme+"://"+u.Host
}

// hostAllowed enforces the Host allow-list on loopback listeners, where a
// DNS rebinding attack would reach: localhost names, the baseURL's host and
// configured hosts. Elsewhere the allow-list applies only when configured.
func (o *Origin) hostAllowed(r *http.Request) bool {
	// Host names compare case-insensitively (RFC 9110 §4.2.3).
	host := strings.ToLower(r.Host)
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	for _, a := range o.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname) {
			return true
		}
	}
	if u, err := url.Parse(o.BaseURL); err == nil && (strings.EqualFold(u.Host, host) || strings.EqualFold(u.Hostname(), hostname)) {
		return true
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	onLoopback := false
	if local != nil {
		if h, _, err := net.SplitHostPort(local.String()); err == nil {
			ip := net.ParseIP(h)
			onLoopback = ip != nil && ip.IsLoopback()
		}
	}
	if !onLoopback {
		return len(o.AllowedHosts) == 0
	}
	hostname = strings.Trim(hostname, "[]")
	if hostname == "localhost" {
		return true
	}
	ip := net.ParseIP(hostname)
	return ip != nil && ip.IsLoopback()
}

// Bearer turns a request's bearer token into the caller's principal, and
// answers the requests it refuses as RFC 6750 says: 401 with the
// challenge, 403 insufficient_scope, 503 when the keys cannot be fetched.
// go-sdk's RequireBearerToken answers 403 without
// error="insufficient_scope", copies verifier errors into responses and
// turns a key-source outage into 500, so it is not used.
type Bearer struct {
	Auth        auth.Authenticator
	BaseURL     string
	AuthServers []string
	Log         *slog.Logger
	// Failed counts a refusal by its reason (metrics).
	Failed func(reason string)
	// Note records in the request log an outcome (when not "") and the
	// caller's tenant (when not "").
	Note func(r *http.Request, outcome, tenant string)
}

// Principal is the caller of r, noted in the request log; a request whose
// token does not authenticate is answered here and Principal reports
// false.
func (b *Bearer) Principal(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p, err := b.Auth.Authenticate(r)
	if err != nil {
		b.refuseToken(w, r, err)
		return p, false
	}
	b.Note(r, "", p.Tenant)
	return p, true
}

// RefuseScope answers a caller whose token lacks scope: 403 with the RFC
// 6750 insufficient_scope challenge.
func (b *Bearer) RefuseScope(w http.ResponseWriter, r *http.Request, scope string) {
	b.Failed("insufficient_scope")
	b.Note(r, "auth:insufficient_scope", "")
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`", resource_metadata="`+b.BaseURL+MetadataPath+`"`)
	http.Error(w, "Forbidden: this call needs the "+scope+" scope", http.StatusForbidden)
}

// Required reports whether callers must present a token.
func (b *Bearer) Required() bool {
	_, none := b.Auth.(auth.None)
	return !none
}

// Metadata serves RFC 9728 metadata for the /mcp resource.
func (b *Bearer) Metadata() http.Handler {
	return sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               b.BaseURL + "/mcp",
		AuthorizationServers:   b.AuthServers,
		ScopesSupported:        []string{auth.ScopeRead, auth.ScopeWrite},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "resourced",
	})
}

// refuseToken answers a request whose token did not authenticate: 503
// when the keys cannot be fetched, else 401 with the RFC 6750 challenge.
func (b *Bearer) refuseToken(w http.ResponseWriter, r *http.Request, err error) {
	reason := auth.Reason(err)
	b.Failed(reason)
	b.Note(r, "auth:"+reason, "")
	if errors.Is(err, auth.ErrUnavailable) {
		b.Log.Error("token keys unavailable", "err", err)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "Service Unavailable: token verification keys cannot be fetched; retry shortly", http.StatusServiceUnavailable)
		return
	}
	b.Log.Info("authentication failed", "reason", reason)
	challenge := `Bearer resource_metadata="` + b.BaseURL + MetadataPath + `"`
	if reason != "missing" {
		challenge = `Bearer error="invalid_token", resource_metadata="` + b.BaseURL + MetadataPath + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
}
