package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// saveResult is the result toolHandler makes of a save_report of 1 KiB:
// the value as text and structuredContent, and its resource_link.
func saveResult(tb testing.TB) *mcp.CallToolResult {
	tb.Helper()
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	k, err := store.NewKey("default", "report", "bench/x1fz9k-3-1041")
	if err != nil {
		tb.Fatal(err)
	}
	m := store.Meta{Key: k, MIMEType: "text/markdown", Size: 1024, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Created: now, Modified: now, Expires: now.Add(168 * time.Hour), Title: "x1fz9k-3-1041",
		Description: "text/markdown, 1024 bytes, saved 2026-12-02T13:00:00Z", Visibility: store.Private}
	v := service.MetaValue("created", &m)
	v.HowToRead = mcptool.HowToRead(v.URI, "")
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}, mcptool.ResourceLink(&m)},
		StructuredContent: json.RawMessage(b)}
}

// TestOwnResultMatchesSDK: mcptool.AppendResponse writes a save's result
// as go-sdk's MarshalJSON does (TestFastCallMatchesSDK compares whole
// answers; this is the one result the benchmark below measures).
func TestOwnResultMatchesSDK(t *testing.T) {
	res := saveResult(t)
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":7,"result":` + string(b) + `}`
	got, err := mcptool.AppendResponse(nil, []byte("7"), nil, res, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("mcptool.AppendResponse:\n%s\ngo-sdk:\n%s", got, want)
	}
}

// BenchmarkSaveResult: the response to a save, on 2026-07-28, written
// through go-sdk's CallToolResult.MarshalJSON (the fast call path before)
// and by mcptool.AppendResponse.
func BenchmarkSaveResult(b *testing.B) {
	res := saveResult(b)
	s := &Server{serverInfoMeta: []byte(`"_meta":{"` + mcp.MetaKeyServerInfo + `":{"name":"resourced","version":"v0.0.0"}}`)}
	id := []byte("1041")
	for _, c := range []struct {
		name string
		own  bool
	}{{"go-sdk", false}, {"own", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.appendCallResponse(nil, id, res, true, true, c.own); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
