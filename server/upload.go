package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/envelope"
	"github.com/resourced/resourced/server/internal/links"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// Streamed uploads: PUT /v1/resources/<scheme>/<path> with a bearer token
// (resources:write) stores the request body as a report of the caller's
// tenant, reading it as it arrives: the scheme's maxBytes is enforced while
// reading, and the store writes through its streaming path when it has one.
// It is save_report for bodies larger than a JSON-RPC request should carry;
// the response is the JSON value save_report returns, with the HTTP status
// saying how it went. docs/large-reports.md describes it for users.
//
//	Content-Type            the mimeType (default application/octet-stream)
//	If-None-Match: *        create only (also the default)
//	If-Match: "<sha256>"    replace only the body with this hash (strong
//	                        comparison, RFC 9110 §13.1.1: a list matches
//	                        when one of its tags does, * when the resource
//	                        exists, W/"…" never)
//	?overwrite=true         create or replace unconditionally
//	?title= &description= &listed=true &visibility=public &retention=P7D
//	?includeDownloadUrl=true &downloadUrlTtl=PT10M
//
// Failures are the tool failure value {status: "failed", errorKind, message,
// retrySafe, fieldErrors?} with 400 (validation_error), 404 (not_found),
// 412 (conflict), 413 (too_large), 507 (quota_exceeded) or 503
// (unavailable, with Retry-After); authentication failures are the same
// 401/403/503 answers as /mcp. A body slower than the body budget is 408
// (guard_deadline.go), a tenant past its save rate, in-flight cap or share
// of the upload spools 429, and an upload past the server's cap on
// concurrent upload spools 503,
// each with Retry-After. An upload whose client goes away is logged at info
// as the client's doing.

const uploadPrefix = "/v1/resources/"

// uploadParams are the query parameters an upload accepts.
var uploadParams = []string{"title", "description", "listed", "visibility", "retention", "overwrite", "includeDownloadUrl", "downloadUrlTtl"}

// routeV1 sends /v1/blobs/ and /v1/resources/ to their handlers before
// next (the ServeMux) sees them: the mux would answer a path with "." or
// ".." segments or "//" with a redirect to a cleaned path, and an upload
// must not land somewhere other than where it was sent. Their paths are
// checked against the URI grammar instead.
func (s *Server) routeV1(next http.Handler) http.Handler {
	upload := s.origin.Wrap(http.HandlerFunc(s.serveUpload))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, links.Prefix):
			s.blobs.ServeHTTP(w, r)
		case strings.HasPrefix(p, uploadPrefix):
			upload.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// httpStatus is the HTTP status of a tool failure kind on the HTTP API.
func httpStatus(kind string) int {
	switch kind {
	case service.KindValidation:
		return http.StatusBadRequest
	case service.KindNotFound:
		return http.StatusNotFound
	case service.KindConflict:
		return http.StatusPreconditionFailed
	case service.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case service.KindQuota:
		return http.StatusInsufficientStorage
	}
	return http.StatusServiceUnavailable
}

// writeJSON writes v as the JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"status":"failed","errorKind":"unavailable","message":"internal error","retrySafe":true}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// uploadFailure answers a failed upload with the tool failure value.
func (s *Server) uploadFailure(w http.ResponseWriter, r *http.Request, terr *service.Failure) {
	setOutcome(r, terr.ErrorKind)
	if terr.ErrorKind == service.KindUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, httpStatus(terr.ErrorKind), terr)
}

// authorize authenticates r and requires scope, answering exactly like
// /mcp (authhttp.go: principal, refuseScope) when it fails.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, scope string) (auth.Principal, bool) {
	p, ok := s.bearer.Principal(w, r)
	if ok && !p.Has(scope) {
		s.refuseScope(w, r, scope, envelope.Message{})
		return p, false
	}
	return p, ok
}

// bodyError remembers the first error reading the request body gave, so
// that a failed write can tell the client's fault from the backend's.
type bodyError struct {
	r   io.Reader
	err error
}

