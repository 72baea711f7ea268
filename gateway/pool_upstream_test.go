package gateway

//lint:file-ignore SA1019 the test checks that roots and sampling capabilities (deprecated by SEP-2577, still served) do not leak upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/sandbox"
)

// The pool's tests start this test binary again as a stdio upstream: with
// poolUpstreamEnv set (through Upstream.Env, the only way a variable
// reaches the child), init serves a go-sdk server on stdin/stdout and
// exits, before the tests would run. init, not TestMain, so that the
// package's other tests may keep a TestMain of their own.
const poolUpstreamEnv = "RESOURCED_GATEWAY_POOL_TEST_UPSTREAM"

// rawUpstreamEnv starts rawUpstream instead: an upstream that writes its
// answers as bytes, as fast as a pipe takes them, so that a test of the
// gateway's cost of a large answer does not measure a race-instrumented
// go-sdk server encoding it.
const rawUpstreamEnv = "RESOURCED_GATEWAY_POOL_TEST_RAW_UPSTREAM"

// rawUpstream serves JSON-RPC lines on r and w by hand:
//   - initialize, tools/list, ping: what a server answers;
//   - tools/call pid: the process id;
//   - tools/call big {n, id_last}: n bytes of text ("x"), with the id
//     before the result or, id_last, after it (as the TypeScript SDK
//     writes);
//   - tools/call blob {n}: n bytes of image data;
//   - tools/call bad: a line that is not JSON, with the call's id in it;
//   - tools/call structured {n}: a text and a structuredContent of n
//     bytes each;
//   - tools/call flood {n}: n progress notifications with the call's
//     token, then its result;
//   - tools/call lines {lines, repeat}: the lines as given, {ID} the call's
//     id and {BIG} 100 000 bytes of text, the first one repeat times.
func rawUpstream(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(w, 1<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					N      int      `json:"n"`
					IDLast bool     `json:"id_last"`
					Lines  []string `json:"lines"`
					Repeat int      `json:"repeat"`
				} `json:"arguments"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, `{"protocolVersion":"`+m.Params.ProtocolVersion+`","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`)
		case "tools/list":
			reply(m.ID, `{"tools":[{"name":"pid","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}`)
		case "ping":
			reply(m.ID, `{}`)
		case "tools/call":
			a := m.Params.Arguments
			switch m.Params.Name {
			case "pid":
				reply(m.ID, fmt.Sprintf(`{"content":[{"type":"text","text":"%d"}]}`, os.Getpid()))
			case "big":
				// Written in chunks, so that a race-instrumented upstream
				// does not spend seconds copying the text.
				head := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"`
				tail := `"}]}}` + "\n"
				if a.IDLast {
					head = `{"result":{"content":[{"type":"text","text":"`
					tail = `"}]},"jsonrpc":"2.0","id":` + string(m.ID) + "}\n"
				}
				out.WriteString(head)
				out.Flush()
				chunk := bytes.Repeat([]byte("x"), 64<<10)
				for n := a.N; n > 0; n -= len(chunk) {
					_, _ = w.Write(chunk[:min(n, len(chunk))])
				}
				out.WriteString(tail)
				out.Flush()
			case "blob":
				data := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe}, a.N))
				reply(m.ID, `{"content":[{"type":"image","mimeType":"image/png","data":"`+data+`"}]}`)
			case "structured":
				x := strings.Repeat("s", a.N)
				reply(m.ID, `{"content":[{"type":"text","text":"`+x+`"}],"structuredContent":{"content":"`+x+`","n":1}}`)
			case "lines": // the lines as given ({ID}: the call's id, {BIG}: 100 000 x "b"), the first repeated
				for i, l := range a.Lines {
					l = strings.ReplaceAll(strings.ReplaceAll(l, "{ID}", string(m.ID)), "{BIG}", strings.Repeat("b", 100000))
					for range max(1, a.Repeat*btoi(i == 0)) {
						fmt.Fprintln(out, l)
					}
				}
				out.Flush()
			case "flood":
				for i := range a.N {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d}}`+"\n", m.Params.Meta.ProgressToken, i)
				}
				reply(m.ID, `{"content":[{"type":"text","text":"flooded"}]}`)
			case "junk": // valid JSON that is no JSON-RPC message, then the answer
				for _, j := range []string{`{"foo":1}`, `[]`, `42`, `"s"`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":{"x":1},"result":{}}`} {
					fmt.Fprintln(out, j)
				}
				reply(m.ID, `{"content":[{"type":"text","text":"after junk"}]}`)
			case "bad":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"no end`+"\n", m.ID)
				out.Flush()
			}
		default: // server/discover among them: the client falls back to initialize
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
			out.Flush()
		}
	}
}

