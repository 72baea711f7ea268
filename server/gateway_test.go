package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/gateway"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// The gateway's tests drive the real Server over HTTP with go-sdk's client,
// in front of go-sdk upstream servers connected in memory through
// testSessions, a small Sessions of the tests' own.

// gwAuth is the tenant of X-Tenant (default t1) with the read scope, and
// none with X-No-Scope.
type gwAuth struct{}

func (gwAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	t := r.Header.Get("X-Tenant")
	if t == "" {
		t = "t1"
	}
	p := auth.Principal{Tenant: t, Subject: "test", Scopes: []string{auth.ScopeRead}}
	if r.Header.Get("X-No-Scope") != "" {
		p.Scopes = nil
	}
	return p, nil
}

// testSessions connects to in-memory go-sdk servers, one session per
// upstream (per tenant under perTenant), reconnecting a session that
// ended.
type testSessions struct {
	ups     []gateway.Upstream
	servers map[string]*mcp.Server
	router  gateway.ProgressRouter

	mu       sync.Mutex
	sessions map[string]*mcp.ClientSession
	down     map[string]bool
	connects map[string]int
	kills    map[string]func()
}

// kill ends upstream's latest session as a process that dies does: its
// client reads EOF.
func (ts *testSessions) kill(up string) {
	ts.mu.Lock()
	k := ts.kills[up]
	ts.mu.Unlock()
	if k != nil {
		k()
	}
}

// killableTransport is a client transport whose connection reads EOF once
// kill is closed, and tells router of every message it reads (as the
// pool's readers do).
type killableTransport struct {
	mcp.Transport
	kill   chan struct{}
	router *gateway.ProgressRouter
}

func (k *killableTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &killableConn{Connection: c, kill: k.kill, router: k.router}, nil
}

type killableConn struct {
	mcp.Connection
	kill   chan struct{}
	router *gateway.ProgressRouter
}

func (c *killableConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	type read struct {
		m   jsonrpc.Message
		err error
	}
	ch := make(chan read, 1)
	go func() {
		m, err := c.Connection.Read(ctx)
		ch <- read{m, err}
	}()
	select {
	case r := <-ch:
		if r.err == nil {
			c.router.Passed(r.m)
		}
		return r.m, r.err
	case <-c.kill:
		c.Connection.Close()
		return nil, io.EOF
	}
}

func newTestSessions(ups []gateway.Upstream, servers map[string]*mcp.Server) *testSessions {
	return &testSessions{ups: ups, servers: servers, sessions: map[string]*mcp.ClientSession{}, down: map[string]bool{}, connects: map[string]int{}, kills: map[string]func(){}}
}

func (ts *testSessions) Upstreams() []gateway.Upstream     { return ts.ups }
func (ts *testSessions) Progress() *gateway.ProgressRouter { return &ts.router }
func (ts *testSessions) Close() error                      { return nil }

func (ts *testSessions) setDown(up string, down bool) {
	ts.mu.Lock()
	ts.down[up] = down
	ts.mu.Unlock()
}

func (ts *testSessions) Ready(context.Context) map[string]error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	m := map[string]error{}
	for _, u := range ts.ups {
		if ts.down[u.Name] {
			m[u.Name] = fmt.Errorf("%w: stopped by the test", gateway.ErrUnavailable)
		} else {
			m[u.Name] = nil
		}
	}
	return m
}

func (ts *testSessions) Session(ctx context.Context, up, tenant string) (*mcp.ClientSession, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.down[up] {
		return nil, fmt.Errorf("%w: %s stopped by the test", gateway.ErrUnavailable, up)
	}
	key := up
	for _, u := range ts.ups {
		if u.Name == up && u.Isolation == gateway.PerTenant {
			key += "/" + tenant
		}
	}
	if cs := ts.sessions[key]; cs != nil {
		return cs, nil
	}
	mct, st := mcp.NewInMemoryTransports()
	if _, err := ts.servers[up].Connect(context.Background(), st, nil); err != nil {
		return nil, fmt.Errorf("%w: %v", gateway.ErrUnavailable, err)
	}
	kill := make(chan struct{})
	ts.kills[up] = sync.OnceFunc(func() { close(kill) })
	ct := &killableTransport{Transport: mct, kill: kill, router: &ts.router}
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway", Version: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { ts.router.Deliver(r) },
	})
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", gateway.ErrUnavailable, err)
	}
	ts.sessions[key] = cs
	ts.connects[key]++
	go func() {
		cs.Wait()
		ts.mu.Lock()
		if ts.sessions[key] == cs {
			delete(ts.sessions, key)
		}
		ts.mu.Unlock()
	}()
	return cs, nil
}

// upstream is the state the test upstream's tools share with the test.
type upstream struct {
	server *mcp.Server
	// canceled receives when the slow tool sees its context end.
	canceled chan struct{}
	// started receives when the slow tool starts.
	started chan struct{}
	// kill makes the upstream die (testSessions.kill).
	kill func()
}

const bigSize = 2 << 20

// bigText is 2 MiB of lines holding multi-byte characters.
func bigText() string {
	var b strings.Builder
	for i := 0; b.Len() < bigSize; i++ {
		fmt.Fprintf(&b, "line %07d: héllo wörld ✓ — %s\n", i, strings.Repeat("x", i%50))
	}
	return b.String()[:bigSize-2] + "\n\n" // valid UTF-8: the cut falls in ASCII padding
}