func (b *bodyError) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	if e := logEntry(r.Context()); e != nil {
		e.method = "upload"
	}
	if r.Method != http.MethodPut {
		terr := service.Fail(service.KindValidation, "uploads are PUT /v1/resources/<scheme>/<path> with the body as the request body")
		setOutcome(r, terr.ErrorKind)
		w.Header().Set("Allow", "PUT")
		writeJSON(w, http.StatusMethodNotAllowed, terr)
		return
	}
	p, ok := s.authorize(w, r, auth.ScopeWrite)
	if !ok {
		return
	}
	if !identityEncoded(r.Header) {
		// RFC 9110 §8.4: a coding the server does not apply is 415, naming
		// what it accepts. Storing the coded bytes under the body's media
		// type would serve a gzip stream as text.
		terr := service.InvalidField("Content-Encoding", "is not supported: send the body as it should be stored, without Content-Encoding (or with identity); nothing was stored")
		setOutcome(r, terr.ErrorKind)
		w.Header().Set("Accept-Encoding", "identity")
		writeJSON(w, http.StatusUnsupportedMediaType, terr)
		return
	}
	release, ok := s.admitUpload(w, r, p.Tenant)
	if !ok {
		return
	}
	defer release()
	parsed, terr := parseUpload(r)
	var req *service.Upload
	if terr == nil {
		req, terr = s.svc.PrepareUpload(p.Tenant, parsed)
	}
	if terr != nil {
		s.uploadFailure(w, r, terr)
		return
	}
	ctx := r.Context()
	sc := req.Scheme
	if r.ContentLength > sc.MaxBytes {
		s.uploadFailure(w, r, s.uploadTooLarge(sc))
		return
	}
	// Fail early, before the body travels, when the precondition already
	// fails; the store checks it again atomically with the write.
	if terr := s.svc.Precheck(ctx, req); terr != nil {
		s.uploadFailure(w, r, terr)
		return
	}
	freeSlot, ok := s.uploadSlot(w, r, p.Tenant)
	if !ok {
		return
	}
	defer freeSlot()
	body := &bodyError{r: http.MaxBytesReader(w, r.Body, sc.MaxBytes)}
	br := bufio.NewReaderSize(body, 64<<10)
	if _, err := br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			s.uploadFailure(w, r, service.Fail(service.KindValidation, "the body is empty; resourced stores non-empty bodies only"))
		} else {
			s.uploadReadFailure(w, r, sc, err)
		}
		return
	}
	m, replaced, err := s.svc.PutStream(ctx, service.Stream{
		Meta: req.Meta, Body: br, Cond: req.Cond, Retry: service.HTTPRetry,
		Source: func(err error) bool { return body.err != nil || service.ClientGone(ctx, err) },
	})
	if err != nil {
		var f *service.Failure
		switch {
		case errors.As(err, &f):
			s.uploadFailure(w, r, f)
		case body.err != nil:
			s.uploadReadFailure(w, r, sc, body.err)
		default:
			s.uploadAbandoned(w, r, err)
		}
		return
	}
	status, code := "created", http.StatusCreated
	if replaced {
		status, code = "replaced", http.StatusOK
	}
	v := service.MetaValue(status, &m)
	s.withDownloadURL(&v, &m, p, req.LinkTTL)
	v.HowToRead = mcptool.HowToRead(v.URI, v.DownloadURLExpiresAt) // as save_report's value says
	setOutcome(r, "ok")
	w.Header().Set("ETag", `"`+m.SHA256+`"`)
	writeJSON(w, code, v)
}

// identityEncoded reports whether h's Content-Encoding, if any, names no
// coding but identity.
func identityEncoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return false
			}
		}
	}
	return true
}

func (s *Server) uploadTooLarge(sc *Scheme) *service.Failure {
	return service.Fail(service.KindTooLarge, fmt.Sprintf("the body is larger than the %d bytes %s:// stores per resource; nothing was stored. Split it into several resources.", sc.MaxBytes, sc.Name))
}

// readFailure maps an error reading the request body.
func (s *Server) readFailure(ctx context.Context, sc *Scheme, err error) *service.Failure {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return s.uploadTooLarge(sc)
	}
	if ctx.Err() == nil {
		s.log.InfoContext(ctx, "upload body read failed", "err", err)
	}
	return service.Fail(service.KindValidation, "the request body could not be read to its end; nothing was stored. Send it again.")
}

// uploadReadFailure answers an upload whose body could not be read: 408
// when it came too slowly, otherwise what readFailure says.
func (s *Server) uploadReadFailure(w http.ResponseWriter, r *http.Request, sc *Scheme, err error) {
	if edge.IsSlowBody(err) {
		s.log.InfoContext(r.Context(), "upload body too slow; dropped", "err", err)
		terr := service.Fail(service.KindValidation, s.slowBodyMessage())
		setOutcome(r, "slow_body")
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestTimeout, terr)
		return
	}
	s.uploadFailure(w, r, s.readFailure(r.Context(), sc, err))
}

