package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// linClient speaks MCP (2025-11-25, stateless) to one instance over its own
// connection pool, and reports transport failures instead of failing.
type linClient struct {
	url, token string
	http       *http.Client
	id         atomic.Int64
}

func newLinClient(in *instance, timeout time.Duration) *linClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	if in.ns != nil {
		tr.DialContext = in.ns.dial
	}
	return &linClient{url: in.URL, token: in.Token, http: &http.Client{Timeout: timeout, Transport: tr}}
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errTransport marks a request whose fate the client cannot know.
var errTransport = errors.New("transport")

func (c *linClient) rpc(method string, params any) (*rpcReply, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(context.Background(), "POST", c.url+"/mcp", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("MCP-Protocol-Version", v2025)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTransport, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the response: %v", errTransport, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var data []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = bytes.TrimSpace(d)
			}
		}
		b = data
	}
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("response is not JSON-RPC: %v: %s", err, b)
	}
	return &r, nil
}

type linToolResult struct {
	IsError           bool `json:"isError"`
	StructuredContent struct {
		ErrorKind string `json:"errorKind"`
		Message   string `json:"message"`
		Sha256    string `json:"sha256"`
		URI       string `json:"uri"`
		Status    string `json:"status"`
	} `json:"structuredContent"`
}

// tool calls name and maps the answer to an outcome; unexpected answers
// are test errors (and unknown outcomes, so the history stays sound).
func (c *linClient) tool(t *testing.T, name string, args map[string]any) (outcome, *linToolResult) {
	r, err := c.rpc("tools/call", map[string]any{"name": name, "arguments": args})
	if errors.Is(err, errTransport) {
		return outUnknown, nil
	}
	if err != nil {
		t.Errorf("tools/call %s: %v", name, err)
		return outUnknown, nil
	}
	if r.Error != nil {
		t.Errorf("tools/call %s: JSON-RPC error %d %s", name, r.Error.Code, r.Error.Message)
		return outUnknown, nil
	}
	var res linToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Errorf("tools/call %s: %v: %s", name, err, r.Result)
		return outUnknown, nil
	}
	if !res.IsError {
		return outOK, &res
	}
	switch res.StructuredContent.ErrorKind {
	case "conflict":
		return outConflict, &res
	case "not_found":
		return outNotFound, &res
	case "unavailable":
		// "nothing was changed", says the message; but a PUT that timed
		// out may still land, so the model does not take its word for it.
		return outUnknown, &res
	}
	t.Errorf("tools/call %s: unexpected failure %s: %s", name, res.StructuredContent.ErrorKind, res.StructuredContent.Message)
	return outUnknown, &res
}