func pngBytes(n int) []byte {
	b := make([]byte, n)
	copy(b, "\x89PNG\r\n\x1a\n")
	for i := 8; i < n; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

func newUpstream(t *testing.T, name string) *upstream {
	u := &upstream{canceled: make(chan struct{}, 4), started: make(chan struct{}, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}, Completions: &mcp.CompletionCapabilities{}},
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Ref.Type + ":" + r.Params.Ref.Name + r.Params.Ref.URI + ":" + r.Params.Argument.Value}}}, nil
		},
	})
	obj := map[string]any{"type": "object"}
	add := func(name string, h mcp.ToolHandler, out any) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: obj, OutputSchema: out}, h)
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add("echo", func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(string(r.Params.Arguments)), nil
	}, nil)
	add("read_resource", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("upstream's own read_resource"), nil
	}, nil)
	add("big", func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t := bigText()
		if strings.Contains(string(r.Params.Arguments), "variant") {
			t = "V" + t[1:] // other bytes of the same size: not the part an earlier call saved
		}
		return text(t), nil
	}, nil)
	add("two", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", 300)}, &mcp.TextContent{Text: bigText()}}}, nil
	}, nil)
	add("embedded", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///data/big.csv", MIMEType: "text/csv", Text: strings.Repeat("a,b,c\n", 5000)}}}}, nil
	}, nil)
	add("stream", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 4 {
			r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: float64(i)})
			time.Sleep(150 * time.Millisecond)
		}
		return text("streamed"), nil
	}, nil)
	add("image", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngBytes(40 << 10), MIMEType: "image/png"}}}, nil
	}, nil)
	size := int64(12)
	add("mix", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "small text"},
			&mcp.ImageContent{Data: pngBytes(64), MIMEType: "image/png"},
			&mcp.ResourceLink{URI: "file:///data/a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///data/b.txt", MIMEType: "text/plain", Text: "embedded"}},
		}}, nil
	}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}, "required": []any{"items"}}
	items := func() map[string]any {
		l := make([]any, 4000)
		for i := range l {
			l[i] = fmt.Sprintf("item %d %s", i, strings.Repeat("y", 20))
		}
		return map[string]any{"items": l}
	}
	add("structured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v := items()
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}, nil
	}, schema)
	refs := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object", "required": []any{"items"},
		"properties": map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/item"}}},
		"$defs":      map[string]any{"item": map[string]any{"type": "string"}},
	}
	add("refs", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v := items()
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}, nil
	}, refs)
	add("unstructured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see structuredContent"}}, StructuredContent: items()}, nil
	}, nil)
	add("die", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.kill() // the process dies mid-call
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return text("never seen"), nil
	}, nil)
	add("slow", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.started <- struct{}{}
		tok := r.Params.GetProgressToken()
		for i := range 3 {
			if tok != nil {
				r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 3, Message: "step"})
			}
		}
		var args struct{ Wait bool }
		json.Unmarshal(r.Params.Arguments, &args)
		if args.Wait {
			<-ctx.Done()
			u.canceled <- struct{}{}
			return nil, ctx.Err()
		}
		return text(fmt.Sprintf("done, token %T", tok)), nil
	}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}},
			{Role: "user", Content: &mcp.ResourceLink{URI: "file:///data/a.txt", Name: "a.txt"}},
		}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///data/a.txt", Name: "a.txt", MIMEType: "text/plain"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "contents of a"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///data/{name}", Name: "data"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32602, Message: "Resource not found", Data: json.RawMessage(`{"uri":"` + r.Params.URI + `"}`)}
	})
	if strings.HasPrefix(name, "bare") {
		// Like server-filesystem: tools only, other methods -32601.
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if strings.HasPrefix(method, "prompts/") || strings.HasPrefix(method, "resources/") || method == "completion/complete" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
				}
				return next(ctx, method, req)
			}
		})
	}
	// A JSON-RPC error answer with data, for tools/call.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p.Name == "rpcfail" {
				return nil, &jsonrpc.Error{Code: -32042, Message: "upstream says no", Data: json.RawMessage(`{"why":"because"}`)}
			}
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p.Name == "toolarge" {
				// What gateway.Pool answers in the upstream's place for
				// a message over its limit (gateway/limit.go).
				return nil, &jsonrpc.Error{Code: -32090, Message: "over the limit", Data: json.RawMessage(`{"resourcedGatewayTooLarge":true,"size":3000,"limit":2048}`)}
			}
			return next(ctx, method, req)
		}
	})
	u.server = s
	return u
}

// gwEnv is a gateway Server in front of test upstreams.
type gwEnv struct {
	url      string
	srv      *Server
	sessions *testSessions
	ups      map[string]*upstream
}

func newGWEnv(t *testing.T, ups ...gateway.Upstream) *gwEnv {
	t.Helper()
	return newGWEnvWith(t, 8<<20, nil, ups...)
}

