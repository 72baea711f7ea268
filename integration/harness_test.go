// Package integration tests the real resourced binary over HTTP with real
// MCP clients: the go-sdk client, the official TypeScript client, and raw
// JSON-RPC whose every response is validated against the official MCP
// JSON Schema of its protocol version.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// binary is the resourced binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("integration: skipped under -short")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "resourced-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "resourced")
	args := []string{"build", "-o", binary}
	if os.Getenv("RESOURCED_IT_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../cmd/resourced")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building resourced:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// instance is one running resourced process, seen by one caller.
type instance struct {
	t       *testing.T
	dataDir string
	config  string
	cmd     *exec.Cmd
	URL     string // http://127.0.0.1:PORT
	logs    *syncBuffer
	stdout  *syncBuffer
	done    chan struct{}
	// Key signs test tokens; Token is sent by rpc and the clients (tenant
	// "default", both scopes, unless made with as).
	Key   []byte
	Token string
	// extraEnv is added to the process environment.
	extraEnv []string
	// listen is the address to serve on; "" means 127.0.0.1:0.
	listen string
	// ns, when set, is the network namespace the process runs and is
	// reached in (netns_test.go).
	ns *netns
}

// testBaseURL is the canonical URL test servers are configured with, so
// token audiences do not depend on the port.
const testBaseURL = "http://resourced.test"

// as returns a view of the same process that sends token.
func (in *instance) as(token string) *instance {
	c := *in
	c.Token = token
	return &c
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer starts resourced on 127.0.0.1:0 in a fresh data directory
// with JWT auth: an HMAC key made for the test, baseURL testBaseURL, and
// extraYAML appended to the config (top-level keys other than baseURL and
// auth). It waits for the "listening" log line.
func startServer(t *testing.T, extraYAML string) *instance {
	t.Helper()
	return startServerEnv(t, extraYAML)
}

// startServerEnv is startServer with extra environment variables.
func startServerEnv(t *testing.T, extraYAML string, env ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "hmac.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := startServerConfigEnv(t, fmt.Sprintf("baseURL: %s\nauth:\n  hmacSecretFile: %s\n%s", testBaseURL, keyFile, extraYAML), env...)
	in.Key = key
	in.Token = in.mint(tokenClaims("default", scopeRead+" "+scopeWrite))
	return in
}

// startServerConfig starts resourced with exactly configYAML.
func startServerConfig(t *testing.T, configYAML string) *instance {
	t.Helper()
	return startServerConfigEnv(t, configYAML)
}

func startServerConfigEnv(t *testing.T, configYAML string, env ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "resourced.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, dataDir: filepath.Join(dir, "data"), config: cfg, extraEnv: env}
	in.start()
	t.Cleanup(in.stop)
	return in
}

const (
	scopeRead  = "resources:read"
	scopeWrite = "resources:write"
)

// tokenClaims are valid claims for testBaseURL: tenant, scopes, 1h life.
func tokenClaims(tenant, scope string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": testBaseURL, "aud": testBaseURL, "sub": "it-" + tenant,
		"tenant": tenant, "scope": scope,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// mint signs claims with the instance's HMAC key (HS256).
func (in *instance) mint(claims jwt.MapClaims) string {
	in.t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(in.Key)
	if err != nil {
		in.t.Fatal(err)
	}
	return tok
}

var listenRE = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

func (in *instance) start() {
	t := in.t
	t.Helper()
	in.logs = &syncBuffer{}
	in.stdout = &syncBuffer{}
	listen := in.listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	in.cmd = in.binCmd("serve", "--config", in.config, "--listen", listen, "--data-dir", in.dataDir)
	in.cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=")
	in.cmd.Env = append(in.cmd.Env, in.extraEnv...)
	in.launch("resourced", 30*time.Second)
}

// launch starts in.cmd, copies its stderr into in.logs and waits up to
// wait for the "listening" line, whose address becomes in.URL; name is the
// command as failures name it.
func (in *instance) launch(name string, wait time.Duration) {
	t := in.t
	t.Helper()
	in.cmd.Stdout = in.stdout
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in.done = make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			in.logs.Write([]byte(line + "\n"))
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		in.cmd.Wait()
		close(in.done)
	}()
	select {
	case a := <-addr:
		in.URL = "http://" + a
	case <-in.done:
		t.Fatalf("%s exited before listening:\n%s", name, in.logs)
	case <-time.After(wait):
		t.Fatalf("%s did not log 'listening' in %s:\n%s", name, wait, in.logs)
	}
}

// binCmd runs the binary with args, in the instance's network namespace
// when it has one.
func (in *instance) binCmd(args ...string) *exec.Cmd {
	if in.ns != nil {
		return in.ns.command(binary, args...)
	}
	return exec.Command(binary, args...)
}

// httpClient is the client that reaches the instance.
func (in *instance) httpClient() *http.Client {
	if in.ns != nil {
		return in.ns.client
	}
	return http.DefaultClient
}

// stop sends SIGTERM and waits for a clean exit.
func (in *instance) stop() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	select {
	case <-in.done:
		return
	default:
	}
	in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(20 * time.Second):
		in.cmd.Process.Kill()
		<-in.done
		in.t.Errorf("resourced did not stop on SIGTERM within 20s")
	}
	if in.t.Failed() {
		in.t.Logf("resourced logs:\n%s", in.logs)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (in *instance) kill() {
	in.cmd.Process.Kill()
	<-in.done
}

// restart stops the process and starts it again on the same data.
func (in *instance) restart() {
	in.stop()
	in.start()
}

// Protocol versions under test.
const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

var versions = []string{v2026, v2025}

// rawResponse is one JSON-RPC exchange over plain HTTP.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
	// Parsed JSON-RPC envelope.
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

var rpcID int64
var rpcIDMu sync.Mutex

func nextID() int64 {
	rpcIDMu.Lock()
	defer rpcIDMu.Unlock()
	rpcID++
	return rpcID
}

// headerValue encodes an Mcp-Name value as SEP-2243 asks: base64 when it
// is not plain printable ASCII.
func headerValue(s string) string {
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
		}
	}
	return s
}

