package checker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/mcpschema"
)

// The servers here are small implementations of resourced's store
// contract built on go-sdk v1.8.0, correct by default, with one defect
// switched on per test. Each test asserts that the checker fails exactly
// the row that names the defect.

type defects struct {
	publicScope   bool // resources/read of private data says cacheScope "public"
	emptyNotFound bool // an unknown URI reads as empty contents, not -32602 (read handler)
	emptyMiddle   bool // the same from a receiving middleware (go-sdk then omits resultType)
	textDiffers   bool // the read-only status tool's text ≠ its structuredContent
	dropTTL       bool // resources/read results lose ttlMs on the wire
	echoToken     bool // the unknown-tool error message repeats the Authorization header
	noDataURI     bool // not-found errors carry no data
}

const testToken = "Bearer s3cret-t0ken-never-printed"

type object struct {
	uri, mime   string
	body        []byte
	listed      bool
	public      bool
	createdAt   time.Time
	modifiedAt  time.Time
	description string
}

type storeServer struct {
	srv *mcp.Server
	d   defects

	mu   sync.Mutex
	objs map[string]*object
	seq  int
}

const tenant = "t1"

func newStoreServer(d defects) *storeServer {
	s := &storeServer{d: d, objs: map[string]*object{}}
	opts := &mcp.ServerOptions{
		// go-sdk's default cacheScope is "public"; resources/list holds
		// tenant data here.
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			switch req.(type) {
			case *mcp.ListResourcesRequest:
				c.CacheScope = "private"
			case *mcp.ReadResourceRequest:
				if d.publicScope {
					c.CacheScope = "public"
				}
			}
		},
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "store-under-test", Version: "1"}, opts)
	for _, scheme := range []string{"report", "search"} {
		s.srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: scheme, URITemplate: scheme + "://{tenant}/{+path}"}, s.read)
	}
	if d.emptyMiddle || d.echoToken {
		s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				var we *jsonrpc.Error
				switch {
				case d.emptyMiddle && method == "resources/read" && errors.As(err, &we) && we.Code == -32602:
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}, nil
				case d.echoToken && method == "tools/call" && err != nil:
					return nil, &jsonrpc.Error{Code: -32602, Message: "unknown tool; you sent " + req.GetExtra().Header.Get("Authorization")}
				}
				return res, err
			}
		})
	}
	obj := json.RawMessage(`{"type":"object"}`)
	in := func(required ...string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "object", "required": append([]string{}, required...)})
		return b
	}
	s.srv.AddTool(&mcp.Tool{Name: "save_report", InputSchema: in("path", "mimeType"), OutputSchema: obj}, s.saveReport)
	s.srv.AddTool(&mcp.Tool{Name: "save_search_snapshot", InputSchema: in("query", "hits"), OutputSchema: obj}, s.saveSnapshot)
	s.srv.AddTool(&mcp.Tool{Name: "stat_resource", InputSchema: in("uri"), OutputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.stat)
	s.srv.AddTool(&mcp.Tool{Name: "list_resources", InputSchema: in(), OutputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.list)
	s.srv.AddTool(&mcp.Tool{Name: "delete_resource", InputSchema: in("uri"), OutputSchema: obj}, s.delete)
	s.srv.AddTool(&mcp.Tool{Name: "status", InputSchema: in(), OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}}, s.status)
	return s
}

// handler serves the store over Streamable HTTP; stateless JSON unless
// stateful is set (sessions and SSE, 2025-11-25 only in go-sdk v1.8.0).
func (s *storeServer) handler(stateful bool) http.Handler {
	h := http.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Stateless: !stateful, JSONResponse: !stateful}))
	if s.d.dropTTL {
		h = dropTTL(h)
	}
	return requireToken(h)
}

func requireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != testToken {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// dropTTL removes ttlMs from every resources/read result on the wire.
func dropTTL(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			if res, ok := m["result"].(map[string]any); ok {
				if _, isRead := res["contents"]; isRead {
					delete(res, "ttlMs")
					body, _ = json.Marshal(m)
				}
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (s *storeServer) read(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	s.mu.Lock()
	o, ok := s.objs[uri]
	s.mu.Unlock()
	if !ok {
		if s.d.emptyNotFound {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}, nil
		}
		if s.d.noDataURI {
			return nil, &jsonrpc.Error{Code: -32602, Message: "Resource not found"}
		}
		b, _ := json.Marshal(map[string]string{"uri": uri})
		return nil, &jsonrpc.Error{Code: -32602, Message: "Resource not found", Data: b}
	}
	scope := "private"
	if o.public {
		scope = "public"
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: o.mime, Meta: mcp.Meta{
		"sha256": sum(o.body), "size": len(o.body), "lastModified": o.modifiedAt.Format(time.RFC3339Nano),
	}}
	if strings.HasPrefix(o.mime, "text/") || o.mime == "application/json" {
		c.Text = string(o.body)
	} else {
		c.Blob = o.body
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}, Cacheable: mcp.Cacheable{TTLMs: 0, CacheScope: scope}}, nil
}

func (o *object) meta(status string) map[string]any {
	vis := "private"
	if o.public {
		vis = "public"
	}
	_, path, _ := strings.Cut(strings.SplitN(o.uri, "://", 2)[1], "/")
	return map[string]any{
		"status": status, "uri": o.uri, "name": path, "title": path, "description": o.description,
		"mimeType": o.mime, "size": len(o.body), "sha256": sum(o.body),
		"createdAt": o.createdAt.Format(time.RFC3339), "lastModified": o.modifiedAt.Format(time.RFC3339),
		"listed": o.listed, "visibility": vis,
	}
}

// result builds value once and derives structuredContent and text from
// it, plus links.
func result(value any, links ...*object) *mcp.CallToolResult {
	b, _ := json.Marshal(value)
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	for _, o := range links {
		size := int64(len(o.body))
		_, path, _ := strings.Cut(strings.SplitN(o.uri, "://", 2)[1], "/")
		res.Content = append(res.Content, &mcp.ResourceLink{
			URI: o.uri, Name: path, Title: path, Description: o.description, MIMEType: o.mime, Size: &size,
			Annotations: &mcp.Annotations{LastModified: o.modifiedAt.Format(time.RFC3339)},
		})
	}
	return res
}

func toolError(kind, msg string) *mcp.CallToolResult {
	v := map[string]any{"status": "failed", "errorKind": kind, "message": msg, "retrySafe": false}
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: kind + ": " + msg}}}
}

type saveArgs struct {
	Path        string `json:"path"`
	MIMEType    string `json:"mimeType"`
	Text        string `json:"text"`
	IfMatch     string `json:"ifMatch"`
	Overwrite   bool   `json:"overwrite"`
	Listed      bool   `json:"listed"`
	Visibility  string `json:"visibility"`
	Description string `json:"description"`
	Query       string `json:"query"`
	Hits        []any  `json:"hits"`
	Total       any    `json:"total"`
	URI         string `json:"uri"`
	Scheme      string `json:"scheme"`
	Prefix      string `json:"prefix"`
}

func args(req *mcp.CallToolRequest) saveArgs {
	var a saveArgs
	_ = json.Unmarshal(req.Params.Arguments, &a)
	return a
}

func (s *storeServer) saveReport(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	if a.Path == "" || a.Text == "" {
		return toolError("validation_error", "path and a non-empty text are required"), nil
	}
	uri := "report://" + tenant + "/" + a.Path
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.objs[uri]
	switch {
	case a.IfMatch != "" && (!exists || sum(old.body) != a.IfMatch):
		return toolError("conflict", "ifMatch does not match"), nil
	case a.IfMatch == "" && !a.Overwrite && exists:
		return toolError("conflict", "the path exists"), nil
	}
	now := time.Now().UTC()
	o := &object{uri: uri, mime: a.MIMEType, body: []byte(a.Text), listed: a.Listed, public: a.Visibility == "public",
		createdAt: now, modifiedAt: now, description: "report " + a.Path}
	status := "created"
	if exists {
		status, o.createdAt = "replaced", old.createdAt
	}
	s.objs[uri] = o
	if o.listed {
		s.srv.AddResource(&mcp.Resource{URI: uri, Name: a.Path, MIMEType: o.mime}, s.read)
	}
	return result(o.meta(status), o), nil
}

func (s *storeServer) saveSnapshot(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	if a.Total != nil {
		if n, ok := a.Total.(float64); !ok || int(n) != len(a.Hits) {
			return toolError("validation_error", "total must equal the number of hits"), nil
		}
	}
	body, _ := json.Marshal(map[string]any{"query": a.Query, "total": len(a.Hits), "hits": a.Hits})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	now := time.Now().UTC()
	o := &object{uri: fmt.Sprintf("search://%s/results/%06d", tenant, s.seq), mime: "application/json", body: body,
		createdAt: now, modifiedAt: now, description: "search results"}
	s.objs[o.uri] = o
	m := o.meta("created")
	m["total"] = len(a.Hits)
	return result(m, o), nil
}