// readResource is resources/read: ok with the body's sha256, or not found.
func (c *linClient) readResource(t *testing.T, uri string) regOutput {
	r, err := c.rpc("resources/read", map[string]any{"uri": uri})
	if errors.Is(err, errTransport) {
		return regOutput{Out: outUnknown}
	}
	if err != nil {
		t.Errorf("resources/read: %v", err)
		return regOutput{Out: outUnknown}
	}
	if r.Error != nil {
		switch r.Error.Code {
		case -32602:
			return regOutput{Out: outNotFound}
		case -32603: // the backend failed (injected faults)
			return regOutput{Out: outUnknown}
		}
		t.Errorf("resources/read %s: JSON-RPC error %d %s", uri, r.Error.Code, r.Error.Message)
		return regOutput{Out: outUnknown}
	}
	var res struct {
		Contents []struct {
			Text *string `json:"text"`
			Meta struct {
				Sha256 string `json:"sha256"`
			} `json:"_meta"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text == nil {
		t.Errorf("resources/read %s: unexpected result %s", uri, r.Result)
		return regOutput{Out: outUnknown}
	}
	got := sum([]byte(*res.Contents[0].Text))
	if res.Contents[0].Meta.Sha256 != got {
		t.Errorf("resources/read %s: _meta.sha256 %s is not the body's %s", uri, res.Contents[0].Meta.Sha256, got)
	}
	return regOutput{Out: outOK, Sha: got}
}

// workload is a seed-driven mix of operations on a few report paths. The
// sequence of requests each client sends is a function of the seed and the
// client's index; only their timing is left to the machine.
type workload struct {
	Seed    uint64
	Keys    int            // report paths lin/<Prefix>k0 … lin/<Prefix>k{Keys-1}
	Prefix  string         // keeps the paths of one workload apart from another's
	Clients int            // per instance
	Ops     int            // per client, at most
	Mix     map[opKind]int // weights
	// Deadline stops the clients early; Timeout bounds one request.
	Deadline, Timeout time.Duration
}

func (w workload) pick(r *rand.Rand) opKind {
	total := 0
	for _, n := range w.Mix {
		total += n
	}
	x := r.IntN(total)
	for k := opRead; k <= opDeleteIfMatch; k++ {
		if x < w.Mix[k] {
			return k
		}
		x -= w.Mix[k]
	}
	panic("unreachable")
}

// run drives w against the instances (w.Clients on each) and returns the
// finished history.
func (w workload) run(t *testing.T, instances ...*instance) *history {
	t.Helper()
	h := newHistory()
	stop := time.Now().Add(w.Deadline)
	var wg sync.WaitGroup
	for ii, in := range instances {
		lc := newLinClient(in, w.Timeout)
		for ci := range w.Clients {
			id := ii*w.Clients + ci
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.client(t, h, lc, id, stop)
			}()
		}
	}
	wg.Wait()
	return h
}

// never is a sha256 no workload body has.
var never = sum([]byte("never written"))

func (w workload) client(t *testing.T, h *history, c *linClient, id int, stop time.Time) {
	r := rand.New(rand.NewPCG(w.Seed, uint64(id)))
	known := make([]string, w.Keys) // the last sha256 this client saw per key
	for i := 0; i < w.Ops && time.Now().Before(stop); i++ {
		k := r.IntN(w.Keys)
		path := fmt.Sprintf("lin/%sk%d", w.Prefix, k)
		uri := "report://default/" + path
		kind := w.pick(r)
		text := fmt.Sprintf("seed %d client %d op %d", w.Seed, id, i)
		in := regInput{Key: path, Kind: kind}
		if kind != opRead && kind != opDelete && kind != opDeleteIfMatch {
			in.Sha = sum([]byte(text))
		}
		if kind == opIfMatch || kind == opDeleteIfMatch {
			in.Match = known[k]
			if in.Match == "" || r.IntN(10) == 0 {
				in.Match = never
			}
		}
		viaStat := r.IntN(2) == 0
		call := h.now()
		var out regOutput
		switch kind {
		case opRead:
			if viaStat {
				in.Via = "stat_resource"
				o, res := c.tool(t, "stat_resource", map[string]any{"uri": uri})
				out.Out = o
				if o == outOK {
					out.Sha = res.StructuredContent.Sha256
				}
			} else {
				in.Via = "resources/read"
				out = c.readResource(t, uri)
			}
			switch out.Out {
			case outOK:
				known[k] = out.Sha
			case outNotFound:
				known[k] = ""
			}
		case opCreate, opIfMatch, opOverwrite:
			args := map[string]any{"path": path, "mimeType": "text/plain", "text": text}
			if kind == opIfMatch {
				args["ifMatch"] = in.Match
			}
			if kind == opOverwrite {
				args["overwrite"] = true
			}
			o, res := c.tool(t, "save_report", args)
			out.Out = o
			if o == outOK {
				if res.StructuredContent.Sha256 != in.Sha || res.StructuredContent.URI != uri {
					t.Errorf("save_report %s answered uri %s sha256 %s, want %s %s", path, res.StructuredContent.URI, res.StructuredContent.Sha256, uri, in.Sha)
				}
				known[k] = in.Sha
			}
		case opDelete, opDeleteIfMatch:
			args := map[string]any{"uri": uri}
			if kind == opDeleteIfMatch {
				args["ifMatch"] = in.Match
			}
			o, _ := c.tool(t, "delete_resource", args)
			out.Out = o
			if o == outOK {
				known[k] = ""
			}
		}
		h.add(id, in, call, out)
	}
}
