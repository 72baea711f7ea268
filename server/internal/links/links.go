// Package links signs, checks and serves download links: GET
// <baseURL>/v1/blobs/<scheme>/<tenant>/<path>, a body over plain HTTPS
// whose signature is the credential.
package links

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// Signed download links: GET <baseURL>/v1/blobs/<scheme>/<tenant>/<path>
// ?exp=<unix seconds>&sha256=<hex>[&access=public]&sig=<base64url
// HMAC-SHA256> serves a body over plain HTTPS, for clients that would
// rather fetch a URL than read a resource (browsers, curl, agents with an
// HTTP tool).
//
// The signature is the credential: no bearer token, no cookie. It is an
// HMAC-SHA256, under the links key, of the canonical string
//
//	v2|<scheme>|<tenant>|<path>|<exp>|<access>|<sha256>
//
// where access is "owner" (a link minted by the resource's tenant) or
// "public" (a link minted by another tenant for a public resource, which
// stops working when the resource stops being public), and sha256 is the
// digest of the body the link was minted for. No part may contain '|', so
// the string is unambiguous. A link is checked, in constant time, before
// anything else; a missing, malformed, tampered or expired link, or one
// whose life exceeds the configured maximum, is 403 with one body, so a
// caller without a valid link learns nothing about what exists. With a
// valid link, every reason the body cannot be served (deleted, expired,
// replaced, deleted and re-created, turned private, scheme no longer
// configured) is the same 404, which says to ask for a new link.
//
// The digest binds a link to one body without a second store access: the
// download opens the body anyway, and its metadata carries the sha256 to
// compare. Links of version 1 (no digest) are refused like any bad link.
// docs/large-reports.md describes the endpoint for users.

const (
	// Prefix is the path below which download links are served.
	Prefix      = "/v1/blobs/"
	linkVersion = "v2"

	accessOwner  = "owner"
	accessPublic = "public"

	defaultLinkTTL    = 15 * time.Minute
	defaultLinkMaxTTL = time.Hour
)

// Signer signs and checks download links for the server at baseURL.
type Signer struct {
	key        []byte
	defaultTTL time.Duration
	maxTTL     time.Duration
	baseURL    string
	now        func() time.Time
}

// New returns the signer of key (nil when key is empty: no links), with
// the default and longest life of a link (<= 0: 15 minutes and an hour).
func New(key []byte, ttl, maxTTL time.Duration, baseURL string, now func() time.Time) *Signer {
	if len(key) == 0 {
		return nil
	}
	if maxTTL <= 0 {
		maxTTL = defaultLinkMaxTTL
	}
	if ttl <= 0 {
		ttl = min(defaultLinkTTL, maxTTL)
	}
	return &Signer{key: bytes.Clone(key), defaultTTL: min(ttl, maxTTL), maxTTL: maxTTL, baseURL: baseURL, now: now}
}

// mac returns the signature of one link.
func (l *Signer) mac(scheme, tenant, path string, exp int64, access, digest string) []byte {
	m := hmac.New(sha256.New, l.key)
	io.WriteString(m, linkVersion+"|"+scheme+"|"+tenant+"|"+path+"|"+strconv.FormatInt(exp, 10)+"|"+access+"|"+digest)
	return m.Sum(nil)
}

// URL returns a signed link to the body of m, bound to its sha256, for a
// caller of tenant reader, valid for ttl but never beyond the resource's
// expiry, and when it expires.
func (l *Signer) URL(m *store.Meta, reader string, ttl time.Duration) (string, time.Time) {
	exp := l.now().Add(ttl)
	if !m.Expires.IsZero() && m.Expires.Before(exp) {
		exp = m.Expires
	}
	unix := exp.Unix() // rounds down: never after the resource's expiry
	k := m.Key
	access := accessOwner
	if reader != k.Tenant() {
		access = accessPublic
	}
	sig := base64.RawURLEncoding.EncodeToString(l.mac(k.Scheme(), k.Tenant(), k.Path(), unix, access, m.SHA256))
	u := l.baseURL + Prefix + k.Scheme() + "/" + k.Tenant() + "/" + k.Path() + "?exp=" + strconv.FormatInt(unix, 10) + "&sha256=" + m.SHA256
	if access == accessPublic {
		u += "&access=public"
	}
	return u + "&sig=" + sig, time.Unix(unix, 0).UTC()
}

// Policy is the link policy the service checks link arguments against;
// nil when links are disabled.
func (l *Signer) Policy() *service.Links {
	if l == nil {
		return nil
	}
	return &service.Links{DefaultTTL: l.defaultTTL, MaxTTL: l.maxTTL}
}

