// Package toolapi holds the arguments and results of resourced's tools as
// they travel in JSON: what a tools/call sends as arguments and what a
// result carries as structuredContent. The server decodes into these
// types and generates the tools' inputSchema and outputSchema from them;
// the Go client (package resourced in client/) encodes and decodes with
// them, so the two cannot disagree about a name or a type.
//
// The struct tags are the contract: json names the property (a field
// without omitempty is required), jsonschema is its description, and
// schema lists further JSON Schema keywords (see server/schemas.go, which
// reads them; a number there may name a configured limit such as maxHits).
//
// It imports only the standard library.
package toolapi

import "encoding/json"

// Metadata is a resource's metadata as the save tools, stat_resource and
// list_resources return it.
type Metadata struct {
	Status       string `json:"status,omitempty"`
	URI          string `json:"uri" jsonschema:"Resource URI; read it with resources/read."`
	Name         string `json:"name"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	MIMEType     string `json:"mimeType"`
	Size         int64  `json:"size" jsonschema:"Body length in bytes, before any encoding." schema:"minimum=0"`
	SHA256       string `json:"sha256" jsonschema:"SHA-256 of the body; pass it as ifMatch to replace or delete." schema:"pattern=^[0-9a-f]{64}$"`
	Total        *int   `json:"total,omitempty" schema:"minimum=0"`
	CreatedAt    string `json:"createdAt" schema:"format=date-time"`
	LastModified string `json:"lastModified" schema:"format=date-time"`
	ExpiresAt    string `json:"expiresAt,omitempty" jsonschema:"When the resource is deleted (retention); not a cache hint." schema:"format=date-time"`
	Listed       bool   `json:"listed"`
	Visibility   string `json:"visibility" schema:"enum=private|public"`
	DownloadLink
	HowToRead string `json:"howToRead,omitempty" jsonschema:"How to read the resource in plain words: resources/read, the read_resource tool, or the signed link when one was asked for."`
}

// DownloadLink is the signed link to the body a result carries when the
// caller asked for one (includeDownloadUrl), plainly and as a file
// descriptor shaped like the draft MCP proposal SEP-2631 (File Objects and
// Transfer).
type DownloadLink struct {
	DownloadURL          string          `json:"downloadUrl,omitempty" jsonschema:"Signed link to the raw body (GET, Range supported); anyone holding it can download until it expires. It serves only the body it was minted for: after a replace, or a delete and re-create, it answers 404; ask for a new link." schema:"format=uri"`
	DownloadURLExpiresAt string          `json:"downloadUrlExpiresAt,omitempty" jsonschema:"When the download link expires: the link's clock, not the resource's expiresAt." schema:"format=date-time"`
	DownloadFile         *AuthorizedFile `json:"downloadFile,omitempty" jsonschema:"The same link as a SEP-2631 file descriptor: the file (its name, media type, size and SHA-256 digest) and how to download it."`
}

// AuthorizedFile is a file with its download authorization, in the field
// names of SEP-2631's AuthorizedFile (draft): the file, and the HTTPS GET
// that downloads it.
type AuthorizedFile struct {
	File     FileValue    `json:"file"`
	Download FileTransfer `json:"download"`
}

// FileValue is SEP-2631's FileValue of a stored body. Its uri is the
// resource's URI (resources/read reads it; resourced serves no files/*
// methods); digest names the exact body that download serves.
type FileValue struct {
	URI      string     `json:"uri" jsonschema:"The resource's URI."`
	Name     string     `json:"name" jsonschema:"A file name for the body: the last segment of the resource's path."`
	MIMEType string     `json:"mimeType"`
	Size     int64      `json:"size" jsonschema:"Body length in bytes." schema:"minimum=0"`
	Digest   FileDigest `json:"digest"`
}

// FileDigest is SEP-2631's FileDigest: an algorithm and the digest in
// base64url without padding.
type FileDigest struct {
	Algorithm string `json:"algorithm" schema:"enum=sha-256"`
	Value     string `json:"value" jsonschema:"The SHA-256 of the body, base64url without padding (the sha256 member holds the same digest in hex)." schema:"pattern=^[A-Za-z0-9_-]{43}$"`
}

// FileTransfer is SEP-2631's HTTPS download descriptor.
type FileTransfer struct {
	Transport string `json:"transport" schema:"enum=https"`
	Method    string `json:"method" schema:"enum=GET"`
	URL       string `json:"url" jsonschema:"The signed link (downloadUrl)." schema:"format=uri"`
	ExpiresAt string `json:"expiresAt" jsonschema:"When the link expires (downloadUrlExpiresAt); the resource itself may live longer or shorter (its own expiresAt)." schema:"format=date-time"`
}

// LinkOptions are the arguments of tools that can return a signed
// download link.
type LinkOptions struct {
	IncludeDownloadURL bool            `json:"includeDownloadUrl,omitempty" jsonschema:"Also return downloadUrl: a signed HTTPS link to the raw body that works without a token until downloadUrlExpiresAt." schema:"default=false"`
	DownloadURLTTL     json.RawMessage `json:"downloadUrlTtl,omitempty" jsonschema:"Life of the download link, an ISO-8601 duration such as \"PT10M\"; capped by the server's maximum and the resource's expiry."`
}

// SaveOptions are the arguments both save tools share.
type SaveOptions struct {
	Retention  json.RawMessage `json:"retention,omitempty" jsonschema:"How long to keep it, at least 1 second, as an ISO-8601 duration of weeks, days, hours, minutes and seconds (\"PT1H\", \"P7D\", \"P1W\"). Default and maximum are per scheme; longer values are capped."`
	Listed     bool            `json:"listed,omitempty" jsonschema:"Show it in resources/list. Unlisted resources are still readable by URI." schema:"default=false"`
	Visibility string          `json:"visibility,omitempty" jsonschema:"public: readable by any authenticated caller and cacheable across users." schema:"enum=private|public;default=private"`
	Scheme     string          `json:"scheme,omitempty" jsonschema:"URI scheme to save under; defaults to the server's scheme of this kind."`
	LinkOptions
}

// Hit is one search hit of a snapshot.
type Hit struct {
	ID      string   `json:"id" schema:"minLength=1"`
	Title   string   `json:"title"`
	Snippet string   `json:"snippet"`
	URL     *string  `json:"url,omitempty" jsonschema:"Where the hit can be read: an absolute http or https URL (hosts show it as a link), without user name or password." schema:"format=uri;maxLength=8192;pattern=^[Hh][Tt][Tt][Pp][Ss]?://"`
	Score   *float64 `json:"score,omitempty"`
}

// SearchSnapshotArgs are save_search_snapshot's arguments.
type SearchSnapshotArgs struct {
	Query       string `json:"query" jsonschema:"The search query the hits answer." schema:"minLength=1"`
	Hits        []Hit  `json:"hits" schema:"maxItems=maxHits"`
	Total       *int   `json:"total,omitempty" jsonschema:"Optional check: must equal the number of hits." schema:"minimum=0"`
	Title       string `json:"title,omitempty" jsonschema:"Display title; default: derived from the query." schema:"maxLength=maxTitleBytes"`
	Description string `json:"description,omitempty" schema:"maxLength=maxDescriptionBytes"`
	SaveOptions
}

// ReportArgs are save_report's arguments.
type ReportArgs struct {
	Path        string  `json:"path" jsonschema:"Path below your tenant, e.g. billing/2026-11/import-dry-run: /-separated segments of A-Z a-z 0-9 . _ ~ -" schema:"maxLength=maxPathBytes"`
	MIMEType    string  `json:"mimeType" jsonschema:"Media type of the body, e.g. text/markdown, text/csv, application/pdf."`
	Text        *string `json:"text,omitempty" jsonschema:"The body as text. Exactly one of text and blobBase64."`
	BlobBase64  *string `json:"blobBase64,omitempty" jsonschema:"The body as standard base64. Exactly one of text and blobBase64." schema:"contentEncoding=base64"`
	Title       string  `json:"title,omitempty" schema:"maxLength=maxTitleBytes"`
	Description string  `json:"description,omitempty" schema:"maxLength=maxDescriptionBytes"`
	IfMatch     string  `json:"ifMatch,omitempty" jsonschema:"Replace only if the current body has this sha256." schema:"pattern=^[0-9a-f]{64}$"`
	Overwrite   bool    `json:"overwrite,omitempty" jsonschema:"Create or replace unconditionally." schema:"default=false"`
	SaveOptions
}

// DeleteArgs are delete_resource's arguments.
type DeleteArgs struct {
	URI     string `json:"uri"`
	IfMatch string `json:"ifMatch,omitempty" schema:"pattern=^[0-9a-f]{64}$"`
}

// StatArgs are stat_resource's arguments.
type StatArgs struct {
	URI string `json:"uri" jsonschema:"A resource URI, e.g. report://<tenant>/<path>."`
	LinkOptions
}

// DeleteResult is delete_resource's success value.
type DeleteResult struct {
	Status string `json:"status"`
	URI    string `json:"uri"`
}

// ListArgs are list_resources' arguments.
type ListArgs struct {
	Scheme string `json:"scheme,omitempty" jsonschema:"Only this scheme, e.g. report."`
	Prefix string `json:"prefix,omitempty" jsonschema:"Only paths starting with this (needs scheme)."`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page."`
	Limit  *int   `json:"limit,omitempty" schema:"minimum=1;maximum=maxListLimit;default=defaultListLimit"`
}

