package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostRun is a run as POST /fixtures/runs describes it, with its URLs
// pointed at the test's process.
type hostRun struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Page     string `json:"page"`
	JSON     string `json:"json"`
	Markdown string `json:"markdown"`
}

// hostReport is the part of report.json the tests look at.
type hostReport struct {
	Tenant     string `json:"tenant"`
	Conditions []struct {
		Key, Value, Source string
	} `json:"conditions"`
	Rows []struct {
		ID, Kind, Result, ServerSaw string
		Calls                       int
		Reads                       map[string]int
		Reported, Missing           []string
	} `json:"rows"`
	Rereads []struct {
		URI, CacheScope string
		TTLMs           int64 `json:"ttlMs"`
		Reads           int
		WithinTTL       int `json:"readsWithinTtl"`
	} `json:"rereads"`
	Clients []string `json:"clients"`
	Events  []struct {
		Method, Tool, URI, Route, ProtocolVersion, Client, Outcome, CacheScope string
		Bytes                                                                  int64
	} `json:"events"`
}

func (r *hostReport) cond(key string) string {
	for _, c := range r.Conditions {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

func (r *hostReport) row(id string) (out struct {
	ID, Kind, Result, ServerSaw string
	Calls                       int
	Reads                       map[string]int
	Reported, Missing           []string
}) {
	for _, row := range r.Rows {
		if row.ID == id {
			return row
		}
	}
	return out
}

// newHostRun starts a host run with token.
func (in *instance) newHostRun(token string) hostRun {
	in.t.Helper()
	req, _ := http.NewRequest("POST", in.URL+"/fixtures/runs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		in.t.Fatalf("POST /fixtures/runs: %d %s", resp.StatusCode, b)
	}
	var run hostRun
	if err := json.Unmarshal(b, &run); err != nil {
		in.t.Fatal(err)
	}
	for _, u := range []*string{&run.Endpoint, &run.Page, &run.JSON, &run.Markdown} {
		if !strings.HasPrefix(*u, testBaseURL+"/") {
			in.t.Fatalf("run URL %s is not below the baseURL", *u)
		}
		*u = in.URL + strings.TrimPrefix(*u, testBaseURL)
	}
	return run
}

func getBody(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (run hostRun) report(t *testing.T) *hostReport {
	t.Helper()
	code, b := getBody(t, run.JSON)
	if code != 200 {
		t.Fatalf("GET report.json: %d %s", code, b)
	}
	var rep hostReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// submit posts the page's form.
func (run hostRun) submit(t *testing.T, form url.Values) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(run.Page, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("submitting the page's form: %d", resp.StatusCode)
	}
}

// goSDKHost plays a host with the go-sdk client on version v: the four
// forms, the link read back, the missing URI, read_resource with a signed
// link that it then downloads, and a private snapshot read twice (go-sdk's
// client answers the second read from its cache: docs/decisions.md). It
// returns the snapshot's URI (on 2026-07-28).
func goSDKHost(t *testing.T, in *instance, run hostRun, token, v string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "resourced-it-hostrun", Version: v}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: run.Endpoint, HTTPClient: bearerClient(token)}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tool := range []string{"search_text", "search_structured", "search_embedded", "search_link", "probe_audience"} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("%s %s: %v %+v", v, tool, err, res)
		}
	}
	link := "search://fixtures/results/fixture-link"
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link}); err != nil {
		t.Fatalf("%s read %s: %v", v, link, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "search://fixtures/results/fixture-missing"}); err == nil {
		t.Fatalf("%s: reading fixture-missing succeeded", v)
	}
	if v != v2026 {
		return ""
	}
	// A read larger than one chunk of the read path (64 KiB).
	big, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "report://fixtures/probe/size-155k.txt"})
	if err != nil || len(big.Contents) != 1 || len(big.Contents[0].Text) != 155000 {
		t.Fatalf("reading size-155k.txt through the run: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_resource", Arguments: map[string]any{"uri": link, "includeDownloadUrl": true}})
	if err != nil || res.IsError {
		t.Fatalf("read_resource: %v %+v", err, res)
	}
	var sc struct {
		DownloadURL string `json:"downloadUrl"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &sc)
	if !strings.HasPrefix(sc.DownloadURL, testBaseURL+"/v1/blobs/") {
		t.Fatalf("read_resource gave no download link: %s", b)
	}
	if code, body := getBody(t, in.URL+strings.TrimPrefix(sc.DownloadURL, testBaseURL)); code != 200 || !bytes.Contains(body, []byte("RSD-FIXTURE-L02")) {
		t.Fatalf("download link: %d %.200s", code, body)
	}
	saved, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "save_search_snapshot", Arguments: map[string]any{"query": "host run", "hits": []any{}}})
	if err != nil || saved.IsError {
		t.Fatalf("save_search_snapshot: %v %+v", err, saved)
	}
	for _, c := range saved.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			for range 2 {
				if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: l.URI}); err != nil {
					t.Fatal(err)
				}
			}
			return l.URI
		}
	}
	t.Fatalf("save_search_snapshot returned no link: %+v", saved.Content)
	return ""
}

// rawRead is a plain 2026-07-28 resources/read of uri on the run's endpoint,
// as a host without a read cache sends it.
func rawRead(t *testing.T, run hostRun, token, uri string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID(), "method": "resources/read", "params": map[string]any{
		"uri": uri, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    v2026,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-host", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	req, _ := http.NewRequest("POST", run.Endpoint, bytes.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": v2026, "Mcp-Method": "resources/read", "Mcp-Name": uri} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"contents"`)) {
		t.Fatalf("resources/read %s on the run: %d %s", uri, resp.StatusCode, b)
	}
}

