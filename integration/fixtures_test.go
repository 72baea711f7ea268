package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/resourced/resourced/mcpschema"
)

// The fixture tools of docs/fixtures.md, exercised against the real binary:
// every tool on both protocol versions (each response schema-validated by
// rpc), every marker where the page says it is, and every linked or
// embedded body read back as the default tenant and as another tenant.

const (
	fixtureLinkURI     = "search://fixtures/results/fixture-link"
	fixtureEmbeddedURI = "search://fixtures/results/fixture-embedded"
	fixtureListedURI   = "report://fixtures/probe/link-listed.txt"
	fixtureUnlistedURI = "report://fixtures/probe/link-unlisted.txt"
	fixtureMissingURI  = "search://fixtures/results/fixture-missing"
)

var fixtureMarkRE = regexp.MustCompile(`RSD-FIXTURE-[A-Z0-9]+`)

func fixtureMarks(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "RSD-FIXTURE-" + id
	}
	slices.Sort(out)
	return out
}

// fixtureMarksIn returns the sorted distinct markers in b.
func fixtureMarksIn(b []byte) []string {
	var out []string
	for _, m := range fixtureMarkRE.FindAllString(string(b), -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// fixtureSpec is what docs/fixtures.md promises for one tool.
type fixtureSpec struct {
	items  []string // content item types, in order
	inline []string // markers in the tools/call result
	linked []string // markers in the bodies behind its resource_links
	uri    string   // the one linked or embedded URI, if any
	schema bool     // declares an outputSchema
}

var fixtureSpecs = map[string]fixtureSpec{
	"search_text":           {items: []string{"text"}, inline: fixtureMarks("T01")},
	"search_structured":     {items: []string{"text"}, inline: fixtureMarks("S01"), schema: true},
	"search_embedded":       {items: []string{"resource"}, inline: fixtureMarks("E01"), uri: fixtureEmbeddedURI},
	"search_link":           {items: []string{"resource_link"}, inline: fixtureMarks("L01"), linked: fixtureMarks("L02"), uri: fixtureLinkURI},
	"probe_structured_only": {items: []string{}, inline: fixtureMarks("S02"), schema: true},
	"probe_link_listed":     {items: []string{"resource_link"}, inline: fixtureMarks("L11"), linked: fixtureMarks("L12"), uri: fixtureListedURI},
	"probe_link_unlisted":   {items: []string{"resource_link"}, inline: fixtureMarks("L21"), linked: fixtureMarks("L22"), uri: fixtureUnlistedURI},
	"probe_audience":        {items: []string{"text", "text"}, inline: fixtureMarks("A01", "A02")},
	"probe_embedded_text":   {items: []string{"resource"}, inline: fixtureMarks("E11"), uri: "report://fixtures/probe/embedded-text.txt"},
	"probe_embedded_blob":   {items: []string{"resource"}, uri: "report://fixtures/probe/embedded-blob.txt"},
	"probe_error":           {items: []string{"text"}, inline: fixtureMarks("X01", "X02"), schema: true},
	"probe_text_differs":    {items: []string{"text"}, inline: fixtureMarks("D01", "D02"), schema: true},
	"probe_size_10k":        {items: []string{"text"}, inline: fixtureMarks("H10", "Z10"), uri: "report://fixtures/probe/size-10k.txt"},
	"probe_size_40k":        {items: []string{"text"}, inline: fixtureMarks("H40", "Z40"), uri: "report://fixtures/probe/size-40k.txt"},
	"probe_size_66k":        {items: []string{"text"}, inline: fixtureMarks("H66", "Z66"), uri: "report://fixtures/probe/size-66k.txt"},
	"probe_size_155k":       {items: []string{"text"}, inline: fixtureMarks("H155", "Z155"), uri: "report://fixtures/probe/size-155k.txt"},
	"probe_sc_empty_array":  {items: []string{"text"}, inline: fixtureMarks("V01")},
	"probe_sc_empty_string": {items: []string{"text"}, inline: fixtureMarks("V02")},
	"probe_sc_zero":         {items: []string{"text"}, inline: fixtureMarks("V03")},
	"probe_sc_false":        {items: []string{"text"}, inline: fixtureMarks("V04")},
	"probe_sc_null":         {items: []string{"text"}, inline: fixtureMarks("V05")},
}

var fixtureSizes = map[string]int{"probe_size_10k": 10000, "probe_size_40k": 40000, "probe_size_66k": 66000, "probe_size_155k": 155000}

var fixtureSCValues = map[string]string{
	"probe_sc_empty_array": `[]`, "probe_sc_empty_string": `""`, "probe_sc_zero": `0`, "probe_sc_false": `false`, "probe_sc_null": `null`,
}

// fixtureResult is a tools/call result with every field the fixtures use.
type fixtureResult struct {
	Content []struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		URI         string `json:"uri"`
		Name        string `json:"name"`
		MIMEType    string `json:"mimeType"`
		Size        *int64 `json:"size"`
		Annotations *struct {
			Audience     []string `json:"audience"`
			LastModified string   `json:"lastModified"`
		} `json:"annotations"`
		Resource *struct {
			URI      string  `json:"uri"`
			MIMEType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	hasStructured     bool
}

func (in *instance) callFixture(version, tool string, args map[string]any) (*fixtureResult, json.RawMessage) {
	in.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r := in.rpc(version, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil {
		in.t.Fatalf("%s tools/call %s: JSON-RPC error %d %s", version, tool, r.Error.Code, r.Error.Message)
	}
	var res fixtureResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		in.t.Fatal(err)
	}
	var members map[string]json.RawMessage
	json.Unmarshal(r.Result, &members)
	_, res.hasStructured = members["structuredContent"]
	return &res, r.Result
}

// fixtureOutputSchemas returns the outputSchema of every tool in tools/list.
func (in *instance) fixtureOutputSchemas(version string) map[string]json.RawMessage {
	in.t.Helper()
	r := in.rpc(version, "tools/list", nil)
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		in.t.Fatalf("tools/list: %s", r.Body)
	}
	out := map[string]json.RawMessage{}
	for _, t := range res.Tools {
		out[t.Name] = t.OutputSchema
		if _, ok := fixtureSpecs[t.Name]; ok && !bytes.Contains(t.InputSchema, []byte(`"q"`)) {
			in.t.Errorf("%s: inputSchema lacks q: %s", t.Name, t.InputSchema)
		}
	}
	return out
}

func validateAgainst(t *testing.T, name string, schema, value json.RawMessage) {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("https://fixtures.test/"+name+".json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("https://fixtures.test/" + name + ".json")
	if err != nil {
		t.Fatalf("%s: outputSchema does not compile: %v", name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: structuredContent %s does not match its outputSchema: %v", name, value, err)
	}
}

func TestFixtureTools(t *testing.T) {
	// Why probe_sc_* depend on the version: 2025-11-25 refuses a
	// non-object structuredContent, 2026-07-28 accepts any value.
	for _, sc := range fixtureSCValues {
		doc := []byte(`{"content":[],"structuredContent":` + sc + `}`)
		if mcpschema.ValidateJSON(v2025, "CallToolResult", doc) == nil {
			t.Errorf("2025-11-25 schema accepts %s", doc)
		}
		if err := mcpschema.ValidateJSON(v2026, "CallToolResult", []byte(`{"resultType":"complete","content":[],"structuredContent":`+sc+`}`)); err != nil {
			t.Errorf("2026-07-28 schema refuses structuredContent %s: %v", sc, err)
		}
	}
	in := startServer(t, "fixtures: true\n")
	other := in.as(in.mint(tokenClaims("other", scopeRead)))
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			schemas := in.fixtureOutputSchemas(v)
			for name := range fixtureSpecs {
				if _, ok := schemas[name]; !ok {
					t.Errorf("tools/list lacks %s", name)
				}
			}
			docs := map[string]string{} // the four forms' documents, marker removed
			for name, spec := range fixtureSpecs {
				res, raw := in.callFixture(v, name, nil)
				var types []string
				for _, c := range res.Content {
					types = append(types, c.Type)
				}
				if !slices.Equal(types, spec.items) && !(len(types) == 0 && len(spec.items) == 0) {
					t.Errorf("%s %s: content types %v, want %v", v, name, types, spec.items)
				}
				if got := fixtureMarksIn(raw); !slices.Equal(got, spec.inline) {
					t.Errorf("%s %s: markers %v, want %v", v, name, got, spec.inline)
				}
				if (name == "probe_error") != res.IsError {
					t.Errorf("%s %s: isError %v", v, name, res.IsError)
				}
				if spec.schema != (len(schemas[name]) > 0) {
					t.Errorf("%s %s: outputSchema %s, want one: %v", v, name, schemas[name], spec.schema)
				}
				if spec.schema {
					validateAgainst(t, name, schemas[name], res.StructuredContent)
				}

				// Bodies behind links and embedded items read back, for
				// us and for another tenant, byte for byte.
				var linked []byte
				for _, c := range res.Content {
					var uri string
					var inline []byte
					switch c.Type {
					case "resource_link":
						uri = c.URI
						if c.Name == "" || c.MIMEType == "" || c.Size == nil || c.Annotations == nil || c.Annotations.LastModified == "" {
							t.Errorf("%s %s: resource_link lacks a field: %+v", v, name, c)
						}
					case "resource":
						uri = c.Resource.URI
						switch {
						case c.Resource.Text != nil && c.Resource.Blob == nil:
							inline = []byte(*c.Resource.Text)
						case c.Resource.Blob != nil && c.Resource.Text == nil:
							inline, _ = base64.StdEncoding.DecodeString(*c.Resource.Blob)
							if name != "probe_embedded_blob" {
								t.Errorf("%s %s: blob", v, name)
							}
						default:
							t.Errorf("%s %s: embedded resource has neither or both of text and blob", v, name)
						}
					default:
						continue
					}
					if uri != spec.uri {
						t.Errorf("%s %s: uri %s, want %s", v, name, uri, spec.uri)
					}
					rr := in.read(v, uri)
					body := rr.body(t)
					if ob := other.read(v, uri).body(t); !bytes.Equal(ob, body) {
						t.Errorf("%s %s: another tenant reads %d other bytes", v, name, len(ob))
					}
					if rr.CacheScope == nil || *rr.CacheScope != "public" || rr.Contents[0].Meta["sha256"] != sum(body) {
						t.Errorf("%s %s: cacheScope %s, _meta %v", v, name, show(rr.CacheScope), rr.Contents[0].Meta)
					}
					if c.Type == "resource_link" {
						if *c.Size != int64(len(body)) {
							t.Errorf("%s %s: size %d, body %d bytes", v, name, *c.Size, len(body))
						}
						linked = append(linked, body...)
						if name == "search_link" {
							docs[name] = fixtureMarkRE.ReplaceAllString(string(body), "M")
						}
					} else if !bytes.Equal(inline, body) {
						t.Errorf("%s %s: embedded body %q != stored %q", v, name, inline, body)
					}
					if name == "probe_embedded_blob" && !bytes.HasPrefix(inline, []byte("RSD-FIXTURE-E21 ")) {
						t.Errorf("%s %s: blob %q", v, name, inline)
					}
					if name == "search_embedded" {
						docs[name] = fixtureMarkRE.ReplaceAllString(string(inline), "M")
					}
				}
				if got := fixtureMarksIn(linked); !slices.Equal(got, spec.linked) {
					t.Errorf("%s %s: linked markers %v, want %v", v, name, got, spec.linked)
				}

				switch {
				case name == "search_text":
					docs[name] = fixtureMarkRE.ReplaceAllString(res.Content[0].Text, "M")
					if res.hasStructured {
						t.Errorf("%s search_text has structuredContent", v)
					}
				case name == "search_structured":
					if string(res.StructuredContent) != res.Content[0].Text {
						t.Errorf("%s S01: text %s != structuredContent %s", v, res.Content[0].Text, res.StructuredContent)
					}
					docs[name] = fixtureMarkRE.ReplaceAllString(string(res.StructuredContent), "M")
				case name == "probe_audience":
					for i, want := range []string{"user", "assistant"} {
						if a := res.Content[i].Annotations; a == nil || !slices.Equal(a.Audience, []string{want}) {
							t.Errorf("%s probe_audience item %d: annotations %+v", v, i, a)
						}
					}
				case name == "probe_error":
					var sc map[string]any
					json.Unmarshal(res.StructuredContent, &sc)
					if sc["status"] != "failed" || sc["errorKind"] != "validation_error" ||
						!strings.Contains(res.Content[0].Text, "RSD-FIXTURE-X01") || strings.Contains(res.Content[0].Text, "RSD-FIXTURE-X02") {
						t.Errorf("%s probe_error: %s", v, raw)
					}
				case name == "probe_text_differs":
					if string(res.StructuredContent) == res.Content[0].Text {
						t.Errorf("%s probe_text_differs: text equals structuredContent", v)
					}
				case name == "probe_structured_only":
					if res.Content == nil || len(res.Content) != 0 || !bytes.Contains(raw, []byte(`"content":[]`)) {
						t.Errorf("%s probe_structured_only: %s", v, raw)
					}
				case fixtureSizes[name] > 0:
					text := res.Content[0].Text
					if len(text) != fixtureSizes[name] || text != string(in.read(v, spec.uri).body(t)) {
						t.Errorf("%s %s: text of %d bytes, want %d equal to %s", v, name, len(text), fixtureSizes[name], spec.uri)
					}
					lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
					if !strings.HasPrefix(lines[0], spec.inline[0]+" ") && !strings.HasPrefix(lines[0], spec.inline[1]+" ") ||
						!strings.Contains(lines[0], spec.uri) || !strings.HasPrefix(lines[len(lines)-1], "RSD-FIXTURE-Z") {
						t.Errorf("%s %s: first line %q, last line %q", v, name, lines[0], lines[len(lines)-1])
					}
				case fixtureSCValues[name] != "":
					text := res.Content[0].Text
					if v == v2026 {
						if !res.hasStructured || string(res.StructuredContent) != fixtureSCValues[name] ||
							!strings.Contains(text, "structuredContent of this result is "+fixtureSCValues[name]+" (") {
							t.Errorf("%s %s: %s", v, name, raw)
						}
					} else if res.hasStructured || !strings.Contains(text, "omitted because protocol 2025-11-25 allows only an object") {
						t.Errorf("%s %s: %s", v, name, raw)
					}
				}
			}
			// The four forms carry one document, but for the marker.
			if len(docs) != 4 {
				t.Fatalf("%s: documents of %d forms", v, len(docs))
			}
			for name, d := range docs {
				var doc struct {
					Query string           `json:"query"`
					Total int              `json:"total"`
					Hits  []map[string]any `json:"hits"`
				}
				if d != docs["search_text"] || json.Unmarshal([]byte(d), &doc) != nil || doc.Query != "MCP" || doc.Total != 2 || len(doc.Hits) != 2 {
					t.Errorf("%s %s: document %s, search_text's %s", v, name, d, docs["search_text"])
				}
			}

			// Only the listed fixture is in resources/list, for everyone.
			for who, c := range map[string]*instance{"default": in, "other": other} {
				uris := c.listURIs(v)
				if !slices.Contains(uris, fixtureListedURI) {
					t.Errorf("%s %s: resources/list lacks %s: %v", v, who, fixtureListedURI, uris)
				}
				for _, u := range uris {
					if strings.HasPrefix(u, "search://fixtures/") || strings.HasPrefix(u, "report://fixtures/") && u != fixtureListedURI {
						t.Errorf("%s %s: resources/list shows unlisted %s", v, who, u)
					}
				}
			}
			// The never-stored URI is not found.
			if r := other.rpc(v, "resources/read", map[string]any{"uri": fixtureMissingURI}); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s %s: %s", v, fixtureMissingURI, r.Body)
			}
			// Only "MCP" is answered.
			res, _ := in.callFixture(v, "search_structured", map[string]any{"q": "other"})
			var sc map[string]any
			json.Unmarshal(res.StructuredContent, &sc)
			if !res.IsError || sc["errorKind"] != "validation_error" || !strings.Contains(res.Content[0].Text, "q") {
				t.Errorf("%s q other: %+v", v, res)
			}
			if res, _ := in.callFixture(v, "search_text", map[string]any{"q": "MCP"}); res.IsError {
				t.Errorf("%s q MCP: isError", v)
			}
		})
	}

	// A restart rewrites the fixtures without failing, and links still read.
	in.restart()
	other = in.as(other.Token) // as copies the URL, which a restart changes
	res, _ := in.callFixture(v2026, "search_link", nil)
	if len(res.Content) != 1 || !bytes.HasPrefix(other.read(v2025, res.Content[0].URI).body(t), []byte(`{"marker":"RSD-FIXTURE-L02"`)) {
		t.Errorf("after restart: %+v", res)
	}
}

