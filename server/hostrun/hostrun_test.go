package hostrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/auth"
)

// The unit tests drive Runs' handlers around a fake MCP server that
// answers as resourced does (the integration tests use the real one).

type bodyKey struct{}

const testBase = "http://run.test"

// testSig is a download link signature (43 characters of base64url).
var testSig = strings.Repeat("s", 43)

type env struct {
	t     *testing.T
	runs  *Runs
	h     http.Handler
	clock *time.Time
	// blobs counts GETs that reached the blob handler.
	blobs int
}

func newEnv(t *testing.T, lim Limits) *env {
	t.Helper()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	e := &env{t: t, clock: &clock}
	e.runs = New(Options{
		BaseURL: testBase, ServerVersion: "v9.9.9", SDKVersion: "v1.8.0", Limits: lim,
		Now:  func() time.Time { return *e.clock },
		Body: func(r *http.Request) []byte { b, _ := r.Context().Value(bodyKey{}).([]byte); return b },
		Principal: func(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
			p, ok := fakePrincipal(r)
			if !ok {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
			}
			return p, ok
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", fakeAuth(e.runs.Record(http.HandlerFunc(fakeMCP))))
	mux.Handle("/fixtures/runs", e.runs.Create())
	mux.Handle("/fixtures/runs/", e.runs.Pages())
	mux.HandleFunc("/v1/blobs/", func(w http.ResponseWriter, r *http.Request) {
		e.blobs++
		if r.URL.Query().Get("sig") != testSig {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		io.WriteString(w, "body")
	})
	e.h = e.runs.Route(mux)
	return e
}

// fakePrincipal is the tenant named by the X-Tenant header.
func fakePrincipal(r *http.Request) (auth.Principal, bool) {
	t := r.Header.Get("X-Tenant")
	if t == "" {
		return auth.Principal{}, false
	}
	scopes := []string{auth.ScopeRead, auth.ScopeWrite}
	if r.Header.Get("X-Scopes") != "" {
		scopes = strings.Fields(r.Header.Get("X-Scopes"))
	}
	return auth.Principal{Tenant: t, Scopes: scopes}, true
}

// fakeAuth is the server's authenticate: principal and body in the context.
func fakeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := fakePrincipal(r)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ctx := auth.WithPrincipal(r.Context(), p)
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			ctx = context.WithValue(ctx, bodyKey{}, b)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// fakeMCP answers like resourced with fixtures.
func fakeMCP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string `json:"name"`
			URI       string `json:"uri"`
			Arguments struct {
				URI string `json:"uri"`
			} `json:"arguments"`
		} `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &m)
	var result string
	switch {
	case m.Method == "initialize":
		result = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"resourced","version":"v9.9.9"}}`
	case m.Method == "resources/read" && strings.HasSuffix(m.Params.URI, "fixture-missing"):
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Resource not found","data":{"uri":%q}}}`, m.ID, m.Params.URI)
		return
	case m.Method == "resources/read":
		scope := "public"
		if strings.Contains(m.Params.URI, "://acme/") {
			scope = "private"
		}
		result = fmt.Sprintf(`{"ttlMs":60000,"cacheScope":%q,"contents":[{"uri":%q,"mimeType":"text/plain","text":"%s"}]}`, scope, m.Params.URI, strings.Repeat("x", 10000))
	case m.Params.Name == "read_resource" && strings.HasSuffix(m.Params.Arguments.URI, "fixture-missing"):
		result = `{"content":[{"type":"text","text":"not_found: no such resource"}],"isError":true}`
	case m.Params.Name == "read_resource":
		result = `{"content":[{"type":"text","text":"RSD-FIXTURE-L02"}],"structuredContent":{"downloadUrl":"` + testBase + `/v1/blobs/search/fixtures/results/fixture-link?exp=1&access=public\u0026sig=` + testSig + `"}}`
	case m.Params.Name == "probe_error":
		result = `{"content":[{"type":"text","text":"RSD-FIXTURE-X01"}],"isError":true}`
	case r.Header.Get("X-Refuse") != "":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"missing Mcp-Method header"}}`, m.ID)
		return
	case m.Params.Name == "probe_size_155k":
		result = `{"content":[{"type":"text","text":"` + strings.Repeat("y", 155000) + `"}]}`
	default:
		result = `{"content":[{"type":"text","text":"ok"}]}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
}

