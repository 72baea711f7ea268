package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient drives the server with go-sdk v1.8.0's own client, once
// negotiating each protocol version.
func TestGoSDKClient(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "resourced-it", Version: "1"}, nil)
			transport := &mcp.StreamableClientTransport{Endpoint: in.URL + "/mcp", HTTPClient: bearerClient(in.Token)}
			cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			caps := cs.InitializeResult().Capabilities
			// prompts: go-sdk answers prompts/list (empty) anyway, and the
			// conformance suite wants what is answered declared.
			if caps.Resources == nil || caps.Tools == nil || caps.Prompts == nil {
				t.Fatalf("capabilities lack resources, tools or prompts: %+v", caps)
			}
			// Subscriptions work through 2026-07-28's subscriptions/listen
			// only, and only that version is told it may subscribe.
			if caps.Resources.Subscribe != (v == v2026) {
				t.Errorf("%s: resources.subscribe = %v", v, caps.Resources.Subscribe)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "save_search_snapshot", Arguments: map[string]any{
				"query": "go-sdk " + v, "hits": hits,
			}})
			if err != nil || res.IsError {
				t.Fatalf("save_search_snapshot: %v %+v", err, res)
			}
			var link *mcp.ResourceLink
			for _, c := range res.Content {
				if l, ok := c.(*mcp.ResourceLink); ok {
					link = l
				}
			}
			if link == nil || link.Size == nil {
				t.Fatalf("no resource_link with size in %+v", res.Content)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			sc, _ := json.Marshal(res.StructuredContent)
			var a, b any
			json.Unmarshal([]byte(text), &a)
			json.Unmarshal(sc, &b)
			if !jsonEqual(a, b) {
				t.Errorf("text %s != structuredContent %s", text, sc)
			}

			lr, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range lr.Resources {
				if r.URI == link.URI {
					t.Errorf("unlisted snapshot appears in resources/list")
				}
			}
			if v == v2026 && lr.CacheScope != "private" {
				t.Errorf("resources/list cacheScope = %q, want private", lr.CacheScope)
			}

			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
			if err != nil {
				t.Fatalf("read unlisted link: %v", err)
			}
			if len(rr.Contents) != 1 || int64(len(rr.Contents[0].Text)) != *link.Size {
				t.Fatalf("read %+v, want one text content of %d bytes", rr.Contents, *link.Size)
			}
			if v == v2026 && (rr.CacheScope != "private" || rr.TTLMs <= 0) {
				t.Errorf("ttlMs %d cacheScope %q, want >0 and private", rr.TTLMs, rr.CacheScope)
			}

			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "search://default/results/01NOTTHERE0000000000000000"})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("unknown URI: err = %v, want JSON-RPC %d", err, jsonrpc.CodeInvalidParams)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// bearerClient is an HTTP client that sends token on every request.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearerTransport{token: token, next: http.DefaultTransport}}
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