// rpc sends one JSON-RPC request speaking version (2026-07-28 with
// per-request _meta and headers; 2025-11-25 stateless without initialize),
// validates the response against the official schema and returns it.
func (in *instance) rpc(version, method string, params map[string]any) *rawResponse {
	in.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", version)
	if version >= v2026 {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "resourced-it", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		hdr.Set("Mcp-Method", method)
		switch method {
		case "tools/call":
			hdr.Set("Mcp-Name", headerValue(params["name"].(string)))
		case "resources/read":
			hdr.Set("Mcp-Name", headerValue(params["uri"].(string)))
		}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": method, "params": params})
	if err != nil {
		in.t.Fatal(err)
	}
	r := in.post(hdr, body)
	validateResponse(in.t, version, method, r.Body)
	return r
}

// header is the base header of a request: the bearer token, if any.
func (in *instance) header() http.Header {
	h := http.Header{}
	if in.Token != "" {
		h.Set("Authorization", "Bearer "+in.Token)
	}
	return h
}

// post sends a raw body to /mcp.
func (in *instance) post(hdr http.Header, body []byte) *rawResponse {
	in.t.Helper()
	req, err := http.NewRequest("POST", in.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := in.httpClient().Do(req.WithContext(ctx))
	if err != nil {
		in.t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		in.t.Fatal(err)
	}
	r := &rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, r); err != nil {
			in.t.Fatalf("response is not JSON: %v\n%s", err, b)
		}
	}
	return r
}

// call is rpc for tools/call, returning the decoded result.
func (in *instance) call(version, tool string, args map[string]any) *toolResult {
	in.t.Helper()
	r := in.rpc(version, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil {
		in.t.Fatalf("tools/call %s: JSON-RPC error %d %s", tool, r.Error.Code, r.Error.Message)
	}
	var res toolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		in.t.Fatal(err)
	}
	res.raw = r.Result
	return &res
}

type toolResult struct {
	raw     json.RawMessage
	Content []struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		URI         string `json:"uri"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		MIMEType    string `json:"mimeType"`
		Size        *int64 `json:"size"`
		Annotations *struct {
			LastModified string `json:"lastModified"`
		} `json:"annotations"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// structured decodes structuredContent into a map.
func (r *toolResult) structured(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
		t.Fatalf("structuredContent: %v\n%s", err, r.raw)
	}
	return m
}

func (in *instance) http2025() http.Header {
	h := in.header()
	h.Set("MCP-Protocol-Version", v2025)
	return h
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// postRaw posts body to baseURL/mcp with token (2025-11-25) and
// returns the response body; unlike post it reports transport errors
// instead of failing the test.
func postRaw(baseURL, token string, body []byte) ([]byte, error) {
	req, err := http.NewRequest("POST", baseURL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", v2025)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b, nil
}