func (e *env) do(method, path, tenant string, body string, hdr ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if tenant != "" {
		req.Header.Set("X-Tenant", tenant)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

func (e *env) create(tenant string) Created {
	e.t.Helper()
	rec := e.do("POST", "/fixtures/runs", tenant, "")
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("POST /fixtures/runs: %d %s", rec.Code, rec.Body)
	}
	var c Created
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func path(u string) string { p, _ := url.Parse(u); return p.Path }

var rpcN int

// rpc posts one request to the run's endpoint; version "" sends the
// 2025-11-25 header, else the 2026-07-28 _meta.
func (e *env) rpc(c Created, tenant, version, method, params string) *httptest.ResponseRecorder {
	e.t.Helper()
	rpcN++
	if version == "2026-07-28" {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test-client","version":"2.0"}}`
		if params == "" {
			params = "{" + meta + "}"
		} else {
			params = params[:len(params)-1] + "," + meta + "}"
		}
	}
	if params == "" {
		params = "{}"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, rpcN, method, params)
	return e.do("POST", path(c.Endpoint), tenant, body, "MCP-Protocol-Version", firstNonEmpty(version, "2025-11-25"), "User-Agent", "fake/1")
}

func (e *env) report(c Created) *Report {
	e.t.Helper()
	rec := e.do("GET", path(c.JSON), "", "")
	if rec.Code != http.StatusOK {
		e.t.Fatalf("GET json: %d %s", rec.Code, rec.Body)
	}
	var rep Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		e.t.Fatal(err)
	}
	return &rep
}

func rowOf(rep *Report, id string) Row {
	for _, r := range rep.Rows {
		if r.ID == id {
			return r
		}
	}
	return Row{}
}

func cond(rep *Report, key string) Condition {
	for _, c := range rep.Conditions {
		if c.Key == key {
			return c
		}
	}
	return Condition{}
}

func TestRecordRun(t *testing.T) {
	e := newEnv(t, Limits{})
	c := e.create("acme")
	if !strings.HasPrefix(c.Endpoint, testBase+"/mcp/runs/") || !validID(c.ID) || c.Page != testBase+"/fixtures/runs/"+c.ID {
		t.Fatalf("created %+v", c)
	}
	e.rpc(c, "acme", "", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy-host","version":"1.0"}}`)
	e.rpc(c, "acme", "", "tools/call", `{"name":"search_text","arguments":{}}`)
	e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"search_link","arguments":{}}`)
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"search://fixtures/results/fixture-link"}`)
	e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"read_resource","arguments":{"uri":"search://fixtures/results/fixture-link","includeDownloadUrl":true}}`)
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"search://fixtures/results/fixture-missing"}`)
	e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"probe_error","arguments":{}}`)
	e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"probe_size_155k","arguments":{}}`)
	// A private resource read twice within its ttlMs, once after.
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"report://acme/private.txt"}`)
	*e.clock = e.clock.Add(10 * time.Second)
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"report://acme/private.txt"}`)
	*e.clock = e.clock.Add(2 * time.Minute)
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"report://acme/private.txt"}`)
	// The signed link minted by read_resource, fetched without a token.
	if rec := e.do("GET", "/v1/blobs/search/fixtures/results/fixture-link?exp=1&access=public&sig="+testSig, "", ""); rec.Code != 200 {
		t.Fatalf("blob: %d", rec.Code)
	}
	// A link no run minted is not recorded.
	e.do("GET", "/v1/blobs/search/fixtures/results/fixture-link?exp=1&sig="+strings.Repeat("t", 43), "", "")

	rep := e.report(c)
	if rep.Tenant != "acme" || len(rep.Events) != 12 {
		t.Fatalf("tenant %s, %d events: %+v", rep.Tenant, len(rep.Events), rep.Events)
	}
	first := rep.Events[0]
	if first.Method != "initialize" || first.ProtocolVersion != "2025-11-25" || first.Client != "legacy-host 1.0" || first.Outcome != "ok" {
		t.Errorf("initialize event %+v", first)
	}
	if ev := rep.Events[1]; ev.Tool != "search_text" || ev.ProtocolVersion != "2025-11-25" {
		t.Errorf("search_text event %+v", ev)
	}
	if ev := rep.Events[3]; ev.Route != RouteRead || ev.URI != "search://fixtures/results/fixture-link" || ev.TTLMs == nil || *ev.TTLMs != 60000 || ev.CacheScope != "public" || ev.Client != "test-client 2.0" {
		t.Errorf("resources/read event %+v", ev)
	}
	if ev := rep.Events[5]; ev.Outcome != "error -32602" {
		t.Errorf("missing read: %+v", ev)
	}
	if ev := rep.Events[6]; ev.Outcome != "isError" {
		t.Errorf("probe_error: %+v", ev)
	}
	if ev := rep.Events[7]; ev.Outcome != "ok" || ev.Bytes < 155000 {
		t.Errorf("probe_size_155k (larger than the capture): %+v", ev)
	}
	if ev := rep.Events[11]; ev.Method != "GET /v1/blobs" || ev.Route != RouteLink || ev.URI != "search://fixtures/results/fixture-link" || ev.Outcome != "http 200" {
		t.Errorf("link event %+v", ev)
	}
	l02 := rowOf(rep, "L02")
	if l02.Reads[RouteRead] != 1 || l02.Reads["read_resource"] != 1 || l02.Reads[RouteLink] != 1 || l02.Result != ResultAwaiting {
		t.Errorf("L02 row %+v", l02)
	}
	if r := rowOf(rep, RowNotFound); r.Result != ResultPass {
		t.Errorf("not-found row %+v", r)
	}
	if r := rowOf(rep, "probe_error"); r.Calls != 1 || r.CallErrors != 0 {
		t.Errorf("probe_error row (its isError is the result) %+v", r)
	}
	if r := rowOf(rep, "S01"); r.Result != ResultNotRun || r.ServerSaw != "search_structured not called" {
		t.Errorf("S01 row %+v", r)
	}
	if len(rep.Rereads) != 1 || rep.Rereads[0] != (Reread{URI: "report://acme/private.txt", CacheScope: "private", TTLMs: 60000, Reads: 3, WithinTTL: 1}) {
		t.Errorf("rereads %+v", rep.Rereads)
	}
	for key, want := range map[string]string{
		"server_name":              "resourced",
		"server_commit":            "v9.9.9",
		"server_sdk_and_version":   "github.com/modelcontextprotocol/go-sdk v1.8.0",
		"transport":                "Streamable HTTP",
		"protocol_version_on_wire": "2025-11-25, 2026-07-28",
		"client_sdk_and_version":   "legacy-host 1.0; test-client 2.0",
		"resource_read_route":      "dedicated tool (read_resource) + direct HTTPS (signed link) + resources/read",
		"auth_context":             "tenant acme; scopes resources:read resources:write",
		"executed_at_utc":          "2026-12-01T10:00:00Z",
		"host_product":             "",
	} {
		if got := cond(rep, key).Value; got != want {
			t.Errorf("condition %s = %q, want %q", key, got, want)
		}
	}
	if got := cond(rep, "result_size_utf8_bytes").Value; !strings.HasPrefix(got, "155") {
		t.Errorf("result_size_utf8_bytes = %q", got)
	}
}

func TestSubmitMarksRows(t *testing.T) {
	e := newEnv(t, Limits{})
	c := e.create("acme")
	for _, tool := range []string{"search_text", "search_structured", "search_link", "probe_audience"} {
		e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"`+tool+`"}`)
	}
	e.rpc(c, "acme", "2026-07-28", "resources/read", `{"uri":"search://fixtures/results/fixture-link"}`)
	form := url.Values{
		"markers":      {"I saw RSD-FIXTURE-T01, RSD-FIXTURE-L01 and RSD-FIXTURE-A02, also RSD-FIXTURE-Q99 and RSD-FIXTURE-T01 again"},
		"host_product": {"  Example Host  "},
		"host_version": {"1.2.3"},
	}
	rec := e.do("POST", path(c.Page), "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/fixtures/runs/"+c.ID {
		t.Fatalf("submit: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rep := e.report(c)
	if !slices.Equal(rep.Reported, []string{"RSD-FIXTURE-A02", "RSD-FIXTURE-L01", "RSD-FIXTURE-T01"}) || !slices.Equal(rep.Unknown, []string{"RSD-FIXTURE-Q99"}) {
		t.Errorf("reported %v, unknown %v", rep.Reported, rep.Unknown)
	}
	for id, want := range map[string]string{"T01": ResultPass, "S01": ResultFail, "L01": ResultPass, "L02": ResultFail, "E01": ResultNotRun, "probe_audience": ResultObserved, "probe_error": ResultNotRun} {
		if got := rowOf(rep, id).Result; got != want {
			t.Errorf("row %s = %s, want %s (%+v)", id, got, want, rowOf(rep, id))
		}
	}
	if r := rowOf(rep, "L02"); !strings.Contains(r.Note, "fetched") {
		t.Errorf("L02 note %q", r.Note)
	}
	if r := rowOf(rep, "probe_audience"); !slices.Equal(r.Reported, []string{"RSD-FIXTURE-A02"}) || !slices.Equal(r.Missing, []string{"RSD-FIXTURE-A01"}) {
		t.Errorf("audience row %+v", r)
	}
	if got := cond(rep, "host_product"); got.Value != "Example Host" || got.Source != "user" {
		t.Errorf("host_product %+v", got)
	}

	// The page shows it all without script.
	page := e.do("GET", path(c.Page), "", "")
	html := page.Body.String()
	if page.Code != 200 || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %v", page.Code, page.Header())
	}
	for _, want := range []string{`id="row-T01" class="pass" data-result="PASS"`, `id="row-L02" class="fail"`, `id="row-E01" class="not-run"`,
		`name="host_product" value="Example Host"`, "RSD-FIXTURE-Q99", c.Endpoint, `href="` + c.ID + `/sheet.md"`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url("} { // no script, no external asset
		if strings.Contains(html, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || page.Header().Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", page.Header())
	}

	// The Markdown export: conditions block, tests table, one host record,
	// and never the run's URLs.
	md := e.do("GET", path(c.Markdown), "", "").Body.String()
	for _, want := range []string{"# Acceptance sheet: Example Host 1.2.3", "```yaml\nserver_name: \"resourced\"\n", "host_product: \"Example Host\"\n",
		"| T01 | normative | ", "| PASS |", "## Record per host", "| Example Host | 1.2.3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, c.ID) {
		t.Errorf("markdown holds the run id")
	}
	keys := 0
	for _, k := range conditionKeys {
		if strings.Contains(md, "\n"+k+": \"") {
			keys++
		}
	}
	if keys != 15 {
		t.Errorf("markdown has %d of the 15 run conditions", keys)
	}
	// The terminal text.
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"host_product:", "Example Host", "T01", "PASS", "L02", "FAIL"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestRunAccess(t *testing.T) {
	e := newEnv(t, Limits{})
	c := e.create("acme")
	// Another tenant's token on the run's endpoint: the answer of an unknown run.
	rec := e.rpc(c, "other", "2026-07-28", "tools/call", `{"name":"search_text"}`)
	unknown := e.do("POST", "/mcp/runs/"+strings.Repeat("0", 32), "acme", "{}")
	if rec.Code != http.StatusNotFound || unknown.Code != http.StatusNotFound || rec.Body.String() != unknown.Body.String() {
		t.Errorf("foreign tenant: %d %q; unknown run: %d %q", rec.Code, rec.Body, unknown.Code, unknown.Body)
	}
	if n := len(e.report(c).Events); n != 0 {
		t.Errorf("%d events recorded from another tenant", n)
	}
	for _, p := range []string{"/mcp/runs/xyz", "/mcp/runs/" + strings.Repeat("A", 32), "/fixtures/runs/" + strings.Repeat("0", 32), "/fixtures/runs/-", path(c.Page) + "/other"} {
		if rec := e.do("GET", p, "acme", ""); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d", p, rec.Code)
		}
	}
	if rec := e.do("POST", "/fixtures/runs", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("create without a token: %d", rec.Code)
	}
	if rec := e.do("POST", "/fixtures/runs", "acme", "", "X-Scopes", auth.ScopeWrite); rec.Code != http.StatusForbidden {
		t.Errorf("create without resources:read: %d", rec.Code)
	}
	if rec := e.do("GET", "/fixtures/runs", "acme", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /fixtures/runs: %d", rec.Code)
	}
	if rec := e.do("DELETE", path(c.JSON), "", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE json: %d", rec.Code)
	}
	// Expiry.
	*e.clock = e.clock.Add(24 * time.Hour)
	if rec := e.do("GET", path(c.Page), "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("expired run: %d", rec.Code)
	}
}

func TestRunBounds(t *testing.T) {
	e := newEnv(t, Limits{Runs: 3, RunsPerTenant: 2, Events: 4})
	a1 := e.create("a")
	e.create("a")
	a3 := e.create("a") // ends a1, a's oldest
	if rec := e.do("GET", path(a1.Page), "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("a's oldest run still there: %d", rec.Code)
	}
	e.create("b")
	// Full (a holds 2, b 1): c, holding none, takes a's oldest.
	if rec := e.do("POST", "/fixtures/runs", "c", ""); rec.Code != http.StatusCreated {
		t.Errorf("c's first run on a full instance: %d, want 201 (a fair share)", rec.Code)
	}
	if rec := e.do("GET", path(a3.Page), "", ""); rec.Code != http.StatusOK {
		t.Errorf("a's newest run was ended: %d", rec.Code)
	}
	// Now every tenant holds one: b may not take another's only run.
	if rec := e.do("POST", "/fixtures/runs", "b", ""); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("b's second run on a full instance of equal shares: %d %v", rec.Code, rec.Header())
	}
	for range 6 {
		e.rpc(a3, "a", "2026-07-28", "tools/call", `{"name":"search_text"}`)
	}
	rep := e.report(a3)
	if len(rep.Events) != 4 || rep.DroppedEvents != 2 || rowOf(rep, "T01").Calls != 6 {
		t.Errorf("%d events, %d dropped, T01 calls %d", len(rep.Events), rep.DroppedEvents, rowOf(rep, "T01").Calls)
	}
	// A form larger than the limit is refused; the run keeps serving.
	big := url.Values{"markers": {strings.Repeat("RSD-FIXTURE-T01 ", maxFormBytes/8)}}.Encode()
	if rec := e.do("POST", path(a3.Page), "", big, "Content-Type", "application/x-www-form-urlencoded"); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("large form: %d", rec.Code)
	}
	if rec := e.do("GET", path(a3.Page), "", ""); rec.Code != 200 {
		t.Errorf("page after a large form: %d", rec.Code)
	}
	// Long and hostile values are clipped and escaped.
	e.rpc(a3, "a", "", "initialize", `{"protocolVersion":"2025-11-25","clientInfo":{"name":"<script>alert(1)</script>`+strings.Repeat("n", 500)+`","version":"1"}}`)
	page := e.do("GET", path(a3.Page), "", "").Body.String()
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("client name not escaped")
	}
	for _, c := range e.report(a3).Clients {
		if len(c) > maxField {
			t.Errorf("client %d bytes", len(c))
		}
	}
}