// newGWEnvWith is newGWEnv with the result scheme's maxBytes and opt
// applied to the server's options.
func newGWEnvWith(t *testing.T, maxBytes int64, opt func(*Options), ups ...gateway.Upstream) *gwEnv {
	t.Helper()
	e := &gwEnv{ups: map[string]*upstream{}}
	servers := map[string]*mcp.Server{}
	for i := range ups {
		u := newUpstream(t, ups[i].Name)
		e.ups[ups[i].Name] = u
		servers[ups[i].Name] = u.server
		if ups[i].CallTimeout == 0 {
			ups[i].CallTimeout = time.Minute
		}
	}
	e.sessions = newTestSessions(ups, servers)
	for name, u := range e.ups {
		u.kill = func() { e.sessions.kill(name) }
	}
	opts := Options{
		Store: memstore.New(memstore.Options{}),
		Schemes: []Scheme{
			{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 8 << 20},
			{Name: "result", Kind: KindReport, TTL: 5 * time.Minute, Retention: 24 * time.Hour, MaxRetention: 7 * 24 * time.Hour, MaxBytes: maxBytes},
		},
		Auth: gwAuth{}, BaseURL: "http://127.0.0.1", Version: "test",
		Extension: func(d ExtensionDeps) (Extension, error) {
			return gateway.NewFront(gateway.FrontOptions{Sessions: e.sessions, Scheme: "result", PreviewChars: 100},
				gateway.Deps{Service: d.Service, Logger: d.Logger, Metrics: d.Metrics, RenderFailure: d.RenderFailure, Schemes: d.Schemes})
		},
	}
	if opt != nil {
		opt(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

func fsUpstream() gateway.Upstream {
	return gateway.Upstream{Name: "fs", Isolation: gateway.Shared, Required: true,
		Offload: gateway.OffloadPolicy{Threshold: 16 << 10, Tools: map[string]gateway.ToolOffload{"echo": {Mode: gateway.OffloadAlways}}}}
}

// client connects a go-sdk client of tenant speaking version.
func (e *gwEnv) client(t *testing.T, tenant, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	// The bounds of client and call only end a stuck test: a race-built
	// upstream on a loaded machine answers a large call in tens of seconds.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gw-test", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: tenantClient(tenant)},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

var versions = []string{"2026-07-28", "2025-11-25"}

func TestGatewayListsNamespacedToolsAndOnlyTheReadTools(t *testing.T) {
	e := newGWEnv(t, fsUpstream(), gateway.Upstream{Name: "web", Required: true})
	for _, v := range versions {
		cs := e.client(t, "t1", v, nil)
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		got := strings.Join(names, " ")
		for _, want := range []string{"read_resource", "grep_resource", "query_resource", "fs__echo", "web__echo", "fs__read_resource", "web__big"} {
			if !strings.Contains(" "+got+" ", " "+want+" ") {
				t.Errorf("%s: tools/list = %s; missing %s", v, got, want)
			}
		}
		for _, hidden := range []string{"save_report", "save_search_snapshot", "list_resources", "delete_resource", "stat_resource"} {
			if strings.Contains(" "+got+" ", " "+hidden+" ") {
				t.Errorf("%s: tools/list lists %s in gateway mode", v, hidden)
			}
		}
		if r := call(t, cs, "web__echo", map[string]any{"a": 1}); r.Content[0].(*mcp.TextContent).Text != `{"a":1}` {
			t.Errorf("%s: web__echo = %+v", v, r.Content[0])
		}
	}
}

func TestGatewaySingleUpstreamNamesPassUnchanged(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	if r := call(t, cs, "fs__read_resource", nil); r.Content[0].(*mcp.TextContent).Text != "upstream's own read_resource" {
		t.Errorf("fs__read_resource = %+v", r.Content[0])
	}
	// resourced's own read_resource answers for resourced's URIs.
	r := call(t, cs, "read_resource", map[string]any{"uri": "result://t1/missing"})
	if !r.IsError {
		t.Errorf("read_resource of a missing URI: %+v, want not_found", r)
	}
	mix := call(t, cs, "mix", nil)
	if l, ok := mix.Content[2].(*mcp.ResourceLink); !ok || l.URI != "file:///data/a.txt" {
		t.Errorf("resource_link with one upstream = %+v, want its URI unchanged", mix.Content[2])
	}
}

// TestGatewaySmallResultsEqualDirect: text, image, resource_link and
// embedded resource results reach the caller as the upstream gave them,
// apart from namespacing.
func TestGatewaySmallResultsEqualDirect(t *testing.T) {
	e := newGWEnv(t, fsUpstream(), gateway.Upstream{Name: "web", Required: true})
	direct, err := e.sessions.Session(context.Background(), "fs", "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "mix", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	want.Content[2].(*mcp.ResourceLink).URI = "fs+file:///data/a.txt"
	want.Content[3].(*mcp.EmbeddedResource).Resource.URI = "fs+file:///data/b.txt"
	wantJSON, _ := json.Marshal(want.Content)
	for _, v := range versions {
		got := call(t, e.client(t, "t1", v, nil), "fs__mix", nil)
		gotJSON, _ := json.Marshal(got.Content)
		if !bytes.Equal(gotJSON, wantJSON) || got.IsError || got.StructuredContent != nil {
			t.Errorf("%s: through the gateway\n%s\nwant\n%s", v, gotJSON, wantJSON)
		}
	}
}

func linkOf(t *testing.T, res *mcp.CallToolResult) *mcp.ResourceLink {
	t.Helper()
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			return l
		}
	}
	t.Fatalf("no resource_link in %+v", res.Content)
	return nil
}

func readAll(t *testing.T, cs *mcp.ClientSession, uri string) *mcp.ResourceContents {
	t.Helper()
	r, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(r.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents", uri, len(r.Contents))
	}
	return r.Contents[0]
}

// TestGatewayOffloadsLargeText: a 2 MiB text result becomes a note, a
// link and a preview; the link reads back byte-identical with
// resources/read and with read_resource windows; another tenant gets the
// same -32602 as for a URI that never existed.
func TestGatewayOffloadsLargeText(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	want := bigText()
	sum := sha256.Sum256([]byte(want))
	for _, v := range versions {
		cs := e.client(t, "t1", v, nil)
		res := call(t, cs, "big", nil)
		if res.IsError || len(res.Content) != 3 {
			t.Fatalf("%s: big = %d items (isError %v), want note, link, preview", v, len(res.Content), res.IsError)
		}
		note := res.Content[0].(*mcp.TextContent).Text
		l := linkOf(t, res)
		prev := res.Content[2].(*mcp.TextContent).Text
		for _, w := range []string{fmt.Sprint(bigSize), l.URI, "resources/read", "read_resource", "nextOffset"} {
			if !strings.Contains(note, w) {
				t.Errorf("%s: note %q does not mention %q", v, note, w)
			}
		}
		if !strings.HasPrefix(l.URI, "result://t1/fs/big/") || l.MIMEType != "text/plain; charset=utf-8" || l.Size == nil || *l.Size != bigSize ||
			l.Meta["sha256"] != hex.EncodeToString(sum[:]) || l.Name == "" {
			t.Errorf("%s: link = %+v", v, l)
		}
		if []rune(prev) == nil || len([]rune(prev)) != 100 || !strings.HasPrefix(want, prev) {
			t.Errorf("%s: preview = %q, want the first 100 characters", v, prev)
		}
		if got := readAll(t, cs, l.URI); got.Text != want {
			t.Errorf("%s: resources/read gave %d bytes, want the %d of the result", v, len(got.Text), len(want))
		}
		// read_resource windows walk it to the end.
		var b strings.Builder
		off := int64(0)
		for i := 0; ; i++ {
			if i > 100 {
				t.Fatal("read_resource does not reach the end")
			}
			w := call(t, cs, "read_resource", map[string]any{"uri": l.URI, "offset": off})
			if w.IsError {
				t.Fatalf("read_resource: %+v", w.Content[0])
			}
			b.WriteString(w.Content[1].(*mcp.TextContent).Text)
			var meta struct{ NextOffset *int64 }
			json.Unmarshal([]byte(w.Content[0].(*mcp.TextContent).Text), &meta)
			if meta.NextOffset == nil {
				break
			}
			off = *meta.NextOffset
		}
		if b.String() != want {
			t.Errorf("%s: read_resource windows gave %d bytes, want %d identical", v, b.Len(), len(want))
		}
		// Another tenant: the identical -32602 of a URI that never existed.
		other := e.client(t, "t2", v, nil)
		_, errOther := other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: l.URI})
		missing := "result://t2/" + strings.TrimPrefix(l.URI, "result://t1/")
		_, errMissing := other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: missing})
		var je1, je2 *jsonrpc.Error
		if !errors.As(errOther, &je1) || !errors.As(errMissing, &je2) || je1.Code != -32602 || je2.Code != -32602 || je1.Message != je2.Message {
			t.Errorf("%s: other tenant's read = %v; missing URI = %v; want the same -32602", v, errOther, errMissing)
		}
	}
}

