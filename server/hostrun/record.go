package hostrun

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/fixtures"
)

type runKey struct{}

// runFrom returns the run a request was routed to, or nil.
func runFrom(ctx context.Context) *Run {
	run, _ := ctx.Value(runKey{}).(*Run)
	return run
}

// withPath returns r for run with its path replaced: the run's id goes no
// further than Route, so no log line or metric ever holds it.
func withPath(r *http.Request, run *Run, path string) *http.Request {
	r = r.WithContext(context.WithValue(r.Context(), runKey{}, run))
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r.URL = &u
	return r
}

// notFound is the one answer for a run that does not exist, has expired,
// or belongs to another tenant.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Error(w, "Not Found: no such host run (unknown, expired, or not yours); start a new one with POST /fixtures/runs", http.StatusNotFound)
}

// pagePath is where Route sends the page requests of a run ("-" stands
// for its id).
const pagePath = pagePrefix + "-"

// Route is the outermost handler: it sends /mcp/runs/<id> on as /mcp and
// /fixtures/runs/<id>[/...] as /fixtures/runs/-[/...] with the run in the
// context, answers unknown ids with 404, and records the GETs of download
// links minted inside a run.
func (r *Runs) Route(next http.Handler) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.Path
		switch {
		case strings.HasPrefix(p, runPathPrefix):
			run := r.get(p[len(runPathPrefix):])
			if run == nil {
				notFound(w)
				return
			}
			next.ServeHTTP(w, withPath(req, run, "/mcp"))
		case strings.HasPrefix(p, pagePrefix) && p != pagePrefix:
			id, sub, _ := strings.Cut(p[len(pagePrefix):], "/")
			run := r.get(id)
			if run == nil {
				notFound(w)
				return
			}
			path := pagePath
			if sub != "" {
				path += "/" + sub
			}
			next.ServeHTTP(w, withPath(req, run, path))
		case strings.HasPrefix(p, "/v1/blobs/") && (req.Method == http.MethodGet || req.Method == http.MethodHead):
			run := r.byLink(linkSig(req.URL.RawQuery))
			if run == nil {
				next.ServeHTTP(w, req)
				return
			}
			sw := &captureWriter{ResponseWriter: w}
			next.ServeHTTP(sw, req)
			uri := ""
			if rest := strings.TrimPrefix(p, "/v1/blobs/"); strings.Count(rest, "/") >= 2 {
				scheme, tail, _ := strings.Cut(rest, "/")
				uri = scheme + "://" + tail
			}
			// Only a GET answered with the whole body (200) fetched it: a
			// HEAD, a Range request (206) or a refusal is listed, not
			// counted as a read of the body.
			whole := req.Method == http.MethodGet && sw.statusOr200() == http.StatusOK
			r.add(run, Event{At: r.opts.Now().UTC(), Method: req.Method + " /v1/blobs", URI: clip(uri, maxURILen),
				Route: RouteLink, Outcome: "http " + strconv.Itoa(sw.statusOr200()), Bytes: sw.n}, "", !whole)
		default:
			next.ServeHTTP(w, req)
		}
	})
}

// linkSig returns the sig parameter of a download link's query.
func linkSig(rawQuery string) string {
	for _, kv := range strings.Split(rawQuery, "&") {
		if v, ok := strings.CutPrefix(kv, "sig="); ok {
			return v
		}
	}
	return ""
}

// Routes by which a host reads a resource.
const (
	RouteRead = "resources/read"
	RouteLink = "signed link"
)

// readTools are the tools that read a resource named by their uri argument.
var readTools = []string{"read_resource", "grep_resource", "query_resource"}

// uriTools are the tools whose uri argument the run shows.
var uriTools = append([]string{"stat_resource", "delete_resource"}, readTools...)

