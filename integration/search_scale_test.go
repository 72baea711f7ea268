package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scaleDocs is how many reports and snapshots TestFullTextSearchAtScale
// saves across its three tenants.
const scaleDocs = 10000

// scaleLookups bounds the randomized checks: the secrets each reader
// looks up per check, and half the resources replaced or deleted.
const scaleLookups = 12

// scaleDoc is one saved resource of the scale test and what finds it.
type scaleDoc struct {
	tenant, uri, path, secret string
	snapshot, public, expires bool
	batch                     int // its title's label word: b<batch>
	gone                      bool
}

// TestFullTextSearchAtScale drives search_resources over the real binary
// (bbolt with the embedded bleve index) at 10 000 reports and snapshots
// of three tenants, two of them look-alikes, saved concurrently: searches
// find by body text, by JSON value and by label, and a bounded randomized
// cross-tenant check never finds another tenant's private resource and
// always finds what the reader may read, after the saves, after replace
// and delete, after expiry, and after a reindex.
func TestFullTextSearchAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("saves 10 000 resources")
	}
	in := startServer(t, "budgets: {tenantSaveRate: -1, tenantInflight: -1}\n")
	tenants := []string{"acme", "acme1", "beta"}
	as := map[string]*instance{}
	for _, tn := range tenants {
		as[tn] = in.as(in.mint(tokenClaims(tn, scopeRead+" "+scopeWrite)))
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 10000))
	docs := make([]*scaleDoc, scaleDocs)
	for i := range docs {
		tn := tenants[i%len(tenants)]
		d := &scaleDoc{tenant: tn, secret: fmt.Sprintf("sec%d%s%d", i, strings.ReplaceAll(tn, "1", "one"), rng.IntN(1e6)),
			snapshot: i%10 == 0, public: rng.IntN(4) == 0, expires: i%500 == 7, batch: rng.IntN(200)}
		docs[i] = d
	}

	start := time.Now()
	save := func(d *scaleDoc, args map[string]any) string {
		tool := "save_report"
		if d.snapshot {
			tool = "save_search_snapshot"
		}
		if d.public {
			args["visibility"], args["listed"] = "public", true
		}
		if d.expires {
			args["retention"] = "PT4S"
		}
		args["title"] = fmt.Sprintf("Nightly audit %s b%d", d.tenant, d.batch)
		r := as[d.tenant].call(v2025, tool, args)
		if r.IsError {
			return fmt.Sprintf("%s: %s", tool, r.raw)
		}
		var v struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(r.StructuredContent, &v)
		d.uri = v.URI
		return ""
	}
	saveDoc := func(i int, d *scaleDoc) string {
		if d.snapshot {
			return save(d, map[string]any{"query": "incidents " + d.tenant,
				"hits": []map[string]any{{"id": "INC-" + d.secret, "title": "Payment gateway timeout", "snippet": "p99 over 2s"}}})
		}
		d.path = fmt.Sprintf("r/%d", i)
		return save(d, map[string]any{"path": d.path, "mimeType": "text/markdown",
			"text": fmt.Sprintf("# Report %d\n\nshared words here\n%s is the secret\n", i, d.secret)})
	}
	// The resources kept for 4 s first: found until they expire, then by
	// no one.
	var expiring []*scaleDoc
	for _, d := range docs {
		if d.expires {
			expiring = append(expiring, d)
		}
	}
	each(t, expiring, func(_ int, d *scaleDoc) string { return saveDoc(slices.Index(docs, d), d) })
	expired := time.Now().Add(5 * time.Second)
	for _, d := range expiring[:3] {
		if got := as[d.tenant].searchHits(t, map[string]any{"query": d.secret}); !slices.Equal(got, []string{d.uri}) {
			t.Fatalf("%s searching its %s before it expires = %v", d.tenant, d.uri, got)
		}
	}
	each(t, docs, func(i int, d *scaleDoc) string {
		if d.expires {
			return ""
		}
		return saveDoc(i, d)
	})
	t.Logf("saved %d resources in %s", len(docs), time.Since(start).Round(time.Millisecond))
	defer func(checks time.Time) { t.Logf("checked in %s", time.Since(checks).Round(time.Millisecond)) }(time.Now())
	time.Sleep(time.Until(expired))

	expect := func(reader string, d *scaleDoc) []string {
		if d.gone || d.expires || !(d.tenant == reader || d.public) {
			return nil
		}
		return []string{d.uri}
	}
	check := func(when string) {
		t.Helper()
		for _, reader := range tenants {
			for range scaleLookups {
				d := docs[rng.IntN(len(docs))]
				q := d.secret // in a snapshot, a JSON value
				if got, want := as[reader].searchHits(t, map[string]any{"query": q}), expect(reader, d); !slices.Equal(got, want) {
					t.Fatalf("%s: %s searching %s (%s's, public %v) = %v, want %v (seed %d)", when, reader, q, d.tenant, d.public, got, want, seed)
				}
			}
			// By label: every hit is the reader's or public, and has the label.
			b := rng.IntN(200)
			for _, u := range as[reader].searchHits(t, map[string]any{"labels": []string{fmt.Sprintf("b%d", b)}}) {
				d := byURI(docs, u)
				if d == nil || d.batch != b || expect(reader, d) == nil {
					t.Fatalf("%s: %s searching label b%d found %s (seed %d)", when, reader, b, u, seed)
				}
			}
		}
	}
	check("after the saves")

	// Replace (a new secret, the visibility flipped) and delete.
	var changed []*scaleDoc
	for len(changed) < 2*scaleLookups {
		d := docs[rng.IntN(len(docs))]
		if d.snapshot || d.expires || d.gone || slices.Contains(changed, d) {
			continue
		}
		changed = append(changed, d)
	}
	each(t, changed, func(i int, d *scaleDoc) string {
		if i%2 == 0 {
			if r := as[d.tenant].call(v2025, "delete_resource", map[string]any{"uri": d.uri}); r.IsError {
				return fmt.Sprintf("delete_resource: %s", r.raw)
			}
			d.gone = true
			return ""
		}
		old := d.secret
		d.secret, d.public = "new"+old, !d.public
		args := map[string]any{"path": d.path, "mimeType": "text/plain", "text": "replaced: " + d.secret, "overwrite": true,
			"visibility": "private", "listed": false}
		if errs := save(d, args); errs != "" {
			return errs
		}
		for _, reader := range tenants {
			if got := as[reader].searchHits(t, map[string]any{"query": old}); len(got) > 0 {
				return fmt.Sprintf("%s still finds the replaced %s: %v", reader, old, got)
			}
		}
		return ""
	})
	for _, d := range changed {
		for _, reader := range tenants {
			q := d.secret
			if got, want := as[reader].searchHits(t, map[string]any{"query": q}), expect(reader, d); !slices.Equal(got, want) {
				t.Fatalf("after replace and delete: %s searching %s = %v, want %v (seed %d)", reader, q, got, want, seed)
			}
		}
	}
	check("after replace and delete")

	// Expiry (and the sweep since): the resources kept for 4 s are found
	// by no one.
	for i, d := range expiring {
		for _, reader := range []string{d.tenant, tenants[i%len(tenants)]} {
			if got := as[reader].searchHits(t, map[string]any{"query": d.secret}); len(got) > 0 {
				t.Fatalf("%s found the expired %s: %v", reader, d.uri, got)
			}
		}
	}

	in.stop()
	if out, ok := in.command(t, "reindex"); !ok {
		t.Fatalf("reindex:\n%s", out)
	}
	in.start()
	for _, tn := range tenants {
		as[tn] = in.as(as[tn].Token)
	}
	check("after a reindex")
}

// each runs fn for every element of list on 32 goroutines and fails the
// test with the first error it returns.
func each[T any](t *testing.T, list []T, fn func(i int, v T) string) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first string
		next  int
	)
	for range 32 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != ""
				mu.Unlock()
				if i >= len(list) || stop {
					return
				}
				if err := fn(i, list[i]); err != "" {
					mu.Lock()
					if first == "" {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if first != "" {
		t.Fatal(first)
	}
}

func byURI(docs []*scaleDoc, uri string) *scaleDoc {
	for _, d := range docs {
		if d.uri == uri {
			return d
		}
	}
	return nil
}