// uploadAbandoned answers (to no one) an upload whose client went away
// before it was stored: the client's doing, logged at info, with a status
// below 500 so the request log does not report a server failure.
func (s *Server) uploadAbandoned(w http.ResponseWriter, r *http.Request, err error) {
	s.log.InfoContext(r.Context(), "upload abandoned: the client closed the connection before it was stored", "err", err)
	setOutcome(r, "client_gone")
	writeJSON(w, http.StatusBadRequest, service.Fail(service.KindValidation, "the connection closed before the upload was stored; nothing was stored. Send it again."))
}

// uploadSlot takes one of tenant's share of the upload spool slots and one
// of the server's: a tenant holding its share (a quarter of
// Budgets.MaxUploads) is answered 429, its own limit; a server with every
// slot taken 503. Both carry Retry-After and clear as uploads finish, and
// close the connection: net/http would otherwise read the unsent body
// (up to 256 KiB) before it sent the answer, so a slow client would hold
// its refusal, and the connection, until its body deadline.
func (s *Server) uploadSlot(w http.ResponseWriter, r *http.Request, tenant string) (func(), bool) {
	if s.uploadSlots == nil {
		return func() {}, true
	}
	mine, ok := s.limiter.AcquireUpload(tenant)
	if !ok {
		s.metrics.Limited.WithLabelValues(limitTenantUploads).Inc()
		setOutcome(r, "limited:"+limitTenantUploads)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close") // answer now: net/http would first wait for the body
		writeJSON(w, http.StatusTooManyRequests, service.Fail(service.KindUnavailable,
			fmt.Sprintf("Too many requests: your tenant is sending %d uploads, its share of the %d this server receives at once; nothing was stored. Retry when one of them ends.",
				edge.UploadShare(cap(s.uploadSlots)), cap(s.uploadSlots))))
		return nil, false
	}
	select {
	case s.uploadSlots <- struct{}{}:
		return func() { <-s.uploadSlots; mine() }, true
	default:
	}
	mine()
	s.metrics.Limited.WithLabelValues(limitUploads).Inc()
	setOutcome(r, "limited:"+limitUploads)
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusServiceUnavailable, service.Fail(service.KindUnavailable,
		fmt.Sprintf("the server is receiving %d uploads, the most it takes at once; nothing was stored. Retry in a second.", cap(s.uploadSlots))))
	return nil, false
}

// parseUpload reads an upload's request but its body: the scheme and path
// from the URL, the parameters from the query, the media type and the
// precondition from the headers. Checking what they say is the service's
// (PrepareUpload), with save_report's rules.
func parseUpload(r *http.Request) (*service.UploadRequest, *service.Failure) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), uploadPrefix)
	if strings.ContainsRune(rest, '%') {
		return nil, service.InvalidField("path", "must be canonical: /-separated segments of A-Z a-z 0-9 . _ ~ - without percent-encoding")
	}
	scheme, path, _ := strings.Cut(rest, "/")
	q, terr := uploadQuery(r.URL.RawQuery)
	if terr != nil {
		return nil, terr
	}
	req := &service.UploadRequest{ContentLength: r.ContentLength}
	a := &req.ReportArgs
	a.Scheme, a.Path = scheme, path
	a.Title, a.Description, a.Visibility = q.Get("title"), q.Get("description"), q.Get("visibility")
	bools := []struct {
		name string
		dst  *bool
	}{{"listed", &a.Listed}, {"overwrite", &a.Overwrite}, {"includeDownloadUrl", &a.IncludeDownloadURL}}
	for _, b := range bools {
		switch q.Get(b.name) {
		case "", "false":
		case "true":
			*b.dst = true
		default:
			return nil, service.InvalidField(b.name, "must be true or false")
		}
	}
	if v := q.Get("retention"); v != "" {
		a.Retention = durationParam(v)
	}
	if v := q.Get("downloadUrlTtl"); v != "" {
		a.DownloadURLTTL = durationParam(v)
	}
	if a.MIMEType = r.Header.Get("Content-Type"); a.MIMEType == "" {
		a.MIMEType = "application/octet-stream"
	}
	req.Cond, req.MatchAny, terr = uploadCond(r.Header, a.Overwrite)
	if terr != nil {
		return nil, terr
	}
	return req, nil
}

// uploadQuery parses an upload's query: known parameters, each at most
// once.
func uploadQuery(raw string) (url.Values, *service.Failure) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, service.Fail(service.KindValidation, "the query string is malformed")
	}
	for name, vals := range q {
		if !slices.Contains(uploadParams, name) {
			return nil, service.InvalidField(name, "is not a parameter of uploads; use "+strings.Join(uploadParams, ", "))
		}
		if len(vals) > 1 {
			return nil, service.InvalidField(name, "is given more than once")
		}
	}
	return q, nil
}

