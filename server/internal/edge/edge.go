// Package edge holds the HTTP stages in front of the MCP endpoint and the
// uploads that need nothing of the server but their options: the Origin
// and Host guard (DNS rebinding), bearer authentication with its RFC 6750
// answers and RFC 9728 metadata, and the connection cap.
package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/resourced/resourced/auth"
)

// MetadataPath is where the RFC 9728 protected resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// RegistrationPath is where an OAuth client that found no authorization
// server metadata tries dynamic client registration: the default endpoint
// of the MCP 2025-03-26 authorization spec, which mcp-remote still uses.
const RegistrationPath = "/register"

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

	// base is BaseURL parsed, once (nil when it does not parse): every
	// request's Host is compared with it.
	baseOnce sync.Once
	base     *url.URL
}

// baseURL returns BaseURL parsed, or nil.
func (o *Origin) baseURL() *url.URL {
	o.baseOnce.Do(func() {
		if u, err := url.Parse(o.BaseURL); err == nil {
			o.base = u
		}
	})
	return o.base
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
	u := o.baseURL()
	return u != nil && origin == u.Scheme+"://"+u.Host
}

// hostAllowed enforces the Host allow-list on loopback listeners, where a
// DNS rebinding attack would reach: localhost names, the baseURL's host and
// configured hosts. Elsewhere the allow-list applies only when configured.
// A Host whose port is not a port number is refused on every listener.
func (o *Origin) hostAllowed(r *http.Request) bool {
	// Host names compare case-insensitively (RFC 9110 §4.2.3).
	host := strings.ToLower(r.Host)
	hostname := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		// net.SplitHostPort takes any text after the last colon for the
		// port, so "127.0.0.1:evil.com" would pass as 127.0.0.1.
		if !validPort(port) {
			return false
		}
		hostname = h
	}
	for _, a := range o.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname) {
			return true
		}
	}
	if u := o.baseURL(); u != nil && (strings.EqualFold(u.Host, host) || strings.EqualFold(u.Hostname(), hostname)) {
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

// validPort reports whether port, the text after a Host's last colon, is
// a port: empty (RFC 3986's port is *DIGIT: the scheme's default) or
// decimal digits whose value is at most 65535. No sign, no letter.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
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
	b.refuse(w, http.StatusForbidden, "insufficient_scope", "this call needs the "+scope+" scope: get a token whose scope claim holds it", scope)
}

// Required reports whether callers must present a token.
func (b *Bearer) Required() bool {
	_, none := b.Auth.(auth.None)
	return !none
}

// Advertised reports whether the RFC 9728 metadata is served and named in
// challenges: only with an authorization server to point clients at, which
// the MCP authorization spec requires of the document. With static keys
// tokens are issued out of band, and a client that found the document
// would start an OAuth flow no server can finish (docs/decisions.md, Auth).
func (b *Bearer) Advertised() bool { return len(b.AuthServers) > 0 }

// Metadata serves RFC 9728 metadata for the /mcp resource, or 404 when
// none is advertised.
func (b *Bearer) Metadata() http.Handler {
	if !b.Advertised() {
		return http.NotFoundHandler()
	}
	return sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               b.BaseURL + "/mcp",
		AuthorizationServers:   b.AuthServers,
		ScopesSupported:        []string{auth.ScopeRead, auth.ScopeWrite},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "resourced",
	})
}

// RefuseRegistration answers a dynamic client registration (RFC 7591)
// when no authorization server is advertised: 403 with an RFC 7591 error
// body saying that tokens are issued out of band and, when the request
// carried a bearer token, why it was refused. A client that answers every
// 401 with OAuth then reports the cause and stops, where a 404 left it
// reporting a missing endpoint (docs/decisions.md, Auth).
func (b *Bearer) RefuseRegistration() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		desc := "this server registers no OAuth clients and names no authorization server: it takes bearer tokens issued out of band (resourced token mints them), sent as Authorization: Bearer <token>"
		if r.Header.Get("Authorization") != "" {
			if _, err := b.Auth.Authenticate(r); err != nil {
				desc += "; the token this request carried was refused: " + auth.Description(err)
			} else {
				desc += "; the token this request carried is valid here"
			}
		}
		b.Note(r, "auth:registration_refused", "")
		writeRefusal(w, http.StatusForbidden, "registration_not_supported", quotable(desc), "")
	})
}

// refuseToken answers a request whose token did not authenticate: 503
// when the keys cannot be fetched, else 401 with the RFC 6750 challenge:
// no error code when the request carried no bearer token (RFC 6750 §3.1),
// else error="invalid_token" with the cause (auth.Description).
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
	code := "invalid_token"
	if reason == "missing" {
		code = ""
	}
	b.refuse(w, http.StatusUnauthorized, code, auth.Description(err), "")
}

// refuse writes a refusal: the WWW-Authenticate challenge (error,
// error_description and scope when not "", resource_metadata when
// advertised) and a plain-text body saying the same. Not JSON: a client
// of /mcp may take any JSON body for a JSON-RPC message.
func (b *Bearer) refuse(w http.ResponseWriter, status int, code, description, scope string) {
	description = quotable(description)
	var params []string
	if code != "" {
		params = append(params, `error="`+code+`"`)
	}
	if description != "" && code != "" {
		params = append(params, `error_description="`+description+`"`)
	}
	if scope != "" {
		params = append(params, `scope="`+scope+`"`)
	}
	if b.Advertised() {
		params = append(params, `resource_metadata="`+b.BaseURL+MetadataPath+`"`)
	}
	challenge := "Bearer"
	if len(params) > 0 {
		challenge += " " + strings.Join(params, ", ")
	} else {
		challenge += ` realm="resourced"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, http.StatusText(status)+": "+description, status)
}

// writeRefusal writes an OAuth error body (RFC 6749 §5.2, RFC 7591
// §3.2.2): error, error_description and scope.
func writeRefusal(w http.ResponseWriter, status int, code, description, scope string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Error       string `json:"error,omitempty"`
		Description string `json:"error_description"`
		Scope       string `json:"scope,omitempty"`
	}{code, description, scope})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// quotable replaces what an RFC 6750 quoted parameter may not hold (a
// double quote, a backslash, anything outside printable ASCII) with '?'.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, s)
}
