package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRequestID(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"id":1}}}`:                                     `7`,
		`{"method":"tools/call","params":{"arguments":{"a":"` + strings.Repeat("b", 2<<20) + `"}},"jsonrpc":"2.0","id":"q"}`: `"q"`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`:                                      ``,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`:                                                                           ``,
	} {
		if got := string(requestID(strings.NewReader(body))); got != want {
			t.Errorf("requestID(%.80s) = %q, want %q", body, got, want)
		}
	}
}

func TestIDScannerFindsTheTopLevelID(t *testing.T) {
	for msg, want := range map[string]string{
		`{"jsonrpc":"2.0","id":5,"result":{"id":7,"x":"y"}}`:                                 `5`,
		`{"result":{"content":[{"id":"no","text":"a\"id\":9"}]},"jsonrpc":"2.0","id":"a-1"}`: `"a-1"`,
		`{"jsonrpc": "2.0", "id" : 12 , "error": {"code": 1}}`:                               `12`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":3}}`:              ``,
		`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage"}`:                         ``, // a request: not answered
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`:                                             ``, // a batch
		`{"jsonrpc":"2.0","id":{"a":1},"result":{}}`:                                         ``,
	} {
		var s idScanner
		s.write([]byte(msg))
		if got := string(s.response()); got != want {
			t.Errorf("response id of %s = %q, want %q", msg, got, want)
		}
	}
}

// readLines reads what a lineGuard hands out.
func readLines(t *testing.T, in string, limit int64) (string, []int64) {
	t.Helper()
	var drops []int64
	g := newLineGuard(strings.NewReader(in), limit, func(size int64, _ bool) { drops = append(drops, size) })
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), drops
}

func TestLineGuardAnswersALongLineInItsPlace(t *testing.T) {
	small := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	long := `{"result":{"content":[{"type":"text","text":"` + strings.Repeat("é", 100) + `"}]},"jsonrpc":"2.0","id":"c-2"}` + "\n"
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 300) + `"}}` + "\n"
	out, drops := readLines(t, small+long+note+small, 128)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0]+"\n" != small || lines[2]+"\n" != small {
		t.Fatalf("lines handed out: %q", lines)
	}
	var resp struct {
		ID    string
		Error struct {
			Code int64
			Data json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(lines[1]), &resp); err != nil || resp.ID != "c-2" {
		t.Fatalf("the long line's stand-in = %s (%v)", lines[1], err)
	}
	d, ok := asTooLarge(resp.Error.Code, resp.Error.Data)
	if !ok || d.Limit != 128 || d.Size != int64(len(long)-1) {
		t.Fatalf("stand-in error = %+v (%v), want the gateway's with size %d, limit 128", resp.Error, ok, len(long)-1)
	}
	if len(drops) != 2 || drops[0] != int64(len(long)-1) || drops[1] != int64(len(note)-1) {
		t.Fatalf("drops = %v", drops)
	}
	// A line of exactly the limit passes: its newline is not counted.
	exact := `{"jsonrpc":"2.0","id":1,"result":{"x":"` + strings.Repeat("z", 100) + `"}}` + "\n"
	if out, drops := readLines(t, exact, int64(len(exact)-1)); out != exact || len(drops) != 0 {
		t.Fatalf("a line of the limit: %q, drops %v", out, drops)
	}
	// Lines within the limit, and a last one without a newline, pass
	// unchanged, whatever the buffer size.
	in := strings.Repeat(small, 3) + `{"jsonrpc":"2.0","method":"m","params":{"y":"` + strings.Repeat("y", 100<<10) + `"}}`
	if out, drops := readLines(t, in, 1<<20); out != in || len(drops) != 0 {
		t.Fatalf("within the limit: %d bytes out of %d, drops %v", len(out), len(in), drops)
	}
}

// Issue 15: a stdio answer over go-sdk's fixed 16 MiB frame limit ended
// the upstream session and told the caller to retry, which ended it
// again. Within the gateway's limit it passes; over it, the call gets the
// gateway's too-large error and the session goes on.
func TestPoolStdioMessageLimit(t *testing.T) {
	p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{rawStdioUpstream(t, "fs", Shared)}})
	cs := session(t, p, "fs", "")
	pid := callText(t, cs, "pid", nil)
	// As the front calls: with a ticket, so that the text is spilled
	// and go-sdk decodes a small message.
	start := time.Now()
	tk := newTicket("")
	ctx, cancel := context.WithTimeout(withTicket(context.Background(), tk), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"n": 17 << 20}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("big: %v, %v", res, err)
	}
	if got := textLen(tk, res.Content[0].(*mcp.TextContent).Text); got != 17<<20 {
		t.Fatalf("a 17 MiB result came back as %d bytes", got)
	}
	if err := restore(tk, res); err != nil || res.Content[0].(*mcp.TextContent).Text != strings.Repeat("x", 17<<20) {
		t.Fatalf("restored: %v", err)
	}
	if used, _ := p.budget.inUse(""); used < 17<<20 {
		t.Errorf("%d bytes in flight while the answer is held, want at least 17 MiB", used)
	}
	tk.release()
	if used, _ := p.budget.inUse(""); used != 0 {
		t.Errorf("%d bytes in flight after the ticket's release", used)
	}
	t.Logf("17 MiB through the pool in %s", time.Since(start))
	if callText(t, cs, "pid", nil) != pid {
		t.Fatal("the upstream was restarted by a 17 MiB result")
	}

	logs := newLogRecorder()
	p = newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{stdioUpstream(t, "fs", Shared)}, MaxMessageBytes: 64 << 10})
	cs = session(t, p, "fs", "")
	pid = callText(t, cs, "pid", nil)
	checkTooLarge(t, cs, 64<<10, true)
	if callText(t, cs, "pid", nil) != pid {
		t.Fatal("the session did not survive a message over the limit")
	}
	if len(logs.find("upstream message over the gateway's limit dropped", map[string]string{"upstream": "fs"})) != 1 {
		t.Error("the dropped message was not logged")
	}
}