func (s *storeServer) stat(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	uri := args(req).URI
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[uri]
	if !ok {
		return toolError("not_found", "no resource "+uri), nil
	}
	return result(o.meta("found"), o), nil
}

func (s *storeServer) list(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []any{}
	var links []*object
	for uri, o := range s.objs {
		if a.Scheme != "" && !strings.HasPrefix(uri, a.Scheme+"://"+tenant+"/"+a.Prefix) {
			continue
		}
		items = append(items, o.meta("found"))
		links = append(links, o)
	}
	return result(map[string]any{"status": "ok", "items": items}, links...), nil
}

func (s *storeServer) delete(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[a.URI]
	switch {
	case !ok:
		return toolError("not_found", "no resource "+a.URI), nil
	case a.IfMatch != "" && sum(o.body) != a.IfMatch:
		return toolError("conflict", "ifMatch does not match"), nil
	}
	delete(s.objs, a.URI)
	if o.listed {
		s.srv.RemoveResources(a.URI)
	}
	return result(map[string]any{"status": "deleted", "uri": a.URI}), nil
}

func (s *storeServer) status(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res := result(map[string]any{"ok": true})
	if s.d.textDiffers {
		res.Content = []mcp.Content{&mcp.TextContent{Text: "All systems go."}}
	}
	return res, nil
}

