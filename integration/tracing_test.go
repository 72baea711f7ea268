package integration

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver, as a collector serves it:
// POST /v1/traces with an ExportTraceServiceRequest in protobuf, decoded
// with the official proto package.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans []*tracepb.Span
	res   [][]*commonpb.KeyValue // each span's resource attributes
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces in protobuf", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					o.spans = append(o.spans, sp)
					o.res = append(o.res, rs.GetResource().GetAttributes())
				}
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(hs.Close)
	o.URL = hs.URL
	return o
}

// trace is the spans received of one trace id.
func (o *otlpReceiver) trace(id []byte) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if string(s.TraceId) == string(id) {
			out = append(out, s)
		}
	}
	return out
}

// waitFor waits (bounded) until the trace of id holds a span named each
// of names.
func (o *otlpReceiver) waitFor(t *testing.T, id []byte, names ...string) []*tracepb.Span {
	t.Helper()
	return o.waitUntil(t, id, func(spans []*tracepb.Span) string {
		missing := ""
		for _, n := range names {
			if !slices.ContainsFunc(spans, func(s *tracepb.Span) bool { return s.Name == n }) {
				missing = fmt.Sprintf("span %q", n)
			}
		}
		return missing
	})
}

// waitUntil returns trace id's spans once missing, given them, says
// nothing is missing; it fails the test after 60s. Spans arrive in
// batches, in the order they ended.
func (o *otlpReceiver) waitUntil(t *testing.T, id []byte, missing func([]*tracepb.Span) string) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		spans := o.trace(id)
		m := missing(spans)
		if m == "" {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s reached the receiver in 60s; got:\n%s", m, spanTree(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				return fmt.Sprint(v.IntValue)
			}
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// spanTree prints spans as a tree by parent, children in start order,
// each with its kind and attributes (ids and times left out).
func spanTree(spans []*tracepb.Span) string {
	byID := map[string]bool{}
	for _, s := range spans {
		byID[string(s.SpanId)] = true
	}
	slices.SortFunc(spans, func(a, b *tracepb.Span) int { return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano)) })
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range spans {
			p := string(s.ParentSpanId)
			if !byID[p] {
				p = ""
			}
			if p != parent {
				continue
			}
			var kv []string
			for _, a := range s.Attributes {
				v := a.Value.GetStringValue()
				if iv, ok := a.Value.Value.(*commonpb.AnyValue_IntValue); ok {
					v = fmt.Sprint(iv.IntValue)
				}
				kv = append(kv, a.Key+"="+v)
			}
			kind := strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")
			status := ""
			if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				status = " ERROR"
			}
			fmt.Fprintf(&b, "%s%s [%s%s] %s\n", strings.Repeat("  ", depth), s.Name, strings.ToLower(kind), status, strings.Join(kv, " "))
			walk(string(s.SpanId), depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

// tracedUpstream is an HTTP MCP upstream with one tool, big, answering
// about 200 KB of text holding marker; it records the traceparent of each
// tools/call, from its HTTP header and from params._meta.
type tracedUpstream struct {
	URL    string
	mu     sync.Mutex
	header []string
	meta   []string
}

func startTracedUpstream(t *testing.T, marker string) *tracedUpstream {
	t.Helper()
	u := &tracedUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "traced-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: &jsonschema.Schema{Type: "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		u.mu.Lock()
		u.meta = append(u.meta, tp)
		u.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat(marker+" ", 200<<10/(len(marker)+1))}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			u.mu.Lock()
			u.header = append(u.header, r.Header.Get("traceparent"))
			u.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	u.URL = hs.URL + "/mcp"
	return u
}

