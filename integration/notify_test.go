package integration

import (
	"context"
	"errors"
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
