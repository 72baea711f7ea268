package pgindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/indextest"
	"github.com/resourced/resourced/index/pgindex"
)

// pgURL is the test database (scripts/postgres.sh); without it the tests
// skip, unless RESOURCED_REQUIRE_PG=1 makes that a failure.
func pgURL(t *testing.T) string {
	u := os.Getenv("RESOURCED_TEST_PG_URL")
	if u == "" {
		msg := "RESOURCED_TEST_PG_URL is unset: run eval \"$(scripts/postgres.sh start)\" first"
		if os.Getenv("RESOURCED_REQUIRE_PG") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// table opens a driver on a fresh table that is dropped when t ends.
func table(t *testing.T, url, name string) *pgindex.Driver {
	t.Helper()
	ctx := context.Background()
	d, err := pgindex.Open(ctx, pgindex.Options{URL: url, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return d
}

func fresh() string { return fmt.Sprintf("idx_test_%d_%d", time.Now().UnixNano(), rand.Uint32()) }

func TestConformance(t *testing.T) {
	url := pgURL(t)
	indextest.Run(t, func(t *testing.T) index.Driver { return table(t, url, fresh()) })
}

// TestSharedAcrossInstances: two drivers on one table, as two instances
// of resourced on one database: a Put through one is found through the
// other at once, and a delete likewise.
func TestSharedAcrossInstances(t *testing.T) {
	url := pgURL(t)
	ctx := context.Background()
	name := fresh()
	a := index.New(table(t, url, name), index.Options{})
	defer a.Close()
	bd, err := pgindex.Open(ctx, pgindex.Options{URL: url, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	b := index.New(bd, index.Options{})
	defer b.Close()
	doc := &index.Document{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "x"}, MediaType: "text/plain", Created: time.Now(), Text: "seen by the other instance"}
	if err := a.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if p, err := b.Search(ctx, "acme", index.Query{Text: "other instance"}); err != nil || len(p.Hits) != 1 {
		t.Fatalf("search through the other instance: %+v, %v", p, err)
	}
	if err := b.Delete(ctx, doc.Ref); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Search(ctx, "acme", index.Query{Text: "other instance"}); err != nil || len(p.Hits) != 0 {
		t.Fatalf("after a delete through the other instance: %+v, %v", p, err)
	}
}

// TestHostileText: NUL bytes, quotes and SQL in documents and queries are
// data, and a text too large for one tsvector is still indexed.
func TestHostileText(t *testing.T) {
	url := pgURL(t)
	ctx := context.Background()
	x := index.New(table(t, url, fresh()), index.Options{MaxTextBytes: 4 << 20})
	defer x.Close()
	doc := &index.Document{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "x"}, MediaType: "text/plain", Created: time.Now(),
		Title: "it's \x00 'quoted'", Text: "a\x00b'); DROP TABLE users; -- robert"}
	if err := x.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"robert", `'); DROP TABLE`, `"\"" robert`, `quoted`} {
		p, err := x.Search(ctx, "acme", index.Query{Text: q})
		if err != nil || len(p.Hits) != 1 {
			t.Errorf("Search(%q) = %+v, %v; want the document", q, p, err)
		}
	}
	// About 3.5 MiB of distinct words: more than one tsvector holds.
	var big []byte
	for i := 0; len(big) < 3500000; i++ {
		big = fmt.Appendf(big, "w%x ", i*7919)
	}
	big = append(big, "zzfirst"...)
	large := &index.Document{Ref: index.Ref{Tenant: "acme", Scheme: "report", Path: "large"}, MediaType: "text/plain", Created: time.Now(), Text: "needle " + string(big)}
	if err := x.Put(ctx, large); err != nil {
		t.Fatalf("Put of a text larger than a tsvector: %v", err)
	}
	if p, err := x.Search(ctx, "acme", index.Query{Text: "needle"}); err != nil || len(p.Hits) != 1 {
		t.Errorf("the start of a large text is not found: %+v, %v", p, err)
	}
}

func TestBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, o := range []pgindex.Options{
		{URL: "postgres://u:secretpw@127.0.0.1:1/x", Table: "a; drop"},
		{URL: "::not a url secretpw", Table: "t"},
	} {
		_, err := pgindex.Open(ctx, o)
		if err == nil {
			t.Errorf("Open(%+v) succeeded", o)
		} else if s := err.Error(); strings.Contains(s, "secretpw") {
			t.Errorf("Open error %q shows the password", s)
		}
	}
}
