package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

func TestPreviewNeverSplitsACharacter(t *testing.T) {
	for _, s := range []string{"héllo wörld", "✓✓✓✓✓", "𝄞𝄞𝄞", "abc", ""} {
		for n := 0; n <= utf8.RuneCountInString(s)+1; n++ {
			p := previewOf([]byte(s), n)
			if !utf8.ValidString(p) || !strings.HasPrefix(s, p) || utf8.RuneCountInString(p) != min(n, utf8.RuneCountInString(s)) {
				t.Errorf("previewOf(%q, %d) = %q", s, n, p)
			}
		}
	}
}

func TestShouldOffload(t *testing.T) {
	pol := OffloadPolicy{Threshold: 100, Tools: map[string]ToolOffload{
		"a": {Mode: OffloadAlways}, "n": {Mode: OffloadNever}, "s": {Mode: OffloadSize, Threshold: 10},
	}}
	tests := []struct {
		tool string
		size int64
		want bool
	}{
		{"x", 100, false}, {"x", 101, true},
		{"a", 1, true}, {"a", 0, false},
		{"n", 1 << 30, false},
		{"s", 10, false}, {"s", 11, true},
	}
	for _, tt := range tests {
		if got := shouldOffload(pol, tt.tool, tt.size); got != tt.want {
			t.Errorf("shouldOffload(%s, %d) = %v, want %v", tt.tool, tt.size, got, tt.want)
		}
	}
	if shouldOffload(OffloadPolicy{}, "x", DefaultThreshold) || !shouldOffload(OffloadPolicy{}, "x", DefaultThreshold+1) {
		t.Error("the default threshold is not 16 KiB")
	}
}

func TestContentBytesCountsDecodedBytes(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "héllo"}, // 6 bytes
		&mcp.ImageContent{Data: make([]byte, 10)},
		&mcp.AudioContent{Data: make([]byte, 20)},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{Text: "abc"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{Blob: make([]byte, 7)}},
		&mcp.ResourceLink{URI: "file:///x"},
	}}
	if got := contentBytes(nil, res, int64(len(`{"a":1}`))); got != 6+10+20+3+7+7 {
		t.Errorf("contentBytes = %d", got)
	}
}

