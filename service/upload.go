package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// UploadRequest is a streamed report save (PUT /v1/resources/...) as the
// HTTP API parsed it, without its body: save_report's arguments (Text,
// BlobBase64 and IfMatch unused) and the precondition of its headers.
type UploadRequest struct {
	toolapi.ReportArgs
	// Cond is the precondition. An IfMatch without a hash comes with
	// MatchAny: the strong entity-tags of an If-Match with several (or
	// "*" for any current body); Precheck turns them into a hash.
	Cond     store.Cond
	MatchAny []string
	// ContentLength is the announced size of the body; -1: unknown.
	ContentLength int64
}

// Upload is a checked upload, ready for its body.
type Upload struct {
	Scheme  *Scheme
	Meta    store.Meta
	Cond    store.Cond
	LinkTTL time.Duration

	matchAny []string
}

// PrepareUpload checks everything about an upload of p's tenant but its
// body, with save_report's validators.
func (s *Service) PrepareUpload(tenant string, req *UploadRequest) (*Upload, *Failure) {
	a := &req.ReportArgs
	sc, f := s.uploadScheme(a.Scheme)
	if f != nil {
		return nil, f
	}
	if a.Path == "" {
		return nil, InvalidField("path", "is required, e.g. PUT /v1/resources/report/billing/2026-11/import-dry-run")
	}
	if f := s.checkPathLen(a.Path); f != nil {
		return nil, f
	}
	k, f := reportKey(sc, tenant, a.Path)
	if f != nil {
		return nil, f
	}
	linkTTL, f := s.LinkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if f != nil {
		return nil, f
	}
	if f := s.checkLabels(a.Title, a.Description); f != nil {
		return nil, f
	}
	if f := CheckMIMEType("Content-Type", a.MIMEType); f != nil {
		return nil, f
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	_, retention, vis, f := s.resolve(&a.SaveOptions, KindReport)
	if f != nil {
		return nil, f
	}
	expires := expiry(now, retention)
	desc := a.Description
	if desc == "" {
		if req.ContentLength >= 0 {
			desc = fmt.Sprintf("%s, %d bytes, uploaded %s", a.MIMEType, req.ContentLength, now.Format(time.RFC3339))
		} else {
			desc = fmt.Sprintf("%s, uploaded %s", a.MIMEType, now.Format(time.RFC3339))
		}
	}
	return &Upload{
		Scheme: sc,
		Meta: store.Meta{
			Key: k, MIMEType: a.MIMEType, Created: now, Modified: now, Expires: expires,
			Title: defaultTitle(a.Title, a.Path), Description: desc, Listed: a.Listed, Visibility: vis,
		},
		Cond: req.Cond, LinkTTL: linkTTL, matchAny: req.MatchAny,
	}, nil
}

// uploadScheme is the report scheme an upload names.
func (s *Service) uploadScheme(name string) (*Scheme, *Failure) {
	sc := s.schemes[name]
	switch {
	case name == "":
		return nil, InvalidField("scheme", "is missing: PUT /v1/resources/<scheme>/<path>")
	case sc == nil:
		return nil, Fail(KindNotFound, fmt.Sprintf("this server has no scheme %s; uploads go to one of its report schemes", Quote(name)))
	case sc.Kind != KindReport:
		return nil, InvalidField("scheme", fmt.Sprintf("%s:// holds search snapshots, which are saved with save_search_snapshot; uploads go to report schemes", name))
	}
	return sc, nil
}

// Precheck refuses an upload whose precondition already fails, before its
// body travels; the store checks it again atomically with the write. An
// If-Match with several tags, or *, becomes a match of the current body's
// hash when that is among them (so a body replaced in between fails the
// upload with a conflict).
func (s *Service) Precheck(ctx context.Context, up *Upload) *Failure {
	if up.Cond.Kind == store.Always {
		return nil
	}
	k := up.Meta.Key
	m, err := s.store.Stat(ctx, k)
	if err == nil && up.matchAny != nil {
		for _, tag := range up.matchAny {
			if tag == "*" || tag == m.SHA256 {
				up.Cond = store.Matching(m.SHA256)
				return nil
			}
		}
		return Conflict(k, up.Cond, HTTPRetry)
	}
	if ClientGone(ctx, err) {
		return Fail(KindValidation, "the connection closed before the upload was stored; nothing was stored. Send it again.")
	}
	switch {
	case IsNotFound(err):
		if up.Cond.Kind == store.IfMatch {
			return Conflict(k, up.Cond, HTTPRetry)
		}
	case err != nil:
		return s.Unavailable(ctx, "upload stat", err)
	case up.Cond.Kind == store.IfNone, m.SHA256 != up.Cond.SHA256:
		return Conflict(k, up.Cond, HTTPRetry)
	}
	return nil
}

// ClientGone reports whether err is the end of a call whose caller went
// away (net/http cancels the request's context then).
func ClientGone(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)
}
