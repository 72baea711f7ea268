package toolapi

// SearchResourcesArgs are search_resources' arguments.
type SearchResourcesArgs struct {
	Query         string   `json:"query,omitempty" jsonschema:"Words that must all appear (whole words, any case), \"a phrase\", a or b, -excluded. Empty: every resource the filters keep, newest first." schema:"maxLength=1024"`
	Scheme        string   `json:"scheme,omitempty" jsonschema:"Only this scheme, e.g. report."`
	Prefix        string   `json:"prefix,omitempty" jsonschema:"Only paths starting with this."`
	MIMEType      string   `json:"mimeType,omitempty" jsonschema:"Only this media type (text/markdown) or top-level type (text/*)."`
	Labels        []string `json:"labels,omitempty" jsonschema:"Each must match the title or description (a word or \"a phrase\")." schema:"maxItems=8"`
	CreatedAfter  string   `json:"createdAfter,omitempty" jsonschema:"RFC 3339 time: created at or after it."`
	CreatedBefore string   `json:"createdBefore,omitempty" jsonschema:"RFC 3339 time: created before it."`
	ExpiresAfter  string   `json:"expiresAfter,omitempty" jsonschema:"RFC 3339 time: expiring at or after it (or never)."`
	ExpiresBefore string   `json:"expiresBefore,omitempty" jsonschema:"RFC 3339 time: expiring before it."`
	Cursor        string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page of the same search."`
	Limit         *int     `json:"limit,omitempty" schema:"minimum=1;maximum=maxSearchLimit;default=defaultSearchLimit"`
}

// SearchHit is one resource search_resources found.
type SearchHit struct {
	URI       string  `json:"uri"`
	Title     string  `json:"title,omitempty"`
	MIMEType  string  `json:"mimeType"`
	Size      int64   `json:"size" jsonschema:"Bytes of the body." schema:"minimum=0"`
	Score     float64 `json:"score" jsonschema:"Relevance; higher is better, comparable within one search only."`
	Snippet   string  `json:"snippet" jsonschema:"A short part of the text with each match between ** and **."`
	Lines     []int   `json:"lines,omitempty" jsonschema:"Numbers (from 1) of the body's lines that hold a match: read them with read_resource startLine or grep_resource."`
	CreatedAt string  `json:"createdAt"`
	ExpiresAt string  `json:"expiresAt,omitempty"`
}

// SearchResourcesResult is search_resources' success value.
type SearchResourcesResult struct {
	Status     string      `json:"status"`
	Hits       []SearchHit `json:"hits"`
	Total      int         `json:"total" jsonschema:"How many resources match (at least this many when totalIsEstimate)." schema:"minimum=0"`
	Estimate   bool        `json:"totalIsEstimate"`
	NextCursor string      `json:"nextCursor,omitempty"`
	HowToRead  string      `json:"howToRead,omitempty" jsonschema:"How to read the hits in plain words."`
}

// The search and fetch pair of ChatGPT's deep research and company
// knowledge (OpenAI's MCP contract, docs/decisions.md): their values are
// exactly the documented shapes, with no status member.

// DeepSearchArgs are search's arguments.
type DeepSearchArgs struct {
	Query string `json:"query" jsonschema:"What to look for: words, \"a phrase\", a or b, -excluded; a question works too (when its words do not all match, resources matching any of them are found, best first)." schema:"maxLength=1024"`
}

// DeepSearchHit is one result of search.
type DeepSearchHit struct {
	ID    string `json:"id" jsonschema:"The resource's URI: pass it to fetch."`
	Title string `json:"title"`
	URL   string `json:"url" jsonschema:"The resource's URI, for citation."`
}

// DeepSearchResult is search's success value.
type DeepSearchResult struct {
	Results []DeepSearchHit `json:"results"`
}

// FetchArgs are fetch's arguments.
type FetchArgs struct {
	ID string `json:"id" jsonschema:"The id of a search result: a resource URI, e.g. report://<tenant>/<path>."`
}

// FetchMetadata is what fetch says of the resource besides its text.
type FetchMetadata struct {
	MIMEType     string `json:"mimeType"`
	Size         int64  `json:"size" jsonschema:"Bytes of the whole body." schema:"minimum=0"`
	SHA256       string `json:"sha256"`
	CreatedAt    string `json:"createdAt"`
	LastModified string `json:"lastModified"`
	ExpiresAt    string `json:"expiresAt,omitempty"`
	Truncated    bool   `json:"truncated" jsonschema:"text holds only the start of the body."`
	NextOffset   *int64 `json:"nextOffset,omitempty" jsonschema:"Byte offset where text stops: read on with read_resource {uri: id, offset: nextOffset}." schema:"minimum=0"`
	HowToRead    string `json:"howToRead" jsonschema:"How to read the rest, or a binary body, in plain words."`
}

// FetchResult is fetch's success value.
type FetchResult struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Text     string        `json:"text" jsonschema:"The body's text, whole up to the server's result limit (see metadata.truncated)."`
	URL      string        `json:"url"`
	Metadata FetchMetadata `json:"metadata"`
}
