package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/store/memstore"
)

// TestRequestLogLine holds the request log line to what it says for a
// read answered by the read stage and for one refused by go-sdk: every
// member, the duration in seconds, the logger's own attributes (With),
// its level, and no source.
func TestRequestLogLine(t *testing.T) {
	logs := &syncBuffer{}
	s, err := New(Options{
		Store: memstore.New(memstore.Options{}), BaseURL: "http://127.0.0.1", Auth: tenantAuth{},
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{AddSource: true})).With("component", "server"),
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("X-Tenant", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	lastLine := func() map[string]any {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		var v map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
			t.Fatalf("log line %q: %v", lines[len(lines)-1], err)
		}
		return v
	}
	save := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"a/b","mimeType":"text/plain","text":"hello"}}}`
	if code := post(save); code != http.StatusOK {
		t.Fatalf("save: HTTP %d", code)
	}
	before := time.Now()
	if code := post(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"report://acme/a/b"}}`); code != http.StatusOK {
		t.Fatalf("read: HTTP %d", code)
	}
	line := lastLine()
	at, err := time.Parse(time.RFC3339Nano, line["time"].(string))
	if err != nil || at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("time %v (%v): not the request's end", line["time"], err)
	}
	want := map[string]any{"level": "INFO", "msg": "request", "component": "server", "http": "POST /mcp", "status": 200.0,
		"method": "resources/read", "tool": "", "tenant": "acme", "outcome": "ok"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %#v, want %#v (line %v)", k, line[k], v, line)
		}
	}
	if n, _ := line["bytes"].(float64); n < 100 {
		t.Errorf("bytes = %v, want the response's length", line["bytes"])
	}
	if d, ok := line["duration"].(float64); !ok || d <= 0 || d > 60 {
		t.Errorf("duration = %#v, want seconds", line["duration"])
	}
	if _, ok := line["source"]; ok {
		t.Errorf("source = %v: the request line has no caller worth naming", line["source"])
	}
	// A method go-sdk refuses: the outcome is its error code.
	post(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"report://acme/none"}}`)
	if line := lastLine(); line["outcome"] != "-32602" || line["method"] != "resources/read" {
		t.Errorf("a miss: %v", line)
	}
	if strings.Count(logs.String(), `"msg":"request"`) != 3 || bytes.Contains([]byte(logs.String()), []byte("Bearer")) {
		t.Errorf("want three request lines, no token:\n%s", logs.String())
	}
	// A caller-chosen tool name of 1 MB is logged clipped (hostile review:
	// the request line held it whole).
	long := strings.Repeat("é", 1<<19)
	post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + long + `","arguments":{}}}`)
	if line := lastLine(); line["tool"] != long[:telemetry.MaxName]+"…" {
		t.Errorf("a 1 MB tool name is logged as %d bytes, want %d", len(line["tool"].(string)), telemetry.MaxName+len("…"))
	}
}

func TestClipName(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"save_report":                  "save_report",
		strings.Repeat("a", 128):       strings.Repeat("a", 128),
		strings.Repeat("a", 129):       strings.Repeat("a", 128) + "…",
		"a" + strings.Repeat("é", 100): "a" + strings.Repeat("é", 63) + "…", // 127 bytes: no half rune
	} {
		if got := telemetry.ClipName(in); got != want {
			t.Errorf("ClipName(%d bytes) = %q, want %q", len(in), got, want)
		}
	}
}