// Record runs after authentication on /mcp: for a request routed to a run
// it refuses a caller of another tenant (the same 404 as an unknown run),
// passes the request on, and records each JSON-RPC request of a POST with
// its answer.
func (r *Runs) Record(next http.Handler) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		run := runFrom(req.Context())
		if run == nil {
			next.ServeHTTP(w, req)
			return
		}
		if p, ok := auth.FromContext(req.Context()); !ok || p.Tenant != run.tenant {
			notFound(w)
			return
		}
		if req.Method != http.MethodPost {
			next.ServeHTTP(w, req)
			return
		}
		var body []byte
		if r.opts.Body != nil {
			body = r.opts.Body(req)
		}
		msgs := parseRequests(body)
		limit := headCapture
		if len(msgs) > 0 && msgs[0].Method != RouteRead {
			limit = maxCapture
		}
		cw := &captureWriter{ResponseWriter: w, limit: limit}
		next.ServeHTTP(cw, req)
		r.recordPost(run, req, msgs, cw)
	})
}

// captureWriter keeps the status, the size, the first limit bytes and the
// last tailCapture bytes of a response.
type captureWriter struct {
	http.ResponseWriter
	status int
	n      int64
	limit  int
	head   []byte
	tail   []byte
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	b = b[:n]
	w.n += int64(n)
	if room := w.limit - len(w.head); room > 0 {
		w.head = append(w.head, b[:min(room, len(b))]...)
	}
	w.tail = append(w.tail, b[max(0, len(b)-tailCapture):]...)
	if len(w.tail) > tailCapture {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-tailCapture:]...)
	}
	return n, err
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *captureWriter) statusOr200() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// complete reports whether the whole response was kept.
func (w *captureWriter) complete() bool { return int64(len(w.head)) == w.n }

type impl struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (i *impl) String() string {
	if i == nil || i.Name == "" {
		return ""
	}
	return clip(strings.TrimSpace(i.Name+" "+i.Version), maxField)
}

// rpcRequest is what a run looks at in one JSON-RPC request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string          `json:"name"`
		URI             string          `json:"uri"`
		Arguments       json.RawMessage `json:"arguments"`
		ProtocolVersion string          `json:"protocolVersion"`
		ClientInfo      *impl           `json:"clientInfo"`
		Meta            struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			ClientInfo      *impl  `json:"io.modelcontextprotocol/clientInfo"`
		} `json:"_meta"`
	} `json:"params"`
}

// parseRequests returns the requests (messages with a method and an id) of
// a body; a message it cannot read is recorded by method alone.
func parseRequests(body []byte) []rpcRequest {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &raws) != nil {
			return nil
		}
	} else if len(body) > 0 {
		raws = []json.RawMessage{body}
	}
	var out []rpcRequest
	for _, raw := range raws {
		var m rpcRequest
		if err := json.Unmarshal(raw, &m); err != nil {
			var bare struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(raw, &bare) != nil {
				continue
			}
			m = rpcRequest{ID: bare.ID, Method: bare.Method}
		}
		if m.Method == "" || len(m.ID) == 0 {
			continue // a notification or a response: nothing to score
		}
		out = append(out, m)
	}
	return out
}

// rpcResult is what a run looks at in a JSON-RPC result.
type rpcResult struct {
	IsError         bool   `json:"isError"`
	ProtocolVersion string `json:"protocolVersion"`
	TTLMs           *int64 `json:"ttlMs"`
	CacheScope      string `json:"cacheScope"`
}

// rpcAnswer is what a run looks at in one JSON-RPC response.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *rpcResult      `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

func (a *rpcAnswer) outcome() string {
	switch {
	case a.Error != nil:
		return "error " + strconv.FormatInt(a.Error.Code, 10)
	case a.Result != nil && a.Result.IsError:
		return "isError"
	case a.Result != nil:
		return "ok"
	}
	return "unknown"
}

var (
	ttlRE   = regexp.MustCompile(`"ttlMs":(\d{1,15})`)
	scopeRE = regexp.MustCompile(`"cacheScope":"(public|private)"`)
	sigRE   = regexp.MustCompile(`sig=([A-Za-z0-9_-]{43})`)
)

