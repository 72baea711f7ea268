package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listener is a go-sdk client session that records resource updates.
type listener struct {
	cs      *mcp.ClientSession
	updates chan string
}

func listen(t *testing.T, in *instance, version string) *listener {
	t.Helper()
	l := &listener{updates: make(chan string, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: "resourced-it-listener", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			l.updates <- req.Params.URI
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: in.URL + "/mcp", HTTPClient: bearerClient(in.Token)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	return l
}

func (l *listener) want(t *testing.T, uri, what string, within time.Duration) {
	t.Helper()
	select {
	case got := <-l.updates:
		if got != uri {
			t.Errorf("%s: update for %s, want %s", what, got, uri)
		}
	case <-time.After(within):
		t.Errorf("%s: no notifications/resources/updated for %s within %s", what, uri, within)
	}
}

func (l *listener) wantNone(t *testing.T, what string, during time.Duration) {
	t.Helper()
	select {
	case got := <-l.updates:
		t.Errorf("%s: unexpected update for %s", what, got)
	case <-time.After(during):
	}
}

func TestChangeNotifications(t *testing.T) {
	in := startServer(t, "")
	sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "watched", "mimeType": "text/plain", "text": "v1"}), 1)
	uri := sc["uri"].(string)
	other := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "unwatched", "mimeType": "text/plain", "text": "x"}), 1)

	l := listen(t, in, v2026)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	checkSuccess(t, in.call(v2025, "save_report", map[string]any{"path": "unwatched", "mimeType": "text/plain", "text": "y", "ifMatch": other["sha256"]}), 1)
	l.wantNone(t, "replace of another resource", 300*time.Millisecond)

	rep := checkSuccess(t, in.call(v2025, "save_report", map[string]any{"path": "watched", "mimeType": "text/plain", "text": "v2", "ifMatch": sc["sha256"]}), 1)
	l.want(t, uri, "replace", 5*time.Second)
	checkSuccess(t, in.call(v2026, "delete_resource", map[string]any{"uri": uri, "ifMatch": rep["sha256"]}), 0)
	l.want(t, uri, "delete", 5*time.Second)

	// Subscriptions follow read access: a listen naming an unknown or a
	// foreign URI is refused with the same -32602 as a read.
	for _, bad := range []string{"report://default/never", "report://acme/x"} {
		h := in.header()
		h.Set("MCP-Protocol-Version", v2026)
		h.Set("Mcp-Method", "subscriptions/listen")
		r := in.post(h, []byte(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
			`"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},`+
			`"notifications":{"resourceSubscriptions":["`+bad+`"]}}}`))
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(string(r.Error.Data), bad) {
			t.Errorf("listen to %s: %s, want -32602 naming the URI", bad, r.Body)
		}
	}

	// 2025-11-25 cannot subscribe in stateless mode (go-sdk answers
	// method not found): a clear refusal, not a subscription that never fires.
	legacy := listen(t, in, v2025)
	err := legacy.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: other["uri"].(string)})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("2025-11-25 subscribe: err %v, want JSON-RPC %d", err, jsonrpc.CodeMethodNotFound)
	}
}

// TestChangeNotificationsAcrossInstances: a listener on B hears of a
// replace made through A, found by B's polling of the shared bucket.
func TestChangeNotificationsAcrossInstances(t *testing.T) {
	endpoint, bucket := s3Target(t)
	a := startServer(t, s3Config(endpoint, bucket, "nt-"+randomHex(6))+"notifyPollInterval: 200ms\n")
	b := startPeer(t, a)
	sc := checkSuccess(t, a.call(v2026, "save_report", map[string]any{"path": "shared", "mimeType": "text/plain", "text": "v1"}), 1)
	uri := sc["uri"].(string)
	l := listen(t, b, v2026)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe on B: %v", err)
	}
	checkSuccess(t, a.call(v2026, "save_report", map[string]any{"path": "shared", "mimeType": "text/plain", "text": "v2", "overwrite": true}), 1)
	l.want(t, uri, "replace through A", 5*time.Second)
	l.wantNone(t, "no duplicate", 600*time.Millisecond)
}