func TestGatewayOffloadsImageDecoded(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	res := call(t, cs, "image", nil)
	l := linkOf(t, res)
	if l.MIMEType != "image/png" || *l.Size != 40<<10 {
		t.Errorf("image link = %+v", l)
	}
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			t.Error("the image is still inline")
		}
	}
	if got := readAll(t, cs, l.URI); !bytes.Equal(got.Blob, pngBytes(40<<10)) || got.MIMEType != "image/png" {
		t.Errorf("read back %d bytes of %s, want the image's", len(got.Blob), got.MIMEType)
	}
}

func TestGatewayOffloadPolicyOverrides(t *testing.T) {
	up := fsUpstream()
	up.Offload.Tools["big"] = gateway.ToolOffload{Mode: gateway.OffloadNever}
	up.Offload.Tools["mix"] = gateway.ToolOffload{Mode: gateway.OffloadSize, Threshold: 10}
	e := newGWEnv(t, up)
	cs := e.client(t, "t1", "2026-07-28", nil)
	if r := call(t, cs, "big", nil); len(r.Content) != 1 || len(r.Content[0].(*mcp.TextContent).Text) != bigSize {
		t.Errorf("never: big was changed")
	}
	// echo is "always", but its one small part is not larger than the
	// preview: nothing to save, the result passes unchanged.
	if r := call(t, cs, "echo", map[string]any{"k": "v"}); len(r.Content) != 1 {
		t.Errorf("always with a small part: %+v", r.Content)
	}
	long := strings.Repeat("é", 150)
	r := call(t, cs, "echo", map[string]any{"k": long})
	if len(r.Content) != 3 {
		t.Fatalf("always: echo of 150 characters = %d items, want note, link, preview", len(r.Content))
	}
	if p := r.Content[2].(*mcp.TextContent).Text; len([]rune(p)) != 100 || !strings.HasPrefix(`{"k":"`+long, p) {
		t.Errorf("preview %q splits or misses characters", p)
	}
	// mix at 10 bytes: its parts are all below the preview, none is saved.
	if r := call(t, cs, "mix", nil); len(r.Content) != 4 {
		t.Errorf("mix over its threshold with small parts = %d items", len(r.Content))
	}
}

