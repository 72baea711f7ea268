package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file runs resourced next to a server that is backed by it, each a
// real process: examples/reportserver (Go, the client and the mount) and
// ts/backing.mjs (TypeScript, the README snippet). Clients talk only to the
// backed server; what they read through it must be what resourced serves.

// sideProcess is a child process that logs a "listening" address.
type sideProcess struct {
	URL  string // http://host:port
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startSideProcess starts cmd and waits until a line of its stdout or stderr
// matches re, whose first group is the address.
func startSideProcess(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) *sideProcess {
	t.Helper()
	p := &sideProcess{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.out.Write([]byte(line + "\n"))
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), p.out)
		}
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		t.Fatalf("%s exited before listening:\n%s", cmd.Path, p.out)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report its address in 30s:\n%s", cmd.Path, p.out)
	}
	return p
}

// buildReportServer builds examples/reportserver into the test's temp dir.
func buildReportServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "reportserver")
	cmd := exec.Command("go", "build", "-o", bin, "../examples/reportserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building examples/reportserver: %v\n%s", err, out)
	}
	return bin
}

// readWire is one resources/read answer as the wire had it.
type readWire struct {
	Contents []struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		Text     *string        `json:"text"`
		Blob     []byte         `json:"blob"`
		Meta     map[string]any `json:"_meta"`
	} `json:"contents"`
	TTLMs      *int           `json:"ttlMs"`
	CacheScope string         `json:"cacheScope"`
	Meta       map[string]any `json:"_meta"`
	ResultType string         `json:"resultType"`
}

func (in *instance) readWire(version, uri string) (*readWire, *rawResponse) {
	in.t.Helper()
	r := in.rpcMaySSE(version, "resources/read", map[string]any{"uri": uri})
	if r.Error != nil {
		return nil, r
	}
	var w readWire
	if err := json.Unmarshal(r.Result, &w); err != nil {
		in.t.Fatal(err)
	}
	return &w, r
}

// sameRead checks that a read through a backed server equals resourced's
// own answer: body byte for byte, mimeType, the item's _meta, ttlMs,
// cacheScope and resultType. Only the result's serverInfo differs.
func sameRead(t *testing.T, what string, direct, through *readWire) {
	t.Helper()
	if len(through.Contents) != 1 || len(direct.Contents) != 1 {
		t.Fatalf("%s: %d content items through, %d direct", what, len(through.Contents), len(direct.Contents))
	}
	d, g := direct.Contents[0], through.Contents[0]
	if (d.Text == nil) != (g.Text == nil) || (d.Text != nil && *d.Text != *g.Text) || !bytes.Equal(d.Blob, g.Blob) {
		t.Errorf("%s: the body differs from resourced's", what)
	}
	if d.URI != g.URI || d.MIMEType != g.MIMEType {
		t.Errorf("%s: uri/mimeType %s %s, resourced %s %s", what, g.URI, g.MIMEType, d.URI, d.MIMEType)
	}
	if diff := cmp.Diff(d.Meta, g.Meta); diff != "" {
		t.Errorf("%s: item _meta differs (-resourced +through):\n%s", what, diff)
	}
	if direct.TTLMs == nil || through.TTLMs == nil || *direct.TTLMs != *through.TTLMs || direct.CacheScope != through.CacheScope {
		t.Errorf("%s: ttlMs/cacheScope %v/%q, resourced %v/%q", what, deref(through.TTLMs), through.CacheScope, deref(direct.TTLMs), direct.CacheScope)
	}
	if direct.ResultType != through.ResultType {
		t.Errorf("%s: resultType %q, resourced %q", what, through.ResultType, direct.ResultType)
	}
}

// rpcMaySSE is rpc for servers that may answer with an SSE stream (the TS
// SDK's stateless 2025-11-25 path does): the JSON-RPC message is taken from
// the stream's data line, then validated like rpc's.
func (in *instance) rpcMaySSE(version, method string, params map[string]any) *rawResponse {
	in.t.Helper()
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", version)
	if version >= v2026 {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "resourced-it", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		hdr.Set("Mcp-Method", method)
		if method == "resources/read" {
			hdr.Set("Mcp-Name", headerValue(params["uri"].(string)))
		}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": method, "params": params})
	if err != nil {
		in.t.Fatal(err)
	}
	r := in.post(hdr, body)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		var data []byte
		for line := range strings.SplitSeq(string(r.Body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
			}
		}
		r = &rawResponse{Status: r.Status, Header: r.Header, Body: data}
		if err := json.Unmarshal(data, r); err != nil {
			in.t.Fatalf("%s: no JSON-RPC message in the SSE stream: %v", method, err)
		}
	}
	validateResponse(in.t, version, method, r.Body)
	return r
}

