package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// rawRequest opens a connection to e and sends head and then body,
// returning the connection.
func (e *guardEnv) rawRequest(head, body string) net.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+body); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// statusWithin reads the status line of the answer on c.
func statusWithin(t *testing.T, c net.Conn, d time.Duration) (int, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %s: %v", d, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const mcpHead = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nX-Tenant: t1\r\n"

// TestSlowBodyIsDropped: a body slower than its budget is answered 408,
// with and without Content-Length, on /mcp and uploads, while another
// client is served meanwhile.
func TestSlowBodyIsDropped(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{BodyGrace: 300 * time.Millisecond, BodyMinRate: 1 << 20})
	slow := []net.Conn{
		e.rawRequest(mcpHead+"Content-Length: 1000\r\n\r\n", `{"jsonrpc":`),
		e.rawRequest(mcpHead+"Transfer-Encoding: chunked\r\n\r\n", "5\r\n{\"jso\r\n"),
		e.rawRequest("PUT /v1/resources/report/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nContent-Length: 100000\r\n\r\n", "abc"),
		e.rawRequest("PUT /v1/resources/report/slow2 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nTransfer-Encoding: chunked\r\n\r\n", "3\r\nabc\r\n"),
	}
	if code, _, v := e.rpc("t2", "tools/list", map[string]any{}); code != 200 || v["result"] == nil {
		t.Errorf("another client while bodies trickle = %d", code)
	}
	for i, c := range slow {
		code, body := statusWithin(t, c, 5*time.Second)
		if code != http.StatusRequestTimeout || !strings.Contains(body, "Request Timeout") {
			t.Errorf("slow body %d = %d %q, want 408", i, code, body)
		}
	}
	if _, err := e.st.Stat(context.Background(), store.MustKey("t1", "report", "slow")); !service.IsNotFound(err) {
		t.Errorf("a dropped upload was stored: %v", err)
	}
}

// TestSteadyChunkedBodyIsKept: a body without Content-Length that keeps
// coming at the minimum rate is read to its end, however long past the
// grace it takes.
func TestSteadyChunkedBodyIsKept(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{BodyGrace: 400 * time.Millisecond, BodyMinRate: 100})
	c := e.rawRequest("PUT /v1/resources/report/steady HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nTransfer-Encoding: chunked\r\n\r\n", "")
	for range 12 { // 1.2 s at 1000 bytes/s, ten times the minimum
		fmt.Fprintf(c, "64\r\n%s\r\n", strings.Repeat("x", 100))
		time.Sleep(100 * time.Millisecond)
	}
	io.WriteString(c, "0\r\n\r\n")
	if code, body := statusWithin(t, c, 5*time.Second); code != http.StatusCreated {
		t.Errorf("steady chunked upload = %d %s", code, body)
	}
}

// TestNonReadingClientIsDropped: a client that never reads its response
// loses it when the write deadline passes; the server lets go of it.
func TestNonReadingClientIsDropped(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{WriteGrace: 300 * time.Millisecond, WriteMinRate: 64 << 20})
	body := strings.Repeat(`"`, 16<<20) // 32 MiB once escaped: more than loopback buffers hold
	if _, _, err := e.st.Put(context.Background(), &store.Object{Meta: store.Meta{
		Key: store.MustKey("t1", "report", "big"), MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
		Created: e.now(), Modified: e.now(),
	}, Body: []byte(body)}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	req := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/big"}}`
	c := e.rawRequest(mcpHead+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(req)), req)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.logs.String(), `msg=request http="POST /mcp"`) {
		if time.Now().After(deadline) {
			t.Fatal("the server still holds the response of a client that never reads")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, _ := e.rpc("t2", "tools/list", map[string]any{}); code != 200 {
		t.Errorf("another client = %d", code)
	}
}

// TestListenOutlivesBudgets: a subscriptions/listen stays open past the
// body and write budgets and still carries notifications.
func TestListenOutlivesBudgets(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{BodyGrace: 100 * time.Millisecond, WriteGrace: 100 * time.Millisecond})
	if code, _, _ := e.save("t1", "watched"); code != 200 {
		t.Fatal("save failed")
	}
	updates := make(chan string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "report://t1/watched"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // well past both budgets
	if code, _, v := e.rpc("t1", "tools/call", map[string]any{"name": "save_report", "arguments": map[string]any{"path": "watched", "mimeType": "text/plain", "text": "v2", "overwrite": true}}); code != 200 {
		t.Fatalf("replace = %d %v", code, v)
	}
	select {
	case u := <-updates:
		if u != "report://t1/watched" {
			t.Errorf("update for %s", u)
		}
	case <-time.After(5 * time.Second):
		t.Error("no notification after the budgets passed: the listen was cut")
	}
	if n := strings.Count(e.logs.String(), "method=subscriptions/listen"); n != 0 {
		t.Errorf("%d listens ended while the test ran, want 0:\n%s", n, e.logs.String())
	}
}

// TestUploadSlots: past the cap on concurrent upload spools an upload is
// 503 with Retry-After; the slot is free again when the first one ends.
func TestUploadSlots(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{MaxUploads: 1})
	first := e.rawRequest("PUT /v1/resources/report/one HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nContent-Length: 6\r\n\r\n", "abc")
	waitFor(t, func() bool { return len(e.s.uploadSlots) == 1 })
	code, hdr := putUpload(t, e, "two", "x", "X-Tenant", "t2")
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("upload past the spool cap = %d, Retry-After %q", code, hdr.Get("Retry-After"))
	}
	io.WriteString(first, "def")
	if code, _ := statusWithin(t, first, 5*time.Second); code != http.StatusCreated {
		t.Errorf("first upload = %d", code)
	}
	if code, _ := putUpload(t, e, "two", "x", "X-Tenant", "t2"); code != http.StatusCreated {
		t.Errorf("upload after the slot freed = %d", code)
	}
}

