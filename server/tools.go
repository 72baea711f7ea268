package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
	"github.com/resourced/resourced/uri"
)

// toolFunc is a tool body: it returns the success value, or a tool error.
type toolFunc func(ctx context.Context, p auth.Principal, args json.RawMessage) (*toolValue, *toolError)

// toolValue is a success: one value rendered twice (structuredContent and
// its JSON as text), plus a resource_link per resource it stored or found.
type toolValue struct {
	value any
	links []*store.Meta
	extra []mcp.Content // items after the value's text (read_resource's window)
}

func (s *Server) addTools() {
	for _, t := range s.toolDefs() {
		s.toolScopes[t.tool.Name] = t.scope
		s.mcp.AddTool(t.tool, s.toolHandler(t.scope, t.fn))
	}
}

// toolHandler adapts a toolFunc to go-sdk: scope check, result rendering.
func (s *Server) toolHandler(scope string, fn toolFunc) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, err := requireScope(ctx, scope)
		if err != nil {
			return nil, err
		}
		v, terr := fn(ctx, p, req.Params.Arguments)
		if terr != nil {
			return errorResult(terr), nil
		}
		b, err := json.Marshal(v.value)
		if err != nil {
			return nil, s.internal(ctx, "encoding a tool result", err)
		}
		content := make([]mcp.Content, 0, 1+len(v.extra)+len(v.links))
		content = append(content, &mcp.TextContent{Text: string(b)})
		content = append(content, v.extra...)
		for _, m := range v.links {
			content = append(content, resourceLink(m))
		}
		return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(b)}, nil
	}
}

func resourceLink(m *store.Meta) *mcp.ResourceLink {
	size := m.Size
	return &mcp.ResourceLink{
		URI:         m.Key.String(),
		Name:        m.Key.Path(),
		Title:       m.Title,
		Description: m.Description,
		MIMEType:    m.MIMEType,
		Size:        &size,
		Annotations: &mcp.Annotations{LastModified: formatTime(m.Modified)},
	}
}

// The tools' wire types live in toolapi, shared with the Go client; the
// server calls them by these names.
type (
	metaValue    = toolapi.Metadata
	saveOptions  = toolapi.SaveOptions
	hit          = toolapi.Hit
	snapshotArgs = toolapi.SearchSnapshotArgs
	reportArgs   = toolapi.ReportArgs
	uriArgs      = toolapi.DeleteArgs
	statArgs     = toolapi.StatArgs
	deletedValue = toolapi.DeleteResult
	listArgs     = toolapi.ListArgs
	listValue    = toolapi.ListResult
)

func metaValueOf(status string, m *store.Meta) metaValue {
	v := metaValue{
		Status:       status,
		URI:          m.Key.String(),
		Name:         m.Key.Path(),
		Title:        m.Title,
		Description:  m.Description,
		MIMEType:     m.MIMEType,
		Size:         m.Size,
		SHA256:       m.SHA256,
		CreatedAt:    formatTime(m.Created),
		LastModified: formatTime(m.Modified),
		Listed:       m.Listed,
		Visibility:   string(m.Visibility),
	}
	if !m.Expires.IsZero() {
		v.ExpiresAt = formatTime(m.Expires)
	}
	return v
}

// resolve checks the shared save options against the scheme of kind and
// returns the scheme, the expiry and the visibility.
func (s *Server) resolve(o *saveOptions, kind string, now time.Time) (*Scheme, time.Time, store.Visibility, *toolError) {
	var sc *Scheme
	if o.Scheme == "" {
		var names []string
		for _, n := range s.schemeNames() {
			if s.schemes[n].Kind == kind {
				names = append(names, n)
			}
		}
		switch {
		case s.schemes[kind] != nil && s.schemes[kind].Kind == kind:
			sc = s.schemes[kind]
		case len(names) == 1:
			sc = s.schemes[names[0]]
		case len(names) == 0:
			return nil, time.Time{}, "", failure(kindValidation, "this server has no "+kind+" scheme configured")
		default:
			return nil, time.Time{}, "", invalidField("scheme", "is required here: choose one of "+strings.Join(names, ", "))
		}
	} else if sc = s.schemes[o.Scheme]; sc == nil || sc.Kind != kind {
		return nil, time.Time{}, "", invalidField("scheme", fmt.Sprintf("%q is not a configured %s scheme", o.Scheme, kind))
	}
	retention := sc.Retention
	if len(o.Retention) > 0 && string(o.Retention) != "null" {
		d, terr := parseRetention(o.Retention)
		if terr != nil {
			return nil, time.Time{}, "", terr
		}
		retention = min(d, sc.MaxRetention)
	}
	vis := store.Private
	switch o.Visibility {
	case "", "private":
	case "public":
		vis = store.Public
	default:
		return nil, time.Time{}, "", invalidField("visibility", fmt.Sprintf("must be \"private\" or \"public\", not %q", o.Visibility))
	}
	return sc, now.Add(retention).UTC().Truncate(time.Millisecond), vis, nil
}

