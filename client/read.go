package resourced

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReadResult reads uri with resources/read and returns the result as
// received: contents with their _meta, ttlMs and cacheScope. It is what a
// proxy passes on unchanged; Read decodes it. A URI the caller cannot read
// gives an *RPCError matching ErrNotFound whose Wire is resourced's -32602.
//
// A URI that cannot travel in an HTTP header (control characters, edge
// whitespace) is read over 2025-11-25 whatever the client's protocol:
// go-sdk v1.8.0 copies the URI into the Mcp-Name header on 2026-07-28 and
// cannot send it, while resourced should still answer it (with -32602).
func (c *Client) ReadResult(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	protocol := c.protocol
	if !headerSafe(uri) {
		// go-sdk v1.8.0 sends the URI raw in the Mcp-Name header on
		// 2026-07-28, which cannot carry control characters or edge
		// whitespace; 2025-11-25 has no such header, so resourced gets the
		// request and answers it (with its -32602 for such a URI).
		protocol = Protocol20251125
	}
	err := c.doProtocol(ctx, protocol, "resources/read", idempotent, func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return err
		}
		res = r
		return nil
	})
	return res, err
}

// Read reads the body and metadata of the resource at uri. A URI the
// caller cannot read gives an error matching ErrNotFound; a malformed one,
// ErrInvalidURI.
func (c *Client) Read(ctx context.Context, uri string) (*Resource, error) {
	res, err := c.ReadResult(ctx, uri)
	if err != nil {
		return nil, err
	}
	if len(res.Contents) != 1 || res.Contents[0] == nil {
		return nil, fmt.Errorf("resourced: resources/read %s: %d content items, want 1", uri, len(res.Contents))
	}
	ct := res.Contents[0]
	r := &Resource{
		URI: ct.URI, MIMEType: ct.MIMEType,
		TTL: time.Duration(res.TTLMs) * time.Millisecond, CacheScope: res.CacheScope,
	}
	if ct.Blob != nil {
		r.Body = ct.Blob
	} else {
		r.Body, r.Text = []byte(ct.Text), true
	}
	if m := ct.Meta; m != nil {
		r.SHA256, _ = m["sha256"].(string)
		if n, ok := m["size"].(float64); ok {
			r.Size = int64(n)
		}
		if s, ok := m["lastModified"].(string); ok {
			r.LastModified = parseTime(s)
		}
		if s, ok := m["expiresAt"].(string); ok {
			r.ExpiresAt = parseTime(s)
		}
	}
	return r, nil
}

// headerSafe reports whether s survives as an HTTP header value unchanged:
// no control characters, no leading or trailing space or tab.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return s == "" || (s[0] != ' ' && s[len(s)-1] != ' ')
}