// ListResult is list_resources' success value.
type ListResult struct {
	Status     string     `json:"status"`
	Items      []Metadata `json:"items"`
	NextCursor string     `json:"nextCursor,omitempty"`
	HowToRead  string     `json:"howToRead,omitempty" jsonschema:"How to read the listed resources in plain words."`
}

// ReadArgs are read_resource's arguments.
type ReadArgs struct {
	URI       string `json:"uri" jsonschema:"A resource URI, e.g. report://<tenant>/<path>."`
	Offset    *int64 `json:"offset,omitempty" jsonschema:"First byte of the window (default 0). Not with startLine/lineCount." schema:"minimum=0"`
	Length    *int64 `json:"length,omitempty" jsonschema:"Bytes wanted (default: as many as fit)." schema:"minimum=1"`
	StartLine *int64 `json:"startLine,omitempty" jsonschema:"First line of the window, from 1 (textual bodies only)." schema:"minimum=1"`
	LineCount *int64 `json:"lineCount,omitempty" jsonschema:"Lines wanted (default: as many as fit)." schema:"minimum=1"`
	LinkOptions
}

// ReadRange is the part of the body a window holds.
type ReadRange struct {
	Offset    int64  `json:"offset" schema:"minimum=0"`
	Length    int64  `json:"length" schema:"minimum=0"`
	StartLine *int64 `json:"startLine,omitempty" schema:"minimum=1"`
	LineCount *int64 `json:"lineCount,omitempty" schema:"minimum=0"`
}