func TestParseMarkers(t *testing.T) {
	known, unknown := parseMarkers("RSD-FIXTURE-H155 RSD-FIXTURE-Z15 rsd-fixture-T01 RSD-FIXTURE-L02RSD-FIXTURE-V05 RSD-FIXTURE-")
	if !slices.Equal(known, []string{"RSD-FIXTURE-H155", "RSD-FIXTURE-L02", "RSD-FIXTURE-V05"}) || !slices.Equal(unknown, []string{"RSD-FIXTURE-Z15"}) {
		t.Errorf("known %v unknown %v", known, unknown)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{"a\nb\x00", "a\uFFFDb\uFFFD"},
		{"héllo", "h"},     // cut inside é: é is dropped whole
		{"\xff", "\uFFFD"}, // invalid UTF-8
		{"a\u202etxt.exe\u2066", "a\uFFFDtxt.exe\uFFFD"}, // bidirectional controls
	} {
		n := len(c.in)
		if c.in == "héllo" {
			n = 2
		}
		if got := clip(c.in, n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.in, n, got, c.want)
		}
	}
}

// TestWriteTextCleansTheTerminal: a report from a hostile server (check
// --host-run takes any URL) cannot send escape sequences to the terminal.
func TestWriteTextCleansTheTerminal(t *testing.T) {
	rep := &Report{Tenant: "t\x1b]0;pwned\x07\x1b[2J", Endpoint: "e\u202e", Conditions: []Condition{{Key: "k", Value: "v\x9b31m"}}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\x9b"} {
		if strings.Contains(b.String(), bad) {
			t.Fatalf("the terminal got %q in %q", bad, b.String())
		}
	}
	if !strings.Contains(b.String(), "pwned") || !strings.Contains(b.String(), "\n") {
		t.Fatalf("the text itself is gone: %q", b.String())
	}
}