func (s *Server) checkSize(sc *Scheme, n int) *toolError {
	if int64(n) > sc.MaxBytes {
		return failure(kindTooLarge, fmt.Sprintf("the body is %d bytes; %s:// stores at most %d bytes per resource. Split it into several resources.", n, sc.Name, sc.MaxBytes))
	}
	if n == 0 {
		return failure(kindValidation, "the body is empty; resourced stores non-empty bodies only")
	}
	return nil
}

// put stores obj under the tenant quota and maps store failures to tool
// errors.
func (s *Server) put(ctx context.Context, obj *store.Object, cond store.Cond) (store.Meta, bool, *toolError) {
	cond.Quota = s.quota
	if obj.Encoded == nil {
		obj.Encoded = s.encodeForStore(obj.MIMEType, obj.Body)
	}
	m, replaced, err := s.store.Put(ctx, obj, cond)
	switch {
	case err == nil:
		s.metrics.bytesSaved.WithLabelValues(obj.Key.Scheme()).Add(float64(obj.Size))
		return m, replaced, nil
	case errors.Is(err, store.ErrQuotaExceeded), errors.Is(err, store.ErrQuotaUnsupported):
		return m, false, s.quotaFailure(ctx, obj.Key.Tenant(), err)
	case errors.Is(err, store.ErrInvalidKey):
		return m, false, invalidField("path", "is too long for this server's storage backend; use a shorter path (S3 keys are at most 1024 bytes, and one segment at most 255)")
	case errors.Is(err, store.ErrPreconditionFailed):
		u := obj.Key.String()
		if cond.Kind == store.IfMatch {
			return m, false, failure(kindConflict, fmt.Sprintf("%s was not replaced: it does not exist or its sha256 is not %s. Call stat_resource for the current sha256.", u, cond.SHA256))
		}
		return m, false, failure(kindConflict, fmt.Sprintf("%s already exists and was not changed. To replace it pass ifMatch with its current sha256 (see stat_resource), or overwrite: true.", u))
	default:
		return m, false, s.storeFailure(ctx, "store put", err)
	}
}

// --- save_search_snapshot ---------------------------------------------------

// snapshotDoc is the stored body of a search snapshot.
type snapshotDoc struct {
	Query string `json:"query"`
	Total int    `json:"total"`
	Hits  []hit  `json:"hits"`
}