// TestHostRun drives a host run with the go-sdk client on both versions
// and the TypeScript client (auto and legacy), then checks what the run
// recorded (report.json), the marking of rows by the submitted markers,
// the page, the Markdown export and `resourced check --host-run`.
func TestHostRun(t *testing.T) {
	in := startServer(t, "fixtures: true\n")
	token := in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite))
	run := in.newHostRun(token)

	// Another tenant's token on the run's endpoint: the unknown-run 404.
	other := in.mint(tokenClaims("other", scopeRead+" "+scopeWrite))
	c := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: run.Endpoint, HTTPClient: bearerClient(other)}, &mcp.ClientSessionOptions{ProtocolVersion: v2026}); err == nil {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_text"}); err == nil {
			t.Error("another tenant could call a tool through the run")
		}
		cs.Close()
	}

	var snapshot string
	for _, v := range versions {
		t.Run("go-sdk-"+v, func(t *testing.T) {
			if uri := goSDKHost(t, in, run, token, v); uri != "" {
				snapshot = uri
			}
		})
	}
	if snapshot == "" {
		t.FailNow()
	}
	// A host without a read cache reads the private snapshot twice more.
	rawRead(t, run, token, snapshot)
	rawRead(t, run, token, snapshot)
	tsRan := false
	for _, mode := range []string{"auto", "legacy"} {
		t.Run("ts-"+mode, func(t *testing.T) {
			node := requireTS(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "hostrun.mjs"), run.Endpoint, mode)
			cmd.Env = append(os.Environ(), "RESOURCED_TOKEN="+token)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(lastLine(string(out)), `"ok":true`) {
				t.Fatalf("node ts/hostrun.mjs %s: %v\n%s", mode, err, out)
			}
			tsRan = true
		})
	}

	rep := run.report(t)
	if rep.Tenant != "acme" {
		t.Errorf("tenant %q", rep.Tenant)
	}
	for _, e := range rep.Events {
		if e.Client == "intruder 1" {
			t.Errorf("the other tenant's request was recorded: %+v", e)
		}
	}
	// What each client sent: 2026-07-28 in every request's _meta, 2025-11-25
	// in initialize (then only the MCP-Protocol-Version header).
	seen := map[string]bool{}
	for _, e := range rep.Events {
		if e.Method == "tools/call" && e.Tool == "search_link" {
			seen[e.ProtocolVersion+" "+e.Client] = true
		}
		if e.Method == "initialize" {
			seen["initialize "+e.ProtocolVersion+" "+e.Client] = true
		}
	}
	want := []string{"2026-07-28 resourced-it-hostrun 2026-07-28", "2025-11-25 ", "initialize 2025-11-25 resourced-it-hostrun 2025-11-25"}
	if tsRan {
		want = append(want, "2026-07-28 resourced-ts-hostrun 1.0.0", "initialize 2025-11-25 resourced-ts-hostrun 1.0.0")
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no search_link/initialize event %q; saw %v", w, seen)
		}
	}
	if got := rep.cond("protocol_version_on_wire"); got != "2025-11-25, 2026-07-28" {
		t.Errorf("protocol_version_on_wire = %q", got)
	}
	if got := rep.cond("client_sdk_and_version"); !strings.Contains(got, "resourced-it-hostrun 2026-07-28") || tsRan && !strings.Contains(got, "resourced-ts-hostrun 1.0.0") {
		t.Errorf("client_sdk_and_version = %q", got)
	}
	if got := rep.cond("resource_read_route"); got != "dedicated tool (read_resource) + direct HTTPS (signed link) + resources/read" {
		t.Errorf("resource_read_route = %q", got)
	}
	if got := rep.cond("transport"); got != "Streamable HTTP" {
		t.Errorf("transport = %q", got)
	}
	clients := 2
	if tsRan {
		clients = 4
	}
	if l02 := rep.row("L02"); l02.Reads["resources/read"] != clients || l02.Reads["read_resource"] != 1 || l02.Reads["signed link"] != 1 || l02.Result != "AWAITING MARKERS" {
		t.Errorf("L02 %+v", l02)
	}
	if r := rep.row("T01"); r.Calls != clients || r.Result != "AWAITING MARKERS" {
		t.Errorf("T01 %+v", r)
	}
	bigRead := false
	for _, e := range rep.Events {
		if e.Method == "resources/read" && e.URI == "report://fixtures/probe/size-155k.txt" && e.Outcome == "ok" && e.Bytes > 155000 && e.CacheScope == "public" {
			bigRead = true
		}
	}
	if !bigRead {
		t.Errorf("no event of the 155 KB read")
	}
	if r := rep.row("NOTFOUND"); r.Result != "PASS" {
		t.Errorf("NOTFOUND %+v", r)
	}
	if r := rep.row("probe_error"); r.Result != "NOT RUN" {
		t.Errorf("probe_error %+v", r)
	}
	// The fixture link (public, search ttl 1h) and the private snapshot are
	// both read again within their ttlMs.
	var private, public bool
	for _, rr := range rep.Rereads {
		switch {
		case rr.URI == snapshot && rr.CacheScope == "private" && rr.TTLMs > 0 && rr.Reads >= 2 && rr.WithinTTL == rr.Reads-1:
			private = true
		case rr.URI == "search://fixtures/results/fixture-link" && rr.CacheScope == "public" && rr.WithinTTL == rr.Reads-1:
			public = true
		}
	}
	if !private || !public {
		t.Errorf("rereads (private %v, public %v): %+v", private, public, rep.Rereads)
	}

	// The model's answer marks the rows.
	run.submit(t, url.Values{
		"markers":      {"RSD-FIXTURE-T01 RSD-FIXTURE-S01 RSD-FIXTURE-E01 RSD-FIXTURE-L01 RSD-FIXTURE-L02 RSD-FIXTURE-A02"},
		"host_product": {"go-sdk as a host"}, "host_version": {"v1.8.0"}, "model_and_settings": {"none (a test)"},
	})
	rep = run.report(t)
	for id, want := range map[string]string{"T01": "PASS", "S01": "PASS", "E01": "PASS", "L01": "PASS", "L02": "PASS", "probe_audience": "OBSERVED", "probe_size_10k": "NOT RUN"} {
		if got := rep.row(id).Result; got != want {
			t.Errorf("after submitting, %s = %s, want %s", id, got, want)
		}
	}
	if a := rep.row("probe_audience"); !slices.Equal(a.Missing, []string{"RSD-FIXTURE-A01"}) {
		t.Errorf("probe_audience %+v", a)
	}

	code, page := getBody(t, run.Page)
	if code != 200 || !bytes.Contains(page, []byte(`id="row-L02" class="pass" data-result="PASS"`)) || !bytes.Contains(page, []byte(`value="go-sdk as a host"`)) {
		t.Errorf("page: %d %.300s", code, page)
	}
	code, md := getBody(t, run.Markdown)
	if code != 200 || !bytes.Contains(md, []byte("host_product: \"go-sdk as a host\"")) || !bytes.Contains(md, []byte("| L02 | normative |")) || bytes.Contains(md, []byte(run.ID)) {
		t.Errorf("markdown: %d\n%s", code, md)
	}

	// The terminal: resourced check --host-run, by page URL and by id.
	for _, args := range [][]string{{"--host-run", run.Page}, {"--host-run", run.ID, "--url", in.URL + "/mcp"}} {
		out, err := exec.Command(binary, append([]string{"check"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("resourced check %v: %v\n%s", args[0], err, out)
		}
		for _, w := range []string{"host_product:", "go-sdk as a host", "L02", "PASS", "body fetched: read_resource 1×, resources/read", "probe_size_155k"} {
			if !bytes.Contains(out, []byte(w)) {
				t.Errorf("resourced check --host-run lacks %q:\n%s", w, out)
			}
		}
	}
	// A normative row that fails makes the exit code 1.
	run.submit(t, url.Values{"markers": {"RSD-FIXTURE-T01"}})
	err := exec.Command(binary, "check", "--host-run", run.Page).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("check --host-run with failing rows: %v, want exit code 1", err)
	}
}

