package checker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"
)

// storeRun is the state of the store-contract layer.
type storeRun struct {
	*run
	base    string          // path prefix of everything this run stores
	created []string        // URIs stored, in order
	deleted map[string]bool // URIs deleted again
	reads   []storeRead     // every read of stored data, for C05/C06
}

type storeRead struct {
	uri     string
	res     *readResult
	private bool
}

func (r *run) storeContract(ctx context.Context) {
	if !r.hasTools("save_report", "delete_resource") {
		r.skipLayer(LayerStore, "the server has no save_report and delete_resource tools (CONTRACT §4)")
		return
	}
	if !r.declares("resources") {
		r.skipLayer(LayerStore, "the server declares no resources capability")
		return
	}
	s := &storeRun{run: r, base: "check/" + r.token, deleted: map[string]bool{}}
	defer s.cleanup(context.WithoutCancel(ctx))
	if !s.saveAndRead(ctx) {
		return
	}
	s.listedVsUnlisted(ctx)
	s.public(ctx)
	s.searchSnapshot(ctx)
	s.preconditions(ctx)
	s.statAndList(ctx)
	s.toolErrors(ctx)
	s.deleted404(ctx)
	s.cacheRows()
}

func (r *run) hasTools(names ...string) bool {
	for _, n := range names {
		if _, ok := r.tools[n]; !ok {
			return false
		}
	}
	return true
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// save calls a save tool and returns its call and the stored URI ("" when
// it did not succeed). Every success is remembered for cleanup.
func (s *storeRun) save(ctx context.Context, tool string, args map[string]any) (*toolCall, string, error) {
	tc, err := s.callTool(ctx, tool, args)
	if err != nil {
		return nil, "", err
	}
	if tc.res == nil || tc.res.IsError {
		return tc, "", nil
	}
	uri, _ := tc.structured()["uri"].(string)
	if uri != "" && !slices.Contains(s.created, uri) {
		s.created = append(s.created, uri)
	}
	return tc, uri, nil
}

// readStored reads a URI this run stored and remembers it for C05/C06.
func (s *storeRun) readStored(ctx context.Context, uri string, private bool) (*readResult, error) {
	res, _, err := s.read(ctx, uri)
	if err != nil {
		return nil, err
	}
	s.reads = append(s.reads, storeRead{uri: uri, res: res, private: private})
	return res, nil
}

func (s *storeRun) reportBody(what string) string {
	return fmt.Sprintf("# resourced check %s\n\n%s, saved by `resourced check`; it deletes it again at the end of its run.\n", s.token, what)
}

// saveAndRead runs C01–C03: the save → link → unlisted read round trip.
// It reports whether the layer can go on.
func (s *storeRun) saveAndRead(ctx context.Context) bool {
	body := s.reportBody("An unlisted report")
	path := s.base + "/unlisted.md"
	tc, uri, err := s.save(ctx, "save_report", map[string]any{
		"path": path, "mimeType": "text/markdown", "text": body,
		"title": "resourced check " + s.token, "description": "Saved and deleted by resourced check.",
	})
	if err != nil {
		var te *transportError
		if errors.As(err, &te) && te.status == http.StatusForbidden {
			s.skipLayer(LayerStore, "the credentials may not write (save_report: HTTP 403); these rows need resources:write")
			return false
		}
		s.fail("C01", "%v", err)
		s.skipLayer(LayerStore, "save_report failed")
		return false
	}
	if uri == "" {
		s.fail("C01", "%s", tc.describe())
		s.skipLayer(LayerStore, "save_report failed")
		return false
	}
	sc := tc.structured()
	sum := sha256Hex([]byte(body))
	var p []string
	if sc["status"] != "created" {
		p = append(p, fmt.Sprintf("status %v, want \"created\"", sc["status"]))
	}
	if !strings.HasSuffix(uri, "/"+path) {
		p = append(p, fmt.Sprintf("uri %q does not end in the path", uri))
	}
	if n, _ := sc["size"].(float64); int(n) != len(body) {
		p = append(p, fmt.Sprintf("size %v, want %d", sc["size"], len(body)))
	}
	if sc["sha256"] != sum {
		p = append(p, fmt.Sprintf("sha256 %v, want %s", sc["sha256"], sum))
	}
	s.checkProblems("C01", p, fmt.Sprintf("%s created, size %d, sha256 %.12s…", uri, len(body), sum))

	// C02: the resource_link.
	var link *contentItem
	for i, c := range tc.res.Content {
		switch {
		case c.Type == "resource_link" && c.URI == uri:
			link = &tc.res.Content[i]
		case c.Type == "resource" && c.Resource != nil && c.Resource.URI == uri:
			s.fail("C02", "the result embeds the body of %s; a link carries none", uri)
		}
	}
	if link == nil {
		s.fail("C02", "no resource_link item for %s", uri)
	} else {
		var p []string
		for field, v := range map[string]string{"name": link.Name, "title": link.Title, "description": link.Description} {
			if v == "" {
				p = append(p, "no "+field)
			}
		}
		if link.MIMEType != "text/markdown" {
			p = append(p, fmt.Sprintf("mimeType %q, want text/markdown", link.MIMEType))
		}
		if link.Size == nil || *link.Size != int64(len(body)) {
			p = append(p, fmt.Sprintf("size %v, want %d (body bytes)", ptrString(link.Size), len(body)))
		}
		if link.Annotations == nil || link.Annotations.LastModified == "" {
			p = append(p, "no annotations.lastModified")
		} else if _, err := time.Parse(time.RFC3339, link.Annotations.LastModified); err != nil {
			p = append(p, fmt.Sprintf("annotations.lastModified %q is not RFC 3339", link.Annotations.LastModified))
		}
		if len(p) > 0 {
			s.fail("C02", "%s", strings.Join(p, "; "))
		} else {
			s.pass("C02", "resource_link name %q, mimeType %s, size %d, lastModified %s", link.Name, link.MIMEType, *link.Size, link.Annotations.LastModified)
		}
	}

	// C03: read it back by URI.
	res, err := s.readStored(ctx, uri, true)
	if err != nil {
		s.fail("C03", "%v", err)
		return true
	}
	s.checkProblems("C03", contentProblems(res, uri, "text/markdown", []byte(body), true), fmt.Sprintf("%s read back: %d bytes, sha256 and size in _meta match; %s", uri, len(body), res.cacheString()))
	return true
}

func ptrString(p *int64) string {
	if p == nil {
		return "(none)"
	}
	return fmt.Sprint(*p)
}

// contentProblems checks the one content item of a read against the body
// that was stored.
func contentProblems(res *readResult, uri, mimeType string, body []byte, wantMeta bool) []string {
	if len(res.Contents) != 1 {
		return []string{fmt.Sprintf("%d content items, want 1", len(res.Contents))}
	}
	c := res.Contents[0]
	var p []string
	if c.URI != uri {
		p = append(p, fmt.Sprintf("contents[0].uri %q, want %q", c.URI, uri))
	}
	if mimeType != "" && c.MIMEType != mimeType {
		p = append(p, fmt.Sprintf("mimeType %q, want %q", c.MIMEType, mimeType))
	}
	got, err := contentBytes(c.Text, c.Blob)
	switch {
	case err != nil:
		p = append(p, err.Error())
	case string(got) != string(body):
		p = append(p, fmt.Sprintf("body %q differs from the %d bytes stored", clip(string(got), 40), len(body)))
	}
	if wantMeta {
		if c.Meta["sha256"] != sha256Hex(body) {
			p = append(p, fmt.Sprintf("_meta.sha256 %v, want %s", c.Meta["sha256"], sha256Hex(body)))
		}
		if n, ok := c.Meta["size"].(json.Number); !ok || n.String() != fmt.Sprint(len(body)) {
			p = append(p, fmt.Sprintf("_meta.size %v, want %d", c.Meta["size"], len(body)))
		}
		if c.Meta["lastModified"] == nil {
			p = append(p, "no _meta.lastModified")
		}
	}
	return p
}

func (r *run) checkProblems(id string, problems []string, evidence string) {
	if len(problems) > 0 {
		r.fail(id, "%s", strings.Join(problems, "; "))
	} else {
		r.pass(id, "%s", evidence)
	}
}

// listedVsUnlisted runs C04.
func (s *storeRun) listedVsUnlisted(ctx context.Context) {
	unlisted := s.created[0]
	body := s.reportBody("A listed report")
	tc, listed, err := s.save(ctx, "save_report", map[string]any{
		"path": s.base + "/listed.md", "mimeType": "text/markdown", "text": body, "listed": true,
	})
	if err != nil || listed == "" {
		s.fail("C04", "save_report listed: %s", errOr(err, tc))
		return
	}
	all, err := s.resourcesList(ctx)
	if err != nil {
		s.fail("C04", "%v", err)
		return
	}
	uris := make([]string, len(all))
	for i, l := range all {
		uris[i] = l.URI
	}
	var p []string
	if slices.Contains(uris, unlisted) {
		p = append(p, "the unlisted "+unlisted+" is in resources/list")
	}
	if !slices.Contains(uris, listed) {
		p = append(p, fmt.Sprintf("the listed %s is not in resources/list (%d entries read)", listed, len(uris)))
	}
	res, err := s.readStored(ctx, listed, true)
	if err != nil {
		p = append(p, err.Error())
	} else {
		p = append(p, contentProblems(res, listed, "text/markdown", []byte(body), false)...)
	}
	s.checkProblems("C04", p, fmt.Sprintf("resources/list (%d entries) has %s, not %s; both read back", len(uris), listed, unlisted))
	if s.c.version == V2026 {
		s.listScope(ctx)
	}
}

// listScope checks the cacheScope of a resources/list that holds this
// tenant's listed report (C05).
func (s *storeRun) listScope(ctx context.Context) {
	x, err := s.c.call(ctx, "resources/list", nil)
	if err != nil || x.Err != nil {
		return
	}
	var res struct {
		CacheScope string `json:"cacheScope"`
	}
	_ = json.Unmarshal(x.Result, &res)
	if res.CacheScope != "private" {
		s.fail("C05", "resources/list holding this tenant's listed report says cacheScope %q", res.CacheScope)
	}
}

func errOr(err error, tc *toolCall) string {
	if err != nil {
		return err.Error()
	}
	return tc.describe()
}

// public runs C07.
func (s *storeRun) public(ctx context.Context) {
	body := s.reportBody("A public report")
	tc, uri, err := s.save(ctx, "save_report", map[string]any{
		"path": s.base + "/public.md", "mimeType": "text/markdown", "text": body, "visibility": "public",
	})
	if err != nil || uri == "" {
		s.fail("C07", "save_report visibility public: %s", errOr(err, tc))
		return
	}
	res, err := s.readStored(ctx, uri, false)
	if err != nil {
		s.fail("C07", "%v", err)
		return
	}
	// Delete it at once: it is readable by every tenant.
	s.delete(ctx, uri, "")
	s.check("C07", res.CacheScope != nil && *res.CacheScope == "public",
		uri+": "+res.cacheString(), uri+" (saved public): "+res.cacheString()+", want cacheScope \"public\"")
}

// searchSnapshot runs C08 and C09.
func (s *storeRun) searchSnapshot(ctx context.Context) {
	if !s.hasTools("save_search_snapshot") {
		s.skip("C08", "no save_search_snapshot tool")
		s.skip("C09", "no save_search_snapshot tool")
		return
	}
	query := "resourced check " + s.token
	hits := []any{
		map[string]any{"id": "d1", "title": "MCP guide", "snippet": "Tool results contain data."},
		map[string]any{"id": "d2", "title": "Report design", "snippet": "Use explicit resource URIs."},
	}
	tc, uri, err := s.save(ctx, "save_search_snapshot", map[string]any{"query": query, "hits": hits})
	if err != nil || uri == "" {
		s.fail("C08", "save_search_snapshot: %s", errOr(err, tc))
	} else {
		sc := tc.structured()
		var p []string
		if n, _ := sc["total"].(float64); int(n) != len(hits) {
			p = append(p, fmt.Sprintf("structuredContent.total %v, want %d hits", sc["total"], len(hits)))
		}
		res, err := s.readStored(ctx, uri, true)
		if err != nil {
			p = append(p, err.Error())
		} else if len(res.Contents) != 1 || res.Contents[0].Text == nil {
			p = append(p, "the snapshot does not read back as one text item")
		} else {
			var doc struct {
				Query string `json:"query"`
				Total *int   `json:"total"`
				Hits  []any  `json:"hits"`
			}
			if err := json.Unmarshal([]byte(*res.Contents[0].Text), &doc); err != nil {
				p = append(p, "stored body is not JSON: "+err.Error())
			} else {
				if doc.Total == nil || *doc.Total != len(doc.Hits) {
					p = append(p, fmt.Sprintf("stored total %v ≠ %d hits", ptrIntString(doc.Total), len(doc.Hits)))
				}
				if doc.Query != query || !reflect.DeepEqual(doc.Hits, hits) {
					p = append(p, "stored query/hits differ from those sent")
				}
			}
		}
		s.checkProblems("C08", p, fmt.Sprintf("%s: total %d = hits; stored {query,total,hits} equals the input", uri, len(hits)))
	}
	// C09: semantic and type checks on input.
	var p []string
	for _, total := range []any{999, "2"} {
		tc, uri, err := s.save(ctx, "save_search_snapshot", map[string]any{"query": query, "hits": hits, "total": total})
		switch {
		case err != nil:
			p = append(p, err.Error())
		case uri != "":
			p = append(p, fmt.Sprintf("total %#v with 2 hits was stored as %s", total, uri))
		case tc.x.Err != nil:
			if total == 999 {
				p = append(p, fmt.Sprintf("total 999 → JSON-RPC error %d; a semantic error is a tool error (isError)", tc.x.Err.Code))
			}
		default:
			if k := tc.structured()["errorKind"]; k != "validation_error" {
				p = append(p, fmt.Sprintf("total %#v → errorKind %v, want validation_error", total, k))
			}
		}
	}
	s.checkProblems("C09", p, "total 999 and total \"2\" with 2 hits → validation_error, nothing stored")
}

func ptrIntString(p *int) string {
	if p == nil {
		return "(none)"
	}
	return fmt.Sprint(*p)
}

// preconditions runs C10 and C11 on the unlisted report.
func (s *storeRun) preconditions(ctx context.Context) {
	uri := s.created[0]
	path := s.base + "/unlisted.md"
	orig := s.reportBody("An unlisted report")
	other := s.reportBody("A replacement")

	// C10: create-only.
	tc, err := s.callTool(ctx, "save_report", map[string]any{"path": path, "mimeType": "text/markdown", "text": other})
	var p []string
	if err != nil {
		p = append(p, err.Error())
	} else if k := errorKind(tc); k != "conflict" {
		p = append(p, "second save of the path: "+tc.describe()+", want errorKind conflict")
	}
	if res, err := s.readStored(ctx, uri, true); err != nil {
		p = append(p, err.Error())
	} else if b, _ := contentBytesOf(res); string(b) != orig {
		p = append(p, "the body changed")
	}
	s.checkProblems("C10", p, "second save of "+path+" → conflict; body unchanged")

	// C11: ifMatch.
	p = nil
	stale := sha256Hex([]byte(other))
	steps := []struct {
		what string
		tool string
		args map[string]any
		want string // errorKind, or "" for success
	}{
		{"ifMatch stale", "save_report", map[string]any{"path": path, "mimeType": "text/markdown", "text": other, "ifMatch": stale}, "conflict"},
		{"ifMatch on a missing path", "save_report", map[string]any{"path": s.base + "/missing.md", "mimeType": "text/markdown", "text": other, "ifMatch": stale}, "conflict"},
		{"ifMatch current", "save_report", map[string]any{"path": path, "mimeType": "text/markdown", "text": other, "ifMatch": sha256Hex([]byte(orig))}, ""},
		{"delete with ifMatch stale", "delete_resource", map[string]any{"uri": uri, "ifMatch": sha256Hex([]byte(orig))}, "conflict"},
	}
	for _, st := range steps {
		tc, err := s.callTool(ctx, st.tool, st.args)
		if err != nil {
			p = append(p, st.what+": "+err.Error())
			continue
		}
		if tc.res != nil && !tc.res.IsError {
			if u, _ := tc.structured()["uri"].(string); u != "" && st.tool == "save_report" && !slices.Contains(s.created, u) {
				s.created = append(s.created, u)
			}
		}
		if st.want == "" {
			if tc.res == nil || tc.res.IsError {
				p = append(p, st.what+": "+tc.describe())
			} else if status := tc.structured()["status"]; status != "replaced" {
				p = append(p, fmt.Sprintf("%s: status %v, want \"replaced\"", st.what, status))
			}
			continue
		}
		if k := errorKind(tc); k != st.want {
			if st.tool == "delete_resource" && tc.res != nil && !tc.res.IsError {
				s.deleted[uri] = true
			}
			p = append(p, fmt.Sprintf("%s: %s, want errorKind %s", st.what, tc.describe(), st.want))
		}
	}
	if !s.deleted[uri] {
		if res, err := s.readStored(ctx, uri, true); err != nil {
			p = append(p, err.Error())
		} else if b, _ := contentBytesOf(res); string(b) != other {
			p = append(p, "after the replace, the body is not the new one")
		}
	}
	s.checkProblems("C11", p, "stale ifMatch, ifMatch on a missing path and delete with a stale ifMatch → conflict; current ifMatch → replaced, new body reads back")
}

func errorKind(tc *toolCall) string {
	if tc.res == nil || !tc.res.IsError {
		return ""
	}
	k, _ := tc.structured()["errorKind"].(string)
	return k
}

func contentBytesOf(res *readResult) ([]byte, error) {
	if len(res.Contents) != 1 {
		return nil, fmt.Errorf("%d content items", len(res.Contents))
	}
	return contentBytes(res.Contents[0].Text, res.Contents[0].Blob)
}

// statAndList runs C12.
func (s *storeRun) statAndList(ctx context.Context) {
	uri := s.created[0]
	if s.deleted[uri] {
		s.skip("C12", "the report was deleted by an earlier step")
		return
	}
	var p []string
	ran := false
	if s.hasTools("stat_resource") {
		ran = true
		tc, err := s.callTool(ctx, "stat_resource", map[string]any{"uri": uri})
		switch {
		case err != nil:
			p = append(p, err.Error())
		case tc.res == nil || tc.res.IsError:
			p = append(p, tc.describe())
		default:
			sc := tc.structured()
			body := s.reportBody("A replacement")
			if sc["uri"] != uri || sc["sha256"] != sha256Hex([]byte(body)) || sc["listed"] != false || sc["visibility"] != "private" {
				p = append(p, fmt.Sprintf("stat_resource: uri %v sha256 %.12v listed %v visibility %v", sc["uri"], sc["sha256"], sc["listed"], sc["visibility"]))
			}
			if n, _ := sc["size"].(float64); int(n) != len(body) {
				p = append(p, fmt.Sprintf("stat_resource: size %v, want %d", sc["size"], len(body)))
			}
			if strings.Contains(string(tc.x.Result), "A replacement, saved by") {
				p = append(p, "stat_resource returned the body")
			}
		}
	}
	if s.hasTools("list_resources") {
		ran = true
		scheme, _, _ := strings.Cut(uri, "://")
		tc, err := s.callTool(ctx, "list_resources", map[string]any{"scheme": scheme, "prefix": s.base + "/"})
		switch {
		case err != nil:
			p = append(p, err.Error())
		case tc.res == nil || tc.res.IsError:
			p = append(p, tc.describe())
		default:
			var v struct {
				Items []struct {
					URI    string `json:"uri"`
					Listed bool   `json:"listed"`
				} `json:"items"`
			}
			_ = json.Unmarshal(tc.res.Structured, &v)
			found := false
			for _, it := range v.Items {
				found = found || (it.URI == uri && !it.Listed)
			}
			if !found {
				p = append(p, fmt.Sprintf("list_resources {scheme %s, prefix %s/} does not include the unlisted %s (%d items)", scheme, s.base, uri, len(v.Items)))
			}
		}
	}
	if !ran {
		s.skip("C12", "no stat_resource or list_resources tool")
		return
	}
	s.checkProblems("C12", p, "stat_resource gives size/sha256/listed/visibility without the body; list_resources includes the unlisted report")
}

// toolErrors runs C13.
func (s *storeRun) toolErrors(ctx context.Context) {
	var p []string
	missing := s.siblingURI(s.created[0], "never-"+s.token)
	tool := "delete_resource"
	if s.hasTools("stat_resource") {
		tool = "stat_resource"
	}
	look := func(what string, tc *toolCall, err error, kind string) {
		if err != nil {
			p = append(p, what+": "+err.Error())
			return
		}
		if tc.res == nil || !tc.res.IsError {
			p = append(p, what+": "+tc.describe()+", want an isError result")
			return
		}
		sc := tc.structured()
		if sc["status"] != "failed" || sc["errorKind"] != kind {
			p = append(p, fmt.Sprintf("%s: status %v errorKind %v, want failed/%s", what, sc["status"], sc["errorKind"], kind))
		}
		if _, ok := sc["message"].(string); !ok {
			p = append(p, what+": no message")
		}
		if _, ok := sc["retrySafe"].(bool); !ok {
			p = append(p, what+": no retrySafe")
		}
		if t := strings.Join(tc.texts(), " "); strings.TrimSpace(t) == "" {
			p = append(p, what+": no text explaining the error")
		}
	}
	tc, err := s.callTool(ctx, tool, map[string]any{"uri": missing})
	look(tool+" of an unknown URI", tc, err, "not_found")
	tc, _, err = s.save(ctx, "save_report", map[string]any{"path": s.base + "/empty.md", "mimeType": "text/markdown", "text": ""})
	look("save_report with an empty body", tc, err, "validation_error")
	s.checkProblems("C13", p, tool+" of an unknown URI → not_found, empty body → validation_error; isError with text and {status, errorKind, message, retrySafe}")
}

// siblingURI replaces the last path segment of uri.
func (s *storeRun) siblingURI(uri, last string) string {
	i := strings.LastIndex(uri, "/")
	return uri[:i+1] + last
}

// deleted404 runs C14 and C15.
func (s *storeRun) deleted404(ctx context.Context) {
	uri := s.created[0]
	if !s.deleted[uri] {
		tc, err := s.callTool(ctx, "delete_resource", map[string]any{"uri": uri})
		switch {
		case err != nil:
			s.fail("C14", "delete_resource: %v", err)
			s.skip("C15", "delete failed")
			return
		case tc.res == nil || tc.res.IsError:
			s.fail("C14", "delete_resource: %s", tc.describe())
			s.skip("C15", "delete failed")
			return
		}
		sc := tc.structured()
		if sc["status"] != "deleted" || sc["uri"] != uri {
			s.fail("C14", "delete_resource: status %v uri %v, want deleted %s", sc["status"], sc["uri"], uri)
		}
		s.deleted[uri] = true
	}
	gone, err := s.readNotFound(ctx, uri)
	if err != nil {
		s.fail("C14", "%v", err)
		s.skip("C15", "no error to compare")
		return
	}
	if gone.problem != "" {
		s.fail("C14", "deleted %s", gone.problem)
		s.skip("C15", "no error to compare")
		return
	}
	s.check("C14", gone.err.Code == -32602,
		fmt.Sprintf("deleted %s → error %d %q", uri, gone.err.Code, gone.err.Message),
		fmt.Sprintf("deleted %s → error %d %q, want -32602", uri, gone.err.Code, gone.err.Message))

	missing := s.siblingURI(uri, "never-"+s.token)
	never, err := s.readNotFound(ctx, missing)
	if err != nil {
		s.fail("C15", "%v", err)
		return
	}
	if never.problem != "" {
		s.fail("C15", "never-existing %s", never.problem)
		return
	}
	var p []string
	if gone.dataURI == nil || *gone.dataURI != uri {
		p = append(p, fmt.Sprintf("deleted: data %s, want data.uri %q", orNone(gone.err.Data), uri))
	}
	if never.dataURI == nil || *never.dataURI != missing {
		p = append(p, fmt.Sprintf("never-existing: data %s, want data.uri %q", orNone(never.err.Data), missing))
	}
	a := strings.ReplaceAll(string(gone.err.raw), jsonString(uri), `"<uri>"`)
	b := strings.ReplaceAll(string(never.err.raw), jsonString(missing), `"<uri>"`)
	if a != b {
		p = append(p, fmt.Sprintf("errors differ: deleted %s vs never-existing %s", clip(a, 100), clip(b, 100)))
	}
	s.checkProblems("C15", p, fmt.Sprintf("deleted and never-existing URIs → the same error %s", clip(a, 120)))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// delete removes a URI this run stored.
func (s *storeRun) delete(ctx context.Context, uri, ifMatch string) error {
	args := map[string]any{"uri": uri}
	if ifMatch != "" {
		args["ifMatch"] = ifMatch
	}
	tc, err := s.callTool(ctx, "delete_resource", args)
	if err != nil {
		return err
	}
	if tc.res == nil || (tc.res.IsError && errorKind(tc) != "not_found") {
		return errors.New(tc.describe())
	}
	s.deleted[uri] = true
	return nil
}

// cacheRows settles C05 and C06 from every read of stored data.
func (s *storeRun) cacheRows() {
	private, all := 0, 0
	for _, rd := range s.reads {
		all++
		if p := cacheFields(rd.res); strings.Contains(p, "ttlMs") {
			s.fail("C06", "%s: %s", rd.uri, p)
		}
		if !rd.private {
			continue
		}
		private++
		if rd.res.CacheScope == nil || *rd.res.CacheScope != "private" {
			s.fail("C05", "%s (private tenant data): %s, want cacheScope \"private\"", rd.uri, rd.res.cacheString())
		}
	}
	if private == 0 {
		s.skip("C05", "no read of private data")
	} else {
		s.pass("C05", "%d reads of private data: cacheScope \"private\"", private)
	}
	if all == 0 {
		s.skip("C06", "no read of stored data")
	} else {
		s.pass("C06", "%d reads: ttlMs present, integer ≥ 0", all)
	}
}

// cleanup deletes everything the run stored (C16).
func (s *storeRun) cleanup(ctx context.Context) {
	if len(s.created) == 0 {
		s.skip("C16", "nothing was stored")
		return
	}
	var p []string
	for _, uri := range s.created {
		if s.deleted[uri] {
			continue
		}
		if err := s.delete(ctx, uri, ""); err != nil {
			p = append(p, uri+": "+err.Error())
		}
	}
	s.checkProblems("C16", p, fmt.Sprintf("%d resources stored under %s/ and deleted", len(s.created), s.base))
}
