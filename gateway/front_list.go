package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paginated lists (prompts, resources, templates) walk their sources in
// order: resourced's own (resources and templates only), then each
// upstream in config order. A page holds one source's page; the front's
// cursor says which source and carries that source's own cursor. A
// required upstream that cannot be reached fails the page; an optional one
// is skipped.

type frontCursor struct {
	Source int    `json:"s"`
	Inner  string `json:"c,omitempty"`
}

func encodeCursor(c frontCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errInvalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: pass the nextCursor of a previous result of this method, or none"}

func decodeCursor(s string, sources int) (frontCursor, error) {
	if s == "" {
		return frontCursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c frontCursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.Source < 0 || c.Source >= sources {
		return frontCursor{}, errInvalidCursor
	}
	return c, nil
}

// pageSource fetches one page of a source: its items and its own next
// cursor.
type pageSource[T any] func(ctx context.Context, cursor string) ([]T, string, error)

// page answers one page of a list over sources; up names the upstream of
// each source ("" for resourced's own).
func page[T any](f *Front, ctx context.Context, method, cursor string, own pageSource[T], upstream func(up string) pageSource[T]) ([]T, string, error) {
	type src struct {
		up    string
		fetch pageSource[T]
	}
	var srcs []src
	if own != nil {
		srcs = append(srcs, src{"", own})
	}
	for _, up := range f.order {
		srcs = append(srcs, src{up, upstream(up)})
	}
	c, err := decodeCursor(cursor, len(srcs))
	if err != nil {
		return nil, "", err
	}
	for c.Source < len(srcs) {
		s := srcs[c.Source]
		items, next, err := s.fetch(ctx, c.Inner)
		if err != nil {
			if s.up == "" || f.ups[s.up].Required {
				return nil, "", err
			}
			items, next = nil, ""
		}
		if next != "" {
			return items, encodeCursor(frontCursor{Source: c.Source, Inner: next}), nil
		}
		c = frontCursor{Source: c.Source + 1}
		if len(items) > 0 {
			if c.Source == len(srcs) {
				return items, "", nil
			}
			return items, encodeCursor(c), nil
		}
	}
	return nil, "", nil
}

// upstreamPage runs one list request against an upstream, logged and
// counted like every upstream call.
func upstreamPage[T any](f *Front, up, method string, call func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]T, string, error)) pageSource[T] {
	return func(ctx context.Context, cursor string) ([]T, string, error) {
		start := time.Now()
		cctx, stop, cs, err := f.session(ctx, up, method, "")
		defer stop()
		var items []T
		var next string
		if err == nil {
			if !serves(cs, method) {
				return nil, "", nil
			}
			items, next, err = call(cctx, cs, cursor)
		}
		if err != nil {
			e := classify(ctx, cctx, err)
			f.logFailure(cctx, up, method, "", start, e)
			if e.wire != nil && e.wire.Code == jsonrpc.CodeMethodNotFound {
				return nil, "", nil // an upstream without prompts (or resources) lists none
			}
			return nil, "", e.rpcError(up)
		}
		f.logCall(ctx, up, method, "", start, "ok", 0, 0)
		return items, next, nil
	}
}

// listScope is the cacheScope of a list built from the upstreams (go-sdk
// fills it only in results it builds itself): "private" when some
// upstream is perTenant, so its list is the caller's, else "public", as
// for resourced's own lists.
func (f *Front) listScope() string {
	if f.private {
		return "private"
	}
	return "public"
}

// serves reports whether an upstream declared the capability of a list
// method. An upstream that declares none is asked anyway (and an answer
// of -32601 is an empty list).
func serves(cs *mcp.ClientSession, method string) bool {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return true
	}
	c := ir.Capabilities
	switch method {
	case "tools/list":
		return c.Tools != nil
	case "prompts/list":
		return c.Prompts != nil
	case "resources/list", "resources/templates/list":
		return c.Resources != nil
	}
	return true
}

