package resourced_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/client/clienttest"
)

var protocols = []string{"", resourced.Protocol20251125}

func protoName(p string) string {
	if p == "" {
		return "negotiated"
	}
	return p
}

func newClient(t *testing.T, endpoint, token string, opts *resourced.Options) *resourced.Client {
	t.Helper()
	c, err := resourced.NewClient(endpoint, resourced.StaticToken(token), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestRoundTrip(t *testing.T) {
	srv := clienttest.New(t, nil)
	for _, proto := range protocols {
		t.Run(protoName(proto), func(t *testing.T) {
			ctx := ctx(t)
			c := newClient(t, srv.URL, srv.Token("acme"), &resourced.Options{ProtocolVersion: proto})
			path := "it/" + protoName(proto) + "/summary"
			body := "region,total\nnorth,12\nsouth,7\n"
			saved, err := c.SaveReport(ctx, &resourced.Report{Path: path, MIMEType: "text/csv", Text: body, Title: "Summary"})
			if err != nil {
				t.Fatalf("SaveReport: %v", err)
			}
			uri := "report://acme/" + path
			if saved.URI != uri || saved.Status != resourced.Created || saved.Size != int64(len(body)) || saved.Title != "Summary" {
				t.Errorf("SaveReport = %+v", saved)
			}
			if saved.Link == nil || saved.Link.URI != uri || saved.Link.Size == nil || *saved.Link.Size != int64(len(body)) {
				t.Errorf("SaveReport link = %+v", saved.Link)
			}
			if saved.ExpiresAt.IsZero() || saved.CreatedAt.IsZero() || len(saved.SHA256) != 64 {
				t.Errorf("SaveReport metadata incomplete: %+v", saved.Metadata)
			}

			res, err := c.Read(ctx, uri)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if string(res.Body) != body || !res.Text || res.MIMEType != "text/csv" || res.SHA256 != saved.SHA256 ||
				res.Size != saved.Size || res.TTL != 0 || res.CacheScope != "private" || res.URI != uri {
				t.Errorf("Read = %+v", res)
			}

			st, err := c.Stat(ctx, uri)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if diff := cmp.Diff(saved.Metadata, *st); diff != "" {
				t.Errorf("Stat differs from the save (-save +stat):\n%s", diff)
			}

			page, err := c.List(ctx, &resourced.ListOptions{Scheme: "report", Prefix: "it/" + protoName(proto) + "/"})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if len(page.Items) != 1 || page.Items[0].URI != uri {
				t.Errorf("List = %+v", page)
			}

			if err := c.Delete(ctx, uri, &resourced.DeleteOptions{IfMatch: saved.SHA256}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			_, err = c.Read(ctx, uri)
			checkNotFound(t, err, uri)
			_, err = c.Stat(ctx, uri)
			if !errors.Is(err, resourced.ErrNotFound) {
				t.Errorf("Stat after delete = %v, want ErrNotFound", err)
			}
			err = c.Delete(ctx, uri, nil)
			var te *resourced.ToolError
			if !errors.As(err, &te) || te.Kind != resourced.KindNotFound || te.Tool != "delete_resource" || te.RetrySafe {
				t.Errorf("second Delete = %#v, want a not_found *ToolError", err)
			}
		})
	}
}

// checkNotFound checks resourced's -32602 for uri, typed and on the wire.
func checkNotFound(t *testing.T, err error, uri string) {
	t.Helper()
	if !errors.Is(err, resourced.ErrNotFound) {
		t.Fatalf("Read(%s) = %v, want ErrNotFound", uri, err)
	}
	if errors.Is(err, resourced.ErrInvalidURI) {
		t.Errorf("Read(%s): a not-found error also matches ErrInvalidURI", uri)
	}
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("Read(%s) = %v, want a *jsonrpc.Error inside", uri, err)
	}
	want, _ := json.Marshal(map[string]string{"uri": uri})
	if we.Code != -32602 || we.Message != "Resource not found" || !bytes.Equal(we.Data, want) {
		t.Errorf("wire error = %d %q %s, want -32602 \"Resource not found\" %s", we.Code, we.Message, we.Data, want)
	}
	var re *resourced.RPCError
	if !errors.As(err, &re) || re.URI != uri || re.Method != "resources/read" {
		t.Errorf("RPCError = %+v", re)
	}
}

func TestBlobAndSnapshot(t *testing.T) {
	srv := clienttest.New(t, nil)
	ctx := ctx(t)
	c := newClient(t, srv.URL, srv.Token("acme"), nil)
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	saved, err := c.SaveReport(ctx, &resourced.Report{Path: "bin/all-bytes", MIMEType: "application/octet-stream", Blob: bin})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Read(ctx, saved.URI)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, bin) || res.Text {
		t.Errorf("blob read back as %d bytes (text=%v)", len(res.Body), res.Text)
	}

	score := 0.5
	hits := []resourced.Hit{{ID: "a", Title: "A", Snippet: "first"}, {ID: "b", Title: "B", Snippet: "second", URL: "https://example.com/b", Score: &score}}
	snap, err := c.SaveSearchSnapshot(ctx, &resourced.SearchSnapshot{Query: "q", Hits: hits, SaveOptions: resourced.SaveOptions{Retention: 90 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(snap.URI, "search://acme/results/") || snap.Total != 2 || snap.MIMEType != "application/json" {
		t.Errorf("snapshot = %+v", snap)
	}
	if d := time.Until(snap.ExpiresAt); d < 80*time.Minute || d > 91*time.Minute {
		t.Errorf("snapshot expires in %v, want about 90m", d)
	}
	res, err = c.Read(ctx, snap.URI)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Query string          `json:"query"`
		Total int             `json:"total"`
		Hits  []resourced.Hit `json:"hits"`
	}
	if err := json.Unmarshal(res.Body, &doc); err != nil || doc.Total != 2 || doc.Query != "q" || !cmp.Equal(doc.Hits, hits) {
		t.Errorf("snapshot body = %s (%v)", res.Body, err)
	}
	if res.TTL <= 0 || res.TTL > time.Hour || res.CacheScope != "private" {
		t.Errorf("snapshot read TTL %v scope %q, want (0, 1h] private", res.TTL, res.CacheScope)
	}
}

func TestToolErrors(t *testing.T) {
	srv := clienttest.New(t, nil)
	ctx := ctx(t)
	c := newClient(t, srv.URL, srv.Token("acme"), nil)
	r := &resourced.Report{Path: "x/doc", MIMEType: "text/plain", Text: "one"}
	first, err := c.SaveReport(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SaveReport(ctx, r)
	var te *resourced.ToolError
	if !errors.Is(err, resourced.ErrConflict) || !errors.As(err, &te) || te.Kind != resourced.KindConflict || te.RetrySafe || te.Tool != "save_report" {
		t.Errorf("create over existing = %#v, want conflict", err)
	}
	second, err := c.SaveReport(ctx, &resourced.Report{Path: "x/doc", MIMEType: "text/plain", Text: "two", IfMatch: first.SHA256})
	if err != nil || second.Status != resourced.Replaced {
		t.Errorf("replace with ifMatch = %+v, %v", second, err)
	}
	if _, err := c.SaveReport(ctx, &resourced.Report{Path: "x/doc", MIMEType: "text/plain", Text: "three", IfMatch: first.SHA256}); !errors.Is(err, resourced.ErrConflict) {
		t.Errorf("stale ifMatch = %v, want ErrConflict", err)
	}
	if s, err := c.SaveReport(ctx, &resourced.Report{Path: "x/doc", MIMEType: "text/plain", Text: "four", Overwrite: true}); err != nil || s.Status != resourced.Replaced {
		t.Errorf("overwrite = %+v, %v", s, err)
	}

	_, err = c.SaveReport(ctx, &resourced.Report{Path: "a//b", MIMEType: "text/plain", Text: "x"})
	if !errors.Is(err, resourced.ErrValidation) || !errors.As(err, &te) || len(te.FieldErrors) == 0 || te.FieldErrors[0].Field != "path" {
		t.Errorf("bad path = %#v, want a validation error naming path", err)
	}
	_, err = c.SaveReport(ctx, &resourced.Report{Path: "empty", MIMEType: "text/plain"})
	if !errors.Is(err, resourced.ErrValidation) {
		t.Errorf("empty body = %v, want ErrValidation", err)
	}

	_, err = c.Read(ctx, "report://acme/a//b")
	var re *resourced.RPCError
	if !errors.Is(err, resourced.ErrInvalidURI) || errors.Is(err, resourced.ErrNotFound) || !errors.As(err, &re) || re.Reason == "" {
		t.Errorf("malformed URI = %#v, want ErrInvalidURI with a reason", err)
	}
	// go-sdk cannot put a control character into the Mcp-Name header of
	// 2026-07-28; the client reads such a URI over 2025-11-25, so resourced
	// still answers it.
	_, err = c.Read(ctx, "report://acme/a\x01b")
	if !errors.Is(err, resourced.ErrInvalidURI) || !errors.As(err, &re) || re.URI != "report://acme/a\x01b" {
		t.Errorf("URI with a control character = %#v, want resourced's ErrInvalidURI", err)
	}
}

func TestTenantIsolation(t *testing.T) {
	srv := clienttest.New(t, nil)
	ctx := ctx(t)
	acme := newClient(t, srv.URL, srv.Token("acme"), nil)
	saved, err := acme.SaveReport(ctx, &resourced.Report{Path: "secret", MIMEType: "text/plain", Text: "acme only"})
	if err != nil {
		t.Fatal(err)
	}
	// One client, a token per tenant.
	beta := acme.WithTokenSource(resourced.StaticToken(srv.Token("beta")))
	_, err = beta.Read(ctx, saved.URI)
	checkNotFound(t, err, saved.URI)
	if _, err := beta.Stat(ctx, saved.URI); !errors.Is(err, resourced.ErrNotFound) {
		t.Errorf("beta Stat = %v, want ErrNotFound", err)
	}
	if err := beta.Delete(ctx, saved.URI, nil); !errors.Is(err, resourced.ErrNotFound) {
		t.Errorf("beta Delete = %v, want ErrNotFound", err)
	}
	if _, err := acme.Read(ctx, saved.URI); err != nil {
		t.Errorf("acme Read after beta's attempts: %v", err)
	}
}

func TestAuthErrors(t *testing.T) {
	srv := clienttest.New(t, nil)
	ctx := ctx(t)
	for _, proto := range protocols {
		t.Run(protoName(proto), func(t *testing.T) {
			bad := newClient(t, srv.URL, "not-a-jwt", &resourced.Options{ProtocolVersion: proto})
			_, err := bad.Read(ctx, "report://acme/x")
			var he *resourced.HTTPError
			if !errors.Is(err, resourced.ErrUnauthorized) || !errors.As(err, &he) || he.StatusCode != 401 {
				t.Errorf("bad token: %#v, want HTTP 401", err)
			}
			if strings.Contains(fmt.Sprint(err), "not-a-jwt") {
				t.Errorf("error text carries the token: %v", err)
			}
			// The server's RFC 6750 error_description says why.
			if he == nil || he.Description == "" || !strings.Contains(err.Error(), he.Description) {
				t.Errorf("bad token: the error %q carries no error_description (%+v)", err, he)
			}
			ro := newClient(t, srv.URL, srv.Token("acme", "resources:read"), &resourced.Options{ProtocolVersion: proto})
			_, err = ro.SaveReport(ctx, &resourced.Report{Path: "ro", MIMEType: "text/plain", Text: "x"})
			if !errors.Is(err, resourced.ErrForbidden) || !errors.As(err, &he) || he.Scope != "resources:write" {
				t.Errorf("read-only token saving: %#v, want 403 needing resources:write", err)
			}
			if !strings.Contains(he.Description, "resources:write") || !strings.Contains(err.Error(), he.Description) {
				t.Errorf("read-only token saving: error %q, description %q; want the scope named", err, he.Description)
			}
		})
	}
	if _, err := resourced.NewClient("ftp://x/mcp", resourced.StaticToken("t"), nil); err == nil {
		t.Error("NewClient accepted an ftp endpoint")
	}
	if _, err := resourced.NewClient("http://x/mcp", nil, nil); err == nil {
		t.Error("NewClient accepted a nil TokenSource")
	}
	if _, err := resourced.NewClient("http://x/mcp", resourced.StaticToken("t"), &resourced.Options{ProtocolVersion: "2024-11-05"}); err == nil {
		t.Error("NewClient accepted protocol 2024-11-05")
	}
}

// flaky is a proxy in front of resourced that answers the first fail
// requests itself.
type flaky struct {
	target   *url.URL
	status   int // status of the failures; 0 closes the connection
	fail     atomic.Int32
	requests atomic.Int32
	calls    atomic.Int32 // tools/call and resources/read requests
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &msg)
	// Fail the calls themselves, not session set-up (go-sdk falls back
	// from a failed server/discover to initialize on its own).
	target := msg.Method == "tools/call" || msg.Method == "resources/read"
	if target {
		f.calls.Add(1)
	}
	if target && f.fail.Add(-1) >= 0 {
		if f.status == 0 {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try later", f.status)
		return
	}
	httputil.NewSingleHostReverseProxy(f.target).ServeHTTP(w, r)
}

func TestRetries(t *testing.T) {
	srv := clienttest.New(t, nil)
	target, _ := url.Parse(srv.BaseURL)
	fast := resourced.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	tests := []struct {
		name      string
		status    int
		fail      int32
		save      bool
		wantOK    bool
		wantError error
		wantCalls int32
	}{
		{"503 read retried", 503, 2, false, true, nil, 3},
		{"503 save retried", 503, 2, true, true, nil, 3},
		{"429 save retried", 429, 1, true, true, nil, 2},
		{"502 read retried", 502, 1, false, true, nil, 2},
		{"502 save not retried", 502, 1, true, false, resourced.ErrUnavailable, 1},
		{"503 beyond attempts", 503, 10, false, false, resourced.ErrUnavailable, 3},
		{"dropped connection read retried", 0, 1, false, true, nil, 2},
		{"dropped connection save not retried", 0, 1, true, false, nil, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctx(t)
			f := &flaky{target: target, status: tt.status}
			proxy := httptest.NewServer(f)
			defer proxy.Close()
			c := newClient(t, proxy.URL+"/mcp", srv.Token("acme"), &resourced.Options{Retry: fast})
			var err error
			if tt.save {
				f.fail.Store(tt.fail)
				_, err = c.SaveReport(ctx, &resourced.Report{Path: fmt.Sprintf("retry/%d", i), MIMEType: "text/plain", Text: "x"})
			} else {
				direct := newClient(t, srv.URL, srv.Token("acme"), nil)
				saved, serr := direct.SaveReport(ctx, &resourced.Report{Path: fmt.Sprintf("retry/%d", i), MIMEType: "text/plain", Text: "x"})
				if serr != nil {
					t.Fatal(serr)
				}
				f.fail.Store(tt.fail)
				_, err = c.Read(ctx, saved.URI)
			}
			if tt.wantOK && err != nil {
				t.Fatalf("err = %v, want success after retries", err)
			}
			if !tt.wantOK && err == nil {
				t.Fatalf("succeeded, want an error")
			}
			if tt.wantError != nil && !errors.Is(err, tt.wantError) {
				t.Errorf("err = %v, want %v", err, tt.wantError)
			}
			if got := f.calls.Load(); got != tt.wantCalls {
				t.Errorf("%d attempts reached the proxy, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestRefusedConnectionRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	var calls atomic.Int32
	c, err := resourced.NewClient("http://"+addr+"/mcp", tokenFunc(func() (string, error) { calls.Add(1); return "t", nil }),
		&resourced.Options{Retry: resourced.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SaveReport(ctx(t), &resourced.Report{Path: "p", MIMEType: "text/plain", Text: "x"})
	if err == nil {
		t.Fatal("save to a closed port succeeded")
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("token fetched %d times, want one per attempt (3)", got)
	}
}

type tokenFunc func() (string, error)

func (f tokenFunc) Token(context.Context) (string, error) { return f() }

func TestTokenSourceError(t *testing.T) {
	boom := errors.New("vault sealed")
	c, _ := resourced.NewClient("http://127.0.0.1:1/mcp", tokenFunc(func() (string, error) { return "", boom }), nil)
	if _, err := c.Read(ctx(t), "report://acme/x"); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the token source's error", err)
	}
}

// TestTokenStaysWithOrigin: a redirect to another origin does not carry
// the bearer token.
func TestTokenStaysWithOrigin(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sekret" {
			t.Errorf("first hop Authorization = %q", r.Header.Get("Authorization"))
		}
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	c := newClient(t, redirect.URL+"/mcp", "sekret", &resourced.Options{Retry: resourced.RetryPolicy{MaxAttempts: 1}})
	c.Read(ctx(t), "report://acme/x")
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) == 0 {
		t.Fatal("the redirect was not followed; the test proves nothing")
	}
	for _, h := range leaked {
		if h != "" {
			t.Errorf("the other origin got Authorization %q", h)
		}
	}
}

func TestAll(t *testing.T) {
	srv := clienttest.New(t, nil)
	ctx := ctx(t)
	c := newClient(t, srv.URL, srv.Token("acme"), nil)
	var want []string
	for i := range 5 {
		s, err := c.SaveReport(ctx, &resourced.Report{Path: fmt.Sprintf("page/%d", i), MIMEType: "text/plain", Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s.URI)
	}
	var got []string
	for m, err := range c.All(ctx, &resourced.ListOptions{Scheme: "report", Prefix: "page/", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.URI)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
}

// TestToolErrorRetrySafe: a tool's retrySafe failure is retried, any other
// tool failure is returned at once.
func TestToolErrorRetrySafe(t *testing.T) {
	var calls atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "save_report", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := calls.Add(1)
			var args struct {
				Path string `json:"path"`
			}
			json.Unmarshal(req.Params.Arguments, &args)
			fail := func(kind string, retrySafe bool) *mcp.CallToolResult {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: kind}},
					StructuredContent: map[string]any{"status": "failed", "errorKind": kind, "message": "m", "retrySafe": retrySafe}}
			}
			switch {
			case args.Path == "flaky" && n == 1:
				return fail("unavailable", true), nil
			case args.Path == "big":
				return fail("too_large", false), nil
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"status": "created", "uri": "report://t/" + args.Path}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer hs.Close()
	c := newClient(t, hs.URL, "t", &resourced.Options{Retry: resourced.RetryPolicy{BaseDelay: time.Millisecond}})
	saved, err := c.SaveReport(ctx(t), &resourced.Report{Path: "flaky", MIMEType: "text/plain", Text: "x"})
	if err != nil || saved.URI != "report://t/flaky" || calls.Load() != 2 {
		t.Errorf("SaveReport = %+v, %v after %d calls; want success on the 2nd", saved, err, calls.Load())
	}
	calls.Store(0)
	_, err = c.SaveReport(ctx(t), &resourced.Report{Path: "big", MIMEType: "text/plain", Text: "x"})
	var te *resourced.ToolError
	if !errors.Is(err, resourced.ErrTooLarge) || !errors.As(err, &te) || te.RetrySafe || calls.Load() != 1 {
		t.Errorf("too_large: %#v after %d calls; want one call and ErrTooLarge", err, calls.Load())
	}
}
