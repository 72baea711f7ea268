package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
	"github.com/resourced/resourced/uri"
)

// NotFound is the one failure for every URI the caller cannot use: it
// never existed, expired, was deleted or is another tenant's private one.
func NotFound(raw string) *Failure {
	// A URI of a valid length is named whole (its JSON string); a longer
	// one, never a URI of ours, only by its start and length.
	var name string
	if len(raw) <= uri.MaxLen {
		b, _ := json.Marshal(raw)
		name = string(b)
	} else {
		b, _ := json.Marshal(Truncate(raw, maxQuoted))
		name = fmt.Sprintf("%s (%d bytes)", b, len(raw))
	}
	return Fail(KindNotFound, "no resource "+name+" is available to you: it never existed, expired, was deleted or belongs to another tenant")
}

// StatResource is stat_resource: the metadata of the resource a.URI
// names, if tenant may read it.
func (s *Service) StatResource(ctx context.Context, tenant string, a *toolapi.StatArgs) (*Result, *Failure) {
	linkTTL, f := s.LinkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if f != nil {
		return nil, f
	}
	m, f := s.Stat(ctx, tenant, a.URI)
	if f != nil {
		return nil, f
	}
	return result("found", &m, linkTTL), nil
}

// Delete removes the resource a.URI names, of tenant's only, when its
// body has the sha256 a.IfMatch (if given).
func (s *Service) Delete(ctx context.Context, tenant string, a *toolapi.DeleteArgs) (*toolapi.DeleteResult, *Failure) {
	k, f := s.Resolve(a.URI)
	if f != nil {
		return nil, f
	}
	cond := store.Cond{Kind: store.Always}
	if a.IfMatch != "" {
		if f := CheckSHA256("ifMatch", a.IfMatch); f != nil {
			return nil, f
		}
		cond = store.Matching(a.IfMatch)
	}
	if k.Tenant() != tenant {
		return nil, NotFound(a.URI) // writes never reach another tenant
	}
	if f := s.intend(ctx, k); f != nil {
		return nil, f
	}
	err := s.store.Delete(ctx, k, cond)
	if err != nil {
		s.unintend(k)
	}
	switch {
	case err == nil:
		s.changed(ctx, k)
	case IsNotFound(err):
		return nil, NotFound(a.URI)
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil, Fail(KindConflict, fmt.Sprintf("%s was not deleted: its sha256 is not %s. Call stat_resource for the current sha256.", a.URI, a.IfMatch))
	default:
		return nil, s.Unavailable(ctx, "store delete", err)
	}
	return &toolapi.DeleteResult{Status: "deleted", URI: a.URI}, nil
}

// List bounds.
const (
	DefaultListLimit = 50
	MaxListLimit     = 100
)

// Listing is one page of List: its value and the metadata of its items.
type Listing struct {
	Value toolapi.ListResult
	Items []*store.Meta
}

// List returns a page of tenant's resources, optionally of one scheme
// and path prefix, after the position of a.Cursor.
func (s *Service) List(ctx context.Context, tenant string, a *toolapi.ListArgs) (*Listing, *Failure) {
	limit, binding, f := s.checkList(a)
	if f != nil {
		return nil, f
	}
	cur, err := DecodeCursor(a.Cursor, tenant, binding)
	if err != nil || cur.Phase != "" {
		return nil, InvalidField("cursor", "is not a cursor of this listing: pass the nextCursor of a previous list_resources call with the same scheme and prefix, or omit it")
	}
	q := store.ListQuery{Tenant: tenant, Scheme: a.Scheme, Prefix: a.Prefix, After: store.Position{Scheme: cur.Scheme, Path: cur.Path}}
	out := &Listing{Value: toolapi.ListResult{Status: "ok", Items: []toolapi.Metadata{}}}
	for len(out.Items) < limit {
		q.Limit = limit - len(out.Items)
		page, err := s.store.List(ctx, q)
		if err != nil {
			return nil, s.Unavailable(ctx, "store list", err)
		}
		for i := range page.Items {
			m := &page.Items[i]
			q.After = store.Position{Scheme: m.Key.Scheme(), Path: m.Key.Path()}
			if s.schemes[m.Key.Scheme()] == nil {
				continue
			}
			out.Value.Items = append(out.Value.Items, MetaValue("", m))
			out.Items = append(out.Items, m)
		}
		if !page.More {
			q.After = store.Position{}
			break
		}
		q.After = page.Next
	}
	if q.After != (store.Position{}) {
		out.Value.NextCursor = EncodeCursor(tenant, binding, Cursor{Scheme: q.After.Scheme, Path: q.After.Path})
	}
	return out, nil
}

// checkList checks a listing's limit, scheme and prefix and returns the
// limit and the binding of its cursors.
func (s *Service) checkList(a *toolapi.ListArgs) (int, string, *Failure) {
	limit := DefaultListLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > MaxListLimit {
			return 0, "", InvalidField("limit", fmt.Sprintf("must be between 1 and %d", MaxListLimit))
		}
		limit = *a.Limit
	}
	if a.Scheme != "" && s.schemes[a.Scheme] == nil {
		return 0, "", InvalidField("scheme", fmt.Sprintf("%s is not a configured scheme; choose one of %s", Quote(a.Scheme), strings.Join(s.names, ", ")))
	}
	if a.Prefix != "" {
		if a.Scheme == "" {
			return 0, "", InvalidField("prefix", "needs scheme: a prefix is a path prefix within one scheme")
		}
		if f := checkPrefix(a.Prefix); f != nil {
			return 0, "", f
		}
	}
	return limit, a.Scheme + "\x00" + a.Prefix, nil
}

// A Cursor is the base64url JSON of the tenant, an optional binding (the
// filter of list_resources) and the last position returned. A cursor of
// another tenant or another filter is rejected.
type Cursor struct {
	Tenant  string `json:"t"`
	Binding string `json:"b,omitempty"`
	Phase   string `json:"ph,omitempty"` // resources/list: "" own, PhasePublic others' public
	PTenant string `json:"pt,omitempty"` // tenant of the position in PhasePublic
	Scheme  string `json:"s"`
	Path    string `json:"p"`
}

// PhasePublic is the phase of a resources/list cursor past the caller's
// own resources.
const PhasePublic = "public"

// EncodeCursor returns c as a cursor of tenant and binding.
func EncodeCursor(tenant, binding string, c Cursor) string {
	c.Tenant, c.Binding = tenant, binding
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errBadCursor = errors.New("bad cursor")

// DecodeCursor reads a cursor of tenant and binding; "" is the start.
func DecodeCursor(c, tenant, binding string) (Cursor, error) {
	if c == "" {
		return Cursor{}, nil
	}
	if len(c) > 4096 {
		return Cursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Cursor{}, errBadCursor
	}
	var cb Cursor
	if err := json.Unmarshal(b, &cb); err != nil || cb.Tenant != tenant || cb.Binding != binding || cb.Phase != "" && cb.Phase != PhasePublic {
		return Cursor{}, errBadCursor
	}
	return cb, nil
}
