package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPerTenantSaveRateIs429 (issue 13, per-tenant fairness): past its save
// rate a tenant's save is HTTP 429 with Retry-After and a JSON-RPC error
// naming the limit, on /mcp and on uploads, while another tenant saves and
// the first one still reads; nothing refused is stored.
func TestPerTenantSaveRateIs429(t *testing.T) {
	in := startServer(t, "budgets: {tenantSaveRate: 0.2, tenantSaveBurst: 2, tenantSaveWait: -1s}\n")
	save := func(who *instance, path string) *rawResponse {
		return who.rpc(v2026, "tools/call", map[string]any{"name": "save_report",
			"arguments": map[string]any{"path": path, "mimeType": "text/plain", "text": "x"}})
	}
	for i := range 2 {
		if r := save(in, "rate/"+strconv.Itoa(i)); r.Status != http.StatusOK || r.Error != nil {
			t.Fatalf("save %d within the burst: %d %s", i, r.Status, r.Body)
		}
	}
	r := save(in, "rate/over")
	if r.Status != http.StatusTooManyRequests || r.Error == nil || r.Error.Code != -32000 || !strings.Contains(r.Error.Message, "saves exceed") {
		t.Fatalf("save past the rate: %d %s, want 429 and a -32000 naming the limit", r.Status, r.Body)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	var data struct{ Reason string }
	if json.Unmarshal(r.Error.Data, &data); data.Reason != "save_rate" {
		t.Errorf("error data = %s, want reason save_rate", r.Error.Data)
	}
	up := in.upload("report", "rate/upload", "", strings.NewReader("body"), map[string]string{"Content-Type": "text/plain"})
	if up.Status != http.StatusTooManyRequests || up.Header.Get("Retry-After") == "" {
		t.Errorf("upload past the rate: %d %s", up.Status, up.Body)
	}
	// Another tenant is not affected, and the first still reads.
	other := in.as(in.mint(tokenClaims("other", scopeRead+" "+scopeWrite)))
	if r := save(other, "rate/0"); r.Status != http.StatusOK || r.Error != nil {
		t.Errorf("another tenant's save: %d %s", r.Status, r.Body)
	}
	if got := string(in.read(v2025, "report://default/rate/0").body(t)); got != "x" {
		t.Errorf("read while limited: %q", got)
	}
	if r := in.rpc(v2025, "resources/read", map[string]any{"uri": "report://default/rate/over"}); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("the refused save was stored: %s", r.Body)
	}
	_, metrics := getText(t, in.URL+"/metrics")
	if !strings.Contains(metrics, `resourced_limited_total{reason="save_rate"}`) {
		t.Error("/metrics lacks resourced_limited_total{reason=\"save_rate\"}")
	}
}

// TestDamagedStoredFormIsNeverServed (issue 13, finding 7): a stored JSON
// form with bytes flipped on disk is not served; the read answers the
// body, whose sha256 matches, the damage is counted, and fsck reports it.
func TestDamagedStoredFormIsNeverServed(t *testing.T) {
	in := startServer(t, "")
	// '<' is escaped in the form (\u003c) and raw in the body, so the
	// form's bytes can be found in the file apart from the body's.
	small := "<form-marker-small> " + strings.Repeat("a small report line\n", 40)
	large := "<form-marker-large> " + strings.Repeat("a large report line, well over one read chunk\n", 6000)
	for path, text := range map[string]string{"damaged/small": small, "damaged/large": large} {
		checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": text}), 1)
	}
	in.stop()
	db := filepath.Join(in.dataDir, "resourced.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, marker := range []string{`\u003cform-marker-small\u003e`, `\u003cform-marker-large\u003e`} {
		// Every copy: bbolt's copy-on-write leaves old copies of a page in
		// free pages, and which one is live is bbolt's business.
		n := 0
		for off := 0; ; n++ {
			i := bytes.Index(b[off:], []byte(marker))
			if i < 0 {
				break
			}
			i += off
			b[i+len(marker)+3] ^= 0x01 // a letter of the text, inside the form
			off = i + 1
		}
		if n == 0 {
			t.Fatalf("the stored form of %s is not in the file", marker)
		}
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "fsck", "--config", in.config, "--data-dir", in.dataDir).CombinedOutput(); err == nil || !strings.Contains(string(out), "checksum") {
		t.Errorf("fsck of the damaged forms: %v\n%s; want a failure naming the checksum", err, out)
	}
	in.start()
	for path, text := range map[string]string{"damaged/small": small, "damaged/large": large} {
		for range 2 { // the first read finds the damage, the second knows it
			rr := in.read(v2026, "report://default/"+path)
			got := rr.body(t)
			if string(got) != text || rr.Contents[0].Meta["sha256"] != sum([]byte(text)) {
				t.Fatalf("read of %s: %d bytes, sha256 %v; want the body as saved", path, len(got), rr.Contents[0].Meta["sha256"])
			}
		}
	}
	_, metrics := getText(t, in.URL+"/metrics")
	if !strings.Contains(metrics, "resourced_stored_forms_damaged_total") || strings.Contains(metrics, "resourced_stored_forms_damaged_total{backend=\"bbolt\"} 0") {
		t.Errorf("/metrics does not count the damaged forms:\n%s", grepLines(metrics, "forms_damaged"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