// TestUploadShare: one tenant's slow uploads hold at most its share of
// the upload spools (the rest answered 429 at once), so another tenant's
// upload is stored meanwhile (issue 24: 80 slow uploads made it 503).
func TestUploadShare(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	const slow = 80
	answered := make(chan int, slow)
	for i := range slow {
		c := e.rawRequest(fmt.Sprintf("PUT /v1/resources/report/slow%d HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nContent-Length: 1000\r\n\r\n", i), "abc")
		go func() {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				answered <- resp.StatusCode
			}
		}()
	}
	refused := 0
	waitFor(t, func() bool {
		for len(answered) > 0 {
			if code := <-answered; code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
				t.Fatalf("a slow upload was answered %d before its body came", code)
			}
			refused++
		}
		return refused > 0 && refused+len(e.s.uploadSlots) == slow
	})
	if held := len(e.s.uploadSlots); held != edge.UploadShare(DefaultMaxUploads) {
		t.Errorf("t1 holds %d upload slots, want its share %d", held, edge.UploadShare(DefaultMaxUploads))
	}
	if code, _ := putUpload(t, e, "other", "hello world", "X-Tenant", "t2"); code != http.StatusCreated {
		t.Fatalf("t2's 11-byte upload while t1 holds its uploads = %d, want 201", code)
	}
}

func putUpload(t *testing.T, e *guardEnv, path, body string, hdr ...string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, e.url+"/v1/resources/report/"+path, strings.NewReader(body))
	req.Header.Set("X-Tenant", "t1")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "X-Tenant" {
			req.Header.Set(hdr[i], hdr[i+1])
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

// TestUploadClientGone: a client that goes away after sending its body,
// before it is stored, is logged at info as the client's doing.
func TestUploadClientGone(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	ps := &slowPutStore{Backend: e.st, entered: make(chan struct{}, 1)}
	e.s.swapStore(t, ps)
	c := e.rawRequest("PUT /v1/resources/report/gone HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: t1\r\nContent-Length: 3\r\n\r\n", "abc")
	<-ps.entered
	c.Close()
	waitFor(t, func() bool { return strings.Contains(e.logs.String(), `http="PUT /v1/resources/report/gone"`) })
	logs := e.logs.String()
	if strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "upload abandoned") {
		t.Errorf("a client gone mid-upload was logged as a server failure:\n%s", logs)
	}
}

// slowPutStore waits in PutStream (the upload's write) until the
// request's context ends.
type slowPutStore struct {
	store.Backend
	entered chan struct{}
}

func (s *slowPutStore) PutStream(ctx context.Context, _ *store.Meta, _ io.Reader, _ store.Cond) (store.Meta, bool, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	return store.Meta{}, false, fmt.Errorf("slowPutStore: %w", ctx.Err())
}

// TestUploadIfMatchIsStrong: If-Match compares strongly (RFC 9110
// §13.1.1): a weak tag never matches, a list matches when one tag does,
// * when the resource exists.
func TestUploadIfMatchIsStrong(t *testing.T) {
	e := newGuardEnv(t, nil, Budgets{})
	if code, _ := putUpload(t, e, "doc", "v1"); code != http.StatusCreated {
		t.Fatal("first upload failed")
	}
	sha := store.Sum([]byte("v1"))
	other := strings.Repeat("0", 64)
	for i, tc := range []struct {
		ifMatch []string
		want    int
	}{
		{[]string{`W/"CUR"`}, http.StatusPreconditionFailed},
		{[]string{`W/"CUR", "` + other + `"`}, http.StatusPreconditionFailed},
		{[]string{`"` + other + `"`}, http.StatusPreconditionFailed},
		{[]string{`"abc`}, http.StatusBadRequest},
		{[]string{`*, "CUR"`}, http.StatusBadRequest},
		{[]string{`"CUR" "` + other + `"`}, http.StatusBadRequest},
		{[]string{`"` + other + `", "CUR"`}, http.StatusOK},
		{[]string{`"` + other + `"`, `"CUR"`}, http.StatusOK},
		{[]string{`*`}, http.StatusOK},
		{[]string{`CUR`}, http.StatusOK},
	} {
		path := fmt.Sprintf("case%d", i)
		if code, _ := putUpload(t, e, path, "v1"); code != http.StatusCreated {
			t.Fatal("setup upload failed")
		}
		vals := make([]string, len(tc.ifMatch))
		for j, v := range tc.ifMatch {
			vals[j] = strings.ReplaceAll(v, "CUR", sha)
		}
		if code, _ := putUpload(t, e, path, "v2", flatHeaders("If-Match", vals)...); code != tc.want {
			t.Errorf("If-Match %q = %d, want %d", vals, code, tc.want)
		}
	}
	if code, _ := putUpload(t, e, "missing", "v1", "If-Match", "*"); code != http.StatusPreconditionFailed {
		t.Errorf("If-Match: * on a missing resource = %d, want 412", code)
	}
}

func flatHeaders(name string, vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, name, v)
	}
	return out
}
