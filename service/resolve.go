package service

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/uri"
)

// This file is the one place that decides whether a caller may read a URI:
// Resolve turns the URI into a key, Readable judges the metadata, and
// Stat, Open and View put the two together with one backend access each,
// deciding before a body byte is read. Every route (resources/read, the
// read and search tools, subscriptions/listen, download links) goes
// through it, so a URI gets one answer everywhere (docs/CONTRACT.md §2).

// Resolve is the one URI → key of every route. A URI whose scheme (the
// text before its first ':', compared case-insensitively) is not
// configured is not found; a URI of a configured scheme that is not in
// canonical form is a validation failure with the grammar's reason
// (report:acme/x, REPORT://acme/x, report://acme/x/); "" is a validation
// failure. Nothing here depends on the caller: a malformed URI naming
// another tenant gets the same answer as one naming the caller's own.
func (s *Service) Resolve(raw string) (store.Key, *Failure) {
	if raw == "" {
		return store.Key{}, InvalidField("uri", "is required, e.g. \"report://<tenant>/<path>\" as returned by a save")
	}
	if s.schemes[schemeOf(raw)] == nil {
		return store.Key{}, NotFound(raw)
	}
	u, err := uri.Parse(raw)
	if err != nil {
		reason := "is malformed"
		var ue *uri.Error
		if errors.As(err, &ue) {
			reason = ue.Reason
		}
		return store.Key{}, InvalidField("uri", reason)
	}
	k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
	if err != nil {
		return store.Key{}, NotFound(raw)
	}
	return k, nil
}

// schemeOf is the scheme a URI claims: the text before its first ':'
// (RFC 3986 §3.1), ASCII letters lower-cased, so that a non-canonical URI
// of a configured scheme is told why. Non-ASCII bytes stay as they are:
// no look-alike folds into an ASCII scheme.
func schemeOf(raw string) string {
	i := strings.IndexByte(raw, ':')
	if i <= 0 || i > store.MaxSchemeLen {
		return ""
	}
	sc := raw[:i]
	for j := 0; j < len(sc); j++ {
		if 'A' <= sc[j] && sc[j] <= 'Z' {
			b := []byte(sc)
			for k := j; k < len(b); k++ {
				if 'A' <= b[k] && b[k] <= 'Z' {
					b[k] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return sc // canonical: no copy on the read path
}

// Readable reports whether tenant may read the object m describes: its
// own, or another tenant's public one.
func Readable(tenant string, m *store.Meta) bool {
	return m.Key.Tenant() == tenant || m.Visibility == store.Public
}

// Stat returns the metadata of the resource raw names, if tenant may read
// it: one backend access, no body byte.
func (s *Service) Stat(ctx context.Context, tenant, raw string) (store.Meta, *Failure) {
	k, f := s.Resolve(raw)
	if f != nil {
		return store.Meta{}, f
	}
	m, err := s.store.Stat(ctx, k)
	switch {
	case IsNotFound(err) || err == nil && !Readable(tenant, &m):
		return store.Meta{}, NotFound(raw)
	case err != nil:
		return store.Meta{}, s.Unavailable(ctx, "store stat", err)
	}
	return m, nil
}

// Open opens the body of the resource raw names for tenant, deciding
// readability from the metadata before any body byte is read (through
// the backend's streaming reader when it has one). The caller closes the
// reader.
func (s *Service) Open(ctx context.Context, tenant, raw string) (store.Meta, io.ReadSeekCloser, *Failure) {
	k, f := s.Resolve(raw)
	if f != nil {
		return store.Meta{}, nil, f
	}
	m, r, err := s.store.OpenIf(ctx, k, func(m *store.Meta) bool { return Readable(tenant, m) })
	switch {
	case IsNotFound(err):
		return store.Meta{}, nil, NotFound(raw)
	case err != nil:
		return store.Meta{}, nil, s.Unavailable(ctx, "store open", err)
	}
	return m, r, nil
}

// View calls fn once with the resource raw names, if tenant may read it:
// its metadata, its stored encoded form (nil when the backend keeps none)
// and its body, all valid only while fn runs (they may be the backend's
// own memory). Readability is decided on the metadata first: a backend
// whose body lives elsewhere (S3) does not fetch it for an object the
// caller may not read. Unknown, expired and unreadable are one NotFound;
// fn's error, and any backend failure, are unavailable.
func (s *Service) View(ctx context.Context, tenant, raw string, fn func(m *store.Meta, encoded, body []byte) error) *Failure {
	k, f := s.Resolve(raw)
	if f != nil {
		return f
	}
	err := s.store.ReadIf(ctx, k, func(m *store.Meta) bool { return Readable(tenant, m) }, fn)
	switch {
	case err == nil:
		return nil
	case IsNotFound(err):
		return NotFound(raw)
	}
	return s.Unavailable(ctx, "store view", err)
}

// ListedPage is one page of ListResources.
type ListedPage struct {
	Items      []*store.Meta
	NextCursor string
}

// ListResources is resources/list for tenant: its own listed resources,
// then the listed public resources of other tenants, at most limit per
// page, after cursor (bound to tenant; "" is the start). Resources of a
// scheme no longer configured are not served. A bad cursor is a
// validation failure of "cursor".
func (s *Service) ListResources(ctx context.Context, tenant, cursor string, limit int) (*ListedPage, *Failure) {
	cur, err := DecodeCursor(cursor, tenant, "")
	if err != nil {
		return nil, InvalidField("cursor", "pass the nextCursor of a previous resources/list result, or none")
	}
	out := &ListedPage{Items: []*store.Meta{}}
	add := func(m *store.Meta) {
		if s.schemes[m.Key.Scheme()] != nil {
			out.Items = append(out.Items, m)
		}
	}
	if cur.Phase == "" {
		after := store.Position{Scheme: cur.Scheme, Path: cur.Path}
		for len(out.Items) < limit {
			page, err := s.store.List(ctx, store.ListQuery{Tenant: tenant, After: after, Limit: limit - len(out.Items), ListedOnly: true})
			if err != nil {
				return nil, s.Unavailable(ctx, "store list", err)
			}
			for i := range page.Items {
				add(&page.Items[i])
			}
			if !page.More {
				cur = Cursor{Phase: PhasePublic}
				break
			}
			after = page.Next
			cur.Scheme, cur.Path = after.Scheme, after.Path
		}
		if cur.Phase == "" {
			out.NextCursor = EncodeCursor(tenant, "", cur)
			return out, nil
		}
	}
	after := store.PublicPosition{Tenant: cur.PTenant, Scheme: cur.Scheme, Path: cur.Path}
	for len(out.Items) < limit {
		page, err := s.store.ListPublic(ctx, after, limit-len(out.Items))
		if err != nil {
			return nil, s.Unavailable(ctx, "store list public", err)
		}
		for i := range page.Items {
			if m := &page.Items[i]; m.Key.Tenant() != tenant { // the caller's own came first
				add(m)
			}
		}
		if !page.More {
			return out, nil
		}
		after = page.Next
	}
	out.NextCursor = EncodeCursor(tenant, "", Cursor{Phase: PhasePublic, PTenant: after.Tenant, Scheme: after.Scheme, Path: after.Path})
	return out, nil
}

// MaxURILen is the longest resource URI, in bytes.
const MaxURILen = uri.MaxLen