// Link is the signed link to the body of m for a caller of tenant
// reader, as a result carries it: downloadUrl, its expiry, and the same
// as a SEP-2631 file descriptor. The link's expiry is its own clock; the
// resource's expiresAt is another.
func (l *Signer) Link(m *store.Meta, reader string, ttl time.Duration) toolapi.DownloadLink {
	u, exp := l.URL(m, reader, ttl)
	expires := jsonwire.FormatTime(exp)
	name := m.Key.Path()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	digest, _ := hex.DecodeString(m.SHA256)
	return toolapi.DownloadLink{
		DownloadURL: u, DownloadURLExpiresAt: expires,
		DownloadFile: &toolapi.AuthorizedFile{
			File: toolapi.FileValue{
				URI: m.Key.String(), Name: name, MIMEType: m.MIMEType, Size: m.Size,
				Digest: toolapi.FileDigest{Algorithm: "sha-256", Value: base64.RawURLEncoding.EncodeToString(digest)},
			},
			Download: toolapi.FileTransfer{Transport: "https", Method: http.MethodGet, URL: u, ExpiresAt: expires},
		},
	}
}

const (
	// Refused is the one 403 of a missing, malformed, tampered or expired link.
	Refused = "Forbidden: this download link is invalid or has expired; ask for a new one\n"
	// Missing is the one 404 of a valid link: the resource is gone, or
	// its body is no longer the one the link was minted for.
	Missing = "Not found: the resource of this link is gone or has changed since the link was minted; ask for a new link\n"
)

func plainError(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// Handler serves GET, HEAD and OPTIONS (CORS preflight) of /v1/blobs/...:
// any origin may fetch with a valid link, without credentials.
type Handler struct {
	Signer  *Signer
	Service *service.Service
	// TTL is the freshness of m in milliseconds: its scheme's ttl, capped
	// by its remaining life.
	TTL func(m *store.Meta) int
	// Note records the request in the request log: an outcome when not "",
	// the tenant read when not "".
	Note func(r *http.Request, outcome, tenant string)
	// Read counts n body bytes served of scheme.
	Read func(scheme string, n int64)
}

// ServeHTTP implements http.Handler.
func (b *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := b
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, Cache-Control")
	s.Note(r, "", "")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "Range, If-None-Match, If-Modified-Since, If-Range")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		plainError(w, http.StatusMethodNotAllowed, "Method not allowed: download links answer GET and HEAD\n")
		return
	}
	raw, access, digest, ok := s.Signer.Check(r)
	if !ok {
		s.Note(r, "link_refused", "")
		plainError(w, http.StatusForbidden, Refused)
		return
	}
	// An owner link reads as its tenant; a public link as nobody's
	// tenant, which may read public resources only.
	reader := ""
	if access == accessOwner {
		reader, _, _ = strings.Cut(raw[strings.Index(raw, "://")+3:], "/")
	}
	m, body, f := s.Service.Open(r.Context(), reader, raw)
	changed := f == nil && m.SHA256 != digest
	if changed {
		body.Close()
	}
	switch {
	case f != nil && f.ErrorKind == service.KindValidation:
		s.Note(r, "link_refused", "")
		plainError(w, http.StatusForbidden, Refused)
		return
	case changed || f != nil && f.ErrorKind == service.KindNotFound:
		outcome := "not_found"
		if changed {
			outcome = "link_stale" // in the log and metrics only; the body is the one 404
		}
		s.Note(r, outcome, "")
		plainError(w, http.StatusNotFound, Missing)
		return
	case f != nil:
		s.Note(r, "unavailable", "")
		h.Set("Retry-After", "5")
		plainError(w, http.StatusServiceUnavailable, "Service Unavailable: the storage backend failed; retry later\n")
		return
	}
	k := m.Key
	defer body.Close()
	s.Note(r, "ok", k.Tenant())
	mt := m.MIMEType
	if mt == "" {
		mt = "application/octet-stream"
	}
	h.Set("Content-Type", mt)
	h.Set("ETag", `"`+m.SHA256+`"`)
	h.Set("Cache-Control", fmt.Sprintf("%s, max-age=%d", scope(m.Visibility), s.maxAge(&m, r)))
	// The body is the tenant's, not ours: never run it as a page of this
	// origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if r.Method == http.MethodGet {
		s.Read(k.Scheme(), m.Size)
	}
	if rg := r.Header.Get("Range"); rg != "" {
		r.Header.Set("Range", unsatisfiableAsPastEnd(rg, m.Size))
	}
	http.ServeContent(w, r, "", m.Modified, body)
}