func init() {
	// A sandboxed test upstream is this binary too: first as the sandbox
	// helper, which execs it again inside the sandbox.
	sandbox.Main()
	if os.Getenv(rawUpstreamEnv) != "" {
		rawUpstream(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if os.Getenv(poolUpstreamEnv) == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "test upstream up, pid %d\n", os.Getpid())
	err := newTestUpstream().Run(context.Background(), &mcp.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test upstream:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type sleepArgs struct {
	MS int `json:"ms"`
}

type progressArgs struct {
	N int `json:"n"`
}

type bigArgs struct {
	N int `json:"n"`
}

type injectArgs struct {
	Token string `json:"token"`
}

type fileArgs struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
}

type stderrArgs struct {
	Text string `json:"text"`
}

// newTestUpstream is the upstream of the pool's tests, served over stdio
// by the re-executed test binary and over Streamable HTTP by httptest:
//   - pid: the process id;
//   - env: the sorted environment, one variable a line;
//   - caps: the client capabilities the session was initialized with;
//   - sleep {ms}: returns after ms milliseconds (or when cancelled);
//   - crash: exits the process in the middle of the call;
//   - progress {n}: sends n progress notifications, then returns;
//   - big {n}: returns n bytes of text;
//   - inject {token}: sends a progress notification with token, which
//     is not its own call's (another call's, guessed or seen);
//   - stderr {text}: writes text to stderr as it is;
//   - read {path}: the file at path, or the error reading it;
//   - write {path, text}: writes text to path, "written" or the error.
func newTestUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "pool-test-upstream", Version: "1"}, nil)
	text := func(format string, a ...any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("%d", os.Getpid()), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		env := os.Environ()
		sort.Strings(env)
		return text("%s", strings.Join(env, "\n")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		var c *mcp.ClientCapabilities
		if ip := req.Session.InitializeParams(); ip != nil {
			c = ip.Capabilities
		}
		if c == nil {
			return text("none"), nil, nil
		}
		return text("roots=%t sampling=%t elicitation=%t", c.RootsV2 != nil, c.Sampling != nil, c.Elicitation != nil), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(a.MS) * time.Millisecond):
			return text("slept"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a progressArgs) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= a.N; i++ {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: tok, Progress: float64(i), Total: float64(a.N), Message: fmt.Sprintf("step %d", i),
			})
			if err != nil {
				return nil, nil, err
			}
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, a bigArgs) (*mcp.CallToolResult, any, error) {
		return text("%s", strings.Repeat("x", a.N)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "inject"}, func(ctx context.Context, req *mcp.CallToolRequest, a injectArgs) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: a.Token, Progress: 1, Message: "injected"})
		return text("injected"), nil, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "stderr"}, func(_ context.Context, _ *mcp.CallToolRequest, a stderrArgs) (*mcp.CallToolResult, any, error) {
		_, err := os.Stderr.WriteString(a.Text)
		return text("written"), nil, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "read"}, func(_ context.Context, _ *mcp.CallToolRequest, a fileArgs) (*mcp.CallToolResult, any, error) {
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return text("error: %v", err), nil, nil
		}
		return text("%s", b), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "write"}, func(_ context.Context, _ *mcp.CallToolRequest, a fileArgs) (*mcp.CallToolResult, any, error) {
		if err := os.WriteFile(a.Path, []byte(a.Text), 0o600); err != nil {
			return text("error: %v", err), nil, nil
		}
		return text("written"), nil, nil
	})
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