func (s *Server) saveSearchSnapshot(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a snapshotArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, invalidField("query", "is required: the search query these hits answer")
	}
	if terr := checkText("query", a.Query, maxQueryLen); terr != nil {
		return nil, terr
	}
	if a.Hits == nil {
		return nil, invalidField("hits", "is required: an array of {id, title, snippet, url?, score?} (it may be empty)")
	}
	if len(a.Hits) > s.limits.MaxHits {
		return nil, failure(kindTooLarge, fmt.Sprintf("hits has %d items; a snapshot holds at most %d. Save the rest in another snapshot.", len(a.Hits), s.limits.MaxHits))
	}
	for i, h := range a.Hits {
		f := fmt.Sprintf("hits[%d]", i)
		if h.ID == "" {
			return nil, invalidField(f+".id", "is required and must not be empty")
		}
	}
	if a.Total != nil && *a.Total != len(a.Hits) {
		return nil, invalidField("total", fmt.Sprintf("is %d but hits has %d items; total is the number of hits: omit it or set it to %d", *a.Total, len(a.Hits), len(a.Hits)))
	}
	if terr := checkText("title", a.Title, s.limits.MaxTitleBytes); terr != nil {
		return nil, terr
	}
	if terr := checkText("description", a.Description, s.limits.MaxDescriptionBytes); terr != nil {
		return nil, terr
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	sc, expires, vis, terr := s.resolve(&a.SaveOptions, KindSearch, now)
	if terr != nil {
		return nil, terr
	}
	linkTTL, terr := s.linkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if terr != nil {
		return nil, terr
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(snapshotDoc{Query: a.Query, Total: len(a.Hits), Hits: a.Hits}); err != nil {
		return nil, failure(kindValidation, "hits cannot be encoded as JSON: "+err.Error())
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if terr := s.checkSize(sc, len(body)); terr != nil {
		return nil, terr
	}
	id, err := s.ids.next()
	if err != nil {
		return nil, s.storeFailure(ctx, "generating a snapshot id", err)
	}
	k, err := store.NewKey(p.Tenant, sc.Name, "results/"+id)
	if err != nil {
		return nil, s.storeFailure(ctx, "snapshot key", err)
	}
	title := a.Title
	if title == "" {
		title = "Search results: " + truncate(a.Query, 100)
	}
	desc := a.Description
	if desc == "" {
		desc = fmt.Sprintf("%d hits for %q, saved %s", len(a.Hits), truncate(a.Query, 100), now.Format(time.RFC3339))
	}
	obj := &store.Object{Meta: store.Meta{
		Key: k, MIMEType: "application/json", Size: int64(len(body)), SHA256: store.Sum(body),
		Created: now, Modified: now, Expires: expires, Title: title, Description: desc,
		Listed: a.Listed, Visibility: vis,
	}, Body: body}
	m, _, terr := s.put(ctx, obj, store.CreateOnly())
	if terr != nil {
		return nil, terr
	}
	v := metaValueOf("created", &m)
	total := len(a.Hits)
	v.Total = &total
	s.withDownloadURL(&v, &m, p, linkTTL)
	return &toolValue{value: v, links: []*store.Meta{&m}}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// --- save_report --------------------------------------------------------------

func (s *Server) saveReport(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a reportArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	if a.Path == "" {
		return nil, invalidField("path", "is required, e.g. \"billing/2026-11/import-dry-run\"")
	}
	if len(a.Path) > s.limits.MaxPathBytes {
		return nil, invalidField("path", fmt.Sprintf("is %d bytes; the limit is %d", len(a.Path), s.limits.MaxPathBytes))
	}
	if terr := checkMIMEType("mimeType", a.MIMEType); terr != nil {
		return nil, terr
	}
	var body []byte
	switch {
	case a.Text != nil && a.BlobBase64 != nil:
		return nil, failure(kindValidation, "pass exactly one of text and blobBase64, not both",
			fieldError{"text", "conflicts with blobBase64"}, fieldError{"blobBase64", "conflicts with text"})
	case a.Text != nil:
		body = []byte(*a.Text)
	case a.BlobBase64 != nil:
		b, err := decodeBase64(*a.BlobBase64)
		if err != nil {
			return nil, invalidField("blobBase64", "is not valid base64 (standard alphabet, RFC 4648 §4)")
		}
		body = b
	default:
		return nil, failure(kindValidation, "the body is missing: pass text (for textual content) or blobBase64 (for binary content)",
			fieldError{"text", "text or blobBase64 is required"})
	}
	if terr := checkText("title", a.Title, s.limits.MaxTitleBytes); terr != nil {
		return nil, terr
	}
	if terr := checkText("description", a.Description, s.limits.MaxDescriptionBytes); terr != nil {
		return nil, terr
	}
	cond := store.CreateOnly()
	switch {
	case a.IfMatch != "" && a.Overwrite:
		return nil, failure(kindValidation, "pass ifMatch or overwrite, not both: ifMatch replaces only a known body, overwrite replaces anything",
			fieldError{"ifMatch", "conflicts with overwrite"}, fieldError{"overwrite", "conflicts with ifMatch"})
	case a.IfMatch != "":
		if terr := checkSHA256("ifMatch", a.IfMatch); terr != nil {
			return nil, terr
		}
		cond = store.Matching(a.IfMatch)
	case a.Overwrite:
		cond = store.Cond{Kind: store.Always}
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	sc, expires, vis, terr := s.resolve(&a.SaveOptions, KindReport, now)
	if terr != nil {
		return nil, terr
	}
	linkTTL, terr := s.linkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if terr != nil {
		return nil, terr
	}
	u, err := uri.New(sc.Name, p.Tenant, a.Path)
	if err != nil {
		reason := "is not a valid path"
		var ue *uri.Error
		if errors.As(err, &ue) {
			reason = ue.Reason
		}
		return nil, invalidField("path", reason+"; use /-separated segments of A-Z a-z 0-9 . _ ~ -")
	}
	if terr := s.checkSize(sc, len(body)); terr != nil {
		return nil, terr
	}
	k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
	if err != nil {
		return nil, invalidField("path", err.Error())
	}
	title := a.Title
	if title == "" {
		title = a.Path[strings.LastIndexByte(a.Path, '/')+1:]
	}
	desc := a.Description
	if desc == "" {
		desc = fmt.Sprintf("%s, %d bytes, saved %s", a.MIMEType, len(body), now.Format(time.RFC3339))
	}
	obj := &store.Object{Meta: store.Meta{
		Key: k, MIMEType: a.MIMEType, Size: int64(len(body)), SHA256: store.Sum(body),
		Created: now, Modified: now, Expires: expires, Title: title, Description: desc,
		Listed: a.Listed, Visibility: vis,
	}, Body: body}
	m, replaced, terr := s.put(ctx, obj, cond)
	if terr != nil {
		return nil, terr
	}
	status := "created"
	if replaced {
		status = "replaced"
	}
	s.changed(m.Key, m.SHA256)
	v := metaValueOf(status, &m)
	s.withDownloadURL(&v, &m, p, linkTTL)
	return &toolValue{value: v, links: []*store.Meta{&m}}, nil
}

// --- stat_resource, delete_resource ---------------------------------------------

// parseToolURI validates a URI argument. A malformed URI is a
// validation_error; a scheme we do not serve is simply not found.
func (s *Server) parseToolURI(raw string) (uri.URI, *toolError) {
	if raw == "" {
		return uri.URI{}, invalidField("uri", "is required, e.g. \"report://<tenant>/<path>\" as returned by a save")
	}
	scheme, ok := uri.SplitScheme(raw)
	if !ok || s.schemes[scheme] == nil {
		return uri.URI{}, notFoundTool(raw)
	}
	u, err := uri.Parse(raw)
	if err != nil {
		reason := "is malformed"
		var ue *uri.Error
		if errors.As(err, &ue) {
			reason = ue.Reason
		}
		return uri.URI{}, invalidField("uri", reason)
	}
	return u, nil
}

func notFoundTool(raw string) *toolError {
	b, _ := json.Marshal(raw)
	return failure(kindNotFound, fmt.Sprintf("no resource %s is available to you: it never existed, expired, was deleted or belongs to another tenant", b))
}

func (s *Server) statResource(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a statArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	linkTTL, terr := s.linkTTL(a.IncludeDownloadURL, a.DownloadURLTTL)
	if terr != nil {
		return nil, terr
	}
	u, terr := s.parseToolURI(a.URI)
	if terr != nil {
		return nil, terr
	}
	k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
	if err != nil {
		return nil, notFoundTool(a.URI)
	}
	m, err := s.store.Stat(ctx, k)
	if isNotFound(err) || err == nil && !readableBy(p, &m) {
		return nil, notFoundTool(a.URI)
	}
	if err != nil {
		return nil, s.storeFailure(ctx, "store stat", err)
	}
	v := metaValueOf("found", &m)
	s.withDownloadURL(&v, &m, p, linkTTL)
	return &toolValue{value: v, links: []*store.Meta{&m}}, nil
}

func (s *Server) deleteResource(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a uriArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	u, terr := s.parseToolURI(a.URI)
	if terr != nil {
		return nil, terr
	}
	cond := store.Cond{Kind: store.Always}
	if a.IfMatch != "" {
		if terr := checkSHA256("ifMatch", a.IfMatch); terr != nil {
			return nil, terr
		}
		cond = store.Matching(a.IfMatch)
	}
	if u.Tenant != p.Tenant {
		return nil, notFoundTool(a.URI) // writes never reach another tenant
	}
	k, err := store.NewKey(u.Tenant, u.Scheme, u.Path)
	if err != nil {
		return nil, notFoundTool(a.URI)
	}
	err = s.store.Delete(ctx, k, cond)
	switch {
	case err == nil:
		s.changed(k, "")
	case isNotFound(err):
		return nil, notFoundTool(a.URI)
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil, failure(kindConflict, fmt.Sprintf("%s was not deleted: its sha256 is not %s. Call stat_resource for the current sha256.", a.URI, a.IfMatch))
	default:
		return nil, s.storeFailure(ctx, "store delete", err)
	}
	return &toolValue{value: deletedValue{Status: "deleted", URI: a.URI}}, nil
}

// --- list_resources ------------------------------------------------------------

const (
	defaultListLimit = 50
	maxListLimit     = 100
)

func (s *Server) listResourcesTool(ctx context.Context, p auth.Principal, raw json.RawMessage) (*toolValue, *toolError) {
	var a listArgs
	if terr := decodeArgs(raw, &a); terr != nil {
		return nil, terr
	}
	limit := defaultListLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > maxListLimit {
			return nil, invalidField("limit", fmt.Sprintf("must be between 1 and %d", maxListLimit))
		}
		limit = *a.Limit
	}
	if a.Scheme != "" && s.schemes[a.Scheme] == nil {
		return nil, invalidField("scheme", fmt.Sprintf("%q is not a configured scheme; choose one of %s", a.Scheme, strings.Join(s.schemeNames(), ", ")))
	}
	if a.Prefix != "" {
		if a.Scheme == "" {
			return nil, invalidField("prefix", "needs scheme: a prefix is a path prefix within one scheme")
		}
		if terr := checkPrefix(a.Prefix); terr != nil {
			return nil, terr
		}
	}
	binding := a.Scheme + "\x00" + a.Prefix
	cur, err := decodeCursor(a.Cursor, p.Tenant, binding)
	if err != nil || cur.Phase != "" {
		return nil, invalidField("cursor", "is not a cursor of this listing: pass the nextCursor of a previous list_resources call with the same scheme and prefix, or omit it")
	}
	q := store.ListQuery{Tenant: p.Tenant, Scheme: a.Scheme, Prefix: a.Prefix, After: store.Position{Scheme: cur.Scheme, Path: cur.Path}}
	items := []metaValue{}
	var links []*store.Meta
	for len(items) < limit {
		q.Limit = limit - len(items)
		page, err := s.store.List(ctx, q)
		if err != nil {
			return nil, s.storeFailure(ctx, "store list", err)
		}
		for i := range page.Items {
			m := &page.Items[i]
			q.After = store.Position{Scheme: m.Key.Scheme(), Path: m.Key.Path()}
			if s.schemes[m.Key.Scheme()] == nil {
				continue
			}
			items = append(items, metaValueOf("", m))
			links = append(links, m)
		}
		if !page.More {
			q.After = store.Position{}
			break
		}
		q.After = page.Next
	}
	v := listValue{Status: "ok", Items: items}
	if q.After != (store.Position{}) {
		v.NextCursor = encodeCursor(p.Tenant, binding, cursorBody{Scheme: q.After.Scheme, Path: q.After.Path})
	}
	return &toolValue{value: v, links: links}, nil
}

// checkPrefix validates a list prefix: path characters and '/', no '.' or
// '..' segment.
func checkPrefix(prefix string) *toolError {
	if len(prefix) > uri.MaxLen {
		return invalidField("prefix", fmt.Sprintf("is longer than %d bytes", uri.MaxLen))
	}
	for seg := range strings.SplitSeq(prefix, "/") {
		if seg == "." || seg == ".." {
			return invalidField("prefix", "must not contain '.' or '..' segments")
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
				return invalidField("prefix", fmt.Sprintf("has %q; use path characters A-Z a-z 0-9 . _ ~ - and /", string(c)))
			}
		}
	}
	return nil
}
