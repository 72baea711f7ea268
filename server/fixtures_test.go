package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// fixtureEnv is a server with fixtures on, behind httptest, with auth.None
// (every caller is tenant "default" with both scopes).
type fixtureEnv struct {
	t     *testing.T
	s     *Server
	st    store.Backend
	clock *time.Time
	url   string
	last  []byte // body of the last response
}

func newFixtureEnv(t *testing.T, st store.Backend, clock *time.Time, fixturesOn bool) *fixtureEnv {
	t.Helper()
	s, err := New(Options{
		Store: st, BaseURL: "http://fixtures.test", Fixtures: fixturesOn,
		Now: func() time.Time { return *clock },
		Schemes: []Scheme{
			{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 720 * time.Hour, MaxBytes: 1 << 20},
			{Name: "report", Kind: KindReport, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 1 << 20},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &fixtureEnv{t: t, s: s, st: st, clock: clock, url: hs.URL}
}

func newFixtureClock() *time.Time {
	c := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &c
}

func newFixtureStore(clock *time.Time) store.Backend {
	return memstore.New(memstore.Options{Now: func() time.Time { return *clock }})
}

// rpc sends one request speaking version and returns the decoded response.
func (e *fixtureEnv) rpc(version, method string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	e.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	req, _ := http.NewRequest("POST", e.url+"/mcp", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	if version >= fixtureProtocolAnyValue {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "fixtures-test", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		req.Header.Set("Mcp-Method", method)
		switch method {
		case "tools/call":
			req.Header.Set("Mcp-Name", params["name"].(string))
		case "resources/read":
			req.Header.Set("Mcp-Name", params["uri"].(string))
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	e.last = b
	var env struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		e.t.Fatalf("%s: HTTP %d, not JSON: %s", method, resp.StatusCode, b)
	}
	return env.Result, env.Error
}

func (e *fixtureEnv) call(version, tool string, args map[string]any) map[string]any {
	e.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, rerr := e.rpc(version, "tools/call", map[string]any{"name": tool, "arguments": args})
	if rerr != nil {
		e.t.Fatalf("%s %s: JSON-RPC error %v", version, tool, rerr)
	}
	return res
}

// readBody reads uri and returns its bytes (text or decoded blob).
func (e *fixtureEnv) readBody(version, uri string) ([]byte, map[string]any) {
	e.t.Helper()
	res, rerr := e.rpc(version, "resources/read", map[string]any{"uri": uri})
	if rerr != nil {
		e.t.Fatalf("resources/read %s: %v", uri, rerr)
	}
	c := res["contents"].([]any)[0].(map[string]any)
	if t, ok := c["text"].(string); ok {
		return []byte(t), res
	}
	b, err := base64.StdEncoding.DecodeString(c["blob"].(string))
	if err != nil {
		e.t.Fatal(err)
	}
	return b, res
}

var fixtureMarkerRE = regexp.MustCompile(`RSD-FIXTURE-[A-Z0-9]+`)

// markersIn returns the sorted distinct markers in b.
func markersIn(b []byte) []string {
	var out []string
	for _, m := range fixtureMarkerRE.FindAll(b, -1) {
		if !slices.Contains(out, string(m)) {
			out = append(out, string(m))
		}
	}
	slices.Sort(out)
	return out
}

func marks(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fixtureMark(id)
	}
	slices.Sort(out)
	return out
}

// fixtureWant is what docs/fixtures.md says each tool returns: the markers
// in its tools/call result, and the markers in the bodies of its links.
var fixtureWant = map[string]struct{ inline, linked []string }{
	"search_text":           {marks("T01"), nil},
	"search_structured":     {marks("S01"), nil},
	"search_embedded":       {marks("E01"), nil},
	"search_link":           {marks("L01"), marks("L02")},
	"probe_structured_only": {marks("S02"), nil},
	"probe_link_listed":     {marks("L11"), marks("L12")},
	"probe_link_unlisted":   {marks("L21"), marks("L22")},
	"probe_audience":        {marks("A01", "A02"), nil},
	"probe_embedded_text":   {marks("E11"), nil},
	"probe_embedded_blob":   {nil, nil}, // E21 is inside the base64 blob
	"probe_error":           {marks("X01", "X02"), nil},
	"probe_text_differs":    {marks("D01", "D02"), nil},
	"probe_size_10k":        {marks("H10", "Z10"), nil},
	"probe_size_40k":        {marks("H40", "Z40"), nil},
	"probe_size_66k":        {marks("H66", "Z66"), nil},
	"probe_size_155k":       {marks("H155", "Z155"), nil},
	"probe_sc_empty_array":  {marks("V01"), nil},
	"probe_sc_empty_string": {marks("V02"), nil},
	"probe_sc_zero":         {marks("V03"), nil},
	"probe_sc_false":        {marks("V04"), nil},
	"probe_sc_null":         {marks("V05"), nil},
}

func TestFixtureMarkersAreUniqueAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/fixtures.md")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range fixtureWant {
		all = append(all, w.inline...)
		all = append(all, w.linked...)
	}
	all = append(all, fixtureMark("E21"))
	for i, a := range all {
		if !bytes.Contains(doc, []byte(a)) && !strings.HasPrefix(a, fixtureMark("V0")) {
			t.Errorf("docs/fixtures.md does not name %s", a)
		}
		for j, b := range all {
			if i != j && strings.Contains(b, a) {
				t.Errorf("marker %s is a substring of %s", a, b)
			}
		}
	}
	// Every documented marker is one the tools return (templates such as
	// RSD-FIXTURE-H<n> and RSD-FIXTURE-V0n aside).
	for _, m := range regexp.MustCompile(`RSD-FIXTURE-[A-Za-z0-9<>]*`).FindAllString(string(doc), -1) {
		if m == "RSD-FIXTURE-" || strings.ContainsAny(m, "<abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		if !slices.Contains(all, m) {
			t.Errorf("docs/fixtures.md names %s, which no fixture returns", m)
		}
	}
}

func TestFixtureToolsMatchDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/fixtures.md")
	if err != nil {
		t.Fatal(err)
	}
	clock := newFixtureClock()
	e := newFixtureEnv(t, newFixtureStore(clock), clock, true)
	fx, err := e.s.newFixtures()
	if err != nil {
		t.Fatal(err)
	}
	tools := fx.tools()
	if len(tools) != len(fixtureWant) {
		t.Errorf("%d fixture tools, want %d", len(tools), len(fixtureWant))
	}
	for _, ft := range tools {
		if _, ok := fixtureWant[ft.tool.Name]; !ok {
			t.Errorf("tool %s is not in fixtureWant", ft.tool.Name)
		}
		if !bytes.Contains(doc, []byte("`"+ft.tool.Name+"`")) {
			t.Errorf("docs/fixtures.md does not name tool %s", ft.tool.Name)
		}
		if ft.tool.OutputSchema != nil {
			var m map[string]any
			if err := json.Unmarshal(ft.tool.OutputSchema.(json.RawMessage), &m); err != nil || m["type"] != "object" {
				t.Errorf("%s: outputSchema root is not type object (2025-11-25 needs it): %v", ft.tool.Name, err)
			}
		}
	}
	// Each stored resource's row in the docs has its URI, size and sha256.
	for _, r := range fx.res {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(r.key.String()) + "` \\|.*$").Find(doc)
		if row == nil {
			t.Errorf("docs/fixtures.md has no row for %s", r.key)
			continue
		}
		for _, want := range []string{r.sha256, "| " + itoa(len(r.body)) + " |", r.mimeType} {
			if !bytes.Contains(row, []byte(want)) {
				t.Errorf("docs row of %s lacks %q: %s", r.key, want, row)
			}
		}
		if r.listed != bytes.Contains(row, []byte("**yes**")) {
			t.Errorf("docs row of %s: listed should be %v: %s", r.key, r.listed, row)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestFixtureSizeBodies(t *testing.T) {
	for _, p := range fixtureSizes {
		uri := "report://fixtures/" + p.path()
		b := p.body(uri)
		if len(b) != p.bytes {
			t.Errorf("%s: %d bytes, want %d", p.tool(), len(b), p.bytes)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if !strings.HasPrefix(lines[0], fixtureMark("H"+p.id)+" ") || !strings.Contains(lines[0], uri) {
			t.Errorf("%s: first line %q", p.tool(), lines[0])
		}
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, fixtureMark("Z"+p.id)+" ") {
			t.Errorf("%s: last line %q", p.tool(), last)
		}
		if got := markersIn(b); !slices.Equal(got, marks("H"+p.id, "Z"+p.id)) {
			t.Errorf("%s: markers %v", p.tool(), got)
		}
		for i, c := range b {
			if c >= 0x80 || c < 0x20 && c != '\n' {
				t.Fatalf("%s: byte %d is %#x, want printable ASCII", p.tool(), i, c)
			}
		}
	}
}

func TestFixtureResults(t *testing.T) {
	clock := newFixtureClock()
	e := newFixtureEnv(t, newFixtureStore(clock), clock, true)
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		for name, want := range fixtureWant {
			res := e.call(v, name, nil)
			raw, _ := json.Marshal(res)
			if got := markersIn(raw); !slices.Equal(got, want.inline) {
				t.Errorf("%s %s: markers %v, want %v\n%s", v, name, got, want.inline, truncateForLog(raw))
			}
			var linked []byte
			for _, c := range res["content"].([]any) {
				c := c.(map[string]any)
				if c["type"] == "resource_link" {
					body, rr := e.readBody(v, c["uri"].(string))
					if c["size"] != float64(len(body)) || rr["cacheScope"] != "public" {
						t.Errorf("%s %s: link size %v, body %d bytes, cacheScope %v", v, name, c["size"], len(body), rr["cacheScope"])
					}
					linked = append(linked, body...)
				}
				if c["type"] == "resource" {
					r := c["resource"].(map[string]any)
					body, _ := e.readBody(v, r["uri"].(string))
					var inline []byte
					if t, ok := r["text"].(string); ok {
						inline = []byte(t)
					} else {
						inline, _ = base64.StdEncoding.DecodeString(r["blob"].(string))
					}
					if !bytes.Equal(inline, body) {
						t.Errorf("%s %s: embedded body %q != stored body %q", v, name, inline, body)
					}
					if name == "probe_embedded_blob" && (r["blob"] == nil || !bytes.HasPrefix(inline, []byte(fixtureMark("E21")))) {
						t.Errorf("%s %s: want a blob starting with E21: %v", v, name, r)
					}
				}
			}
			if got := markersIn(linked); !slices.Equal(got, want.linked) {
				t.Errorf("%s %s: linked markers %v, want %v", v, name, got, want.linked)
			}
			if name == "search_structured" || name == "search_text" {
				var wire struct {
					Result struct {
						StructuredContent json.RawMessage `json:"structuredContent"`
					} `json:"result"`
				}
				json.Unmarshal(e.last, &wire)
				sc := wire.Result.StructuredContent
				text := res["content"].([]any)[0].(map[string]any)["text"].(string)
				if name == "search_structured" && string(sc) != text {
					t.Errorf("%s: text %s != structuredContent %s", v, text, sc)
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(text), &doc); err != nil || doc["query"] != "MCP" || doc["total"] != float64(2) {
					t.Errorf("%s %s: text %s", v, name, text)
				}
			}
		}
		// The four forms carry one document, but for its marker.
		docs := map[string]string{}
		for _, name := range []string{"search_text", "search_structured", "search_embedded", "search_link"} {
			res := e.call(v, name, nil)
			c := res["content"].([]any)[0].(map[string]any)
			var s string
			switch c["type"] {
			case "text":
				s = c["text"].(string)
			case "resource":
				s = c["resource"].(map[string]any)["text"].(string)
			case "resource_link":
				b, _ := e.readBody(v, c["uri"].(string))
				s = string(b)
			}
			docs[name] = fixtureMarkerRE.ReplaceAllString(s, "M")
		}
		for name, d := range docs {
			if d != docs["search_text"] {
				t.Errorf("%s: %s document %s differs from search_text's %s beyond the marker", v, name, d, docs["search_text"])
			}
		}
	}
}

func truncateForLog(b []byte) []byte {
	if len(b) > 600 {
		return b[:600]
	}
	return b
}

func TestFixtureStructuredValuesByVersion(t *testing.T) {
	clock := newFixtureClock()
	e := newFixtureEnv(t, newFixtureStore(clock), clock, true)
	for _, v := range fixtureSCs {
		res := e.call("2026-07-28", v.tool, nil)
		sc, present := res["structuredContent"]
		got, _ := json.Marshal(sc)
		if !present || string(got) != v.value {
			t.Errorf("2026-07-28 %s: structuredContent %s (present %v), want %s", v.tool, got, present, v.value)
		}
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		if !strings.HasPrefix(text, fixtureMark(v.id)+" ") || !strings.Contains(text, "is "+v.value+" (") {
			t.Errorf("2026-07-28 %s: text %q", v.tool, text)
		}
		res = e.call("2025-11-25", v.tool, nil)
		if _, present := res["structuredContent"]; present {
			t.Errorf("2025-11-25 %s: structuredContent present: %v", v.tool, res)
		}
		text = res["content"].([]any)[0].(map[string]any)["text"].(string)
		if !strings.HasPrefix(text, fixtureMark(v.id)+" ") || !strings.Contains(text, "omitted because protocol 2025-11-25") {
			t.Errorf("2025-11-25 %s: text %q", v.tool, text)
		}
	}
}

func TestFixtureArguments(t *testing.T) {
	clock := newFixtureClock()
	e := newFixtureEnv(t, newFixtureStore(clock), clock, true)
	if res := e.call("2026-07-28", "search_text", map[string]any{"q": "MCP"}); res["isError"] == true {
		t.Errorf("q MCP: %v", res)
	}
	for _, args := range []map[string]any{{"q": "other"}, {"q": 1}, {"query": "MCP"}} {
		res := e.call("2026-07-28", "search_structured", args)
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] != true || sc["errorKind"] != kindValidation {
			t.Errorf("args %v: %v", args, res)
		}
	}
}

func TestFixtureResourcesAreStoredAndRestored(t *testing.T) {
	clock := newFixtureClock()
	st := newFixtureStore(clock)
	e := newFixtureEnv(t, st, clock, true)
	ctx := context.Background()
	fx, _ := e.s.newFixtures()
	for _, r := range fx.res {
		m, err := st.Stat(ctx, r.key)
		if err != nil {
			t.Fatalf("%s not stored: %v", r.key, err)
		}
		if m.Visibility != store.Public || m.Listed != r.listed || m.SHA256 != r.sha256 || m.Expires.Sub(*clock) != fixtureRetention {
			t.Errorf("%s: %+v", r.key, m)
		}
	}
	if _, err := st.Stat(ctx, store.MustKey(fixtureTenant, "search", fixtureMissingPath)); !isNotFound(err) {
		t.Errorf("%s exists", fixtureMissingPath)
	}

	// A second start on the same store succeeds and keeps Created.
	created := *clock
	*clock = clock.Add(time.Hour)
	newFixtureEnv(t, st, clock, true)
	link := fx.res[fixtureLinkPath]
	if m, _ := st.Stat(ctx, link.key); !m.Created.Equal(created) || !m.Modified.Equal(*clock) {
		t.Errorf("after restart: created %v modified %v", m.Created, m.Modified)
	}

	// Deleted, altered or aging resources are restored by the tool.
	if err := st.Delete(ctx, link.key, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	res := e.call("2025-11-25", "search_link", nil)
	if b, _ := e.readBody("2025-11-25", link.key.String()); !bytes.Equal(b, link.body) || res["isError"] == true {
		t.Errorf("not restored after delete: %s", b)
	}
	other := []byte("changed")
	if _, _, err := st.Put(ctx, &store.Object{Meta: store.Meta{Key: link.key, MIMEType: "text/plain", Size: int64(len(other)), SHA256: store.Sum(other),
		Created: *clock, Modified: *clock, Visibility: store.Private}, Body: other}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	e.call("2026-07-28", "search_link", nil)
	if m, _ := st.Stat(ctx, link.key); m.SHA256 != link.sha256 || m.Visibility != store.Public {
		t.Errorf("not restored after replace: %+v", m)
	}
	*clock = clock.Add(fixtureRetention/2 + time.Hour)
	e.call("2026-07-28", "search_link", nil)
	if m, _ := st.Stat(ctx, link.key); m.Expires.Sub(*clock) != fixtureRetention {
		t.Errorf("not refreshed at half life: expires %v, now %v", m.Expires, *clock)
	}
}

func TestFixturesOff(t *testing.T) {
	clock := newFixtureClock()
	st := newFixtureStore(clock)
	e := newFixtureEnv(t, st, clock, false)
	res, _ := e.rpc("2026-07-28", "tools/list", nil)
	raw, _ := json.Marshal(res)
	for name := range fixtureWant {
		if bytes.Contains(raw, []byte(`"`+name+`"`)) {
			t.Errorf("tools/list shows %s with fixtures off", name)
		}
	}
	if _, rerr := e.rpc("2026-07-28", "tools/call", map[string]any{"name": "search_text", "arguments": map[string]any{}}); rerr == nil {
		t.Error("search_text callable with fixtures off")
	}
	page, err := st.List(context.Background(), store.ListQuery{Tenant: fixtureTenant, Limit: 10})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("fixtures off stored %d resources (%v)", len(page.Items), err)
	}
}