// reportingTo is a view of in that reports to t (a subtest).
func (in *instance) reportingTo(t *testing.T) *instance {
	c := *in
	c.t = t
	return &c
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestReportServer runs resourced and examples/reportserver as two
// processes. Users of the example authenticate to it with their own keys
// (alice → tenant acme, bob → tenant beta); a go-sdk client and the
// TypeScript client talk only to the example: they call generate_report and
// read the unlisted link through it, byte-identical to what resourced
// serves, with the same ttlMs and cacheScope; bob cannot read alice's link.
func TestReportServer(t *testing.T) {
	in := startServer(t, "")
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	beta := in.as(in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte(fmt.Sprintf("# name key resourced-token\nalice alice-key %s\nbob bob-key %s\n", acme.Token, beta.Token)), 0o600); err != nil {
		t.Fatal(err)
	}
	ex := startSideProcess(t, exec.Command(buildReportServer(t), "--listen", "127.0.0.1:0", "--resourced", in.URL+"/mcp", "--users", users), listenRE)

	resp, err := http.Get(ex.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	anon := (&instance{t: t, URL: ex.URL}).post(http.Header{"Mcp-Protocol-Version": {v2025}}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	wrong := (&instance{t: t, URL: ex.URL, Token: acme.Token}).post(http.Header{"Mcp-Protocol-Version": {v2025}}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if anon.Status != 401 || wrong.Status != 401 {
		t.Errorf("no key: HTTP %d, a resourced token: HTTP %d; want 401 for both (only user keys open the example)", anon.Status, wrong.Status)
	}
	alice := &instance{t: t, URL: ex.URL, Token: "alice-key"}
	bob := &instance{t: t, URL: ex.URL, Token: "bob-key"}

	for _, v := range versions {
		t.Run("go-sdk/"+v, func(t *testing.T) {
			acme, beta, alice, bob := acme.reportingTo(t), beta.reportingTo(t), alice.reportingTo(t), bob.reportingTo(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			connect := func(key string) *mcp.ClientSession {
				c := mcp.NewClient(&mcp.Implementation{Name: "it-reportserver", Version: "1"}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ex.URL + "/mcp", HTTPClient: bearerClient(key), DisableStandaloneSSE: true},
					&mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				return cs
			}
			cs := connect("alice-key")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate_report", Arguments: map[string]any{"seed": 7}})
			if err != nil || res.IsError {
				t.Fatalf("generate_report: %v %+v", err, res)
			}
			var link *mcp.ResourceLink
			var summary string
			for _, c := range res.Content {
				switch c := c.(type) {
				case *mcp.ResourceLink:
					link = c
				case *mcp.TextContent:
					summary = c.Text
				}
			}
			var sc struct {
				URI    string         `json:"uri"`
				Rows   int            `json:"rows"`
				Bytes  int64          `json:"bytes"`
				SHA256 string         `json:"sha256"`
				RowsBy map[string]int `json:"rowsByRegion"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &sc)
			if link == nil || !strings.HasPrefix(link.URI, "report://acme/reportserver/sales/") || link.URI != sc.URI ||
				link.Size == nil || *link.Size != sc.Bytes || sc.Bytes < 2<<20-100<<10 || sc.Rows != 42000 || len(sc.RowsBy) != 4 {
				t.Fatalf("generate_report: link %+v, structuredContent %s", link, b)
			}
			if !strings.Contains(summary, link.URI) || strings.HasPrefix(summary, "{") {
				t.Errorf("summary text %q should be a short sentence naming the link", summary)
			}

			// The link is unlisted: resourced's resources/list does not show it.
			if l := acme.rpc(v, "resources/list", nil); strings.Contains(string(l.Result), link.URI) {
				t.Errorf("the report is listed: %s", l.Result)
			}

			// Read through the example with go-sdk's client ...
			got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
			if err != nil {
				t.Fatalf("read through the example: %v", err)
			}
			direct, _ := acme.readWire(v, link.URI)
			if direct == nil {
				t.Fatal("resourced cannot read the report")
			}
			if len(got.Contents) != 1 || got.Contents[0].Text != *direct.Contents[0].Text || sha256Hex([]byte(got.Contents[0].Text)) != sc.SHA256 {
				t.Errorf("go-sdk client: body through the example differs from resourced's")
			}
			if got.TTLMs != *direct.TTLMs || got.CacheScope != direct.CacheScope || got.CacheScope != "private" {
				t.Errorf("go-sdk client: ttlMs/cacheScope %d/%q, resourced %d/%q", got.TTLMs, got.CacheScope, *direct.TTLMs, direct.CacheScope)
			}
			// ... and on the wire, schema-validated.
			through, r := alice.readWire(v, link.URI)
			if through == nil {
				t.Fatalf("raw read through the example: %s", r.Body)
			}
			sameRead(t, "example", direct, through)
			if v == v2026 {
				info, _ := through.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
				if name, _ := info["name"].(string); name != "reportserver" {
					t.Errorf("serverInfo of the read names %q, want reportserver", name)
				}
			}

			// bob (tenant beta) cannot read it through the example: the same
			// -32602 resourced gives bob, which is its unknown-URI answer.
			_, err = connect("bob-key").ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != -32602 || we.Message != "Resource not found" || string(we.Data) != `{"uri":"`+link.URI+`"}` {
				t.Errorf("bob read alice's report: %v", err)
			}
			_, rb := bob.readWire(v, link.URI)
			_, rd := beta.readWire(v, link.URI)
			_, ru := beta.readWire(v, link.URI+"-nope")
			if rb.Error == nil || rd.Error == nil || rb.Error.Code != rd.Error.Code || rb.Error.Message != rd.Error.Message || !bytes.Equal(rb.Error.Data, rd.Error.Data) {
				t.Errorf("bob through the example: %s; resourced to bob: %s", rb.Body, rd.Body)
			}
			if ru.Error == nil || ru.Error.Message != rd.Error.Message {
				t.Errorf("a foreign URI and an unknown one answer differently: %s vs %s", rd.Body, ru.Body)
			}
		})
	}

	t.Run("typescript", func(t *testing.T) {
		sum := runBackingCheck(t, ex.URL+"/mcp", "alice-key", "bob-key")
		checkBackingSummary(t, sum, acme.reportingTo(t), v2026)
		if sum.OtherUser == nil || sum.OtherUser.Code != -32602 || sum.OtherUser.Data["uri"] != sum.URI {
			t.Errorf("bob through the example with the TS client: %+v", sum.OtherUser)
		}
		if sum.StructuredContent["rows"] != float64(42000) {
			t.Errorf("structuredContent seen by the TS client: %v", sum.StructuredContent)
		}
	})
}

// backingSummary is the JSON line of `node backing.mjs check`.
type backingSummary struct {
	OK                bool           `json:"ok"`
	ProtocolVersion   string         `json:"protocolVersion"`
	URI               string         `json:"uri"`
	LinkSize          int64          `json:"linkSize"`
	StructuredContent map[string]any `json:"structuredContent"`
	Item              struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		Meta     map[string]any `json:"_meta"`
		IsText   bool           `json:"isText"`
	} `json:"item"`
	BodyBytes  int64      `json:"bodyBytes"`
	BodySHA256 string     `json:"bodySha256"`
	TTLMs      *int       `json:"ttlMs"`
	CacheScope string     `json:"cacheScope"`
	Unknown    *rpcErrObj `json:"unknown"`
	OtherUser  *rpcErrObj `json:"otherUser"`
}

type rpcErrObj struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// runBackingCheck runs the official TypeScript client (ts/backing.mjs
// check) against url with bearer userKey (and otherKey as a second user).
func runBackingCheck(t *testing.T, url, userKey, otherKey string) *backingSummary {
	t.Helper()
	node := requireTS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "backing.mjs"), "check", url)
	cmd.Env = append(os.Environ(), "USER_KEY="+userKey, "OTHER_KEY="+otherKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node ts/backing.mjs check: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var s backingSummary
	if err := json.Unmarshal([]byte(lastLine(stdout.String())), &s); err != nil || !s.OK {
		t.Fatalf("no JSON summary from backing.mjs check (%v):\n%s%s", err, stdout.String(), stderr.String())
	}
	return &s
}

// checkBackingSummary compares what the TS client read through a backed
// server with resourced's own answer to rd.
func checkBackingSummary(t *testing.T, s *backingSummary, rd *instance, version string) {
	t.Helper()
	if s.ProtocolVersion != version {
		t.Errorf("TS client negotiated %s with the backed server, want %s", s.ProtocolVersion, version)
	}
	direct, _ := rd.readWire(version, s.URI)
	if direct == nil {
		t.Fatalf("resourced cannot read %s", s.URI)
	}
	d := direct.Contents[0]
	body := d.Blob
	if d.Text != nil {
		body = []byte(*d.Text)
	}
	if s.BodySHA256 != sha256Hex(body) || s.BodyBytes != int64(len(body)) || s.LinkSize != int64(len(body)) || s.Item.IsText != (d.Text != nil) {
		t.Errorf("TS client: body %d bytes sha256 %s (link size %d); resourced %d bytes %s", s.BodyBytes, s.BodySHA256, s.LinkSize, len(body), sha256Hex(body))
	}
	if s.Item.URI != d.URI || s.Item.MIMEType != d.MIMEType {
		t.Errorf("TS client: item %s %s, resourced %s %s", s.Item.URI, s.Item.MIMEType, d.URI, d.MIMEType)
	}
	if diff := cmp.Diff(d.Meta, s.Item.Meta); diff != "" {
		t.Errorf("TS client: item _meta differs (-resourced +through):\n%s", diff)
	}
	if s.TTLMs == nil || *s.TTLMs != *direct.TTLMs || s.CacheScope != direct.CacheScope {
		t.Errorf("TS client: ttlMs/cacheScope %v/%q, resourced %d/%q", deref(s.TTLMs), s.CacheScope, *direct.TTLMs, direct.CacheScope)
	}
	if s.Unknown == nil || s.Unknown.Code != -32602 || s.Unknown.Message != "Resource not found" || s.Unknown.Data["uri"] != s.URI+"-missing" {
		t.Errorf("TS client: unknown URI through the backed server: %+v", s.Unknown)
	}
}

var tsListenRE = regexp.MustCompile(`^listening (\S+)$`)

// TestBacking runs the README's TypeScript snippet (ts/backing.mjs serve,
// the official TS server SDK) as a server backed by resourced, and checks
// that go-sdk's client and the TS client get resourced's answers through it.
func TestBacking(t *testing.T) {
	node := requireTS(t)
	if _, err := os.Stat(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "server", "package.json")); err != nil {
		if os.Getenv("RESOURCED_REQUIRE_TS") == "1" {
			t.Fatalf("@modelcontextprotocol/server is not installed: %s", tsSetupHint)
		}
		t.Skipf("@modelcontextprotocol/server is not installed: %s", tsSetupHint)
	}
	in := startServer(t, "")
	cmd := exec.Command(node, filepath.Join("ts", "backing.mjs"), "serve")
	cmd.Env = append(os.Environ(), "RESOURCED_URL="+in.URL+"/mcp", "RESOURCED_TOKEN="+in.Token, "LISTEN=127.0.0.1:0")
	ts := startSideProcess(t, cmd, tsListenRE)

	for _, v := range versions {
		t.Run("go-sdk/"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "it-backing", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate_report"})
			if err != nil || res.IsError {
				t.Fatalf("generate_report: %v %+v", err, res)
			}
			var link *mcp.ResourceLink
			for _, c := range res.Content {
				if l, ok := c.(*mcp.ResourceLink); ok {
					link = l
				}
			}
			if link == nil || !strings.HasPrefix(link.URI, "report://default/reports/") {
				t.Fatalf("generate_report returned no report link: %+v", res.Content)
			}
			in, proxy := in.reportingTo(t), &instance{t: t, URL: ts.URL}
			got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
			direct, _ := in.readWire(v, link.URI)
			if err != nil || direct == nil {
				t.Fatalf("read: %v (resourced: %v)", err, direct)
			}
			if got.Contents[0].Text != *direct.Contents[0].Text || got.TTLMs != *direct.TTLMs || got.CacheScope != direct.CacheScope {
				t.Errorf("go-sdk client through the TS server: body equal %v, ttl %d/%d, scope %q/%q",
					got.Contents[0].Text == *direct.Contents[0].Text, got.TTLMs, *direct.TTLMs, got.CacheScope, direct.CacheScope)
			}
			through, r := proxy.readWire(v, link.URI)
			if through == nil {
				t.Fatalf("raw read through the TS server: %s", r.Body)
			}
			sameRead(t, "TS server", direct, through)

			_, rp := proxy.readWire(v, link.URI+"-nope")
			_, rd := in.readWire(v, link.URI+"-nope")
			if rp.Error == nil || rp.Error.Code != rd.Error.Code || rp.Error.Message != rd.Error.Message || !bytes.Equal(rp.Error.Data, rd.Error.Data) {
				t.Errorf("unknown URI through the TS server: %s; resourced: %s", rp.Body, rd.Body)
			}
		})
	}
	t.Run("typescript", func(t *testing.T) {
		checkBackingSummary(t, runBackingCheck(t, ts.URL+"/mcp", "", ""), in.reportingTo(t), v2026)
	})
}
