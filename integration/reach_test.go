package integration

// Results that survive every host, and downloads bound to content (issue 16,
// items 2 and 3), against the real binary with go-sdk's client on both
// protocol versions and with the official TypeScript client in both
// negotiation modes (ts/reach.mjs): read_resource's window in
// structuredContent, the howToRead sentence of linked results, portable
// tool schemas (fixtures included), the SEP-2631 download descriptor and
// links bound to the digest they were minted for.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/mcpschema"
)

// reachConfig has the fixture tools (so every tool's schema is listed) and
// a small read limit (so bodies take several windows).
const reachConfig = "fixtures: true\nlimits: {maxReadChars: 4096}\n"

// typeUnions returns the JSON paths of every "type" that is an array in
// schema: what single-type dialects refuse.
func typeUnions(v any, path string) []string {
	var out []string
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			if _, isArray := c.([]any); k == "type" && isArray {
				out = append(out, path+".type")
				continue
			}
			out = append(out, typeUnions(c, path+"."+k)...)
		}
	case []any:
		for i, c := range n {
			out = append(out, typeUnions(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

func TestReachGoSDK(t *testing.T) {
	in := startServer(t, reachConfig)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "resourced-reach-it", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: in.URL + "/mcp", HTTPClient: bearerClient(in.Token)},
				&mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			reachGoSDK(ctx, t, in, cs, v)
		})
	}
}

