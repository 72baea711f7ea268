package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptedUpstream is a go-sdk server over Streamable HTTP whose tools/call
// of the tool "scripted" is answered by script (the call's raw id in, the
// response's content type and body out). It counts the scripted calls it
// got and records the JSON-RPC responses the client POSTs back (answers
// to a server's requests).
type scriptedUpstream struct {
	script    func(id string) (status int, contentType, body string)
	calls     atomic.Int64
	mu        sync.Mutex
	responses []string
}

func (u *scriptedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var m struct {
		ID     json.RawMessage
		Method string
		Params struct{ Name string }
	}
	_ = json.Unmarshal(b, &m)
	switch {
	case m.Method == "tools/call" && m.Params.Name == "scripted":
		u.calls.Add(1)
		status, ct, body := u.script(string(m.ID))
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	case m.Method == "" && m.ID != nil: // the client's answer to a request
		u.mu.Lock()
		u.responses = append(u.responses, string(b))
		u.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default:
		next.ServeHTTP(w, r)
	}
}

// answers waits until the client has answered at least n of the
// upstream's requests (go-sdk answers on a goroutine of its own, which a
// loaded machine may run long after the call returned), then returns the
// answers so far and forgets them.
func (u *scriptedUpstream) answers(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		u.mu.Lock()
		if len(u.responses) >= n {
			out := u.responses
			u.responses = nil
			u.mu.Unlock()
			return out
		}
		got := len(u.responses)
		u.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the client answered %d of the upstream's %d requests in 20s", got, n)
		}
	}
}

func newScriptedUpstream(t *testing.T) (*scriptedUpstream, *Pool) {
	t.Helper()
	u := &scriptedUpstream{}
	srv := newTestUpstream()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { u.ServeHTTP(w, r, h) }))
	t.Cleanup(ts.Close)
	return u, newTestPool(t, nil, PoolOptions{Upstreams: []Upstream{{Name: "web", URL: ts.URL}}, MaxMessageBytes: 1 << 20})
}

// outcome is what a call came to, as the front sees it.
func outcome(res *mcp.CallToolResult, err error) string {
	if err != nil {
		// go-sdk's ids differ from call to call.
		return "error: " + strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r >= '0' && r <= '9' }), "#")
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// A plain tools/call to an HTTP upstream is answered on the calling
// goroutine when its answer is a plain one, and by go-sdk as before
// otherwise: the same result or error either way, the call sent once,
// a server's request in the stream answered as go-sdk answers it.
func TestPlainAnswerMatchesSDK(t *testing.T) {
	result := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"hi"}]}}`
	}
	sse := func(events ...string) string { return strings.Join(events, "") }
	big := strings.Repeat("x", 100<<10)
	cases := []struct {
		name     string
		plain    bool
		requests int // the upstream's requests in the answer, each answered once by the client
		script   func(id string) (int, string, string)
	}{
		{"json", true, 0, func(id string) (int, string, string) { return 200, "application/json", result(id) }},
		{"sse", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse("event: message\ndata: " + result(id) + "\n\n")
		}},
		{"sse priming event and id", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream; charset=utf-8", sse("id: 0\ndata: \n\n", "id: 1\nevent: message\ndata: "+result(id)+"\n\n")
		}},
		{"sse crlf, no space, comment", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(": hello\r\n\r\n", "data:"+result(id)+"\r\n\r\n")
		}},
		{"sse large text", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + big + `"}],"isError":true}}` + "\n\n")
		}},
		{"sse other event name first", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse("event: other\ndata: {}\n\n", "data: "+result(id)+"\n\n")
		}},
		{"sse data over two lines", true, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","id":`+id+",\n", `data: "result":{"content":[]}}`+"\n\n")
		}},
		{"sse notification first", false, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`+"\n\n", "data: "+result(id)+"\n\n")
		}},
		{"sse ping request first", false, 1, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","id":"p1","method":"ping"}`+"\n\n", "data: "+result(id)+"\n\n")
		}},
		{"sse elicitation request first", false, 1, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object"}}}`+"\n\n", "data: "+result(id)+"\n\n")
		}},
		{"sse another id first", false, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", sse(`data: {"jsonrpc":"2.0","id":99999,"result":{}}`+"\n\n", "data: "+result(id)+"\n\n")
		}},
		{"json error", false, 0, func(id string) (int, string, string) {
			return 200, "application/json", `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"bad","data":{"x":1}}}`
		}},
		{"sse error", false, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", `data: {"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no"}}` + "\n\n"
		}},
		{"json result that does not decode", false, 0, func(id string) (int, string, string) {
			return 200, "application/json", `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"nonsense"}]}}`
		}},
		{"sse ends without an answer", false, 0, func(id string) (int, string, string) {
			return 200, "text/event-stream", "data: \n\n"
		}},
		{"status 500", false, 0, func(id string) (int, string, string) { return 500, "text/plain", "down" }},
		{"status 400 with a JSON-RPC error", false, 0, func(id string) (int, string, string) {
			return 400, "application/json", `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"no"}}`
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, p := newScriptedUpstream(t)
			u.script = c.script
			cs := session(t, p, "web", "")
			call := func(plain *plainAnswer) (*mcp.CallToolResult, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if plain != nil {
					ctx = withPlain(ctx, plain)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "scripted", Arguments: map[string]any{}})
				if plain != nil && plain.res != nil {
					return plain.res, nil
				}
				return res, err
			}
			want := outcome(call(nil))
			wantResponses := u.answers(t, c.requests)
			plain := &plainAnswer{}
			got := outcome(call(plain))
			if got != want {
				t.Errorf("plain: %.300s\ngo-sdk: %.300s", got, want)
			}
			if (plain.res != nil) != c.plain {
				t.Errorf("answered on the calling goroutine: %t, want %t", plain.res != nil, c.plain)
			}
			if n := u.calls.Load(); n != 2 {
				t.Errorf("the upstream got %d calls for 2", n)
			}
			if got := u.answers(t, c.requests); fmt.Sprint(got) != fmt.Sprint(wantResponses) {
				t.Errorf("the client answered the upstream's requests %q, go-sdk %q", got, wantResponses)
			}
			// The session goes on, as it does after go-sdk's path.
			if got := callText(t, cs, "pid", nil); got == "" {
				t.Error("the session did not survive")
			}
		})
	}
}