// TestNotificationsStopWhenAccessEnds: tenant acme listens on default's
// public report. Once it is private, acme hears nothing of it (the steps of
// issue 13, finding 4) while its read is -32602, and its stream stays open:
// when the report is public again acme hears of it.
func TestNotificationsStopWhenAccessEnds(t *testing.T) {
	in := startServer(t, "")
	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	save := func(text, vis string) {
		t.Helper()
		checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "shared", "mimeType": "text/plain", "text": text, "visibility": vis, "overwrite": true}), 1)
	}
	save("v1", "public")
	uri := "report://default/shared"
	owner, other := listen(t, in, v2026), listen(t, acme, v2026)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, l := range []*listener{owner, other} {
		if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	save("v2", "public")
	owner.want(t, uri, "public replace, owner", 5*time.Second)
	other.want(t, uri, "public replace, other tenant", 5*time.Second)

	// The owner hears each step, so each is done before the next.
	save("v2", "private")
	owner.want(t, uri, "made private", 5*time.Second)
	save("v3", "private")
	owner.want(t, uri, "replaced", 5*time.Second)
	if r := acme.rpc(v2026, "resources/read", map[string]any{"uri": uri}); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("acme's read of the private report: %s, want -32602", r.Body)
	}
	checkSuccess(t, in.call(v2026, "delete_resource", map[string]any{"uri": uri}), 0)
	owner.want(t, uri, "deleted", 5*time.Second)
	save("v4", "private")
	owner.want(t, uri, "re-created", 5*time.Second)
	save("v5", "private")
	owner.want(t, uri, "replaced again", 5*time.Second)
	other.wantNone(t, "other tenant while it cannot read", 500*time.Millisecond)

	save("v5", "public")
	owner.want(t, uri, "public again, owner", 5*time.Second)
	other.want(t, uri, "public again, other tenant", 5*time.Second)
}

// rawListen opens a subscriptions/listen naming uris and returns its first
// message: the acknowledgement (the stream then stays open until close or
// the end of the test) or an error.
func rawListen(t *testing.T, in *instance, uris []string) (acked bool, code int64, message string, close func()) {
	t.Helper()
	subs, _ := json.Marshal(uris)
	body := `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"resourceSubscriptions":` + string(subs) + `}}}`
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, in.URL+"/mcp", strings.NewReader(body))
	req.Header = in.header()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", v2026)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	close = func() { cancel(); resp.Body.Close() }
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var msg struct {
			Method string `json:"method"`
			Error  *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &msg) != nil {
			continue
		}
		if msg.Error != nil {
			return false, msg.Error.Code, msg.Error.Message, close
		}
		if msg.Method == "notifications/subscriptions/acknowledged" {
			return true, 0, "", close
		}
	}
	t.Fatalf("listen: the stream ended without an answer (HTTP %d)", resp.StatusCode)
	return false, 0, "", close
}

// TestListenCaps: repeats of a URI count once; a listen may name 100
// distinct URIs and a tenant may hold 64 listens, and past either the
// answer is a -32602 stating the cap. A tenant at its cap leaves others
// unaffected.
func TestListenCaps(t *testing.T) {
	in := startServer(t, "")
	var uris []string
	for i := range 101 {
		sc := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": fmt.Sprintf("cap/%03d", i), "mimeType": "text/plain", "text": "x"}), 1)
		uris = append(uris, sc["uri"].(string))
	}
	repeated := make([]string, 2000)
	for i := range repeated {
		repeated[i] = uris[0]
	}
	if acked, code, msg, _ := rawListen(t, in, repeated); !acked {
		t.Errorf("listen naming one URI 2000 times: %d %s, want it acknowledged", code, msg)
	}
	if acked, code, msg, close := rawListen(t, in, uris[:100]); !acked {
		t.Errorf("listen naming 100 URIs: %d %s, want it acknowledged", code, msg)
	} else {
		close()
	}
	if _, code, msg, _ := rawListen(t, in, uris); code != -32602 || !strings.Contains(msg, "at most 100 ") {
		t.Errorf("listen naming 101 URIs: %d %q, want -32602 stating the cap of 100", code, msg)
	}

	acme := in.as(in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))
	mine := checkSuccess(t, acme.call(v2026, "save_report", map[string]any{"path": "mine", "mimeType": "text/plain", "text": "x"}), 1)["uri"].(string)
	for i := range 64 {
		if acked, code, msg, _ := rawListen(t, acme, []string{mine}); !acked {
			t.Fatalf("acme's listen %d: %d %s, want it acknowledged", i+1, code, msg)
		}
	}
	if _, code, msg, _ := rawListen(t, acme, []string{mine}); code != -32602 || !strings.Contains(msg, "at most 64 ") {
		t.Errorf("acme's 65th listen: %d %q, want -32602 stating the cap of 64", code, msg)
	}
	if acked, code, msg, _ := rawListen(t, in, uris[:1]); !acked {
		t.Errorf("another tenant's listen while acme is at its cap: %d %s, want it acknowledged", code, msg)
	}
}