func (f *Front) listPrompts(ctx context.Context, req *mcp.ListPromptsRequest) (mcp.Result, error) {
	var cursor string
	var meta mcp.Meta
	if req.Params != nil {
		cursor, meta = req.Params.Cursor, req.Params.Meta
	}
	items, next, err := page(f, ctx, "prompts/list", cursor, nil, func(up string) pageSource[*mcp.Prompt] {
		return upstreamPage(f, up, "prompts/list", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Prompt, string, error) {
			r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor, Meta: forwardMeta(meta)})
			if err != nil {
				return nil, "", err
			}
			out := make([]*mcp.Prompt, len(r.Prompts))
			for i, p := range r.Prompts {
				c := *p
				c.Name = f.names.frontTool(up, p.Name, false)
				out[i] = &c
			}
			return out, r.NextCursor, nil
		})
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListPromptsResult{Prompts: items, NextCursor: next}
	if res.Prompts == nil {
		res.Prompts = []*mcp.Prompt{}
	}
	res.CacheScope = f.listScope()
	return res, nil
}

func (f *Front) listResources(ctx context.Context, next mcp.MethodHandler, method string, req *mcp.ListResourcesRequest) (mcp.Result, error) {
	var cursor string
	var meta mcp.Meta
	if req.Params != nil {
		cursor, meta = req.Params.Cursor, req.Params.Meta
	}
	own := func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		r := *req
		params := mcp.ListResourcesParams{Cursor: cursor}
		if req.Params != nil {
			params.Meta = req.Params.Meta
		}
		r.Params = &params
		res, err := next(ctx, method, &r)
		if err != nil {
			return nil, "", err
		}
		lr, ok := res.(*mcp.ListResourcesResult)
		if !ok {
			return nil, "", nil
		}
		return lr.Resources, lr.NextCursor, nil
	}
	items, nextCursor, err := page(f, ctx, method, cursor, own, func(up string) pageSource[*mcp.Resource] {
		return upstreamPage(f, up, method, func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Resource, string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor, Meta: forwardMeta(meta)})
			if err != nil {
				return nil, "", err
			}
			out := make([]*mcp.Resource, len(r.Resources))
			for i, res := range r.Resources {
				c := *res
				c.URI = f.names.frontURI(up, res.URI)
				out[i] = &c
			}
			return out, r.NextCursor, nil
		})
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Resources: items, NextCursor: nextCursor}
	if res.Resources == nil {
		res.Resources = []*mcp.Resource{}
	}
	res.CacheScope = "private"
	return res, nil
}

func (f *Front) listTemplates(ctx context.Context, next mcp.MethodHandler, method string, req *mcp.ListResourceTemplatesRequest) (mcp.Result, error) {
	var cursor string
	var meta mcp.Meta
	if req.Params != nil {
		cursor, meta = req.Params.Cursor, req.Params.Meta
	}
	own := func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		r := *req
		params := mcp.ListResourceTemplatesParams{Cursor: cursor}
		if req.Params != nil {
			params.Meta = req.Params.Meta
		}
		r.Params = &params
		res, err := next(ctx, method, &r)
		if err != nil {
			return nil, "", err
		}
		lr, ok := res.(*mcp.ListResourceTemplatesResult)
		if !ok {
			return nil, "", nil
		}
		return lr.ResourceTemplates, lr.NextCursor, nil
	}
	items, nextCursor, err := page(f, ctx, method, cursor, own, func(up string) pageSource[*mcp.ResourceTemplate] {
		return upstreamPage(f, up, method, func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor, Meta: forwardMeta(meta)})
			if err != nil {
				return nil, "", err
			}
			out := make([]*mcp.ResourceTemplate, len(r.ResourceTemplates))
			for i, t := range r.ResourceTemplates {
				c := *t
				c.URITemplate = f.names.frontURI(up, t.URITemplate)
				out[i] = &c
			}
			return out, r.NextCursor, nil
		})
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: items, NextCursor: nextCursor}
	if res.ResourceTemplates == nil {
		res.ResourceTemplates = []*mcp.ResourceTemplate{}
	}
	res.CacheScope = f.listScope()
	return res, nil
}
