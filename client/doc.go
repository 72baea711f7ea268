// Package resourced is the Go client of a resourced server: typed calls of
// its five tools and of resources/read over MCP Streamable HTTP, built on
// the official go-sdk client.
//
// The package lives in the directory client but is named resourced, so
// calls read resourced.NewClient; import it with that name:
//
//	import resourced "github.com/resourced/resourced/client"
//
//	c, err := resourced.NewClient("http://127.0.0.1:8765/mcp", resourced.StaticToken(token), nil)
//	saved, err := c.SaveReport(ctx, &resourced.Report{Path: "billing/2026-11/summary", MIMEType: "text/csv", Text: csv})
//	// return saved.Link from your own tool; read the body back with
//	res, err := c.Read(ctx, saved.URI)
//
// # Errors
//
// Every answer of resourced that is not a success is a typed error, and
// each matches the sentinels that describe it with errors.Is — no caller
// needs to read message text:
//
//   - *ToolError: a tool answered isError (its structuredContent: Kind,
//     Message, RetrySafe, FieldErrors). ErrValidation, ErrNotFound,
//     ErrConflict, ErrTooLarge, ErrQuotaExceeded, ErrUnavailable.
//   - *RPCError: a JSON-RPC error, e.g. the -32602 of resources/read for a
//     URI the caller cannot read (ErrNotFound) or a malformed one
//     (ErrInvalidURI). Its Wire field, also found by errors.As with a
//     *jsonrpc.Error, is the error exactly as received.
//   - *HTTPError: refused before MCP: 401 (ErrUnauthorized), 403
//     (ErrForbidden, with the missing Scope), each with the server's RFC
//     6750 error_description (Description: why), 413, 429/502/503/504
//     (ErrUnavailable).
//
// Other errors are the caller's context or the network, wrapped.
//
// # Retries
//
// Failures that are safe to send again are retried within the client's
// RetryPolicy (3 attempts by default, exponential backoff with jitter,
// honouring Retry-After): a *ToolError with RetrySafe, HTTP 429 and 503,
// and refused connections for every call; 502, 504, -32603 and connections
// lost mid-request only for the idempotent Read, Stat and List. A save or
// delete whose outcome is unknown is returned, not retried.
//
// # Sessions, tokens and caching
//
// Each call opens a fresh MCP session and closes it (resourced is
// stateless, so this costs one small server/discover round trip). go-sdk
// v1.8.0 caches resources/read results per session keyed by URI alone, and
// keeps every result until the same URI is read again; per-call sessions
// keep that cache from serving one token's private body to another token
// and from growing without bound. A caller that wants caching honours
// Resource.TTL and Resource.CacheScope itself (the mount package does).
//
// The token of each attempt comes from the TokenSource and is set on the
// request by the client's HTTP transport, only for the endpoint's origin
// (a redirect elsewhere does not get it). The client never logs tokens or
// bodies.
package resourced