// unsatisfiableAsPastEnd rewrites the byte ranges of a Range header that
// RFC 9110 §14.1.1 calls unsatisfiable but http.ServeContent would serve as
// an empty 206 ("bytes 20-19/20"): a suffix range of length 0 ("-0"), and
// any suffix range of an empty body. Each becomes "<size>-", which
// ServeContent treats as starting past the end, so a request of only such
// ranges gets 416 with "Content-Range: bytes */<size>" (for an empty body
// ServeContent ignores the Range and answers 200, as RFC 9110 allows), and
// one that also has satisfiable ranges gets those. If-Range and the other conditionals
// keep their meaning: ServeContent still evaluates them.
func unsatisfiableAsPastEnd(h string, size int64) string {
	const unit = "bytes="
	if !strings.HasPrefix(h, unit) {
		return h
	}
	specs := strings.Split(h[len(unit):], ",")
	changed := false
	for i, spec := range specs {
		first, last, ok := strings.Cut(strings.Trim(spec, " \t"), "-")
		if !ok || strings.TrimRight(first, " \t") != "" {
			continue
		}
		last = strings.TrimLeft(last, " \t")
		n, err := strconv.ParseInt(last, 10, 64)
		if last == "" || last[0] == '-' || err != nil {
			continue // ServeContent refuses it as malformed
		}
		if n == 0 || size == 0 {
			specs[i] = strconv.FormatInt(size, 10) + "-"
			changed = true
		}
	}
	if !changed {
		return h
	}
	return unit + strings.Join(specs, ",")
}

// maxAge is the freshness of a download: the scheme's ttl, capped by
// the remaining life of the resource and of the link.
func (b *Handler) maxAge(m *store.Meta, r *http.Request) int64 {
	ms := int64(b.TTL(m))
	exp, _ := strconv.ParseInt(r.URL.Query().Get("exp"), 10, 64)
	left := exp - b.Signer.now().Unix()
	return max(0, min(ms/1000, left))
}

// Check verifies the link of r and returns the URI it grants, its access
// and the sha256 of the body it was minted for. Every failure is the same
// false.
func (l *Signer) Check(r *http.Request) (raw, access, digest string, ok bool) {
	if l == nil {
		return "", "", "", false
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix)
	if !ok || strings.ContainsRune(rest, '%') || len(rest) > service.MaxURILen {
		return "", "", "", false
	}
	scheme, rest, ok1 := strings.Cut(rest, "/")
	tenant, path, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || strings.ContainsRune(rest, '|') {
		return "", "", "", false
	}
	q, err := parseQueryStrict(r.URL.RawQuery, "exp", "sha256", "sig", "access")
	if err != nil {
		return "", "", "", false
	}
	exp, err := strconv.ParseInt(q["exp"], 10, 64)
	if err != nil {
		return "", "", "", false
	}
	access = accessOwner
	switch q["access"] {
	case "":
	case accessPublic:
		access = accessPublic
	default:
		return "", "", "", false
	}
	digest = q["sha256"]
	if !isDigest(digest) {
		return "", "", "", false
	}
	sig, err := base64.RawURLEncoding.DecodeString(q["sig"])
	if err != nil {
		return "", "", "", false
	}
	good := hmac.Equal(sig, l.mac(scheme, tenant, path, exp, access, digest))
	now := l.now().Unix()
	if !good || exp <= now || exp-now > int64(l.maxTTL/time.Second)+1 {
		return "", "", "", false
	}
	// A valid signature names what we signed; the service resolves it
	// like any URI (a scheme no longer configured is not found).
	return scheme + "://" + tenant + "/" + path, access, digest, true
}

// isDigest reports whether d is a sha256 as the store writes it: 64
// lowercase hex digits.
func isDigest(d string) bool {
	if len(d) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseQueryStrict parses a query whose parameters are all in names, each
// at most once, with values that need no unescaping beyond what
// url.QueryUnescape does.
func parseQueryStrict(raw string, names ...string) (map[string]string, error) {
	out := map[string]string{}
	if raw == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(raw, "&") {
		name, value, _ := strings.Cut(part, "=")
		known := false
		for _, n := range names {
			known = known || n == name
		}
		if _, dup := out[name]; !known || dup {
			return nil, fmt.Errorf("unexpected parameter %q", name)
		}
		out[name] = value
	}
	return out, nil
}

// scope is the Cache-Control scope of a body of visibility v.
func scope(v store.Visibility) string {
	if v == store.Public {
		return "public"
	}
	return "private"
}
