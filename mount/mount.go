// Package mount makes another go-sdk MCP server answer resources/read for
// resourced URIs: the links a tool of that server saved in resourced and
// returned as resource_links resolve through the server that returned them,
// as MCP hosts expect of custom schemes.
//
//	cl, _ := resourced.NewClient(resourcedURL, resourced.StaticToken(producerToken), nil)
//	mount.Resources(server, cl, mount.Options{
//		TokenFor: func(ctx context.Context, req *mcp.ReadResourceRequest) (string, error) {
//			return tokenOfTenant(req.Extra.TokenInfo.UserID) // your mapping
//		},
//	})
//
// Resources registers one catch-all template per scheme
// (report://{tenant}/{+path}, search://{tenant}/{+path}) whose handler
// reads the URI from resourced with the token TokenFor chose for the
// request, and returns what resourced served unchanged: contents (text or
// blob, mimeType, _meta), ttlMs and cacheScope. A JSON-RPC error of
// resourced, such as the -32602 "Resource not found" {uri} of an unknown or
// foreign URI, is returned unchanged too, and so is resourced's answer for
// a URI of a mounted scheme that the template does not match (go-sdk would
// otherwise answer it with its own not-found error, whose data it formats
// with %q).
//
// Tokens: the producing server decides which resourced token serves each
// request (TokenFor), typically one producer token per tenant. The end
// user's own credentials are never forwarded to resourced. When TokenFor
// fails, the read is answered with the same -32602 as an unknown URI.
//
// An optional Cache serves repeated reads from memory while their ttlMs
// lasts: private entries are keyed by the token's hash and the URI, public
// ones by the URI. A cached answer carries the remaining ttlMs, not the
// original, so downstream caches never keep a body longer than resourced
// allowed.
//
// If the server sets ServerOptions.SetCacheable, it must leave the cache
// fields of mounted reads as they are, or the pass-through is lost.
package mount

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/grammar"
)

// TokenFunc returns the resourced token that serves req. It runs for
// every mounted resources/read; req.Extra.TokenInfo carries the end user
// as the server's own auth verified them.
type TokenFunc func(ctx context.Context, req *mcp.ReadResourceRequest) (string, error)

// Options configure Resources.
type Options struct {
	// Schemes to mount; nil means resourced's defaults, "search" and
	// "report".
	Schemes []string
	// TokenFor chooses the resourced token of each read. Required.
	TokenFor TokenFunc
	// Cache, when set, answers repeated reads from memory while fresh.
	// One Cache may serve several servers.
	Cache *Cache
	// Logger receives failures to reach resourced (never tokens or
	// bodies); nil means silent.
	Logger *slog.Logger
}

// Resources registers catch-all resource templates for opts.Schemes on s,
// answered from resourced through c with the token opts.TokenFor chooses.
// Call it before serving.
func Resources(s *mcp.Server, c *resourced.Client, opts Options) error {
	if s == nil || c == nil {
		return errors.New("mount: a server and a client are required")
	}
	if opts.TokenFor == nil {
		return errors.New("mount: Options.TokenFor is required: it chooses the resourced token of each read")
	}
	schemes := opts.Schemes
	if schemes == nil {
		schemes = []string{"search", "report"}
	}
	m := &mounter{client: c, tokenFor: opts.TokenFor, cache: opts.Cache, log: opts.Logger, schemes: map[string]bool{}}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	for _, sc := range schemes {
		if err := grammar.Scheme(sc); err != nil {
			return fmt.Errorf("mount: scheme %q: %w", sc, err)
		}
		m.schemes[sc] = true
	}
	for _, sc := range schemes {
		s.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:        sc,
			Title:       sc + " resources",
			Description: "Stored in resourced; read the links this server's tools return. {tenant} is the owner.",
			URITemplate: sc + "://{tenant}/{+path}",
		}, m.read)
	}
	s.AddReceivingMiddleware(m.unmatched)
	return nil
}

type mounter struct {
	client   *resourced.Client
	tokenFor TokenFunc
	cache    *Cache
	log      *slog.Logger
	schemes  map[string]bool
}

type handledKey struct{}

// mounted reports whether uri's scheme, in any case, is mounted.
func (m *mounter) mounted(uri string) bool {
	scheme, _, ok := strings.Cut(uri, ":")
	return ok && m.schemes[strings.ToLower(scheme)]
}

// unmatched gives resourced's answer for a URI of a mounted scheme that no
// template matched, instead of go-sdk's own not-found.
func (m *mounter) unmatched(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		rr, ok := req.(*mcp.ReadResourceRequest)
		if method != "resources/read" || !ok || rr.Params == nil || !m.mounted(rr.Params.URI) {
			return next(ctx, method, req)
		}
		handled := new(atomic.Bool)
		res, err := next(context.WithValue(ctx, handledKey{}, handled), method, req)
		if err == nil || handled.Load() {
			return res, err
		}
		if _, rerr := m.read(ctx, rr); rerr != nil {
			return nil, rerr
		}
		return res, err
	}
}

// read is the template handler: resourced's answer, passed through.
func (m *mounter) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if h, ok := ctx.Value(handledKey{}).(*atomic.Bool); ok {
		h.Store(true)
	}
	uri := req.Params.URI
	tok, err := m.tokenFor(ctx, req)
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		m.log.DebugContext(ctx, "mount: TokenFor refused the read; answering not found", "err", err)
		return nil, notFound(uri)
	}
	key := tokenKey(tok)
	if m.cache != nil {
		if res, ok := m.cache.get(key, uri, time.Now()); ok {
			return res, nil
		}
	}
	res, err := m.client.WithTokenSource(resourced.StaticToken(tok)).ReadResult(ctx, uri)
	if err != nil {
		var re *resourced.RPCError
		if errors.As(err, &re) {
			return nil, re.Wire
		}
		if ctx.Err() != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Request canceled or timed out"}
		}
		m.log.WarnContext(ctx, "mount: reading from resourced failed", "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the resource store is unavailable; retry later"}
	}
	out := passThrough(res)
	if m.cache != nil {
		m.cache.put(key, uri, out, time.Now())
	}
	return out, nil
}

// passThrough copies what resourced served into a result of this server.
// cacheScope is always set: go-sdk would turn an empty one into "public".
//
// The result's own _meta is kept except the protocol's reserved keys
// (io.modelcontextprotocol/…, such as resourced's serverInfo): those
// describe the answering server, which is this one.
func passThrough(res *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	out := &mcp.ReadResourceResult{Contents: make([]*mcp.ResourceContents, len(res.Contents))}
	for k, v := range res.Meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta[k] = v
	}
	for i, c := range res.Contents {
		cc := *c
		out.Contents[i] = &cc
	}
	out.TTLMs, out.CacheScope = max(res.TTLMs, 0), res.CacheScope
	if out.CacheScope != "public" {
		out.CacheScope = "private"
	}
	return out
}

// notFound is resourced's answer for a URI the caller cannot read, built
// the same way: -32602, "Resource not found", data {"uri"} by
// encoding/json.
func notFound(uri string) error {
	data, _ := json.Marshal(struct {
		URI string `json:"uri"`
	}{uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: data}
}

// tokenKey identifies a token in cache keys without keeping it.
func tokenKey(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return string(h[:])
}