func TestFixturesOffByDefault(t *testing.T) {
	in := startServer(t, "")
	for _, v := range versions {
		r := in.rpc(v, "tools/list", nil)
		for name := range fixtureSpecs {
			if bytes.Contains(r.Result, []byte(`"`+name+`"`)) {
				t.Errorf("%s: tools/list shows %s with fixtures off", v, name)
			}
		}
		if r := in.rpc(v, "tools/call", map[string]any{"name": "search_link", "arguments": map[string]any{}}); r.Error == nil {
			t.Errorf("%s: search_link answered with fixtures off: %s", v, r.Body)
		}
		if slices.Contains(in.listURIs(v), fixtureListedURI) {
			t.Errorf("%s: resources/list shows %s with fixtures off", v, fixtureListedURI)
		}
		if r := in.rpc(v, "resources/read", map[string]any{"uri": fixtureLinkURI}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: %s readable with fixtures off: %s", v, fixtureLinkURI, r.Body)
		}
	}
}

// TestFixturesFlag: --fixtures turns them on without the config key.
func TestFixturesFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "resourced.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  mode: none\nstore:\n  backend: memory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--fixtures")
	cmd.Env = append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	enabled := false
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("resourced exited before listening")
			}
			if strings.Contains(l, `"msg":"fixture tools enabled"`) && strings.Contains(l, `"tools":21`) {
				enabled = true
			}
			if strings.Contains(l, `"msg":"listening"`) {
				if !enabled {
					t.Error("--fixtures: no \"fixture tools enabled\" log line before listening")
				}
				go func() {
					for range lines {
					}
				}()
				return
			}
		case <-deadline:
			t.Fatal("resourced did not log 'listening' in 30s")
		}
	}
}