// TestGatewayResultsValidateAgainstListedSchema: whatever the size, a
// tool's result validates against the outputSchema of tools/list, which
// admits the pointer that replaces a large structuredContent, with or
// without an upstream outputSchema ($defs references included).
func TestGatewayResultsValidateAgainstListedSchema(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	schemas := map[string]any{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = tool.OutputSchema
	}
	if sch, ok := schemas["structured"].(map[string]any); !ok || sch["type"] != "object" {
		t.Errorf("the listed outputSchema of structured = %v, want an object schema", schemas["structured"])
	}
	for _, name := range []string{"structured", "unstructured", "refs", "big", "image", "mix", "read_resource"} {
		args := map[string]any{}
		if name == "read_resource" {
			args["uri"] = "result://t1/nothing"
		}
		res := call(t, cs, name, args)
		if schemas[name] != nil {
			validateAgainst(t, name, schemas[name], res.StructuredContent)
		}
	}
	for _, name := range []string{"structured", "unstructured", "refs"} {
		res := call(t, cs, name, nil)
		ptr, _ := res.StructuredContent.(map[string]any)["resourced"].(map[string]any)
		if ptr == nil || ptr["mimeType"] != "application/json" || ptr["sha256"] == nil || ptr["size"] == nil {
			t.Fatalf("%s: structuredContent = %v, want the pointer", name, res.StructuredContent)
		}
		body := readAll(t, cs, ptr["uri"].(string)).Text
		var v map[string]any
		if json.Unmarshal([]byte(body), &v) != nil || len(v["items"].([]any)) != 4000 {
			t.Errorf("%s: the pointer's body does not read back as the structuredContent", name)
		}
	}
	// The listed schema still checks what the upstream's did: a value the
	// upstream's schema refuses is refused.
	validateAgainst(t, "refs", schemas["refs"], map[string]any{"items": []any{"a", "b"}})
	if schemaAccepts(schemas["refs"], map[string]any{"items": []any{1}}) {
		t.Error("the listed schema of refs accepts what the upstream's refuses")
	}
}

func TestGatewayUpstreamJSONRPCErrorUnchanged(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	for _, v := range versions {
		cs := e.client(t, "t1", v, nil)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rpcfail", Arguments: map[string]any{}})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != -32042 || je.Message != "upstream says no" || string(je.Data) != `{"why":"because"}` {
			t.Errorf("%s: rpcfail = %v (%+v), want the upstream's error unchanged", v, err, je)
		}
		_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///data/zzz"})
		if !errors.As(err, &je) || je.Code != -32602 || string(je.Data) != `{"uri":"file:///data/zzz"}` {
			t.Errorf("%s: upstream resources/read error = %v", v, err)
		}
	}
}

func TestGatewayUnavailableUpstream(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	// Dying mid-call.
	res := call(t, cs, "die", nil)
	checkUnavailable(t, "die", res)
	// Reconnected afterwards: the pool restarts it with a backoff, so a
	// call at once may still be answered unavailable (retry-safe); within
	// a few seconds one succeeds.
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := call(t, cs, "echo", nil)
		if !r.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after the upstream restarted, still: %+v", r.StructuredContent)
			break
		}
		checkUnavailable(t, "echo while restarting", r)
		time.Sleep(50 * time.Millisecond)
	}
	e.sessions.setDown("fs", true)
	checkUnavailable(t, "down", call(t, cs, "echo", nil))
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///data/a.txt"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "fs") || strings.Contains(je.Message, "stopped by the test") {
		t.Errorf("read of a down upstream = %v, want an internal error naming fs only", err)
	}
	// /readyz names it.
	resp, err := http.Get(e.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(body.String(), "upstream fs: unavailable (required)") || strings.Contains(body.String(), "stopped") {
		t.Errorf("/readyz = %d %q", resp.StatusCode, body.String())
	}
}