// check runs the checker against a store server with defects d.
func check(t *testing.T, d defects, protocol string) *Report {
	t.Helper()
	ts := httptest.NewServer(newStoreServer(d).handler(false))
	t.Cleanup(ts.Close)
	rep, err := Run(context.Background(), Options{URL: ts.URL, Header: http.Header{"Authorization": {testToken}}, Protocol: protocol, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Protocol != protocol {
		t.Fatalf("Protocol = %s, want %s", rep.Protocol, protocol)
	}
	return rep
}

// rowsWith returns the ids of rows with status st.
func rowsWith(rep *Report, st Status) []string {
	var ids []string
	for _, r := range rep.Rows {
		if r.Status == st {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func dump(t *testing.T, rep *Report) {
	t.Helper()
	var b bytes.Buffer
	rep.WriteText(&b)
	t.Log("\n" + b.String())
}

func TestCorrectServerPasses(t *testing.T) {
	for _, v := range []string{V2026, V2025} {
		t.Run(v, func(t *testing.T) {
			rep := check(t, defects{}, v)
			if fails := rowsWith(rep, Fail); len(fails) > 0 || rep.Failed() {
				dump(t, rep)
				t.Fatalf("rows %v FAIL on a correct server", fails)
			}
			for _, r := range rep.Rows {
				if r.Status == Skip && r.Layer != LayerAcceptance && r.ID != "U05" && r.ID != "U12" && !(r.ID == "U14" && v == V2025) {
					t.Errorf("%s SKIP on a correct store server: %s", r.ID, r.Evidence)
				}
				if r.Status == Skip && r.Evidence == "" {
					t.Errorf("%s SKIP without a reason", r.ID)
				}
			}
			if got := rep.Layers[LayerAcceptance]; !strings.HasPrefix(got, "skipped") {
				t.Errorf("acceptance layer %q on a server without fixture tools", got)
			}
		})
	}
}

// TestDefectsCaught is issue item 3: each deliberately broken server is
// caught by the row that names its defect.
func TestDefectsCaught(t *testing.T) {
	tests := []struct {
		name     string
		d        defects
		version  string
		fail     []string // exactly these rows FAIL
		failsRun bool     // a normative row among them
	}{
		{"public cacheScope on tenant data", defects{publicScope: true}, V2026, []string{"C05"}, true},
		{"public cacheScope on tenant data", defects{publicScope: true}, V2025, []string{"C05"}, false},
		{"empty contents instead of -32602", defects{emptyNotFound: true}, V2026, []string{"C14", "U06"}, true},
		{"empty contents instead of -32602", defects{emptyNotFound: true}, V2025, []string{"C14", "U06"}, false},
		// A result made by a receiving middleware bypasses go-sdk's
		// resultType on 2026-07-28: the schema rows catch that too.
		{"empty contents from middleware", defects{emptyMiddle: true}, V2026, []string{"C14", "U06", "U13", "U14"}, true},
		{"empty contents from middleware", defects{emptyMiddle: true}, V2025, []string{"C14", "U06"}, false},
		{"text differs from structuredContent", defects{textDiffers: true}, V2026, []string{"U11"}, false},
		{"text differs from structuredContent", defects{textDiffers: true}, V2025, []string{"U11"}, false},
		{"missing ttlMs", defects{dropTTL: true}, V2026, []string{"C06", "U13"}, true},
		{"missing ttlMs", defects{dropTTL: true}, V2025, []string{"C06"}, false},
		{"no data.uri on not found", defects{noDataURI: true}, V2026, []string{"C15", "U07"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.version, func(t *testing.T) {
			rep := check(t, tt.d, tt.version)
			fails := rowsWith(rep, Fail)
			slices.Sort(fails)
			if !slices.Equal(fails, tt.fail) || rep.Failed() != tt.failsRun {
				dump(t, rep)
				t.Fatalf("FAIL rows %v (run failed: %v), want %v (run failed: %v)", fails, rep.Failed(), tt.fail, tt.failsRun)
			}
			for _, id := range tt.fail {
				if ev := rep.Row(id).Evidence; ev == "" {
					t.Errorf("%s FAIL without evidence", id)
				}
			}
		})
	}
}

func TestEvidenceNamesTheDefect(t *testing.T) {
	rep := check(t, defects{publicScope: true}, V2026)
	if ev := rep.Row("C05").Evidence; !strings.Contains(ev, `cacheScope public`) || rep.Row("C05").Kind != Normative {
		t.Errorf("C05 = %+v", rep.Row("C05"))
	}
	rep = check(t, defects{emptyNotFound: true}, V2026)
	if ev := rep.Row("U06").Evidence; !strings.Contains(ev, "empty contents") {
		t.Errorf("U06 evidence %q", ev)
	}
	rep = check(t, defects{textDiffers: true}, V2026)
	if ev := rep.Row("U11").Evidence; !strings.Contains(ev, "status") || !strings.Contains(ev, "All systems go.") {
		t.Errorf("U11 evidence %q", ev)
	}
	rep = check(t, defects{dropTTL: true}, V2026)
	if ev := rep.Row("C06").Evidence; !strings.Contains(ev, "no ttlMs") {
		t.Errorf("C06 evidence %q", ev)
	}
}

// TestStatefulSSE: a stateful go-sdk server answering with event streams
// speaks only 2025-11-25; auto falls back to it and keeps the session.
func TestStatefulSSE(t *testing.T) {
	ts := httptest.NewServer(newStoreServer(defects{}).handler(true))
	defer ts.Close()
	rep, err := Run(context.Background(), Options{URL: ts.URL, Header: http.Header{"Authorization": {testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Protocol != V2025 {
		t.Errorf("Protocol = %s, want %s", rep.Protocol, V2025)
	}
	if fails := rowsWith(rep, Fail); len(fails) > 0 {
		dump(t, rep)
		t.Fatalf("rows %v FAIL", fails)
	}
	ev := rep.Row("U15").Evidence
	if !strings.Contains(ev, "text/event-stream") || !strings.Contains(ev, "stateful") {
		t.Errorf("U15 evidence %q, want event streams and a session", ev)
	}
}

// TestSecretsNeverPrinted: a server that repeats the token in an error
// message does not get it into any output.
func TestSecretsNeverPrinted(t *testing.T) {
	rep := check(t, defects{echoToken: true}, V2026)
	var out bytes.Buffer
	rep.WriteText(&out)
	rep.WriteMarkdown(&out)
	rep.WriteJSON(&out)
	secret := strings.TrimPrefix(testToken, "Bearer ")
	if strings.Contains(out.String(), secret) {
		t.Fatalf("output contains the token")
	}
	if ev := rep.Row("U08").Evidence; !strings.Contains(ev, "[redacted]") {
		t.Errorf("U08 evidence %q, want the token redacted", ev)
	}
}

func TestConnectionErrors(t *testing.T) {
	ts := httptest.NewServer(newStoreServer(defects{}).handler(false))
	defer ts.Close()
	_, err := Run(context.Background(), Options{URL: ts.URL})
	if !errors.Is(err, ErrConnection) || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: %v, want a connection error naming 401", err)
	}
	// A refusal that says why (RFC 6750 error_description) is shown.
	why := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token expired at 2026-12-01T10:00:00Z"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer why.Close()
	_, err = Run(context.Background(), Options{URL: why.URL})
	if !errors.Is(err, ErrConnection) || !strings.Contains(err.Error(), "the server says: the token expired at 2026-12-01T10:00:00Z") {
		t.Errorf("a 401 with a description: %v, want the description shown", err)
	}
	_, err = Run(context.Background(), Options{URL: "http://127.0.0.1:1/mcp", Timeout: 2 * time.Second})
	if !errors.Is(err, ErrConnection) {
		t.Errorf("closed port: %v", err)
	}
	for _, o := range []Options{{URL: "ftp://x"}, {URL: ts.URL, Protocol: "2024-11-05"}} {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrUsage) {
			t.Errorf("Run(%+v) = %v, want a usage error", o, err)
		}
	}
	// Not an MCP endpoint at all.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }))
	defer plain.Close()
	if _, err := Run(context.Background(), Options{URL: plain.URL}); !errors.Is(err, ErrConnection) {
		t.Errorf("plain HTTP server: %v", err)
	}
}

func TestReadSSEResponse(t *testing.T) {
	stream := ": comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":{}}\n\n"
	got, err := readSSEResponse(strings.NewReader(stream), 3)
	if err != nil || string(got) != "{\"jsonrpc\":\"2.0\",\n\"id\":3,\"result\":{}}" {
		t.Errorf("readSSEResponse = %q, %v", got, err)
	}
	if _, err := readSSEResponse(strings.NewReader(stream), 4); err == nil {
		t.Error("readSSEResponse found a response that is not there")
	}
}

func TestHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"save_report":        "save_report",
		"report://a/b":       "report://a/b",
		"report://a/\u00e9":  "=?base64?" + base64.StdEncoding.EncodeToString([]byte("report://a/\u00e9")) + "?=",
		"report://a/b\x7fc":  "=?base64?" + base64.StdEncoding.EncodeToString([]byte("report://a/b\x7fc")) + "?=",
		"report://a/b\nc":    "=?base64?" + base64.StdEncoding.EncodeToString([]byte("report://a/b\nc")) + "?=",
		"report://a/ b~c-._": "report://a/ b~c-._",
		" lead":              "=?base64?" + base64.StdEncoding.EncodeToString([]byte(" lead")) + "?=",
	} {
		if got := headerValue(in); got != want {
			t.Errorf("headerValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRequestsValidate: the requests the checker sends are valid against
// the official schema of their version.
func TestRequestsValidate(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var hdrs []http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		mu.Lock()
		bodies = append(bodies, b.Bytes())
		hdrs = append(hdrs, r.Header.Clone())
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer ts.Close()
	for _, v := range []string{V2026, V2025} {
		c := &client{url: ts.URL, hc: ts.Client(), version: v, info: map[string]any{"name": "t", "version": "1"}}
		for _, m := range []struct {
			method string
			params map[string]any
		}{
			{"tools/call", map[string]any{"name": "save_report", "arguments": map[string]any{}}},
			{"resources/read", map[string]any{"uri": "report://a/\u00e9"}},
			{"resources/list", nil},
			{"tools/list", nil},
		} {
			bodies, hdrs = nil, nil
			c.call(context.Background(), m.method, m.params)
			if len(bodies) != 1 {
				t.Fatalf("%s sent %d requests", m.method, len(bodies))
			}
			if err := mcpschema.ValidateJSON(v, "ClientRequest", bodies[0]); err != nil && mcpschema.Has(v, "ClientRequest") {
				t.Errorf("%s %s request invalid: %v\n%s", v, m.method, err, bodies[0])
			}
			h := hdrs[0]
			if h.Get("MCP-Protocol-Version") != v {
				t.Errorf("%s %s: MCP-Protocol-Version %q", v, m.method, h.Get("MCP-Protocol-Version"))
			}
			if v == V2026 && h.Get("Mcp-Method") != m.method {
				t.Errorf("%s: Mcp-Method %q", m.method, h.Get("Mcp-Method"))
			}
			if v == V2026 && m.method == "resources/read" && !strings.HasPrefix(h.Get("Mcp-Name"), "=?base64?") {
				t.Errorf("Mcp-Name %q, want the base64 form", h.Get("Mcp-Name"))
			}
		}
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range catalogue {
		if seen[d.id] {
			t.Errorf("row %s twice", d.id)
		}
		seen[d.id] = true
		if d.check == "" || d.basis == "" || d.kind == "" {
			t.Errorf("row %s incomplete", d.id)
		}
	}
	if k := Catalogue(V2025)[5].Kind; k != Additional {
		t.Errorf("U06 on 2025-11-25 is %s", k)
	}
}

// TestCatalogueREADME keeps the table in README.md equal to the catalogue.
func TestCatalogueREADME(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), catalogueMarkdown()) {
		t.Errorf("README.md does not hold the current catalogue; replace its table with:\n%s", catalogueMarkdown())
	}
}
