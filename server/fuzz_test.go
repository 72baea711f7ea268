package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/uri"
)

// The fuzz targets here feed arbitrary input to the code that decodes what
// a caller controls: tool arguments (decodeArgs and the five tool bodies,
// called exactly as toolHandler calls them) and retention values. They run
// with their seed corpora in every `go test`; `go test -fuzz=FuzzX ./server`
// explores further. Inputs that once failed live in testdata/fuzz.

// fuzzNow is the fixed clock of the fuzzed server and its store, so that
// expiry is deterministic: a resource is live iff its expiry is after it.
var fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Fixtures present in the store before every fuzzed call.
const (
	fxText     = "report://t1/keep/text"
	fxBin      = "report://t1/keep/bin"
	fxSnap     = "search://t1/results/01JXYZ8Q3K7M2N4P5R6S7T8V9W"
	fxSecret   = "report://t2/secret"                                               // another tenant's private report
	fxShared   = "report://t2/shared"                                               // another tenant's public report
	fxWrongSum = "8a9b5a9f2a2fc9ee14b34e5f1a92c2fe8ae6a2ed9c0ea2e8a0b64c0d56b1a6b5" // no fixture's sha256
)

var fuzzKinds = []string{service.KindValidation, service.KindNotFound, service.KindConflict, service.KindTooLarge, service.KindQuota, service.KindUnavailable}

// fuzzEnv is one server whose store is replaced before every call.
type fuzzEnv struct {
	s        *Server
	defs     []toolDef
	out      []*jsonschema.Schema // outputSchema per tool
	failure  *jsonschema.Schema
	props    []map[string]bool // top-level inputSchema properties per tool
	hitProps map[string]bool   // properties of a hit
	sums     map[string]string // fixture URI -> sha256
}