// Issue 15: the cause of an "unavailable" outcome goes to the call's log
// line (err), and only there: the caller still reads "unavailable".
func TestGatewayLogsTheCauseOfUnavailable(t *testing.T) {
	var logs syncBuffer
	e := newGWEnvWith(t, 8<<20, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	e.sessions.setDown("fs", true)
	res := call(t, cs, "echo", map[string]any{"secret": "hunter2"})
	checkUnavailable(t, "down", res)
	if b, _ := json.Marshal(res); strings.Contains(string(b), "stopped by the test") {
		t.Errorf("the caller sees the cause: %s", b)
	}
	_, _ = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///data/a.txt"})
	want := map[string]bool{"tools/call": false, "resources/read": false}
	for _, l := range strings.Split(logs.String(), "\n") {
		var entry struct{ Msg, Method, Outcome, Err string }
		if json.Unmarshal([]byte(l), &entry) != nil || entry.Msg != "upstream call" || entry.Outcome != "unavailable" {
			continue
		}
		if _, ok := want[entry.Method]; ok && strings.Contains(entry.Err, "fs stopped by the test") {
			want[entry.Method] = true
		}
	}
	for m, ok := range want {
		if !ok {
			t.Errorf("no upstream call line of %s with outcome unavailable names its cause; log:\n%s", m, logs.String())
		}
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Error("the log holds a call's arguments")
	}
}

// Issue 15: an answer over the pool's message limit is too_large, not
// retry-safe (a retry would fail the same way), and logged as such.
func TestGatewayAnswerOverTheMessageLimitIsTooLarge(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	res := call(t, cs, "toolarge", nil)
	sc, _ := res.StructuredContent.(map[string]any)
	msg, _ := sc["message"].(string)
	if !res.IsError || sc["errorKind"] != "too_large" || sc["retrySafe"] != false ||
		!strings.Contains(msg, "The result of toolarge from the upstream server fs is 3000 bytes (2.9 KiB), more than the 2048 bytes (2.0 KiB)") {
		t.Fatalf("toolarge = %+v", res.StructuredContent)
	}
}

func TestGatewayReadyzOptionalUpstream(t *testing.T) {
	e := newGWEnv(t, fsUpstream(), gateway.Upstream{Name: "web"})
	e.sessions.setDown("web", true)
	resp, err := http.Get(e.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(body.String(), "upstream web: unavailable (optional)") || !strings.Contains(body.String(), "upstream fs: ready") {
		t.Errorf("/readyz = %d %q", resp.StatusCode, body.String())
	}
	// tools/list leaves the optional upstream out.
	cs := e.client(t, "t1", "2026-07-28", nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "web__") {
			t.Errorf("tools/list lists %s of a down optional upstream", tool.Name)
		}
	}
}

func checkUnavailable(t *testing.T, what string, res *mcp.CallToolResult) {
	t.Helper()
	sc, _ := res.StructuredContent.(map[string]any)
	if !res.IsError || sc["errorKind"] != "unavailable" || sc["retrySafe"] != true || sc["status"] != "failed" {
		t.Errorf("%s: %+v, want isError unavailable retrySafe", what, res.StructuredContent)
	}
}

func TestGatewayScopeNeeded(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("X-No-Scope", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resources:read") {
		t.Errorf("tools/call without scope = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestGatewayPromptsResourcesCompletion(t *testing.T) {
	e := newGWEnv(t, fsUpstream(), gateway.Upstream{Name: "web", Required: true})
	for _, v := range versions {
		cs := e.client(t, "t1", v, nil)
		ctx := context.Background()
		var prompts []string
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			prompts = append(prompts, p.Name)
		}
		if strings.Join(prompts, " ") != "fs__greet web__greet" {
			t.Errorf("%s: prompts = %v", v, prompts)
		}
		g, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "web__greet", Arguments: map[string]string{"who": "you"}})
		if err != nil || g.Messages[0].Content.(*mcp.TextContent).Text != "hello you" || g.Messages[1].Content.(*mcp.ResourceLink).URI != "web+file:///data/a.txt" {
			t.Errorf("%s: prompts/get = %+v, %v", v, g, err)
		}
		var uris []string
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		if strings.Join(uris, " ") != "fs+file:///data/a.txt web+file:///data/a.txt" {
			t.Errorf("%s: resources = %v", v, uris)
		}
		var templates []string
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, r.URITemplate)
		}
		if got := strings.Join(templates, " "); !strings.Contains(got, "result://{tenant}/{+path}") || !strings.Contains(got, "fs+file:///data/{name}") || !strings.Contains(got, "web+file:///data/{name}") {
			t.Errorf("%s: templates = %v", v, templates)
		}
		if c := readAll(t, cs, "web+file:///data/a.txt"); c.Text != "contents of a" || c.URI != "web+file:///data/a.txt" {
			t.Errorf("%s: read = %+v", v, c)
		}
		comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fs__greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "y"}})
		if err != nil || comp.Completion.Values[0] != "ref/prompt:greet:y" {
			t.Errorf("%s: complete prompt = %+v, %v", v, comp, err)
		}
		comp, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "web+file:///data/{name}"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"}})
		if err != nil || comp.Completion.Values[0] != "ref/resource:file:///data/{name}:a" {
			t.Errorf("%s: complete resource = %+v, %v", v, comp, err)
		}
	}
}

