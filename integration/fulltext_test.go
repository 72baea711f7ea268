package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// searchHits runs search_resources as in and returns the hits' URIs,
// following nextCursor.
func (in *instance) searchHits(t *testing.T, args map[string]any) []string {
	t.Helper()
	var out []string
	for range 50 {
		r := in.call(v2025, "search_resources", args)
		if r.IsError {
			t.Fatalf("search_resources %v: %s", args, r.raw)
		}
		var v struct {
			Hits []struct {
				URI     string `json:"uri"`
				Snippet string `json:"snippet"`
				Lines   []int  `json:"lines"`
			} `json:"hits"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.StructuredContent, &v); err != nil {
			t.Fatal(err)
		}
		links := 0
		for _, c := range r.Content {
			if c.Type == "resource_link" {
				links++
			}
		}
		if links != len(v.Hits) {
			t.Errorf("%d hits but %d resource_links", len(v.Hits), links)
		}
		for _, h := range v.Hits {
			out = append(out, h.URI)
		}
		if v.NextCursor == "" {
			slices.Sort(out)
			return out
		}
		args = maps(args, "cursor", v.NextCursor)
	}
	t.Fatalf("search_resources %v: more than 50 pages", args)
	return nil
}

func maps(m map[string]any, k string, v any) map[string]any {
	c := map[string]any{}
	for a, b := range m {
		c[a] = b
	}
	c[k] = v
	return c
}

// TestFullTextSearch drives search_resources over the real binary (bbolt
// with the embedded bleve index): three tenants save reports and
// snapshots; searches find by body text, JSON value and label, and a
// randomized cross-tenant check finds no other tenant's private resource,
// also after replace, delete and a restart.
func TestFullTextSearch(t *testing.T) {
	base := startServer(t, "")
	tenants := []string{"acme", "acme1", "beta"}
	as := map[string]*instance{}
	for _, tn := range tenants {
		as[tn] = base.as(base.mint(tokenClaims(tn, scopeRead+" "+scopeWrite)))
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 27))
	type saved struct {
		tenant, uri, secret string
		public              bool
	}
	var all []*saved
	for _, tn := range tenants {
		for i := range 40 {
			s := &saved{tenant: tn, secret: fmt.Sprintf("sec%s%dx%d", strings.ReplaceAll(tn, "-", ""), i, rng.IntN(1e6)), public: rng.IntN(4) == 0}
			args := map[string]any{"path": fmt.Sprintf("r/%d", i), "mimeType": "text/markdown",
				"text": fmt.Sprintf("# Report %d\n\nshared words here\n%s is the secret\n", i, s.secret), "title": "Nightly audit " + tn}
			if s.public {
				args["visibility"], args["listed"] = "public", true
			}
			r := as[tn].call(v2025, "save_report", args)
			if r.IsError {
				t.Fatalf("save_report: %s", r.raw)
			}
			s.uri = fmt.Sprintf("report://%s/r/%d", tn, i)
			all = append(all, s)
		}
		r := as[tn].call(v2025, "save_search_snapshot", map[string]any{"query": "incidents of " + tn,
			"hits": []map[string]any{{"id": "INC-" + tn, "title": "Payment gateway timeout", "snippet": "p99 over 2s"}}})
		if r.IsError {
			t.Fatalf("save_search_snapshot: %s", r.raw)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, reader := range tenants {
			for range 15 {
				s := all[rng.IntN(len(all))]
				got := as[reader].searchHits(t, map[string]any{"query": s.secret})
				var want []string
				if s.uri != "" && (s.tenant == reader || s.public) {
					want = []string{s.uri}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %s searching %s (%s's, public %v) = %v, want %v (seed %d)", when, reader, s.secret, s.tenant, s.public, got, want, seed)
				}
			}
		}
	}
	check("after the saves")

	// By JSON value and by label.
	if got := as["beta"].searchHits(t, map[string]any{"query": "gateway timeout", "scheme": "search"}); len(got) != 1 || !strings.HasPrefix(got[0], "search://beta/") {
		t.Errorf("by a JSON value = %v, want beta's snapshot", got)
	}
	got := as["acme"].searchHits(t, map[string]any{"labels": []string{"acme1"}})
	for _, u := range got {
		if !strings.HasPrefix(u, "report://acme1/") {
			t.Errorf("label acme1 as acme found %s", u)
		}
	}
	// Replace and delete.
	for i := range 5 {
		s := all[rng.IntN(len(all))]
		if s.uri == "" {
			continue
		}
		r := as[s.tenant].call(v2025, "delete_resource", map[string]any{"uri": s.uri})
		if r.IsError {
			t.Fatalf("delete_resource: %s", r.raw)
		}
		s.uri = ""
		s2 := all[rng.IntN(len(all))]
		if s2.uri == "" {
			continue
		}
		s2.secret = fmt.Sprintf("new%dsecret%d", i, rng.IntN(1e6))
		r = as[s2.tenant].call(v2025, "save_report", map[string]any{"path": strings.SplitN(s2.uri, "/", 4)[3], "mimeType": "text/plain", "text": "replaced: " + s2.secret, "overwrite": true,
			"visibility": map[bool]string{true: "public", false: "private"}[s2.public], "listed": s2.public})
		if r.IsError {
			t.Fatalf("save_report overwrite: %s", r.raw)
		}
	}
	check("after replace and delete")

	base.restart() // a new port: the views follow
	for _, tn := range tenants {
		as[tn] = base.as(as[tn].Token)
	}
	check("after a restart")

	// Bad input is a clear validation error: a query of exclusions only,
	// and one with no word at all (not a query that matches everything).
	for _, q := range []string{"-only", "or", "OR", `""`, "-"} {
		r := as["acme"].call(v2025, "search_resources", map[string]any{"query": q})
		if !r.IsError || !strings.Contains(string(r.StructuredContent), "validation_error") {
			t.Errorf("the query %q = %s, want a validation_error", q, r.raw)
		}
	}
}