// TestTracingGatewayOffload: with tracing on (the tracing: section, an
// OTLP/HTTP receiver started here), one gateway tools/call whose answer
// is offloaded is one trace, continuing the caller's traceparent header:
// the HTTP request, under it the MCP tools/call, under that the upstream
// call (whose traceparent the upstream got in its HTTP header and in
// params._meta) and the store put of the offloaded part. A resources/read
// of the link (the fast read) is traced from its params._meta.traceparent.
// No attribute, resource attribute, event or link holds the token, the
// signing key, the body, the arguments or the resource's path.
func TestTracingGatewayOffload(t *testing.T) {
	recv := startOTLPReceiver(t)
	const marker = "BODY-7f3a-not-for-traces"
	up := startTracedUpstream(t, marker)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // ms: spans reach the receiver soon
	in := startGateway(t, true, fmt.Sprintf("gateway:\n  upstreams:\n    - name: gosdk\n      url: %s\n      callTimeout: 20s\n      required: false\n"+
		"tracing:\n  enabled: true\n  endpoint: %s\n  serviceName: resourced-it\n", up.URL, recv.URL))

	traceID, parentID := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", v2025)
	hdr.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	const argMarker = "ARG-51c2-not-for-traces"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "tools/call",
		"params": map[string]any{"name": "big", "arguments": map[string]any{"q": argMarker}}})
	r := in.post(hdr, body)
	var res toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.IsError {
		t.Fatalf("tools/call big: %s", r.Body)
	}
	link := ""
	for _, c := range res.Content {
		if c.Type == "resource_link" {
			link = c.URI
		}
	}
	if link == "" {
		t.Fatalf("the 200 KB answer was not offloaded: %s", r.Body)
	}

	tid, _ := hex.DecodeString(traceID)
	spans := recv.waitFor(t, tid, "POST /mcp", "tools/call big", "store put")
	tree := spanTree(spans)
	t.Logf("span tree of one offloading gateway call:\n%s", tree)

	find := func(name string) *tracepb.Span {
		t.Helper()
		for _, s := range spans {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no span %q in\n%s", name, tree)
		return nil
	}
	httpSpan := find("POST /mcp")
	if hex.EncodeToString(httpSpan.ParentSpanId) != parentID || httpSpan.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the HTTP span's parent is %x (kind %v), want the caller's %s", httpSpan.ParentSpanId, httpSpan.Kind, parentID)
	}
	var mcpSpan, upSpan *tracepb.Span
	for _, s := range spans {
		switch {
		case s.Name == "tools/call big" && s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			mcpSpan = s
		case s.Name == "tools/call big" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			upSpan = s
		}
	}
	if mcpSpan == nil || upSpan == nil {
		t.Fatalf("want a server and a client span tools/call big:\n%s", tree)
	}
	if string(mcpSpan.ParentSpanId) != string(httpSpan.SpanId) {
		t.Errorf("the MCP span is not under the HTTP span:\n%s", tree)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "big", "mcp.protocol.version": v2025, "resourced.tenant": "default"} {
		if got := attr(mcpSpan, k); got != want {
			t.Errorf("MCP span %s = %q, want %q", k, got, want)
		}
	}
	if string(upSpan.ParentSpanId) != string(mcpSpan.SpanId) || attr(upSpan, "resourced.upstream") != "gosdk" {
		t.Errorf("the upstream call is not under the MCP span, or names no upstream:\n%s", tree)
	}
	put := find("store put")
	if string(put.ParentSpanId) != string(mcpSpan.SpanId) || attr(put, "resourced.tenant") != "default" {
		t.Errorf("the store put is not under the MCP span of tenant default:\n%s", tree)
	}
	// The upstream got the upstream call's span as its parent, in _meta
	// and in its HTTP header.
	want := "00-" + traceID + "-" + hex.EncodeToString(upSpan.SpanId) + "-01"
	up.mu.Lock()
	gotMeta, gotHeader := slices.Clone(up.meta), slices.Clone(up.header)
	up.mu.Unlock()
	if !slices.Contains(gotMeta, want) {
		t.Errorf("the upstream's params._meta.traceparent were %q, want %q", gotMeta, want)
	}
	if !slices.Contains(gotHeader, want) {
		t.Errorf("the upstream's traceparent headers were %q, want %q", gotHeader, want)
	}

	// The fast read of the link, traced from its _meta (no header).
	readTrace, readParent := "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	hdr = in.header()
	hdr.Set("MCP-Protocol-Version", v2025)
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "resources/read",
		"params": map[string]any{"uri": link, "_meta": map[string]any{"traceparent": "00-" + readTrace + "-" + readParent + "-01"}}})
	if r := in.post(hdr, body); r.Error != nil || r.Status != http.StatusOK {
		t.Fatalf("resources/read %s: %s", link, r.Body)
	}
	rid, _ := hex.DecodeString(readTrace)
	read := recv.waitFor(t, rid, "resources/read", "store view")
	t.Logf("span tree of the link's read:\n%s", spanTree(read))
	for _, s := range read {
		if s.Name == "resources/read" && hex.EncodeToString(s.ParentSpanId) != readParent {
			t.Errorf("resources/read's parent is %x, want the _meta traceparent's %s", s.ParentSpanId, readParent)
		}
	}

	// Nothing secret or tenant-owned in any attribute of any span.
	path := link[strings.Index(link, "://")+3:]
	recv.assertNone(t, map[string]string{"token": in.Token, "HMAC key": base64.StdEncoding.EncodeToString(in.Key), "body": marker,
		"arguments": argMarker, "resource path": path[strings.Index(path, "/")+1:], "link": link})
}

// assertNone fails when any span name, status message, attribute,
// resource attribute, event or link received holds one of secrets.
func (o *otlpReceiver) assertNone(t *testing.T, secrets map[string]string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var values []string
	add := func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			values = append(values, kv.Key+"="+kv.Value.String())
		}
	}
	for i, s := range o.spans {
		add(s.Attributes)
		add(o.res[i])
		values = append(values, s.Name, s.Status.GetMessage())
		for _, e := range s.Events {
			add(e.Attributes)
			values = append(values, e.Name)
		}
		for _, l := range s.Links {
			add(l.Attributes)
		}
	}
	if len(values) < 20 {
		t.Fatalf("only %d values received; the scan would prove nothing", len(values))
	}
	for what, secret := range secrets {
		for _, v := range values {
			if strings.Contains(v, secret) {
				t.Errorf("a span carries the %s: %q", what, v)
			}
		}
	}
}