// TestGatewayProgressReachesCaller: the upstream's progress notifications
// reach the caller with the caller's own token, on the call's stream.
func TestGatewayProgressReachesCaller(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	for _, v := range versions {
		var mu sync.Mutex
		var got []string
		cs := e.client(t, "t1", v, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v:%v", r.Params.ProgressToken, r.Params.Progress))
			mu.Unlock()
		}})
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
		params.SetProgressToken("caller-tok")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.Content[0].(*mcp.TextContent).Text; txt != "done, token string" {
			t.Errorf("%s: upstream saw %q", v, txt)
		}
		// go-sdk's client runs its notification handler asynchronously.
		want := "caller-tok:1 caller-tok:2 caller-tok:3"
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			s := strings.Join(got, " ")
			mu.Unlock()
			if s == want {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: progress = %v, want %s", v, s, want)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestGatewayCancellation: a caller that goes away, or that posts
// notifications/cancelled for its call, cancels the upstream call.
func TestGatewayCancellation(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	u := e.ups["fs"]
	cs := e.client(t, "t1", "2026-07-28", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"wait": true}})
		done <- err
	}()
	<-u.started
	cancel()
	select {
	case <-u.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled when the caller went away")
	}
	<-done

	// A stateless notifications/cancelled from the same tenant.
	post := func(tenant, body string) *http.Response {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("X-Tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}
	answered := make(chan *http.Response, 1)
	go func() {
		answered <- post("t1", `{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"slow","arguments":{"wait":true}}}`)
	}()
	<-u.started
	cancelBody := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-7","reason":"test"}}`
	// Another tenant naming the same id cancels nothing.
	if r := post("t2", cancelBody); r != nil {
		r.Body.Close()
	}
	select {
	case <-u.canceled:
		t.Fatal("another tenant's notifications/cancelled cancelled the call")
	case <-time.After(200 * time.Millisecond):
	}
	if r := post("t1", cancelBody); r != nil {
		if r.StatusCode != http.StatusAccepted {
			t.Errorf("notifications/cancelled answered %d", r.StatusCode)
		}
		r.Body.Close()
	}
	select {
	case <-u.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the upstream call")
	}
	if r := <-answered; r != nil {
		r.Body.Close()
	}
}

// TestGatewayOffloadFailureIsWhole: when one part cannot be saved (here
// over the scheme's maxBytes) the call answers that failure and the parts
// saved before it are removed: never a half-offloaded result.
func TestGatewayOffloadFailureIsWhole(t *testing.T) {
	e := newGWEnvWith(t, 1<<20, nil, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	res := call(t, cs, "two", nil)
	sc, _ := res.StructuredContent.(map[string]any)
	if !res.IsError || sc["errorKind"] != "too_large" {
		t.Fatalf("two over maxBytes = %+v", res.StructuredContent)
	}
	// The gateway's own text (issue 15): not "split it into several
	// resources", which a gateway caller cannot do.
	msg, _ := sc["message"].(string)
	for _, want := range []string{"The result of two is 2097452 bytes", "one of its parts is 2097152 bytes",
		"at most 1048576 bytes (1.0 MiB) per part (result://)", "Call the tool for less", "schemes.result.maxBytes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("too_large message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "Split") || sc["retrySafe"] != false {
		t.Errorf("too_large: %v", sc)
	}
	l, err := e.srv.store.List(context.Background(), store.ListQuery{Tenant: "t1", Limit: 100})
	if err != nil || len(l.Items) != 0 {
		t.Errorf("after a failed offload the store holds %d objects (%v)", len(l.Items), err)
	}
}

// Issue 15: an offload over the tenant's quota says what happened and
// what the caller can do, not to delete resources with tools the gateway
// does not list, nor usage counts taken before the rollback.
func TestGatewayOffloadOverQuotaText(t *testing.T) {
	e := newGWEnvWith(t, 8<<20, func(o *Options) { o.Quota = store.Quota{Bytes: 3 << 20} }, fsUpstream())
	cs := e.client(t, "t1", "2026-07-28", nil)
	if r := call(t, cs, "big", nil); r.IsError {
		t.Fatalf("the first big result fits the quota: %+v", r.StructuredContent)
	}
	if r := call(t, cs, "big", nil); r.IsError {
		t.Fatalf("the same result again is the same link, stored once: %+v", r.StructuredContent)
	}
	res := call(t, cs, "big", map[string]any{"variant": 1})
	sc, _ := res.StructuredContent.(map[string]any)
	if !res.IsError || sc["errorKind"] != "quota_exceeded" || sc["retrySafe"] != false {
		t.Fatalf("big over the quota = %+v", res.StructuredContent)
	}
	msg, _ := sc["message"].(string)
	for _, want := range []string{"The result of big is 2097152 bytes (2.0 MiB)", "over its storage quota", "nothing of it was kept", "Call the tool for less", "ask the operator"} {
		if !strings.Contains(msg, want) {
			t.Errorf("quota_exceeded message lacks %q: %s", want, msg)
		}
	}
	for _, bad := range []string{"list_resources", "delete_resource", "you store"} {
		if strings.Contains(msg, bad) {
			t.Errorf("quota_exceeded message says %q: %s", bad, msg)
		}
	}
}

// validateAgainst checks a result's structuredContent against the
// outputSchema the caller was given in tools/list.
func validateAgainst(t *testing.T, tool string, schema, value any) {
	t.Helper()
	if err := schemaCheck(schema, value); err != nil {
		t.Errorf("%s: structuredContent does not validate against its listed outputSchema: %v", tool, err)
	}
}

func schemaAccepts(schema, value any) bool { return schemaCheck(schema, value) == nil }

func schemaCheck(schema, value any) error {
	raw, _ := json.Marshal(schema)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("https://gw.test/schema.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("https://gw.test/schema.json")
	if err != nil {
		return err
	}
	b, _ := json.Marshal(value)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func TestGatewayOffloadsEmbeddedResourceWithItsType(t *testing.T) {
	e := newGWEnv(t, fsUpstream())
	cs := e.client(t, "t1", "2025-11-25", nil)
	res := call(t, cs, "embedded", nil)
	l := linkOf(t, res)
	if l.MIMEType != "text/csv" || *l.Size != 30000 {
		t.Errorf("embedded link = %+v", l)
	}
	if got := readAll(t, cs, l.URI); got.Text != strings.Repeat("a,b,c\n", 5000) || got.MIMEType != "text/csv" {
		t.Errorf("read back %d bytes of %s", len(got.Text), got.MIMEType)
	}
}

func TestGatewayCallTimeoutIsUnavailable(t *testing.T) {
	up := fsUpstream()
	up.CallTimeout = 200 * time.Millisecond
	e := newGWEnv(t, up)
	cs := e.client(t, "t1", "2026-07-28", nil)
	res := call(t, cs, "slow", map[string]any{"wait": true})
	checkUnavailable(t, "timeout", res)
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "did not answer in time") {
		t.Errorf("timeout text = %q", txt)
	}
	select {
	case <-e.ups["fs"].canceled:
	case <-time.After(5 * time.Second):
		t.Error("the upstream call went on after its CallTimeout")
	}
}

// TestGatewayProgressStreamOutlivesWriteGrace: a call that streams
// progress for longer than the write grace is not cut: each write of the
// stream gets the grace.
func TestGatewayProgressStreamOutlivesWriteGrace(t *testing.T) {
	e := newGWEnvWith(t, 8<<20, func(o *Options) { o.Budgets.WriteGrace = 250 * time.Millisecond }, fsUpstream())
	cs := e.client(t, "t1", "2025-11-25", &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {}})
	params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{}}
	params.SetProgressToken(7)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "streamed" {
		t.Fatalf("stream = %v, %v", res, err)
	}
}

// TestGatewayMetricsAndLog: calls are counted by upstream, method, tool
// (unlisted tools as "other") and outcome, offloaded parts and bytes by
// upstream and tool, never by tenant; each upstream call logs one line
// without its arguments.
func TestGatewayMetricsAndLog(t *testing.T) {
	var logs syncBuffer
	e := newGWEnvWith(t, 8<<20, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}, fsUpstream())
	cs := e.client(t, "acme", "2026-07-28", nil)
	call(t, cs, "big", nil)
	call(t, cs, "echo", map[string]any{"secret": "hunter2"})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "unlisted-tool", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown upstream tool answered without an error")
	}
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	m := body.String()
	for _, want := range []string{
		`resourced_gateway_calls_total{method="tools/call",outcome="ok",tool="big",upstream="fs"} 1`,
		`resourced_gateway_calls_total{method="tools/call",outcome="ok",tool="echo",upstream="fs"} 1`,
		`resourced_gateway_calls_total{method="tools/call",outcome="-32602",tool="other",upstream="fs"} 1`,
		`resourced_gateway_calls_total{method="tools/list",outcome="ok",tool="",upstream="fs"}`,
		`resourced_gateway_offloaded_parts_total{tool="big",upstream="fs"} 1`,
		`resourced_gateway_offloaded_bytes_total{tool="big",upstream="fs"} ` + strconv.FormatFloat(bigSize, 'g', -1, 64),
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, "acme") {
		t.Error("a tenant is a metrics label")
	}
	var lines int
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, `"msg":"upstream call"`) {
			continue
		}
		if strings.Contains(l, `"tool":"big"`) {
			lines++
			for _, f := range []string{`"upstream":"fs"`, `"method":"tools/call"`, `"duration":`, `"outcome":"ok"`, `"offloadedParts":1`, fmt.Sprintf(`"offloadedBytes":%d`, bigSize)} {
				if !strings.Contains(l, f) {
					t.Errorf("log line %s lacks %s", l, f)
				}
			}
		}
	}
	if lines != 1 {
		t.Errorf("%d log lines for one call of big", lines)
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Error("the log holds a call's arguments")
	}
}