func newFuzzEnv(tb testing.TB) *fuzzEnv {
	tb.Helper()
	now := func() time.Time { return fuzzNow }
	s, err := New(Options{
		Store:   memstore.New(memstore.Options{Now: now}),
		BaseURL: "http://fuzz.test",
		Now:     now,
		Schemes: []Scheme{
			{Name: "search", Kind: KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 720 * time.Hour, MaxBytes: 4096},
			{Name: "report", Kind: KindReport, TTL: 0, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 4096},
			{Name: "notes", Kind: KindReport, TTL: 0, Retention: time.Hour, MaxRetention: 2 * time.Hour, MaxBytes: 64},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	e := &fuzzEnv{s: s, defs: s.toolDefs(), sums: map[string]string{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	compile := func(name string, raw []byte) *jsonschema.Schema {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if err := c.AddResource(name, doc); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		sch, err := c.Compile(name)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		return sch
	}
	e.failure = compile("https://fuzz.test/failure.json", []byte(mcptool.FailureSchema))
	for _, d := range e.defs {
		out, ok := d.tool.OutputSchema.(json.RawMessage)
		if !ok {
			tb.Fatalf("%s: outputSchema is %T, want json.RawMessage", d.tool.Name, d.tool.OutputSchema)
		}
		e.out = append(e.out, compile("https://fuzz.test/"+d.tool.Name+"/output.json", out))
		in, ok := d.tool.InputSchema.(json.RawMessage)
		if !ok {
			tb.Fatalf("%s: inputSchema is %T, want json.RawMessage", d.tool.Name, d.tool.InputSchema)
		}
		var sch struct {
			Properties map[string]struct {
				Items struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(in, &sch); err != nil {
			tb.Fatalf("%s inputSchema: %v", d.tool.Name, err)
		}
		props := map[string]bool{}
		for k, p := range sch.Properties {
			props[k] = true
			if k == "hits" {
				e.hitProps = map[string]bool{}
				for h := range p.Items.Properties {
					e.hitProps[h] = true
				}
			}
		}
		e.props = append(e.props, props)
	}
	if len(e.defs) != 8 || e.hitProps == nil {
		tb.Fatalf("expected 8 tools, one with hits; got %d", len(e.defs))
	}
	return e
}

// reset gives the server a fresh store holding the fixtures.
func (e *fuzzEnv) reset(tb testing.TB) {
	tb.Helper()
	st := memstore.New(memstore.Options{Now: func() time.Time { return fuzzNow }})
	put := func(u, mimeType string, body []byte, vis store.Visibility, listed bool) {
		p, err := uri.Parse(u)
		if err != nil {
			tb.Fatal(err)
		}
		k := store.MustKey(p.Tenant, p.Scheme, p.Path)
		created := fuzzNow.Add(-time.Hour)
		obj := &store.Object{Meta: store.Meta{
			Key: k, MIMEType: mimeType, Size: int64(len(body)), SHA256: store.Sum(body),
			Created: created, Modified: created, Expires: fuzzNow.Add(24 * time.Hour),
			Title: p.Path, Description: "fixture", Listed: listed, Visibility: vis,
		}, Body: body}
		if _, _, err := st.Put(context.Background(), obj, store.CreateOnly()); err != nil {
			tb.Fatal(err)
		}
		e.sums[u] = obj.SHA256
	}
	put(fxText, "text/plain", []byte("precious"), store.Private, true)
	put(fxBin, "application/octet-stream", []byte{0, 1, 2, 0xff, 0xfe}, store.Private, false)
	put(fxSnap, "application/json", []byte(`{"query":"q","total":0,"hits":[]}`), store.Private, false)
	put(fxSecret, "text/plain", []byte("t2 only"), store.Private, false)
	put(fxShared, "text/plain", []byte("for everyone"), store.Public, true)
	e.s.swapStore(tb, st)
}

// contents is every live object of both tenants, by URI.
func (e *fuzzEnv) contents(tb testing.TB) map[string]store.Meta {
	tb.Helper()
	m := map[string]store.Meta{}
	for _, tenant := range []string{"t1", "t2"} {
		page, err := e.s.store.List(context.Background(), store.ListQuery{Tenant: tenant, Limit: 10000})
		if err != nil || page.More {
			tb.Fatalf("listing the store: %v (more: %v)", err, page.More)
		}
		for _, it := range page.Items {
			m[it.Key.String()] = it
		}
	}
	return m
}

// diff describes how two store contents differ, or returns "".
func diff(before, after map[string]store.Meta) string {
	var out []string
	for k, b := range before {
		if a, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		} else if a != b {
			out = append(out, fmt.Sprintf("changed %s: %+v -> %+v", k, b, a))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func fuzzSeeds() []struct {
	tool int
	args string
} {
	big := strings.Repeat("x", 4097)
	b64 := base64.StdEncoding.EncodeToString
	type seed = struct {
		tool int
		args string
	}
	const snap, rep, stat, list, del, read, grep, query = 0, 1, 2, 3, 4, 5, 6, 7
	return []seed{
		// save_search_snapshot
		{snap, `{"query":"revenue 2026","hits":[{"id":"doc-1","title":"Q <report> & notes","snippet":"grew \"12%\"","url":"https://example.com/1","score":0.93},{"id":"doc-2","title":"日本語","snippet":"two"}]}`},
		{snap, `{"query":"q","hits":[],"total":0,"retention":"PT1H","listed":true,"visibility":"public","title":"t","description":"d"}`},
		{snap, `{"query":"q","hits":[{"id":"a","title":"","snippet":""}],"total":"1"}`},
		{snap, `{"query":"q","hits":[{"id":"a","title":"","snippet":""}],"total":1.5}`},
		{snap, `{"query":"q","hits":[{"id":"","title":"","snippet":""}]}`},
		{snap, `{"query":"q","hits":[{"id":"a","title":"t","snippet":"` + big + `"}]}`},
		{snap, `{"query":"\u0000","hits":[]}`},
		{snap, `{"query":"q","hits":[],"scheme":"report"}`},
		{snap, `{"query":"q","hits":[],"retention":1e400}`},
		{snap, `{"query":"q","hits":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}`},
		// save_report
		{rep, `{"path":"billing/2026-11/import-dry-run","mimeType":"text/markdown","text":"# hi\n","title":"Import"}`},
		{rep, `{"path":"bin/x","mimeType":"application/octet-stream","blobBase64":"` + b64([]byte{0, 1, 2, 3, 0xff}) + `"}`},
		{rep, `{"path":"keep/text","mimeType":"text/plain","text":"evil"}`},
		{rep, `{"path":"keep/text","mimeType":"text/plain","text":"v2","ifMatch":"` + fxWrongSum + `"}`},
		{rep, `{"path":"keep/text","mimeType":"text/plain","text":"v2","overwrite":true,"retention":3600}`},
		{rep, `{"path":"keep/text","mimeType":"text/plain","text":"v2","ifMatch":"` + store.Sum([]byte("precious")) + `"}`},
		{rep, `{"path":"a/../b","mimeType":"text/plain","text":"x"}`},
		{rep, `{"path":"%2e%2e","mimeType":"text/plain","text":"x"}`},
		{rep, `{"path":"a\uff0fb","mimeType":"text/plain","text":"x"}`},
		{rep, `{"path":"ok","mimeType":"a/b/c","text":"x"}`},
		{rep, `{"path":"ok","mimeType":"text/plain","text":"x","blobBase64":"eA=="}`},
		{rep, `{"path":"ok","mimeType":"text/plain","blobBase64":"@@@"}`},
		{rep, `{"path":"ok","mimeType":"text/plain","text":"` + big + `"}`},
		{rep, `{"path":"ok","mimeType":"text/plain","text":"x","scheme":"notes","retention":"P1W"}`},
		{rep, `{"path":"ok","mimeType":"text/plain","text":"x","retention":0.5}`},
		{rep, `{"path":"ok","mimeType":"text/plain","text":"x","retention":1e-3}`},
		// stat_resource
		{stat, `{"uri":"` + fxText + `"}`},
		{stat, `{"uri":"` + fxShared + `"}`},
		{stat, `{"uri":"` + fxSecret + `"}`},
		{stat, `{"uri":"REPORT://t1/keep/text"}`},
		{stat, `{"uri":"file:///etc/passwd"}`},
		{stat, `{"uri":7}`},
		// list_resources
		{list, `{}`},
		{list, `{"scheme":"report","prefix":"keep/","limit":1}`},
		{list, `{"scheme":"report","cursor":"e30","limit":1000}`},
		{list, `{"scheme":"report","prefix":"keep/../"}`},
		{list, `{"prefix":"keep/","limit":-1}`},
		// delete_resource
		{del, `{"uri":"` + fxBin + `"}`},
		{del, `{"uri":"` + fxText + `","ifMatch":"` + fxWrongSum + `"}`},
		{del, `{"uri":"` + fxText + `","ifMatch":"` + store.Sum([]byte("precious")) + `"}`},
		{del, `{"uri":"` + fxShared + `"}`},
		{del, `{"uri":"report://t1/keep/text/"}`},
		{del, `[1,2]`},
		{del, `null`},
		// read_resource
		{read, `{"uri":"` + fxText + `"}`},
		{read, `{"uri":"` + fxText + `","offset":2,"length":3}`},
		{read, `{"uri":"` + fxText + `","startLine":1,"lineCount":1,"includeDownloadUrl":true}`},
		{read, `{"uri":"` + fxBin + `","offset":1}`},
		{read, `{"uri":"` + fxBin + `","startLine":1}`},
		{read, `{"uri":"` + fxShared + `","offset":99}`},
		{read, `{"uri":"` + fxSecret + `"}`},
		{read, `{"uri":"` + fxText + `","offset":1,"startLine":1}`},
		{read, `{"uri":"` + fxText + `","length":0}`},
		// grep_resource
		{grep, `{"uri":"` + fxText + `","pattern":"e"}`},
		{grep, `{"uri":"` + fxText + `","pattern":"(","literal":true,"context":3,"maxMatches":1}`},
		{grep, `{"uri":"` + fxText + `","pattern":"("}`},
		{grep, `{"uri":"` + fxText + `","pattern":"x","afterOffset":2,"afterLine":1}`},
		{grep, `{"uri":"` + fxBin + `","pattern":"x"}`},
		{grep, `{"uri":"` + fxSecret + `","pattern":"x"}`},
		{grep, `{"uri":"` + fxShared + `","pattern":"x","context":11}`},
		// query_resource
		{query, `{"uri":"` + fxSnap + `","path":"$.hits[*]"}`},
		{query, `{"uri":"` + fxSnap + `","path":"$..id","maxMatches":1,"startIndex":1}`},
		{query, `{"uri":"` + fxSnap + `","path":"$[?"}`},
		{query, `{"uri":"` + fxText + `","path":"$"}`},
		{query, `{"uri":"` + fxSecret + `","path":"$"}`},
	}
}

// FuzzToolArguments calls each tool body with arbitrary arguments, as
// toolHandler does, and checks that the answer is well-formed and that a
// failure changes nothing.
func FuzzToolArguments(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(uint8(s.tool), []byte(s.args))
	}
	e := newFuzzEnv(f)
	p := auth.Principal{Tenant: "t1", Subject: "fuzz", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}}
	f.Fuzz(func(t *testing.T, tool uint8, args []byte) {
		i := int(tool) % len(e.defs)
		d := e.defs[i]
		name := d.tool.Name
		e.reset(t)
		before := e.contents(t)

		v, terr := d.fn(context.Background(), p, json.RawMessage(args))
		after := e.contents(t)

		if (v == nil) == (terr == nil) {
			t.Fatalf("%s(%s) returned value %v and error %v: want exactly one", name, args, v, terr)
		}
		if terr != nil {
			checkToolError(t, e, i, args, terr)
			if d := diff(before, after); d != "" {
				t.Fatalf("%s(%s) failed with %s but changed the store: %s", name, args, terr, d)
			}
			return
		}

		b, err := json.Marshal(v.value)
		if err != nil {
			t.Fatalf("%s(%s): success value does not marshal: %v", name, args, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.out[i].Validate(doc); err != nil {
			t.Fatalf("%s(%s): success value %s does not validate against the outputSchema: %v", name, args, b, err)
		}
		var val struct {
			Status    string `json:"status"`
			URI       string `json:"uri"`
			SHA256    string `json:"sha256"`
			Size      int64  `json:"size"`
			CreatedAt string `json:"createdAt"`
			ExpiresAt string `json:"expiresAt"`
			Items     []struct {
				URI string `json:"uri"`
			} `json:"items"`
		}
		if err := json.Unmarshal(b, &val); err != nil {
			t.Fatal(err)
		}
		if val.Status == "failed" {
			t.Fatalf("%s(%s): success value has status failed: %s", name, args, b)
		}
		for _, m := range v.links {
			if _, err := uri.Parse(m.Key.String()); err != nil {
				t.Fatalf("%s(%s): link %q is not a canonical URI: %v", name, args, m.Key.String(), err)
			}
		}
		// The decoder admits no argument its inputSchema does not name
		// (schemas.go): a success means every key was a property, spelled
		// exactly so. (Arguments that are not valid JSON never get here
		// from go-sdk; they are only checked not to crash.)
		if json.Valid(args) {
			checkArgumentNames(t, e, i, args)
		}

		switch name {
		case "stat_resource", "list_resources", "read_resource", "grep_resource", "query_resource":
			if d := diff(before, after); d != "" {
				t.Fatalf("%s(%s) is read-only but changed the store: %s", name, args, d)
			}
			for _, it := range val.Items {
				if !strings.Contains(it.URI, "://t1/") {
					t.Fatalf("%s(%s) listed %s, which is not the caller's", name, args, it.URI)
				}
			}
			if name == "stat_resource" {
				if m, ok := before[val.URI]; !ok || !strings.Contains(val.URI, "://t1/") && m.Visibility != store.Public {
					t.Fatalf("stat_resource(%s) found %s, which the caller may not see", args, val.URI)
				}
			}
		case "delete_resource":
			if u, err := uri.Parse(val.URI); err != nil || u.Tenant != "t1" {
				t.Fatalf("delete_resource(%s) deleted %s of another tenant", args, val.URI)
			}
			want := cloneContents(before)
			delete(want, val.URI)
			if d := diff(want, after); d != "" || len(before) != len(after)+1 {
				t.Fatalf("delete_resource(%s) = %s, but the store changed otherwise: %s", args, b, d)
			}
		default: // the two saves
			if len(v.links) != 1 || v.links[0].Key.String() != val.URI || v.links[0].Key.Tenant() != "t1" {
				t.Fatalf("%s(%s): links %v do not name the one saved resource %s of t1", name, args, v.links, val.URI)
			}
			m, ok := after[val.URI]
			if !ok {
				t.Fatalf("%s(%s) answered %s but the resource is not live in the store (expiresAt %s, now %s)",
					name, args, b, val.ExpiresAt, fuzzNow.Format(time.RFC3339Nano))
			}
			if m.SHA256 != val.SHA256 || m.Size != val.Size {
				t.Fatalf("%s(%s) answered sha256 %s size %d, store has %s %d", name, args, val.SHA256, val.Size, m.SHA256, m.Size)
			}
			created, err1 := time.Parse(time.RFC3339Nano, val.CreatedAt)
			expires, err2 := time.Parse(time.RFC3339Nano, val.ExpiresAt)
			if err1 != nil || err2 != nil || !expires.After(created) {
				t.Fatalf("%s(%s) saved a resource that expires (%s) no later than it was created (%s)", name, args, val.ExpiresAt, val.CreatedAt)
			}
			_, existed := before[val.URI]
			if val.Status == "replaced" != existed {
				t.Fatalf("%s(%s) answered %s, but the resource existed before: %v", name, args, val.Status, existed)
			}
			want := cloneContents(before)
			want[val.URI] = m
			if d := diff(want, after); d != "" {
				t.Fatalf("%s(%s) changed more than %s: %s", name, args, val.URI, d)
			}
		}
	})
}

func cloneContents(m map[string]store.Meta) map[string]store.Meta {
	c := make(map[string]store.Meta, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// checkToolError checks a failure value: a known kind, a message, and a
// JSON rendering that validates against the failure schema and the tool's
// outputSchema.
func checkToolError(t *testing.T, e *fuzzEnv, i int, args []byte, terr *service.Failure) {
	t.Helper()
	name := e.defs[i].tool.Name
	if !slices.Contains(fuzzKinds, terr.ErrorKind) {
		t.Fatalf("%s(%s): unknown errorKind %q", name, args, terr.ErrorKind)
	}
	// The in-memory store never fails, so "unavailable" would mean the
	// server handed it something it refused.
	if terr.ErrorKind == service.KindUnavailable {
		t.Fatalf("%s(%s): unavailable from an in-memory store: %s", name, args, terr.Message)
	}
	if terr.Status != "failed" || strings.TrimSpace(terr.Message) == "" || terr.RetrySafe != (terr.ErrorKind == service.KindUnavailable) {
		t.Fatalf("%s(%s): malformed failure %+v", name, args, terr)
	}
	for _, fe := range terr.FieldErrors {
		if fe.Field == "" || strings.TrimSpace(fe.Message) == "" {
			t.Fatalf("%s(%s): field error without field or message: %+v", name, args, terr)
		}
		checkFieldName(t, e, i, args, fe)
	}
	b, err := json.Marshal(terr)
	if err != nil {
		t.Fatalf("%s(%s): failure does not marshal: %v", name, args, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.failure.Validate(doc); err != nil {
		t.Fatalf("%s(%s): failure %s does not validate against the failure schema: %v", name, args, b, err)
	}
	if err := e.out[i].Validate(doc); err != nil {
		t.Fatalf("%s(%s): failure %s does not validate against the outputSchema: %v", name, args, b, err)
	}
	res := mcptool.ErrorResult(terr)
	if !res.IsError || res.StructuredContent != terr || len(res.Content) != 1 {
		t.Fatalf("%s(%s): errorResult(%+v) = %+v", name, args, terr, res)
	}
}

// checkFieldName fails unless a field error names an argument the way the
// inputSchema spells it ("hits[3].id" and "hits[0].score" name a property of
// a hit), or, for an argument the tool does not have, names no property.
func checkFieldName(t *testing.T, e *fuzzEnv, i int, args []byte, fe service.FieldError) {
	t.Helper()
	name := e.defs[i].tool.Name
	if strings.HasPrefix(fe.Message, "is not an argument") {
		if e.props[i][fe.Field] {
			t.Fatalf("%s(%s): field error says %q is not an argument, but the inputSchema has it", name, args, fe.Field)
		}
		return
	}
	root, rest, nested := strings.Cut(fe.Field, ".")
	root, _, _ = strings.Cut(root, "[")
	if !e.props[i][root] {
		t.Fatalf("%s(%s): field error names %q, which is not in the inputSchema", name, args, fe.Field)
	}
	if nested {
		if prop, _, _ := strings.Cut(rest, "."); root != "hits" || !e.hitProps[prop] {
			t.Fatalf("%s(%s): field error names %q, which is not in the inputSchema", name, args, fe.Field)
		}
	}
}

// checkArgumentNames fails unless every key of args (an object), and of
// each of its hits, is a property of the tool's inputSchema.
func checkArgumentNames(t *testing.T, e *fuzzEnv, i int, args []byte) {
	t.Helper()
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return // not an object (null): nothing named
	}
	name := e.defs[i].tool.Name
	keys := slices.Sorted(maps.Keys(obj))
	for _, k := range keys {
		if !e.props[i][k] {
			t.Fatalf("%s(%s) succeeded with argument %q, which its inputSchema does not allow (additionalProperties: false)", name, args, k)
		}
	}
	var hits []map[string]json.RawMessage
	if raw, ok := obj["hits"]; ok && json.Unmarshal(raw, &hits) == nil {
		for _, h := range hits {
			for k := range h {
				if !e.hitProps[k] {
					t.Fatalf("%s(%s) succeeded with hit property %q, which its inputSchema does not allow", name, args, k)
				}
			}
		}
	}
}
