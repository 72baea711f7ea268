package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// pgTarget returns the PostgreSQL database the tests use (started by
// .ci/run through scripts/postgres.sh), or skips.
func pgTarget(t *testing.T) string {
	t.Helper()
	u := os.Getenv("RESOURCED_TEST_PG_URL")
	if u == "" {
		msg := `the shared index tests need PostgreSQL: eval "$(scripts/postgres.sh start)" in the repository root, then rerun`
		if os.Getenv("RESOURCED_REQUIRE_PG") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// TestSearchSharedOnS3WithPostgres: two instances of the real binary on
// one S3 bucket sharing one PostgreSQL index find each other's saves at
// once (the next search after the save's answer, no wait), see each
// other's replaces and deletes, and neither shows one tenant another's
// private resource.
func TestSearchSharedOnS3WithPostgres(t *testing.T) {
	endpoint, bucket := s3Target(t)
	pg := pgTarget(t)
	table := "it_" + randomHex(6)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Errorf("drop %s: %v", table, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			t.Errorf("drop %s: %v", table, err)
		}
	})
	env := "RESOURCED_INDEX_POSTGRES_URL=" + pg
	a := startServerEnv(t, s3Config(endpoint, bucket, "it-"+randomHex(6))+
		fmt.Sprintf("index:\n  backend: postgres\n  postgres: {table: %s}\n", table), env)
	b := &instance{t: t, dataDir: filepath.Join(t.TempDir(), "data"), config: a.config, Key: a.Key, Token: a.Token, extraEnv: a.extraEnv}
	b.start()
	t.Cleanup(b.stop)

	acme := map[string]*instance{"a": a.as(a.mint(tokenClaims("acme", scopeRead+" "+scopeWrite)))}
	acme["b"] = b.as(acme["a"].Token)
	beta := map[string]*instance{"a": a.as(a.mint(tokenClaims("beta", scopeRead+" "+scopeWrite)))}
	beta["b"] = b.as(beta["a"].Token)
	find := func(in *instance, word string) []string {
		return in.searchHits(t, map[string]any{"query": word})
	}
	for i, via := range [][2]string{{"a", "b"}, {"b", "a"}} {
		saver, finder := via[0], via[1]
		word := fmt.Sprintf("sharedword%d%s", i, randomHex(3))
		uri := fmt.Sprintf("report://acme/shared/%d", i)
		acme[saver].saveText(t, fmt.Sprintf("shared/%d", i), word+" saved through "+saver)
		if got := find(acme[finder], word); !slices.Equal(got, []string{uri}) {
			t.Fatalf("acme's save through %s, searched through %s at once = %v, want %s", saver, finder, got, uri)
		}
		if got := find(beta[finder], word); len(got) != 0 {
			t.Fatalf("beta found acme's private %s through %s: %v", uri, finder, got)
		}
		// Replaced through the finder: the saver's instance finds the new
		// words, not the old.
		acme[finder].saveText(t, fmt.Sprintf("shared/%d", i), "replaced"+word, "overwrite", true, "visibility", "public", "listed", true)
		if got := find(acme[saver], word); len(got) != 0 {
			t.Fatalf("%s still finds %s after a replace through %s: %v", saver, word, finder, got)
		}
		if got := find(beta[saver], "replaced"+word); !slices.Equal(got, []string{uri}) {
			t.Fatalf("beta through %s searching the public replacement = %v, want %s", saver, got, uri)
		}
		// Deleted through the saver: gone through the finder.
		if r := acme[saver].call(v2025, "delete_resource", map[string]any{"uri": uri}); r.IsError {
			t.Fatalf("delete_resource: %s", r.raw)
		}
		if got := find(beta[finder], "replaced"+word); len(got) != 0 {
			t.Fatalf("%s finds %s after a delete through %s: %v", finder, uri, saver, got)
		}
	}
}