// TestRefusedCallsAndHeadRequestsDoNotScore: a row whose every call was
// refused fails even when its marker is pasted, and a HEAD or Range
// request of a signed link is listed but is no fetch of the body.
func TestRefusedCallsAndHeadRequestsDoNotScore(t *testing.T) {
	e := newEnv(t, Limits{})
	c := e.create("acme")
	for range 2 {
		e.do("POST", path(c.Endpoint), "acme", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_text"}}`,
			"MCP-Protocol-Version", "2025-11-25", "X-Refuse", "1")
	}
	e.rpc(c, "acme", "2026-07-28", "tools/call", `{"name":"read_resource","arguments":{"uri":"search://fixtures/results/fixture-link"}}`)
	e.do("HEAD", "/v1/blobs/search/fixtures/results/fixture-link?exp=1&access=public&sig="+testSig, "", "")
	form := url.Values{"markers": {"RSD-FIXTURE-T01"}}
	e.do("POST", path(c.Page), "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	rep := e.report(c)
	if r := rowOf(rep, "T01"); r.Result != ResultFail || r.Calls != 2 || r.CallErrors != 2 || !strings.Contains(r.Note, "every call") {
		t.Errorf("T01 after two refused calls and its marker pasted: %+v, want FAIL with a note", r)
	}
	var head *Event
	for i := range rep.Events {
		if rep.Events[i].Route == RouteLink {
			head = &rep.Events[i]
		}
	}
	if head == nil || head.Method != "HEAD /v1/blobs" {
		t.Fatalf("the HEAD request is not listed as such: %+v", rep.Events)
	}
	if n := rowOf(rep, "L02").Reads[RouteLink]; n != 0 {
		t.Errorf("a HEAD counted as %d fetches of the body by signed link", n)
	}
}

// TestMarkdownEscapesCallerFields: link, image, autolink, HTML and code
// syntax in any field a caller supplies (a host name typed on the page, a
// client's name, a URI) is text in sheet.md, never markup (issue 24).
func TestMarkdownEscapesCallerFields(t *testing.T) {
	evil := []string{"[x](javascript:alert(1))", "![](http://tracker.example/p.gif)", "<http://a.example>", "<img src=x onerror=alert(1)>",
		"`code`", "a|b", `\[y](javascript:z)`, "line\n# heading"}
	rep := &Report{Rereads: []Reread{{URI: evil[1], CacheScope: evil[0], Reads: 2}}}
	for i, k := range conditionKeys {
		rep.Conditions = append(rep.Conditions, Condition{Key: k, Value: evil[i%len(evil)]})
	}
	rep.Rows = []Row{{ID: "T01", Kind: KindNormative, Check: evil[2], ServerSaw: evil[0], Result: ResultPass, Note: evil[6]}}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// Outside the yaml block (inert), every special character of a value is
	// escaped: an odd run of backslashes before it.
	_, rest, _ := strings.Cut(out, "```\n\n## Tests")
	head, _, _ := strings.Cut(out, "## Run conditions")
	for _, part := range []string{head, rest} {
		for _, v := range evil {
			if strings.Contains(part, v) {
				t.Errorf("sheet.md holds %q as it came", v)
			}
		}
		for i := 0; i < len(part); i++ {
			if !strings.ContainsRune("[]()!<>`", rune(part[i])) {
				continue
			}
			n := 0
			for j := i - 1; j >= 0 && part[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				t.Errorf("unescaped %q at %d: %q", part[i], i, part[max(0, i-30):min(len(part), i+30)])
			}
		}
	}
	if got := mdCell(`\[y](z)`); got != `\\\[y\]\(z\)` {
		t.Errorf("mdCell of a backslash before a bracket = %s", got)
	}
}