// ReadResult is read_resource's success value, the window included (Text
// or Blob); the result repeats the window as a content item of its own.
type ReadResult struct {
	Status       string    `json:"status"`
	URI          string    `json:"uri"`
	MIMEType     string    `json:"mimeType"`
	Encoding     string    `json:"encoding" jsonschema:"How the window is carried: text (the text member, and a text item), or base64 (the blob member, and an embedded resource with a blob)." schema:"enum=text|base64"`
	TotalSize    int64     `json:"totalSize" jsonschema:"Size of the whole body in bytes." schema:"minimum=0"`
	SHA256       string    `json:"sha256" jsonschema:"SHA-256 of the whole body." schema:"pattern=^[0-9a-f]{64}$"`
	LastModified string    `json:"lastModified" schema:"format=date-time"`
	Range        ReadRange `json:"range" jsonschema:"The bytes (and lines) the window holds."`
	NextOffset   *int64    `json:"nextOffset,omitempty" jsonschema:"Byte offset of the next window; absent at the end." schema:"minimum=0"`
	NextLine     *int64    `json:"nextLine,omitempty" jsonschema:"Line of the next window (line windows only); absent at the end." schema:"minimum=1"`
	Truncated    bool      `json:"truncated" jsonschema:"The window was cut to fit the result size limit."`
	DownloadLink
	Text *string `json:"text,omitempty" jsonschema:"The window as text (encoding text): exactly the bytes of range, never a split character."`
	Blob []byte  `json:"blob,omitempty" jsonschema:"The window in base64 (encoding base64): exactly the bytes of range." schema:"contentEncoding=base64"`
}

// GrepArgs are grep_resource's arguments.
type GrepArgs struct {
	URI         string `json:"uri" jsonschema:"A resource URI with a textual body, e.g. report://<tenant>/<path>."`
	Pattern     string `json:"pattern" jsonschema:"An RE2 regular expression (Go regexp syntax), matched within each line; with literal: true, the exact text." schema:"minLength=1;maxLength=4096"`
	Literal     bool   `json:"literal,omitempty" jsonschema:"Match pattern as plain text, not as a regular expression." schema:"default=false"`
	Context     *int   `json:"context,omitempty" jsonschema:"Lines of context before and after each match." schema:"minimum=0;maximum=10;default=0"`
	MaxMatches  *int   `json:"maxMatches,omitempty" jsonschema:"Most matches to return." schema:"minimum=1;maximum=1000;default=50"`
	AfterLine   *int64 `json:"afterLine,omitempty" jsonschema:"Only matches on lines after this one (pass nextAfterLine to continue)." schema:"minimum=0"`
	AfterOffset *int64 `json:"afterOffset,omitempty" jsonschema:"Only matches that start after this byte offset (pass nextAfterOffset to continue)." schema:"minimum=0"`
}