// TestTracingS3: on the s3 backend (versitygw), a traced save_report (the
// fast call path) has its S3 requests as spans under the store put, each
// sent with its traceparent (unsigned: the request still passes SigV4,
// or the save would fail), and no span names the bucket, the object key,
// the resource path or the S3 credentials.
func TestTracingS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	recv := startOTLPReceiver(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	prefix := "it-" + randomHex(6)
	in := startServer(t, s3Config(endpoint, bucket, prefix)+fmt.Sprintf("tracing:\n  enabled: true\n  endpoint: %s\n", recv.URL))

	traceID := "5bf92f3577b34da6a3ce929d0e0e4737"
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", v2025)
	hdr.Set("traceparent", "00-"+traceID+"-10f067aa0ba902b8-01")
	const bodyMarker = "S3-BODY-9e1d-not-for-traces"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "tools/call",
		"params": map[string]any{"name": "save_report", "arguments": map[string]any{"path": "secret-client/q3.md", "text": bodyMarker, "mimeType": "text/markdown"}}})
	r := in.post(hdr, body)
	var res toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.IsError {
		t.Fatalf("save_report: %s", r.Body)
	}
	tid, _ := hex.DecodeString(traceID)
	spans := recv.waitFor(t, tid, "tools/call save_report", "store put")
	tree := spanTree(spans)
	t.Logf("span tree of a save on S3:\n%s", tree)
	var put *tracepb.Span
	for _, s := range spans {
		if s.Name == "store put" {
			put = s
		}
	}
	n := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "S3 ") && string(s.ParentSpanId) == string(put.SpanId) {
			n++
			if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(s, "http.response.status_code") == "" || attr(s, "server.address") == "" {
				t.Errorf("S3 span %s: kind %v, attributes %v", s.Name, s.Kind, s.Attributes)
			}
		}
	}
	if n == 0 {
		t.Errorf("no S3 request span under the store put:\n%s", tree)
	}
	recv.assertNone(t, map[string]string{"token": in.Token, "body": bodyMarker, "resource path": "secret-client", "bucket": bucket,
		"prefix": prefix, "S3 secret": os.Getenv("AWS_SECRET_ACCESS_KEY")})
}

// shUpstream is a stdio MCP upstream in bash: tools/call echo_trace
// answers with the params._meta.traceparent it received.
const shUpstream = `while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
    *'"method":"initialize"'*)
      v=$(printf '%s' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" "$v";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo_trace","inputSchema":{"type":"object"}}]}}\n' "$id";;
    *'"method":"tools/call"'*)
      tp=$(printf '%s' "$line" | sed -n 's/.*"traceparent":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"traceparent=%s"}]}}\n' "$id" "$tp";;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id";;
    *)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id";;
  esac
done
`

// TestTracingStdioUpstream: a stdio upstream gets the upstream call's
// span in params._meta.traceparent (a caller's own _meta traceparent is
// not passed on: it is the MCP span's parent).
func TestTracingStdioUpstream(t *testing.T) {
	recv := startOTLPReceiver(t)
	script := filepath.Join(t.TempDir(), "upstream.sh")
	if err := os.WriteFile(script, []byte(shUpstream), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL) // on by the environment alone
	in := startGateway(t, true, fmt.Sprintf("gateway:\n  upstreams:\n    - name: sh\n      command: bash\n      args: [%q]\n      sandbox: \"off\"\n      callTimeout: 20s\n", script))
	traceID, callerSpan := "6bf92f3577b34da6a3ce929d0e0e4738", "20f067aa0ba902b9"
	hdr := in.header()
	hdr.Set("MCP-Protocol-Version", v2025)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "tools/call",
		"params": map[string]any{"name": "echo_trace", "arguments": map[string]any{}, "_meta": map[string]any{"traceparent": "00-" + traceID + "-" + callerSpan + "-01"}}})
	r := in.post(hdr, body)
	var res toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call echo_trace: %s\n%s", r.Body, in.logs)
	}
	tid, _ := hex.DecodeString(traceID)
	// The upstream span ends first and may come a batch before the MCP
	// span: wait for both.
	var up, front *tracepb.Span
	spans := recv.waitUntil(t, tid, func(spans []*tracepb.Span) string {
		up, front = nil, nil
		for _, s := range spans {
			if s.Name == "tools/call echo_trace" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
				up = s
			}
			if s.Name == "tools/call echo_trace" && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				front = s
			}
		}
		if up == nil || front == nil {
			return "client and server span \"tools/call echo_trace\""
		}
		return ""
	})
	if up == nil || front == nil || hex.EncodeToString(front.ParentSpanId) != callerSpan {
		t.Fatalf("want the MCP span under the caller's _meta span and an upstream span:\n%s", spanTree(spans))
	}
	if want := "traceparent=00-" + traceID + "-" + hex.EncodeToString(up.SpanId) + "-01"; res.Content[0].Text != want {
		t.Errorf("the stdio upstream received %q, want %q", res.Content[0].Text, want)
	}
}
