package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
	"github.com/resourced/resourced/uri"
)

// Result is a successful save or stat: the stored metadata, its success
// value, and the life of the download link the caller asked for (0:
// none; the transport signs it).
type Result struct {
	Meta    store.Meta
	Value   toolapi.Metadata
	LinkTTL time.Duration
}

func result(status string, m *store.Meta, linkTTL time.Duration) *Result {
	return &Result{Meta: *m, Value: MetaValue(status, m), LinkTTL: linkTTL}
}

// snapshotDoc is the stored body of a search snapshot.
type snapshotDoc struct {
	Query string        `json:"query"`
	Total int           `json:"total"`
	Hits  []toolapi.Hit `json:"hits"`
}

// SaveSnapshot stores a search snapshot of p's tenant at a new id.
func (s *Service) SaveSnapshot(ctx context.Context, tenant string, a *toolapi.SearchSnapshotArgs) (*Result, *Failure) {
	if f := s.checkSnapshot(a); f != nil {
		return nil, f
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	sc, retention, vis, f := s.resolve(&a.SaveOptions, KindSearch)
	if f != nil {
		return nil, f
	}
	expires := expiry(now, retention)
	linkTTL, f := s.LinkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if f != nil {
		return nil, f
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(snapshotDoc{Query: a.Query, Total: len(a.Hits), Hits: a.Hits}); err != nil {
		return nil, Fail(KindValidation, "hits cannot be encoded as JSON: "+err.Error())
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if f := checkSize(sc, len(body)); f != nil {
		return nil, f
	}
	id, err := s.ids.next()
	if err != nil {
		return nil, s.Unavailable(ctx, "generating a snapshot id", err)
	}
	k, err := store.NewKey(tenant, sc.Name, "results/"+id)
	if err != nil {
		return nil, s.Unavailable(ctx, "snapshot key", err)
	}
	title := a.Title
	if title == "" {
		title = "Search results: " + Truncate(a.Query, 100)
	}
	desc := a.Description
	if desc == "" {
		desc = fmt.Sprintf("%d hits for %q, saved %s", len(a.Hits), Truncate(a.Query, 100), now.Format(time.RFC3339))
	}
	m, _, f := s.Put(ctx, Write{Meta: store.Meta{
		Key: k, MIMEType: "application/json", Created: now, Modified: now, Expires: expires,
		Title: title, Description: desc, Listed: a.Listed, Visibility: vis,
	}, Body: body, Cond: store.CreateOnly(), Retry: ToolRetry})
	if f != nil {
		return nil, f
	}
	r := result("created", &m, linkTTL)
	total := len(a.Hits)
	r.Value.Total = &total
	return r, nil
}

// checkSnapshot checks a snapshot's query, hits, title and description.
func (s *Service) checkSnapshot(a *toolapi.SearchSnapshotArgs) *Failure {
	if strings.TrimSpace(a.Query) == "" {
		return InvalidField("query", "is required: the search query these hits answer")
	}
	if f := CheckText("query", a.Query, MaxQueryLen); f != nil {
		return f
	}
	if a.Hits == nil {
		return InvalidField("hits", "is required: an array of {id, title, snippet, url?, score?} (it may be empty)")
	}
	if len(a.Hits) > s.limits.MaxHits {
		return Fail(KindTooLarge, fmt.Sprintf("hits has %d items; a snapshot holds at most %d. Save the rest in another snapshot.", len(a.Hits), s.limits.MaxHits))
	}
	for i, h := range a.Hits {
		if h.ID == "" {
			return InvalidField(fmt.Sprintf("hits[%d]", i)+".id", "is required and must not be empty")
		}
		if h.URL != nil {
			if f := CheckLinkURL(fmt.Sprintf("hits[%d]", i)+".url", *h.URL); f != nil {
				return f
			}
		}
	}
	if a.Total != nil && *a.Total != len(a.Hits) {
		return InvalidField("total", fmt.Sprintf("is %d but hits has %d items; total is the number of hits: omit it or set it to %d", *a.Total, len(a.Hits), len(a.Hits)))
	}
	return s.checkLabels(a.Title, a.Description)
}

// checkLabels checks a save's title and description.
func (s *Service) checkLabels(title, desc string) *Failure {
	if f := CheckText("title", title, s.limits.MaxTitleBytes); f != nil {
		return f
	}
	return CheckText("description", desc, s.limits.MaxDescriptionBytes)
}

// SaveReport is save_report: it decodes a (the body from text or base64,
// the precondition from ifMatch and overwrite, the options) and saves it
// with Save: create-only unless a.IfMatch or a.Overwrite says otherwise.
func (s *Service) SaveReport(ctx context.Context, tenant string, a *toolapi.ReportArgs) (*Result, *Failure) {
	if a.Path == "" {
		return nil, InvalidField("path", "is required, e.g. \"billing/2026-11/import-dry-run\"")
	}
	if f := s.checkPathLen(a.Path); f != nil {
		return nil, f
	}
	if f := CheckMIMEType("mimeType", a.MIMEType); f != nil {
		return nil, f
	}
	body, f := reportBody(a)
	if f != nil {
		return nil, f
	}
	if f := s.checkLabels(a.Title, a.Description); f != nil {
		return nil, f
	}
	cond, f := toolCond(a.IfMatch, a.Overwrite)
	if f != nil {
		return nil, f
	}
	sc, retention, vis, f := s.resolve(&a.SaveOptions, KindReport)
	if f != nil {
		return nil, f
	}
	linkTTL, f := s.LinkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if f != nil {
		return nil, f
	}
	return s.Save(ctx, tenant, SaveRequest{
		Path: a.Path, MIMEType: a.MIMEType, Title: a.Title, Description: a.Description, Body: body, Cond: cond,
		Scheme: sc.Name, Retention: retention, Listed: a.Listed, Visibility: vis, LinkTTL: linkTTL,
	})
}

// SaveRequest is a save of a report in the service's own terms: the body
// as bytes, the precondition and the options decoded.
type SaveRequest struct {
	Path, MIMEType     string
	Title, Description string // "": derived from the path and the body
	Body               []byte
	// Stream, when not nil, is the body instead of Body, Size bytes
	// long: saved through the backend's streaming path (no copy of the
	// body in memory, no stored JSON form).
	Stream     io.Reader
	Size       int64
	Cond       store.Cond
	Scheme     string           // a report scheme; "": the server's
	Retention  time.Duration    // 0: the scheme's; capped by its maximum
	Listed     bool             // shown by resources/list
	Visibility store.Visibility // "": private
	LinkTTL    time.Duration    // > 0: the result carries a download link of this life
}

// Save stores a report of tenant: the one report writer of every
// transport (save_report, the gateway's offloaded parts). It checks what
// the stored object depends on (path, media type, labels, scheme, size).
func (s *Service) Save(ctx context.Context, tenant string, r SaveRequest) (*Result, *Failure) {
	if f := s.checkPathLen(r.Path); f != nil {
		return nil, f
	}
	if f := CheckMIMEType("mimeType", r.MIMEType); f != nil {
		return nil, f
	}
	if f := s.checkLabels(r.Title, r.Description); f != nil {
		return nil, f
	}
	sc, f := s.schemeFor(r.Scheme, KindReport)
	if f != nil {
		return nil, f
	}
	retention := sc.Retention
	if r.Retention > 0 {
		retention = min(r.Retention, sc.MaxRetention)
	}
	vis := r.Visibility
	if vis == "" {
		vis = store.Private
	}
	k, f := reportKey(sc, tenant, r.Path)
	if f != nil {
		return nil, f
	}
	size := int64(len(r.Body))
	if r.Stream != nil {
		size = r.Size
	}
	if f := checkSize(sc, int(min(size, math.MaxInt32))); f != nil {
		return nil, f
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	desc := r.Description
	if desc == "" {
		desc = fmt.Sprintf("%s, %d bytes, saved %s", r.MIMEType, size, now.Format(time.RFC3339))
	}
	meta := store.Meta{
		Key: k, MIMEType: r.MIMEType, Created: now, Modified: now, Expires: expiry(now, retention),
		Title: defaultTitle(r.Title, r.Path), Description: desc, Listed: r.Listed, Visibility: vis,
	}
	var (
		m        store.Meta
		replaced bool
	)
	if r.Stream != nil {
		var err error
		m, replaced, err = s.PutStream(ctx, Stream{Meta: meta, Body: r.Stream, Cond: r.Cond, Retry: ToolRetry})
		if err != nil {
			return nil, err.(*Failure) // no Source: every error is the service's
		}
	} else if m, replaced, f = s.Put(ctx, Write{Meta: meta, Body: r.Body, Cond: r.Cond, Retry: ToolRetry}); f != nil {
		return nil, f
	}
	return result(savedStatus(replaced), &m, r.LinkTTL), nil
}

// DeleteKey removes the resource at k whatever its body: a transport's
// own cleanup (the gateway's rollback of offloaded parts), not a tool.
func (s *Service) DeleteKey(ctx context.Context, k store.Key) *Failure {
	if f := s.intend(ctx, k); f != nil {
		return f
	}
	err := s.store.Delete(ctx, k, store.Cond{Kind: store.Always})
	if err != nil {
		s.unintend(k)
	}
	switch {
	case err == nil:
		s.changed(ctx, k)
	case IsNotFound(err):
		return NotFound(k.String())
	default:
		return s.Unavailable(ctx, "store delete", err)
	}
	return nil
}

func savedStatus(replaced bool) string {
	if replaced {
		return "replaced"
	}
	return "created"
}

// reportBody is the body of a save_report: exactly one of text and
// blobBase64.
func reportBody(a *toolapi.ReportArgs) ([]byte, *Failure) {
	switch {
	case a.Text != nil && a.BlobBase64 != nil:
		return nil, Fail(KindValidation, "pass exactly one of text and blobBase64, not both",
			FieldError{"text", "conflicts with blobBase64"}, FieldError{"blobBase64", "conflicts with text"})
	case a.Text != nil:
		return []byte(*a.Text), nil
	case a.BlobBase64 != nil:
		b, err := DecodeBase64(*a.BlobBase64)
		if err != nil {
			return nil, InvalidField("blobBase64", "is not valid base64 (standard alphabet, RFC 4648 §4)")
		}
		return b, nil
	}
	return nil, Fail(KindValidation, "the body is missing: pass text (for textual content) or blobBase64 (for binary content)",
		FieldError{"text", "text or blobBase64 is required"})
}

// toolCond is the precondition of a save_report's ifMatch and overwrite.
func toolCond(ifMatch string, overwrite bool) (store.Cond, *Failure) {
	switch {
	case ifMatch != "" && overwrite:
		return store.Cond{}, Fail(KindValidation, "pass ifMatch or overwrite, not both: ifMatch replaces only a known body, overwrite replaces anything",
			FieldError{"ifMatch", "conflicts with overwrite"}, FieldError{"overwrite", "conflicts with ifMatch"})
	case ifMatch != "":
		if f := CheckSHA256("ifMatch", ifMatch); f != nil {
			return store.Cond{}, f
		}
		return store.Matching(ifMatch), nil
	case overwrite:
		return store.Cond{Kind: store.Always}, nil
	}
	return store.CreateOnly(), nil
}

func (s *Service) checkPathLen(path string) *Failure {
	if len(path) > s.limits.MaxPathBytes {
		return InvalidField("path", fmt.Sprintf("is %d bytes; the limit is %d", len(path), s.limits.MaxPathBytes))
	}
	return nil
}

// reportKey is the key of a report at path of tenant in sc.
func reportKey(sc *Scheme, tenant, path string) (store.Key, *Failure) {
	u, err := uri.New(sc.Name, tenant, path)
	if err != nil {
		reason := "is not a valid path"
		var ue *uri.Error
		if errors.As(err, &ue) {
			reason = ue.Reason
		}
		return store.Key{}, InvalidField("path", reason+"; use /-separated segments of A-Z a-z 0-9 . _ ~ -")
	}
	k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
	if err != nil {
		return store.Key{}, InvalidField("path", err.Error())
	}
	return k, nil
}

// defaultTitle is title, or the last segment of path when it is empty.
func defaultTitle(title, path string) string {
	if title == "" {
		return path[strings.LastIndexByte(path, '/')+1:]
	}
	return title
}