// answers reads the responses of a POST: every one when the whole body was
// kept, else the head and tail of the single response.
func answers(cw *captureWriter) []rpcAnswer {
	if cw.complete() {
		b := bytes.TrimSpace(cw.head)
		if len(b) > 0 && b[0] == '[' {
			var as []rpcAnswer
			json.Unmarshal(b, &as)
			return as
		}
		var a rpcAnswer
		if json.Unmarshal(b, &a) == nil {
			return []rpcAnswer{a}
		}
		return nil
	}
	// A large response: its head says result or error, its tail isError.
	dec := json.NewDecoder(bytes.NewReader(cw.head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		switch k {
		case "result":
			var a rpcAnswer
			a.Result = &rpcResult{IsError: bytes.Contains(cw.tail, []byte(`"isError":true`))}
			hd := append(slices.Clone(cw.head), cw.tail...)
			if m := ttlRE.FindSubmatch(hd); m != nil {
				n, _ := strconv.ParseInt(string(m[1]), 10, 64)
				a.Result.TTLMs = &n
			}
			if m := scopeRE.FindSubmatch(hd); m != nil {
				a.Result.CacheScope = string(m[1])
			}
			return []rpcAnswer{a}
		case "error":
			var e struct {
				Code int64 `json:"code"`
			}
			dec.Decode(&e)
			return []rpcAnswer{{Error: &e}}
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return nil
}

// recordPost records the requests of one POST with their answers.
func (r *Runs) recordPost(run *Run, req *http.Request, msgs []rpcRequest, cw *captureWriter) {
	if len(msgs) == 0 {
		return
	}
	as := answers(cw)
	byID := map[string]*rpcAnswer{}
	for i := range as {
		byID[string(bytes.TrimSpace(as[i].ID))] = &as[i]
	}
	now := r.opts.Now().UTC()
	header := req.Header.Get("MCP-Protocol-Version")
	if ua := req.UserAgent(); ua != "" {
		run.mu.Lock()
		run.addClient("User-Agent: " + clip(ua, maxUserAgent))
		run.mu.Unlock()
	}
	for _, m := range msgs {
		a := byID[string(bytes.TrimSpace(m.ID))]
		if a == nil && len(msgs) == 1 && len(as) == 1 {
			a = &as[0] // ids written back differently ("a\u0062c" as "abc")
		}
		e := Event{At: now, Method: clip(m.Method, maxToolName), Outcome: "http " + strconv.Itoa(cw.statusOr200())}
		if a != nil {
			e.Outcome = a.outcome()
		}
		e.ProtocolVersion = firstNonEmpty(m.Params.Meta.ProtocolVersion, header)
		if m.Method == "initialize" && a != nil && a.Result != nil {
			e.ProtocolVersion = firstNonEmpty(a.Result.ProtocolVersion, m.Params.ProtocolVersion)
		}
		e.ProtocolVersion = clip(e.ProtocolVersion, 32)
		e.Client = firstNonEmpty(m.Params.Meta.ClientInfo.String(), m.Params.ClientInfo.String())
		if len(msgs) == 1 {
			e.Bytes = cw.n
		}
		var tool string
		switch m.Method {
		case RouteRead:
			e.URI, e.Route = clip(m.Params.URI, maxURILen), RouteRead
			if a != nil && a.Result != nil && a.Error == nil {
				e.TTLMs, e.CacheScope = a.Result.TTLMs, a.Result.CacheScope
			}
		case "tools/call":
			tool = clip(m.Params.Name, maxToolName)
			e.Tool = tool
			if slices.Contains(uriTools, tool) {
				var args struct {
					URI string `json:"uri"`
				}
				json.Unmarshal(m.Params.Arguments, &args)
				e.URI = clip(args.URI, maxURILen)
				if slices.Contains(readTools, tool) {
					e.Route = tool
				}
			}
			if cw.complete() && bytes.Contains(cw.head, []byte("/v1/blobs/")) {
				for _, sm := range sigRE.FindAllSubmatch(cw.head, maxLinks) {
					r.addLink(run, string(sm[1]))
				}
			}
		}
		failed := e.Outcome != "ok" && !(tool == "probe_error" && e.Outcome == "isError")
		r.add(run, e, tool, failed)
	}
}

// fixtureTools maps each fixture tool to its catalogue entry.
var fixtureTools = func() map[string]fixtures.Entry {
	m := map[string]fixtures.Entry{}
	for _, e := range fixtures.Catalogue() {
		m[e.Tool] = e
	}
	return m
}()

// fixturePath returns the path below the fixture tenant that uri names, or
// "" when it names no fixture.
func fixturePath(uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return ""
	}
	tenant, path, ok := strings.Cut(rest, "/")
	if !ok || tenant != fixtures.Tenant {
		return ""
	}
	return path
}

// add records one event of run: the event list (bounded), the scoring
// counts of fixture tools and reads, repeated reads, clients and versions.
func (r *Runs) add(run *Run, e Event, tool string, failed bool) {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.firstEvent.IsZero() {
		run.firstEvent = e.At
	}
	if len(run.events) < r.lim.Events {
		run.events = append(run.events, e)
	} else {
		run.dropped++
	}
	if e.Client != "" {
		run.addClient(e.Client)
	}
	if v := e.ProtocolVersion; v != "" && !slices.Contains(run.versions, v) && len(run.versions) < maxClients {
		run.versions = append(run.versions, v)
		slices.Sort(run.versions)
	}
	if _, ok := fixtureTools[tool]; ok {
		t := run.calls[tool]
		if t == nil {
			t = &tally{}
			run.calls[tool] = t
		}
		t.add(e.At, failed)
		if e.Outcome == "ok" || e.Outcome == "isError" {
			run.maxResult = max(run.maxResult, e.Bytes)
		}
	}
	if e.Route == "" {
		return
	}
	if path := fixturePath(e.URI); path == fixtures.MissingPath {
		run.missing.add(e.At, failed)
		if len(run.missingErrors) < maxClients && !slices.Contains(run.missingErrors, e.Route+": "+e.Outcome) {
			run.missingErrors = append(run.missingErrors, e.Route+": "+e.Outcome)
		}
	} else if path != "" && knownPath(path) {
		byRoute := run.reads[path]
		if byRoute == nil {
			byRoute = map[string]*tally{}
			run.reads[path] = byRoute
		}
		t := byRoute[e.Route]
		if t == nil {
			t = &tally{}
			byRoute[e.Route] = t
		}
		t.add(e.At, failed)
	}
	if e.Route == RouteRead && e.Outcome == "ok" && e.TTLMs != nil {
		run.noteReread(e)
	}
}

func knownPath(path string) bool {
	for _, en := range fixtureTools {
		if en.Path == path {
			return true
		}
	}
	return false
}

// noteReread counts a successful resources/read of e.URI, and whether it
// came before the ttlMs of the previous read had passed; run.mu is held.
func (run *Run) noteReread(e Event) {
	rr := run.rereads[e.URI]
	if rr == nil {
		if len(run.rereads) >= maxURIs {
			return
		}
		rr = &reread{URI: e.URI}
		run.rereads[e.URI] = rr
		run.rereadOrder = append(run.rereadOrder, e.URI)
	}
	rr.Reads++
	if !rr.last.IsZero() && e.At.Sub(rr.last) < time.Duration(rr.lastTTL)*time.Millisecond {
		rr.WithinTTL++
	}
	rr.last, rr.lastTTL = e.At, *e.TTLMs
	rr.TTLMs, rr.CacheScope = *e.TTLMs, e.CacheScope
}

// addClient lists a client; run.mu is held.
func (run *Run) addClient(c string) {
	if !slices.Contains(run.clients, c) && len(run.clients) < maxClients {
		run.clients = append(run.clients, c)
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// clip cuts s to at most n bytes, never inside a character, and replaces
// invalid UTF-8 and control characters: a value shown on a page and in a
// terminal.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
		for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// unsafeRune reports control characters (C0, DEL, C1), which a terminal
// acts on, and the bidirectional controls, which reorder what a page or a
// terminal shows (U+202E turns "exe.txt" into "txt.exe").
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
