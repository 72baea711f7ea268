package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkReport is the part of `resourced check --json` the tests read.
type checkReport struct {
	URL      string            `json:"url"`
	Protocol string            `json:"protocol"`
	Layers   map[string]string `json:"layers"`
	Rows     []struct {
		ID       string `json:"id"`
		Layer    string `json:"layer"`
		Kind     string `json:"kind"`
		Status   string `json:"status"`
		Check    string `json:"check"`
		Evidence string `json:"evidence"`
	} `json:"rows"`
	Summary struct {
		Rows          int `json:"rows"`
		Fail          int `json:"fail"`
		NormativeFail int `json:"normativeFail"`
	} `json:"summary"`
}

// runCheck runs the real `resourced check` binary and returns its exit
// code and output.
func runCheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"check", "--timeout", "30s"}, args...)...)
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running resourced check: %v", err)
	}
	return code, out.String(), errOut.String()
}

// checkAgainst runs check against in with its token and returns the
// parsed JSON report, after asserting that no output shows the token.
func checkAgainst(t *testing.T, in *instance, version string, wantCode int) *checkReport {
	t.Helper()
	dir := t.TempDir()
	jsonOut, mdOut := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.md")
	code, stdout, stderr := runCheck(t, "--url", in.URL+"/mcp", "--header", "Authorization: Bearer "+in.Token,
		"--protocol", version, "--json", jsonOut, "--markdown", mdOut)
	if code != wantCode {
		t.Fatalf("resourced check --protocol %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", version, code, wantCode, stdout, stderr)
	}
	js, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(mdOut)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"stdout": stdout, "stderr": stderr, "JSON": string(js), "Markdown": string(md)} {
		if strings.Contains(s, in.Token) {
			t.Errorf("the %s output of resourced check contains the token", name)
		}
	}
	var rep checkReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, truncateBytes(js, 2000))
	}
	if rep.Protocol != version {
		t.Errorf("report protocol %q, want %q", rep.Protocol, version)
	}
	if len(rep.Rows) == 0 || rep.Summary.Rows != len(rep.Rows) {
		t.Errorf("report has %d rows, summary says %d", len(rep.Rows), rep.Summary.Rows)
	}
	if !strings.Contains(string(md), "| id | kind | status | check | evidence |") {
		t.Errorf("--markdown output has no table:\n%s", md)
	}
	for _, r := range rep.Rows {
		if !strings.Contains(stdout, r.ID+" ") {
			t.Errorf("row %s missing from the terminal table", r.ID)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", stdout)
	}
	return &rep
}

// assertRows checks every row is PASS, or SKIP with a reason and one of
// skips.
func assertRows(t *testing.T, rep *checkReport, skips map[string]bool) {
	t.Helper()
	for _, r := range rep.Rows {
		switch r.Status {
		case "PASS":
		case "SKIP":
			if r.Evidence == "" {
				t.Errorf("%s SKIP without a reason", r.ID)
			}
			if !skips[r.ID] {
				t.Errorf("%s SKIP: %s", r.ID, r.Evidence)
			}
		default:
			t.Errorf("%s %s %s: %s — %s", r.ID, r.Kind, r.Status, r.Check, r.Evidence)
		}
	}
}

// TestCheckResourced is issue item 3: `resourced check` against resourced
// itself, fixtures on, on both protocol versions: exit 0, every row PASS
// but for those that cannot apply (no prompts; resultType before
// 2026-07-28), each with its reason.
func TestCheckResourced(t *testing.T) {
	in := startServer(t, "fixtures: true\n")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			rep := checkAgainst(t, in, v, 0)
			skips := map[string]bool{"U05": true}
			if v == v2025 {
				skips["U14"] = true
			}
			assertRows(t, rep, skips)
			for layer, state := range rep.Layers {
				if state != "applied" {
					t.Errorf("layer %s: %s", layer, state)
				}
			}
		})
	}
}

// TestCheckWithoutFixtures: with fixtures off the acceptance rows skip,
// saying why, and the rest still pass.
func TestCheckWithoutFixtures(t *testing.T) {
	in := startServer(t, "")
	rep := checkAgainst(t, in, v2026, 0)
	skips := map[string]bool{"U05": true, "U12": true} // U12: nothing listed to read
	for _, r := range rep.Rows {
		if r.Layer == "acceptance" {
			skips[r.ID] = true
			if !strings.Contains(r.Evidence, "fixture") {
				t.Errorf("%s skipped with %q, want the reason to name the fixtures", r.ID, r.Evidence)
			}
		}
	}
	assertRows(t, rep, skips)
}

// TestCheckReadOnlyToken: a token without resources:write skips the store
// contract (it needs to save), and says so.
func TestCheckReadOnlyToken(t *testing.T) {
	in := startServer(t, "fixtures: true\n")
	ro := in.as(in.mint(tokenClaims("default", scopeRead)))
	rep := checkAgainst(t, ro, v2026, 0)
	skips := map[string]bool{"U05": true}
	for _, r := range rep.Rows {
		if r.Layer == "store" {
			skips[r.ID] = true
			if !strings.Contains(r.Evidence, "resources:write") {
				t.Errorf("%s skipped with %q, want the reason to name resources:write", r.ID, r.Evidence)
			}
		}
	}
	assertRows(t, rep, skips)
}

// TestCheckExitCodes: 2 for usage and connection errors, 1 for a
// normative failure.
func TestCheckExitCodes(t *testing.T) {
	in := startServer(t, "")
	code, _, stderr := runCheck(t, "--url", in.URL+"/mcp")
	if code != 2 || !strings.Contains(stderr, "401") {
		t.Errorf("without a token: exit %d, stderr %q; want 2 naming HTTP 401", code, stderr)
	}
	// A token for another audience: the server's error_description shows.
	claims := tokenClaims("default", scopeRead)
	claims["aud"] = "http://elsewhere.test"
	code, _, stderr = runCheck(t, "--url", in.URL+"/mcp", "--header", "Authorization: Bearer "+in.mint(claims))
	if code != 2 || !strings.Contains(stderr, "the server says:") || !strings.Contains(stderr, testBaseURL) {
		t.Errorf("a token for another audience: exit %d, stderr %q; want 2 with the server's error_description naming %s", code, stderr, testBaseURL)
	}
	for _, args := range [][]string{
		{},
		{"--url", in.URL + "/mcp", "--protocol", "2024-11-05"},
		{"--url", in.URL + "/mcp", "--header", "no colon"},
		{"--url", in.URL + "/mcp", "extra"},
	} {
		if code, _, _ := runCheck(t, args...); code != 2 {
			t.Errorf("resourced check %q exited %d, want 2", args, code)
		}
	}

	// A server whose server/discover result lacks ttlMs and cacheScope
	// fails a normative row (U01): exit 1.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Method == "server/discover" {
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`))
	}))
	defer bad.Close()
	code, stdout, _ := runCheck(t, "--url", bad.URL, "--protocol", v2026)
	if code != 1 || !strings.Contains(stdout, "U01   normative   FAIL") {
		t.Errorf("against a broken discover: exit %d, want 1 with U01 FAIL\n%s", code, stdout)
	}
}
