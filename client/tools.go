package resourced

import (
	"context"
	"encoding/base64"
	"fmt"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/toolapi"
)

// callTool calls a tool and decodes its structuredContent into out. An
// isError result becomes a *ToolError. The first resource_link of the
// result is returned.
func (c *Client) callTool(ctx context.Context, class opClass, name string, args any, out any) (*mcp.ResourceLink, error) {
	var link *mcp.ResourceLink
	err := c.do(ctx, "tools/call "+name, class, func(ctx context.Context, cs *mcp.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			return toolError(name, res)
		}
		if res.StructuredContent == nil {
			return fmt.Errorf("resourced: %s: result has no structuredContent", name)
		}
		if err := decodeStructured(res.StructuredContent, out); err != nil {
			return fmt.Errorf("resourced: %s: decoding structuredContent: %w", name, err)
		}
		link = nil
		for _, ct := range res.Content {
			if l, ok := ct.(*mcp.ResourceLink); ok {
				link = l
				break
			}
		}
		return nil
	})
	return link, err
}

// toolError decodes the failure value of an isError result.
func toolError(tool string, res *mcp.CallToolResult) *ToolError {
	var v struct {
		ErrorKind   string       `json:"errorKind"`
		Message     string       `json:"message"`
		RetrySafe   bool         `json:"retrySafe"`
		FieldErrors []FieldError `json:"fieldErrors"`
	}
	if res.StructuredContent == nil || decodeStructured(res.StructuredContent, &v) != nil || v.ErrorKind == "" {
		// Not resourced's failure value: keep what the text says.
		msg := ""
		for _, ct := range res.Content {
			if t, ok := ct.(*mcp.TextContent); ok {
				msg = t.Text
				break
			}
		}
		return &ToolError{Tool: tool, Kind: "unknown", Message: msg}
	}
	return &ToolError{Tool: tool, Kind: ErrorKind(v.ErrorKind), Message: v.Message, RetrySafe: v.RetrySafe, FieldErrors: v.FieldErrors}
}

func (c *Client) save(ctx context.Context, tool string, args any) (*Saved, error) {
	var w toolapi.Metadata
	link, err := c.callTool(ctx, mutating, tool, args, &w)
	if err != nil {
		return nil, err
	}
	return &Saved{Metadata: metadataOf(&w), Status: SaveStatus(w.Status), Link: link}, nil
}

// SaveSearchSnapshot stores s as an immutable JSON snapshot
// {query, total, hits} under a server-chosen id, e.g.
// search://acme/results/01J…, and returns its metadata and resource_link.
func (c *Client) SaveSearchSnapshot(ctx context.Context, s *SearchSnapshot) (*Saved, error) {
	return c.save(ctx, "save_search_snapshot", toolapi.SearchSnapshotArgs{
		Query: s.Query, Hits: wireHits(s.Hits), Title: s.Title, Description: s.Description, SaveOptions: s.SaveOptions.args(),
	})
}

// SaveReport stores r at report://<tenant>/<r.Path>: create-only by
// default, replacing with r.IfMatch or r.Overwrite. An existing path gives
// a *ToolError matching ErrConflict.
func (c *Client) SaveReport(ctx context.Context, r *Report) (*Saved, error) {
	a := toolapi.ReportArgs{
		Path: r.Path, MIMEType: r.MIMEType, Title: r.Title, Description: r.Description,
		IfMatch: r.IfMatch, Overwrite: r.Overwrite, SaveOptions: r.SaveOptions.args(),
	}
	if r.Blob != nil {
		b := base64.StdEncoding.EncodeToString(r.Blob)
		a.BlobBase64 = &b
	}
	if r.Text != "" || r.Blob == nil {
		t := r.Text
		a.Text = &t
	}
	return c.save(ctx, "save_report", a)
}

// Stat returns the metadata of the resource at uri without its body. A URI
// the caller cannot read gives an error matching ErrNotFound.
func (c *Client) Stat(ctx context.Context, uri string) (*Metadata, error) {
	var w toolapi.Metadata
	if _, err := c.callTool(ctx, idempotent, "stat_resource", toolapi.StatArgs{URI: uri}, &w); err != nil {
		return nil, err
	}
	m := metadataOf(&w)
	return &m, nil
}

// List returns one page of the caller's own resources, listed or not, in
// URI order.
func (c *Client) List(ctx context.Context, opts *ListOptions) (*ListPage, error) {
	if opts == nil {
		opts = &ListOptions{}
	}
	args := toolapi.ListArgs{Scheme: opts.Scheme, Prefix: opts.Prefix, Cursor: opts.Cursor}
	if opts.Limit != 0 {
		limit := opts.Limit
		args.Limit = &limit
	}
	var v toolapi.ListResult
	if _, err := c.callTool(ctx, idempotent, "list_resources", args, &v); err != nil {
		return nil, err
	}
	page := &ListPage{Items: make([]Metadata, 0, len(v.Items)), NextCursor: v.NextCursor}
	for i := range v.Items {
		page.Items = append(page.Items, metadataOf(&v.Items[i]))
	}
	return page, nil
}

// All iterates over every resource List selects, page by page, starting at
// opts.Cursor. It stops at the first error, which it yields.
func (c *Client) All(ctx context.Context, opts *ListOptions) iter.Seq2[Metadata, error] {
	return func(yield func(Metadata, error) bool) {
		o := ListOptions{}
		if opts != nil {
			o = *opts
		}
		for {
			page, err := c.List(ctx, &o)
			if err != nil {
				yield(Metadata{}, err)
				return
			}
			for _, m := range page.Items {
				if !yield(m, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			o.Cursor = page.NextCursor
		}
	}
}

// DeleteOptions condition a Delete.
type DeleteOptions struct {
	// IfMatch deletes only if the body still has this sha256
	// (ErrConflict otherwise).
	IfMatch string
}

// Delete removes one of the caller's resources. A URI the caller cannot
// read gives an error matching ErrNotFound. Deletes are not retried after
// an ambiguous failure: the first attempt may have deleted it.
func (c *Client) Delete(ctx context.Context, uri string, opts *DeleteOptions) error {
	args := toolapi.DeleteArgs{URI: uri}
	if opts != nil {
		args.IfMatch = opts.IfMatch
	}
	var v toolapi.DeleteResult
	_, err := c.callTool(ctx, mutating, "delete_resource", args, &v)
	return err
}