// uploadCond is the precondition of an upload's If-Match, If-None-Match
// and ?overwrite=true: create-only by default.
func uploadCond(h http.Header, overwrite bool) (store.Cond, []string, *service.Failure) {
	ifMatch, ifNone := h.Values("If-Match"), h.Values("If-None-Match")
	switch {
	case len(ifMatch) > 0 && (overwrite || len(ifNone) > 0):
		return store.Cond{}, nil, service.Fail(service.KindValidation, "send one of If-Match, If-None-Match: * and ?overwrite=true, not several")
	case len(ifNone) > 0 && overwrite:
		return store.Cond{}, nil, service.Fail(service.KindValidation, "If-None-Match: * (create only) conflicts with ?overwrite=true")
	case len(ifMatch) > 0:
		tags, terr := parseIfMatch(ifMatch)
		if terr != nil {
			return store.Cond{}, nil, terr
		}
		if len(tags) == 1 && tags[0] != "*" {
			return store.Matching(tags[0]), nil, nil
		}
		// Several tags, *, or weak tags only (which match nothing):
		// Precheck compares them with the current body and sets the hash
		// to match, or refuses the upload.
		return store.Cond{Kind: store.IfMatch}, append([]string{}, tags...), nil
	case len(ifNone) > 0:
		if strings.TrimSpace(strings.Join(ifNone, ",")) != "*" {
			return store.Cond{}, nil, service.InvalidField("If-None-Match", `must be * (create only); to replace a known body send If-Match: "<sha256>"`)
		}
	case overwrite:
		return store.Cond{Kind: store.Always}, nil, nil
	}
	return store.CreateOnly(), nil, nil
}

// parseIfMatch reads If-Match field values (RFC 9110 §13.1.1: "*" or a
// list of entity-tags) for the strong comparison: it returns the opaque
// values of the strong tags, or ["*"], and leaves out weak tags, which
// never match. A bare 64-digit hash without quotes is taken as a strong
// tag, as the docs have always allowed. A malformed list, a tag that is
// not a SHA-256 (every ETag of ours is one), or * in a list is a
// validation error.
func parseIfMatch(values []string) ([]string, *service.Failure) {
	bad := func(msg string) *service.Failure {
		return service.InvalidField("If-Match", msg+`; send If-Match: "<sha256>" (a list of them, or *)`)
	}
	var tags []string
	star, n := false, 0
	for _, v := range values {
		for i := 0; i < len(v); {
			switch c := v[i]; {
			case c == ' ' || c == '\t' || c == ',':
				i++
				continue
			case c == '*':
				star = true
				i++
			default:
				weak := strings.HasPrefix(v[i:], "W/")
				if weak {
					i += 2
				}
				var tag string
				if i < len(v) && v[i] == '"' {
					end := strings.IndexByte(v[i+1:], '"')
					if end < 0 {
						return nil, bad("an entity-tag has no closing quote")
					}
					tag = v[i+1 : i+1+end]
					i += end + 2
					for j := 0; j < len(tag); j++ {
						if c := tag[j]; c < 0x21 || c == 0x7f {
							return nil, bad("an entity-tag holds a character that entity-tags do not allow")
						}
					}
				} else if weak {
					return nil, bad("W/ must be followed by a quoted entity-tag")
				} else {
					end := strings.IndexAny(v[i:], " \t,")
					if end < 0 {
						end = len(v) - i
					}
					tag = v[i : i+end]
					i += end
					if service.CheckSHA256("If-Match", tag) == nil {
						// unquoted hash: accepted as before
					} else {
						return nil, bad("entity-tags are quoted")
					}
				}
				if !weak {
					if terr := service.CheckSHA256("If-Match", tag); terr != nil {
						return nil, terr
					}
					tags = append(tags, tag)
				}
			}
			n++
			// After an element: optional spaces, then a comma or the end.
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			if i < len(v) && v[i] != ',' {
				return nil, bad("entity-tags are separated by commas")
			}
		}
	}
	switch {
	case n == 0:
		return nil, bad("is empty")
	case star && n > 1:
		return nil, bad("* stands alone")
	case star:
		return []string{"*"}, nil
	}
	return tags, nil
}

// durationParam turns a query value into the JSON parseRetention and
// linkTTL read: a number stays a number, anything else is a string.
func durationParam(v string) json.RawMessage {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}