func TestPathSegment(t *testing.T) {
	for in, want := range map[string]string{"read_text_file": "read_text_file", "a/b c": "a-b-c", "..": "tool", "": "tool",
		// One '-' a character, not a byte (issue 15); a byte that is not
		// UTF-8 is one too.
		"é": "-", "ünï": "-n-", "a\xffb": "a-b", "日本": "--"} {
		if got := pathSegment(in); got != want {
			t.Errorf("pathSegment(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIDKey(t *testing.T) {
	same := [][2]string{{`1`, `1.0`}, {` "a" `, `"a"`}, {`"\u0061"`, `"a"`}}
	for _, p := range same {
		a, _ := idKey([]byte(p[0]))
		b, _ := idKey([]byte(p[1]))
		if a != b {
			t.Errorf("idKey(%s) = %q, idKey(%s) = %q; want equal", p[0], a, p[1], b)
		}
	}
	a, _ := idKey([]byte(`1`))
	b, _ := idKey([]byte(`"1"`))
	if a == b {
		t.Error("the string id \"1\" and the number 1 collide")
	}
	if _, ok := idKey([]byte(`{}`)); ok {
		t.Error("an object is an id")
	}
}

func TestClassify(t *testing.T) {
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	timedOut, stop := context.WithTimeout(bg, 0)
	defer stop()
	<-timedOut.Done()
	wire := &jsonrpc.Error{Code: -32042, Message: "no", Data: []byte(`{"a":1}`)}
	tests := []struct {
		name    string
		caller  context.Context
		call    context.Context
		err     error
		outcome string
	}{
		{"answer", bg, bg, fmt.Errorf("calling %q: %w", "tools/call", wire), "-32042"},
		{"unavailable", bg, bg, fmt.Errorf("x: %w", ErrUnavailable), "unavailable"},
		{"closed", bg, bg, fmt.Errorf("%w: calling: %v", mcp.ErrConnectionClosed, errors.New("EOF")), "unavailable"},
		{"rejected", bg, bg, &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}, "unavailable"},
		{"other", bg, bg, errors.New("unexpected EOF"), "unavailable"},
		{"timeout", bg, timedOut, context.DeadlineExceeded, "timeout"},
		{"canceled", canceled, canceled, context.Canceled, "canceled"},
	}
	for _, tt := range tests {
		e := classify(tt.caller, tt.call, tt.err)
		if e.outcome() != tt.outcome {
			t.Errorf("%s: outcome %s, want %s", tt.name, e.outcome(), tt.outcome)
		}
	}
	// The pool's stand-in for an answer over the message limit (issue
	// 15): too_large, not retry-safe, never passed on as the upstream's.
	var stand struct{ Error *jsonrpc.Error }
	if err := json.Unmarshal(tooLargeResponse([]byte("4"), 300<<20, 129<<20), &stand); err != nil {
		t.Fatal(err)
	}
	tl := classify(bg, bg, fmt.Errorf("calling %q: %w", "tools/call", stand.Error))
	f := tl.failure("fs", "fs__read")
	if tl.outcome() != "too_large" || tl.wire != nil || f.ErrorKind != "too_large" || f.RetrySafe ||
		!strings.Contains(f.Message, "The result of fs__read from the upstream server fs is 314572800 bytes (300.0 MiB), more than the 135266304 bytes (129.0 MiB) the gateway reads") {
		t.Errorf("too large: outcome %s, failure %+v", tl.outcome(), f)
	}
	if msg := tl.rpcError("fs").Error(); !strings.Contains(msg, "more than the 135266304 bytes (129.0 MiB)") {
		t.Errorf("too large, other methods: %s", msg)
	}
	if ok := classify(bg, bg, &jsonrpc.Error{Code: tooLargeCode, Message: "mine"}).wire; ok == nil {
		t.Error("an upstream's own error with the code but not the marker is not passed on")
	}
	e := classify(bg, bg, fmt.Errorf("calling: %w", wire))
	if got, ok := e.rpcError("fs").(*jsonrpc.Error); !ok || got.Code != wire.Code || got.Message != wire.Message || string(got.Data) != string(wire.Data) {
		t.Errorf("the upstream's answer is passed on as %v", e.rpcError("fs"))
	}
	if msg := classify(bg, bg, errors.New("dial tcp 10.0.0.1:443: secret detail")).rpcError("fs").Error(); strings.Contains(msg, "10.0.0.1") || !strings.Contains(msg, "fs") {
		t.Errorf("unavailable error %q leaks internals or misses the upstream", msg)
	}
}

func TestCancelIsScopedToTenantAndID(t *testing.T) {
	var f Front
	ctx1, done1 := f.Track(context.Background(), "t1", []byte(`7`))
	defer done1()
	ctx2, done2 := f.Track(context.Background(), "t2", []byte(`7`))
	defer done2()
	c1, stop1 := f.calls.context(ctx1)
	defer stop1()
	c2, stop2 := f.calls.context(ctx2)
	defer stop2()
	if f.Cancel("t1", []byte(`8`)) || f.Cancel("t3", []byte(`7`)) {
		t.Error("Cancel of an id or tenant with no call reported true")
	}
	if !f.Cancel("t1", []byte(`7.0`)) {
		t.Fatal("Cancel of t1's call 7 reported false")
	}
	<-c1.Done()
	if c2.Err() != nil {
		t.Error("t2's call with the same id was cancelled")
	}
	done1()
	if f.Cancel("t1", []byte(`7`)) {
		t.Error("Cancel after the call ended reported true")
	}
}

func TestListedOutputSchema(t *testing.T) {
	f := &Front{ups: map[string]Upstream{"fs": {Name: "fs", Offload: OffloadPolicy{Tools: map[string]ToolOffload{"n": {Mode: OffloadNever}}}}}}
	orig := map[string]any{"type": "object", "$defs": map[string]any{"x": map[string]any{"type": "string"}}, "$schema": "https://json-schema.org/draft/2020-12/schema"}
	if got := f.listedOutputSchema("fs", &mcp.Tool{Name: "n", OutputSchema: orig}); fmt.Sprint(got) != fmt.Sprint(orig) {
		t.Errorf("a never-offloaded tool's schema was changed: %v", got)
	}
	if got := f.listedOutputSchema("fs", &mcp.Tool{Name: "x"}); got != nil {
		t.Errorf("a tool without an outputSchema got %v", got)
	}
	got := f.listedOutputSchema("fs", &mcp.Tool{Name: "t", OutputSchema: orig}).(map[string]any)
	inner := got["anyOf"].([]any)[0].(map[string]any)
	if got["type"] != "object" || got["$defs"] == nil || got["$schema"] == nil || inner["$defs"] != nil || inner["$schema"] != nil {
		t.Errorf("widened schema = %v", got)
	}
	withID := map[string]any{"$id": "https://x.test/s", "type": "object", "$defs": map[string]any{}}
	got = f.listedOutputSchema("fs", &mcp.Tool{Name: "t", OutputSchema: withID}).(map[string]any)
	if got["$defs"] != nil || got["anyOf"].([]any)[0].(map[string]any)["$defs"] == nil {
		t.Errorf("a schema with $id was taken apart: %v", got)
	}
}

// offloadFront is a Front over a memstore service with the gateway's
// scheme "gw", a preview of 10 characters and one upstream "fs" whose
// every result is offloaded.
func offloadFront(t *testing.T, quota store.Quota) (*Front, store.Backend) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	svc, err := service.New(service.Options{Store: st, Quota: quota, Schemes: []service.Scheme{
		{Name: "gw", Kind: service.KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &Front{svc: svc, scheme: "gw", preview: 10, log: slog.New(slog.DiscardHandler),
		ups: map[string]Upstream{"fs": {Name: "fs", Offload: OffloadPolicy{Threshold: 1}}}}, st
}

// links is the resource_link URIs of res.
func links(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			out = append(out, l.URI)
		}
	}
	return out
}

func bigResult(parts ...string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	for _, p := range parts {
		res.Content = append(res.Content, &mcp.TextContent{Text: p})
	}
	return res
}

// TestOffloadIsIdempotent: a re-issued call's parts come back as the same
// links, stored and counted once (issue 24: a retry saved new parts under
// a new ULID and took the quota again); another tenant's are its own.
func TestOffloadIsIdempotent(t *testing.T) {
	ctx := context.Background()
	part := strings.Repeat("x", 2000)
	f, st := offloadFront(t, store.Quota{Bytes: 3000})
	alice := auth.Principal{Tenant: "alice"}
	first, fail := f.offload(ctx, alice, "fs", "read_file", "fs__read_file", bigResult(part), nil)
	if fail != nil {
		t.Fatal(fail)
	}
	again, fail := f.offload(ctx, alice, "fs", "read_file", "fs__read_file", bigResult(part), nil)
	if fail != nil {
		t.Fatalf("the re-issued call: %v (stored twice?)", fail)
	}
	if a, b := links(first.result), links(again.result); len(a) != 1 || !cmp.Equal(a, b) {
		t.Fatalf("links %v, then %v; want the same one link", a, b)
	}
	if first.bytes != 2000 || again.bytes != 0 || again.parts != 1 {
		t.Errorf("stored %d bytes, then %d bytes in %d parts; want 2000, then 0 in 1", first.bytes, again.bytes, again.parts)
	}
	if u, err := st.Usage(ctx, "alice"); err != nil || u.Bytes != 2000 || u.Objects != 1 {
		t.Errorf("alice's usage = %+v, %v; want 2000 bytes in 1 object", u, err)
	}
	wantPrefix := "gw://alice/fs/read_file/" + fmt.Sprintf("%x", sha256.Sum256([]byte(part)))[:partSHA] + "/0"
	if got := links(first.result)[0]; got != wantPrefix {
		t.Errorf("link %s, want %s", got, wantPrefix)
	}
	bob, fail := f.offload(ctx, auth.Principal{Tenant: "bob"}, "fs", "read_file", "fs__read_file", bigResult(part), nil)
	if fail != nil || !strings.HasPrefix(links(bob.result)[0], "gw://bob/") || bob.bytes != 2000 {
		t.Fatalf("bob's call = %v, %v; want his own part", links(bob.result), fail)
	}
}

// TestOffloadRollbackKeepsFoundParts: a call that fails part-way removes
// the parts it stored, never one it found stored by an earlier call.
func TestOffloadRollbackKeepsFoundParts(t *testing.T) {
	ctx := context.Background()
	f, st := offloadFront(t, store.Quota{Bytes: 3000})
	p := auth.Principal{Tenant: "alice"}
	a, b, c := strings.Repeat("a", 1000), strings.Repeat("b", 1500), strings.Repeat("c", 1500)
	earlier, fail := f.offload(ctx, p, "fs", "t", "fs__t", bigResult(a), nil)
	if fail != nil {
		t.Fatal(fail)
	}
	// a is found, b is stored (2500 bytes), c takes the quota over.
	if _, fail := f.offload(ctx, p, "fs", "t", "fs__t", bigResult(a, b, c), nil); fail == nil || fail.ErrorKind != service.KindQuota {
		t.Fatalf("offload over the quota = %v, want quota_exceeded", fail)
	}
	if _, fail := f.svc.Stat(ctx, "alice", links(earlier.result)[0]); fail != nil {
		t.Errorf("the earlier call's part is gone after another call's rollback: %v", fail)
	}
	if u, _ := st.Usage(ctx, "alice"); u.Bytes != 1000 || u.Objects != 1 {
		t.Errorf("usage after the rollback = %+v, want the earlier part only", u)
	}
}