// GrepMatch is one match of grep_resource.
type GrepMatch struct {
	Line    int64    `json:"line" jsonschema:"Line of the match, from 1." schema:"minimum=1"`
	Offset  int64    `json:"offset" jsonschema:"Byte offset of the match in the body." schema:"minimum=0"`
	Length  int64    `json:"length" jsonschema:"Length of the match in bytes." schema:"minimum=0"`
	Text    string   `json:"text" jsonschema:"The line of the match, or a part of it around the match when the line is long (textCut)."`
	TextCut bool     `json:"textCut,omitempty" jsonschema:"text is part of a longer line; read_resource with offset reads the rest."`
	Before  []string `json:"before,omitempty" jsonschema:"Lines before the match (context), long ones cut."`
	After   []string `json:"after,omitempty" jsonschema:"Lines after the match (context), long ones cut."`
}

// GrepResult is grep_resource's success value.
type GrepResult struct {
	Status          string      `json:"status"`
	URI             string      `json:"uri"`
	MIMEType        string      `json:"mimeType"`
	TotalSize       int64       `json:"totalSize" jsonschema:"Size of the whole body in bytes." schema:"minimum=0"`
	SHA256          string      `json:"sha256" jsonschema:"SHA-256 of the whole body." schema:"pattern=^[0-9a-f]{64}$"`
	Matches         []GrepMatch `json:"matches"`
	Truncated       bool        `json:"truncated" jsonschema:"More matches follow: continue with afterOffset: nextAfterOffset (or afterLine: nextAfterLine)."`
	NextAfterOffset *int64      `json:"nextAfterOffset,omitempty" jsonschema:"Pass as afterOffset for the next matches; absent when none are left." schema:"minimum=0"`
	NextAfterLine   *int64      `json:"nextAfterLine,omitempty" jsonschema:"Pass as afterLine for the next matches, when the cut fell between lines." schema:"minimum=0"`
	Stopped         string      `json:"stopped,omitempty" jsonschema:"Set when the scan reached the time limit of one call before the end of the body: continue with afterLine: nextAfterLine."`
}

// QueryArgs are query_resource's arguments.
type QueryArgs struct {
	URI        string `json:"uri" jsonschema:"A resource URI with a JSON body, e.g. search://<tenant>/<id>."`
	Path       string `json:"path" jsonschema:"An RFC 9535 JSONPath query, e.g. $.hits[?@.score > 0.5].title" schema:"minLength=1;maxLength=4096"`
	MaxMatches *int   `json:"maxMatches,omitempty" jsonschema:"Most values to return." schema:"minimum=1;maximum=1000;default=50"`
	StartIndex *int   `json:"startIndex,omitempty" jsonschema:"Skip the values before this index (pass nextIndex to continue)." schema:"minimum=0;default=0"`
}

// QueryMatch is one value query_resource selected.
type QueryMatch struct {
	Path       string `json:"path" jsonschema:"The normalized path of the value, e.g. $['hits'][0]."`
	Value      any    `json:"value" jsonschema:"The value; null with omitted: true when it alone exceeds the result limit."`
	Omitted    bool   `json:"omitted,omitempty" jsonschema:"The value is too large for one result: query a path below it."`
	ValueChars int    `json:"valueChars,omitempty" jsonschema:"Characters of the omitted value's JSON." schema:"minimum=0"`
}

// QueryResult is query_resource's success value.
type QueryResult struct {
	Status    string       `json:"status"`
	URI       string       `json:"uri"`
	MIMEType  string       `json:"mimeType"`
	TotalSize int64        `json:"totalSize" schema:"minimum=0"`
	SHA256    string       `json:"sha256" schema:"pattern=^[0-9a-f]{64}$"`
	Count     int          `json:"count" jsonschema:"How many values the query selects in all, in normalized path order." schema:"minimum=0"`
	Matches   []QueryMatch `json:"matches"`
	Truncated bool         `json:"truncated" jsonschema:"More values follow: continue with startIndex: nextIndex."`
	NextIndex *int         `json:"nextIndex,omitempty" jsonschema:"Pass as startIndex for the next values; absent at the end." schema:"minimum=0"`
}
