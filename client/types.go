package resourced

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/toolapi"
)

// Visibility says who may read a resource.
type Visibility string

// Visibilities.
const (
	// Private: only the owning tenant; served with cacheScope "private".
	Private Visibility = "private"
	// Public: any authenticated caller; served with cacheScope "public".
	Public Visibility = "public"
)

// SaveOptions are the options both save tools share. The zero value means
// the scheme's defaults: default retention, unlisted, private.
type SaveOptions struct {
	// Retention is how long to keep the resource; 0 means the scheme's
	// default. It is sent in whole seconds (rounded up) and capped by the
	// server at the scheme's maximum: Saved.ExpiresAt shows what applied.
	Retention time.Duration
	// Listed shows the resource in resources/list. Unlisted resources are
	// still readable by URI.
	Listed bool
	// Visibility is Private (the default) or Public.
	Visibility Visibility
	// Scheme picks a scheme other than the server's default of the kind.
	Scheme string
}

// Hit is one search hit of a snapshot. It is sent as a toolapi.Hit; an
// empty URL is left out.
type Hit struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Snippet string   `json:"snippet"`
	URL     string   `json:"url,omitempty"` // "" or an absolute http(s) URL (CONTRACT §4)
	Score   *float64 `json:"score,omitempty"`
}

// SearchSnapshot is the input of SaveSearchSnapshot. resourced stores the
// JSON document {query, total, hits} under a server-chosen id.
type SearchSnapshot struct {
	Query       string
	Hits        []Hit
	Title       string // default: "Search results: <query>"
	Description string
	SaveOptions
}

// Report is the input of SaveReport: a body at a caller-chosen path below
// the tenant, e.g. "billing/2026-11/import-dry-run".
//
// Set exactly one of Text and Blob. Text travels as JSON text; Blob as
// base64 and may hold any bytes. resources/read returns text for textual
// media types with valid UTF-8 and a blob otherwise, byte for byte either
// way.
type Report struct {
	Path     string
	MIMEType string
	Text     string
	Blob     []byte

	Title       string // default: the last path segment
	Description string

	// IfMatch replaces the report only if its current body has this
	// sha256 (ErrConflict otherwise, also when it does not exist).
	IfMatch string
	// Overwrite creates or replaces unconditionally. Without IfMatch or
	// Overwrite a save is create-only: ErrConflict if the path exists.
	Overwrite bool
	SaveOptions
}

// Metadata describes a stored resource, as stat_resource, list_resources
// and the save tools return it.
type Metadata struct {
	URI          string
	Name         string // the path below the tenant
	Title        string
	Description  string
	MIMEType     string
	Size         int64 // body bytes before any encoding
	SHA256       string
	Total        int // hits of a search snapshot; 0 for reports
	CreatedAt    time.Time
	LastModified time.Time
	ExpiresAt    time.Time // retention, not a cache hint
	Listed       bool
	Visibility   Visibility
}

// SaveStatus tells a created resource from a replaced one.
type SaveStatus string

// Save statuses.
const (
	Created  SaveStatus = "created"
	Replaced SaveStatus = "replaced"
)

// Saved is the result of a save.
type Saved struct {
	Metadata
	Status SaveStatus
	// Link is the resource_link resourced returned: return it from your own
	// tool as is, so the client can read the body with resources/read.
	Link *mcp.ResourceLink
}

// ListOptions select a page of List. The zero value lists every resource
// of the caller's tenant, 50 a page.
type ListOptions struct {
	Scheme string // only this scheme
	Prefix string // only paths starting with this (needs Scheme)
	Cursor string // NextCursor of the previous page
	Limit  int    // 1..100; 0 means 50
}

// ListPage is one page of List.
type ListPage struct {
	Items      []Metadata
	NextCursor string // "" on the last page
}

// Resource is a body read with resources/read.
type Resource struct {
	URI      string
	MIMEType string
	// Body is the bytes as saved: the text's UTF-8 or the decoded blob.
	Body []byte
	// Text reports whether resourced served the body as text (else blob).
	Text bool

	SHA256       string
	Size         int64
	LastModified time.Time
	ExpiresAt    time.Time

	// TTL is the freshness hint (ttlMs): how long the body may be served
	// from a cache. 0 means immediately stale. It is not retention.
	TTL time.Duration
	// CacheScope is "private" (per caller) or "public".
	CacheScope string
}

// metadataOf converts the metadata a tool sends.
func metadataOf(w *toolapi.Metadata) Metadata {
	m := Metadata{
		URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description, MIMEType: w.MIMEType,
		Size: w.Size, SHA256: w.SHA256,
		CreatedAt: parseTime(w.CreatedAt), LastModified: parseTime(w.LastModified), ExpiresAt: parseTime(w.ExpiresAt),
		Listed: w.Listed, Visibility: Visibility(w.Visibility),
	}
	if w.Total != nil {
		m.Total = *w.Total
	}
	return m
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// args are the options shared by both save tools, as sent: retention in
// whole seconds, rounded up, as the ISO-8601 string the tools' schema
// advertises ("PT5400S"; the server still takes a bare number).
func (o *SaveOptions) args() toolapi.SaveOptions {
	a := toolapi.SaveOptions{Listed: o.Listed, Visibility: string(o.Visibility), Scheme: o.Scheme}
	if o.Retention > 0 {
		secs := int64((o.Retention + time.Second - 1) / time.Second)
		a.Retention = json.RawMessage(`"PT` + strconv.FormatInt(secs, 10) + `S"`)
	}
	return a
}

// wireHits converts hits to the wire form; an empty URL is not sent.
func wireHits(hits []Hit) []toolapi.Hit {
	out := make([]toolapi.Hit, len(hits))
	for i, h := range hits {
		out[i] = toolapi.Hit{ID: h.ID, Title: h.Title, Snippet: h.Snippet, Score: h.Score}
		if h.URL != "" {
			out[i].URL = &h.URL
		}
	}
	return out
}

// decodeStructured decodes a result's structuredContent into v.
func decodeStructured(sc any, v any) error {
	b, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