// TestHostRunPageInChromium loads a run's page in headless Chromium: the
// rendered DOM has every row, marked, and a screenshot is written as an
// artifact (under $RESOURCED_ARTIFACTS, else the test's temporary
// directory).
func TestHostRunPageInChromium(t *testing.T) {
	chromium := requireChromium(t)
	in := startServer(t, "fixtures: true\n")
	token := in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite))
	run := in.newHostRun(token)
	goSDKHost(t, in, run, token, v2026)
	run.submit(t, url.Values{
		"markers":      {"RSD-FIXTURE-T01 RSD-FIXTURE-S01 RSD-FIXTURE-L01 RSD-FIXTURE-A02"},
		"host_product": {"Example host"}, "host_version": {"1.0"},
	})
	profile := t.TempDir()
	browse := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + profile}
		cmd := exec.CommandContext(ctx, chromium, append(append(base, args...), run.Page)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", chromium, args, err, stderr.String())
		}
		return stdout.Bytes()
	}
	dom := browse("--dump-dom")
	rows := 0
	for _, id := range []string{"T01", "S01", "E01", "L01", "L02", "NOTFOUND", "probe_structured_only", "probe_link_listed", "probe_link_unlisted",
		"probe_audience", "probe_embedded_text", "probe_embedded_blob", "probe_error", "probe_text_differs", "probe_size_10k", "probe_size_40k",
		"probe_size_66k", "probe_size_155k", "probe_sc_empty_array", "probe_sc_empty_string", "probe_sc_zero", "probe_sc_false", "probe_sc_null"} {
		if bytes.Contains(dom, []byte(`<tr id="row-`+id+`"`)) {
			rows++
		} else {
			t.Errorf("rendered DOM has no row %s", id)
		}
	}
	for _, w := range []string{`id="row-T01" class="pass" data-result="PASS"`, `id="row-E01" class="fail" data-result="FAIL"`,
		`id="row-NOTFOUND" class="pass"`, `id="row-probe_audience" class="observed"`, `id="row-probe_error" class="not-run"`,
		`value="Example host"`, "resourced-it-hostrun 2026-07-28"} {
		if !bytes.Contains(dom, []byte(w)) {
			t.Errorf("rendered DOM lacks %q", w)
		}
	}
	t.Logf("Chromium rendered %d of 23 rows", rows)
	dir := os.Getenv("RESOURCED_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "host-run-page.png")
	browse("--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars")
	b, err := os.ReadFile(shot)
	if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(b), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(b))
}

// requireChromium returns Debian's chromium, or skips (fails with
// RESOURCED_REQUIRE_CHROMIUM=1, as CI sets) when it is not installed.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const hint = "chromium is not on PATH: install it with `apt-get install -y chromium` (Debian) to render the host run page"
	if os.Getenv("RESOURCED_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(hint)
	}
	t.Skip(hint)
	return ""
}