func reachGoSDK(ctx context.Context, t *testing.T, in *instance, cs *mcp.ClientSession, v string) {
	// Every tool's schemas, fixtures included: no type unions; keep the
	// output schemas to validate results against.
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]interface{ Validate(any) error }{}
	for _, tool := range lt.Tools {
		for which, sch := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			if sch == nil {
				continue
			}
			raw, _ := json.Marshal(sch)
			var doc any
			json.Unmarshal(raw, &doc)
			for _, p := range typeUnions(doc, which) {
				t.Errorf("%s: %s is a type union", tool.Name, p)
			}
			if which == "outputSchema" {
				compiled, err := mcpschema.CompileSchema(raw)
				if err != nil {
					t.Fatalf("%s outputSchema: %v", tool.Name, err)
				}
				outputs[tool.Name] = compiled
			}
		}
	}
	if len(lt.Tools) < 20 {
		t.Fatalf("%d tools: the fixtures are missing", len(lt.Tools))
	}
	call := func(tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var sc map[string]any
		json.Unmarshal(raw, &sc)
		if res.IsError {
			t.Fatalf("%s(%v): %s", tool, args, raw)
		}
		doc, _ := mcpschema.Decode(raw)
		if err := outputs[tool].Validate(doc); err != nil {
			t.Errorf("%s: structuredContent does not validate against the outputSchema: %v\n%s", tool, err, raw)
		}
		var fromText map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &fromText); err != nil || !jsonEqual(fromText, sc) {
			t.Errorf("%s: the first text item is not the structured value", tool)
		}
		return res, sc
	}

	// A body of several windows, full of what JSON escapes.
	var b strings.Builder
	for i := 0; b.Len() < 12000; i++ {
		fmt.Fprintf(&b, "line %d: \"quoted\" <tag> & \\ tab\t✓\n", i)
	}
	body := b.String()
	path := "reach/" + v + "/report.txt"
	uri := "report://default/" + path
	_, sc := call("save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": body, "includeDownloadUrl": true, "downloadUrlTtl": "PT5M"})

	// howToRead, in plain words, in the value (text and structuredContent).
	how, _ := sc["howToRead"].(string)
	for _, want := range []string{"resources/read", "read_resource", uri, "nextOffset", "downloadUrl", sc["downloadUrlExpiresAt"].(string)} {
		if !strings.Contains(how, want) {
			t.Errorf("howToRead %q lacks %q", how, want)
		}
	}

	// The SEP-2631 descriptor, with the link's own clock.
	df := sc["downloadFile"].(map[string]any)
	file, dl := df["file"].(map[string]any), df["download"].(map[string]any)
	digest := sha256.Sum256([]byte(body))
	if d := file["digest"].(map[string]any); d["algorithm"] != "sha-256" || d["value"] != base64.RawURLEncoding.EncodeToString(digest[:]) ||
		file["uri"] != uri || file["name"] != "report.txt" || file["mimeType"] != "text/plain" || file["size"] != float64(len(body)) {
		t.Errorf("downloadFile.file = %v", file)
	}
	if dl["transport"] != "https" || dl["method"] != "GET" || dl["url"] != sc["downloadUrl"] || dl["expiresAt"] != sc["downloadUrlExpiresAt"] || dl["expiresAt"] == sc["expiresAt"] {
		t.Errorf("downloadFile.download = %v; downloadUrlExpiresAt %v, resource expiresAt %v", dl, sc["downloadUrlExpiresAt"], sc["expiresAt"])
	}
	link := in.local(dl["url"].(string))
	if r := fetch(t, http.MethodGet, link, nil); r.Status != 200 || string(r.Body) != body {
		t.Fatalf("GET download.url: HTTP %d", r.Status)
	}

	// read_resource, as a host that forwards only structuredContent sees it:
	// the windows reassemble the body.
	var got strings.Builder
	windows := 0
	for off := 0.0; ; windows++ {
		if windows > 50 {
			t.Fatal("read_resource: no end")
		}
		res, sc := call("read_resource", map[string]any{"uri": uri, "offset": off})
		text, _ := sc["text"].(string)
		if item := res.Content[1].(*mcp.TextContent).Text; item != text || sc["encoding"] != "text" {
			t.Fatalf("window at %v: structured text differs from the window item", off)
		}
		got.WriteString(text)
		next, ok := sc["nextOffset"].(float64)
		if !ok {
			break
		}
		off = next
	}
	if got.String() != body || windows < 2 {
		t.Errorf("read_resource windows (%d) from structuredContent do not reassemble the body", windows)
	}
	// A binary window: blob in structuredContent, the same bytes embedded.
	bin := []byte{0, 1, 2, 0xfe, 0xff}
	_, bsc := call("save_report", map[string]any{"path": "reach/" + v + "/b.bin", "mimeType": "application/octet-stream", "blobBase64": base64.StdEncoding.EncodeToString(bin)})
	res, rsc := call("read_resource", map[string]any{"uri": bsc["uri"]})
	blob, _ := base64.StdEncoding.DecodeString(fmt.Sprint(rsc["blob"]))
	if emb, ok := res.Content[1].(*mcp.EmbeddedResource); !ok || !bytes.Equal(blob, bin) || !bytes.Equal(emb.Resource.Blob, bin) || rsc["encoding"] != "base64" {
		t.Errorf("binary window: structured blob %v, items %+v", rsc["blob"], res.Content)
	}

	// list_resources says how to read what it links.
	if _, lsc := call("list_resources", map[string]any{"scheme": "report", "prefix": "reach/" + v + "/"}); !strings.Contains(fmt.Sprint(lsc["howToRead"]), "read_resource") {
		t.Errorf("list_resources howToRead = %v", lsc["howToRead"])
	}

	// Bound to the digest: unchanged still works; replaced is 404 saying to
	// ask for a new link; a new link serves the new body; a tampered digest
	// is 403; delete and re-create leaves old links dead.
	_, st := call("stat_resource", map[string]any{"uri": uri, "includeDownloadUrl": true})
	unchanged := in.local(st["downloadUrl"].(string))
	if r := fetch(t, http.MethodGet, unchanged, nil); r.Status != 200 {
		t.Errorf("a link to the unchanged body: HTTP %d", r.Status)
	}
	call("save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "replaced", "overwrite": true})
	for name, l := range map[string]string{"minted at save": link, "minted by stat": unchanged} {
		if r := fetch(t, http.MethodGet, l, nil); r.Status != 404 || !strings.Contains(string(r.Body), "ask for a new link") || bytes.Contains(r.Body, []byte("replaced")) {
			t.Errorf("%s link after a replace: HTTP %d %q", name, r.Status, r.Body)
		}
	}
	_, st = call("stat_resource", map[string]any{"uri": uri, "includeDownloadUrl": true})
	fresh := in.local(st["downloadUrl"].(string))
	if r := fetch(t, http.MethodGet, fresh, nil); r.Status != 200 || string(r.Body) != "replaced" {
		t.Errorf("a new link after the replace: HTTP %d %q", r.Status, r.Body)
	}
	old := fmt.Sprintf("sha256=%x", digest)
	newSum := sha256.Sum256([]byte("replaced"))
	tampered := strings.Replace(link, old, fmt.Sprintf("sha256=%x", newSum), 1)
	if tampered == link {
		t.Fatalf("link %s does not carry sha256=", link)
	}
	if r := fetch(t, http.MethodGet, tampered, nil); r.Status != 403 {
		t.Errorf("an old link with the new body's digest: HTTP %d %q", r.Status, r.Body)
	}
	call("delete_resource", map[string]any{"uri": uri})
	call("save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "re-created"})
	if r := fetch(t, http.MethodGet, fresh, nil); r.Status != 404 || !strings.Contains(string(r.Body), "ask for a new link") {
		t.Errorf("a link after delete and re-create: HTTP %d %q", r.Status, r.Body)
	}
}

// TestReachTypeScript runs ts/reach.mjs with the official TypeScript client
// ("auto": 2026-07-28 through server/discover; "legacy": initialize,
// 2025-11-25). The client validates every structuredContent against its
// tool's outputSchema.
func TestReachTypeScript(t *testing.T) {
	node := requireTS(t)
	for _, mode := range []string{"auto", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			in := startServer(t, reachConfig)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "reach.mjs"), in.URL+"/mcp", mode, testBaseURL, in.URL)
			cmd.Env = append(os.Environ(), "RESOURCED_TOKEN="+in.Token)
			var stdout bytes.Buffer
			combined := &syncBuffer{}
			cmd.Stdout = io.MultiWriter(&stdout, combined)
			cmd.Stderr = combined
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("node ts/reach.mjs %s timed out; output:\n%s", mode, combined)
			}
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("running node: %v", err)
			}
			if err != nil {
				t.Fatalf("node ts/reach.mjs %s failed (%v); output:\n%s", mode, err, combined)
			}
			if summary := lastLine(stdout.String()); !strings.Contains(summary, `"ok":true`) {
				t.Fatalf("no JSON summary line; output:\n%s", combined)
			}
		})
	}
}