// TestGatewayListsSkipUpstreamsWithoutTheMethod: a required upstream that
// answers -32601 to prompts and resources (server-filesystem does) lists
// none; the others' lists go on.
func TestGatewayListsSkipUpstreamsWithoutTheMethod(t *testing.T) {
	e := newGWEnv(t, fsUpstream(), gateway.Upstream{Name: "bare", Required: true})
	cs := e.client(t, "t1", "2025-11-25", nil)
	ctx := context.Background()
	p, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(p.Prompts) != 1 || p.Prompts[0].Name != "fs__greet" {
		t.Errorf("prompts/list = %+v, %v", p, err)
	}
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, " ") != "fs+file:///data/a.txt" {
		t.Errorf("resources = %v", uris)
	}
	for _, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if r := call(t, cs, "bare__echo", nil); r.IsError {
		t.Errorf("bare__echo = %+v", r.Content)
	}
}

// TestGatewayListsCarryACacheScope: lists the front builds itself carry a
// cacheScope (go-sdk fills it only in results it builds): "public" with
// shared upstreams, "private" when one is perTenant; resources/list is
// always "private".
func TestGatewayListsCarryACacheScope(t *testing.T) {
	for _, iso := range []gateway.Isolation{gateway.Shared, gateway.PerTenant} {
		up := fsUpstream()
		up.Isolation = iso
		e := newGWEnv(t, up)
		cs := e.client(t, "t1", "2026-07-28", nil)
		ctx := context.Background()
		want := "public"
		if iso == gateway.PerTenant {
			want = "private"
		}
		tl, err := cs.ListTools(ctx, nil)
		if err != nil || tl.CacheScope != want {
			t.Errorf("%s: tools/list cacheScope %q (%v), want %q", iso, tl.CacheScope, err, want)
		}
		pl, err := cs.ListPrompts(ctx, nil)
		if err != nil || pl.CacheScope != want {
			t.Errorf("%s: prompts/list cacheScope %q (%v), want %q", iso, pl.CacheScope, err, want)
		}
		rt, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil || rt.CacheScope != want {
			t.Errorf("%s: templates/list cacheScope %q (%v), want %q", iso, rt.CacheScope, err, want)
		}
		rl, err := cs.ListResources(ctx, nil)
		if err != nil || rl.CacheScope != "private" {
			t.Errorf("%s: resources/list cacheScope %q (%v)", iso, rl.CacheScope, err)
		}
		// A shared upstream's read keeps the upstream's own cacheScope
		// (go-sdk's upstream sets "public"); a perTenant upstream's is
		// always "private": its answers are per tenant (issue 15).
		if c, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///data/a.txt"}); err != nil || c.CacheScope != want {
			t.Errorf("%s: upstream read cacheScope = %v, %v, want %q", iso, c, err, want)
		}
	}
}