func checkTooLarge(t *testing.T, cs *mcp.ClientSession, limit int64, sized bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"n": 200 << 10}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("big over the limit = %v, want the gateway's JSON-RPC error", err)
	}
	d, ok := asTooLarge(we.Code, we.Data)
	if !ok || d.Limit != limit || (sized && d.Size < 200<<10) {
		t.Fatalf("big over the limit = %v (%s), want the gateway's too-large error", err, we.Data)
	}
}

// Issue 15: an HTTP upstream's answer was read whole, however large.
// Over the limit, a JSON body or an event stream is cut off and the call
// gets the gateway's too-large error; the session goes on.
func TestPoolHTTPMessageLimit(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		srv := newTestUpstream()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
		ts := httptest.NewServer(h)
		p := newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: ts.URL}}, MaxMessageBytes: 64 << 10})
		cs := session(t, p, "web", "")
		if got := callText(t, cs, "big", map[string]any{"n": 32 << 10}); len(got) != 32<<10 {
			t.Fatalf("json %t: a result within the limit came back as %d bytes", jsonResponse, len(got))
		}
		checkTooLarge(t, cs, 64<<10, false)
		if callText(t, cs, "pid", nil) == "" {
			t.Fatalf("json %t: the session did not survive", jsonResponse)
		}
		ts.Close()
	}
}

func TestLimitTransportDoesNotReadTheRest(t *testing.T) {
	var written atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 1000 { // 32 MiB, unless the reader stops
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer ts.Close()
	lt := &limitTransport{base: http.DefaultTransport, limit: 64 << 10, dropped: func(int64, bool) {}}
	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`))
	resp, err := lt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var m struct {
		ID    int
		Error struct {
			Code int64
			Data json.RawMessage
		}
	}
	if json.Unmarshal(b, &m) != nil || m.ID != 3 {
		t.Fatalf("body = %.200s", b)
	}
	if _, ok := asTooLarge(m.Error.Code, m.Error.Data); !ok {
		t.Fatalf("body = %s, want the gateway's too-large error", b)
	}
	ts.CloseClientConnections()
	time.Sleep(50 * time.Millisecond)
	if n := written.Load(); n > 8<<20 {
		t.Errorf("the upstream wrote %d bytes: the body was read past the limit", n)
	}
}

// A Content-Length over the limit is answered at once, reading nothing.
func TestLimitTransportContentLengthOverTheLimit(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "10485760")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	var dropped int64
	lt := &limitTransport{base: http.DefaultTransport, limit: 64 << 10, dropped: func(n int64, _ bool) { dropped = n }}
	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":"x","method":"tools/call"}`))
	resp, err := lt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"x"`) || !strings.Contains(string(b), tooLargeMarker) || dropped != 10<<20 {
		t.Fatalf("body = %s, dropped %d", b, dropped)
	}
	ts.CloseClientConnections()
}

// TestSSEGuardPassesEventsOfEverySize: events around the small buffer's
// size and past the large one's come out byte for byte, whatever size the
// body's reads are; the larger buffer is made only for a line that does
// not fit the small one.
func TestSSEGuardPassesEventsOfEverySize(t *testing.T) {
	event := func(n int) string { // an event whose data line is n bytes with its newline
		return "event: message\ndata: " + strings.Repeat("d", n-len("data: ")-1) + "\n\n"
	}
	for _, tc := range []struct {
		sizes []int
		large bool
	}{
		{[]int{40, 200, 40}, false},
		{[]int{sseSmallBuf - 1}, false},
		{[]int{sseSmallBuf}, false},
		{[]int{sseSmallBuf + 1, 40}, true},
		{[]int{40, 3 * sseLargeBuf, sseSmallBuf, 40}, true},
	} {
		var in strings.Builder
		for _, n := range tc.sizes {
			in.WriteString(event(n))
		}
		for name, r := range map[string]func(io.Reader) io.Reader{
			"whole":    func(r io.Reader) io.Reader { return r },
			"one byte": iotest.OneByteReader,
			"halves":   iotest.HalfReader,
		} {
			g := newSSEGuard(io.NopCloser(r(strings.NewReader(in.String()))), []byte("7"), 1<<30, nil)
			out, err := io.ReadAll(g)
			if err != nil || string(out) != in.String() {
				t.Fatalf("sizes %v, %s reads: %d bytes out of %d, err %v", tc.sizes, name, len(out), in.Len(), err)
			}
			if large := g.r.Size() == sseLargeBuf; large != tc.large {
				t.Errorf("sizes %v, %s reads: buffer %d bytes, want the large one: %v", tc.sizes, name, g.r.Size(), tc.large)
			}
		}
	}
}