// sdkResult is the result go-sdk's client makes of msg, the answer to the
// call with id 7 (ok false: it makes none).
func sdkResult(msg []byte) (*mcp.CallToolResult, bool) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, false
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error != nil || !sameID(r.ID, []byte("7")) {
		return nil, false
	}
	res := new(mcp.CallToolResult)
	if json.Unmarshal(r.Result, res) != nil {
		return nil, false
	}
	return res, true
}

var textResultSeeds = []string{
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Echo: ping"}]}}`,
	`{"result":{"isError":true,"content":[{"text":"a\nb \"q\" \u00e9 \u2713 <>&","type":"text"},{"type":"text","text":""}]},"id":7,"jsonrpc":"2.0"}`,
	` {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\ud83d\ude00 \udc00"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x","type":"text"}]}}`,
	`{"jsonrpc":"2.0","id":7,"id":8,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]},"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"_meta":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"resultType":"complete"}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"isError":null}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":1}]}}`,
	`{"jsonrpc":"2.0","id":"7","result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7.0,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"1.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"id":7,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}`,
	`{"jsonrpc":"2.0","id":7,"result":{"Content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"Type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]},"error":{"code":1,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]},"method":"x"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}",
	`{"jsonrpc":"2.0","\u0069d":7,"result":{"content":[{"type":"text","text":"x"}]}}`,
}

// textResult is an exact shortcut: what it decodes, go-sdk's decoder
// decodes to the same result.
func TestTextResultMatchesSDK(t *testing.T) {
	took := 0
	for _, s := range textResultSeeds {
		checkTextResult(t, []byte(s))
		if _, ok := textResult([]byte(s), []byte("7")); ok {
			took++
		}
	}
	if took < 3 {
		t.Errorf("textResult took %d of the seeds: it takes (almost) nothing", took)
	}
}

func checkTextResult(t *testing.T, msg []byte) {
	t.Helper()
	got, ok := textResult(msg, []byte("7"))
	if !ok {
		return
	}
	want, wok := sdkResult(msg)
	if !wok {
		t.Fatalf("textResult decoded %q, which go-sdk's client does not take", msg)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) || !reflect.DeepEqual(got, want) {
		t.Fatalf("textResult(%q) = %s, go-sdk %s", msg, gb, wb)
	}
}

func FuzzTextResult(f *testing.F) {
	for _, s := range textResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { checkTextResult(t, msg) })
}
