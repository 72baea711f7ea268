package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestReindexAndFsckOnS3: on the s3 backend, with the bleve index and
// with the shared PostgreSQL index, fsck over the real binary walks every
// object of every tenant and finds what an index restored from before a
// delete and two saves of two tenants lacks and holds, reindex repairs it,
// and search then finds each save again for its own tenant only. The
// bleve index is one stopped server's (fsck and reindex of a running one
// say to stop it); the PostgreSQL one is checked and rebuilt while the
// server runs.
func TestReindexAndFsckOnS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	t.Run("bleve", func(t *testing.T) {
		in := startServer(t, s3Config(endpoint, bucket, "it-"+randomHex(6))+"index:\n  backend: bleve\n")
		idx := filepath.Join(in.dataDir, "index.bleve")
		old := filepath.Join(t.TempDir(), "index.bleve")
		checkReindexOnS3(t, in, true, func() {
			in.stop()
			if err := os.CopyFS(old, os.DirFS(idx)); err != nil {
				t.Fatal(err)
			}
			in.start()
		}, func() {
			in.stop()
			if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (") {
				t.Fatalf("fsck of a clean stop on S3: ok %v\n%s", ok, out)
			}
			if err := os.RemoveAll(idx); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(idx, os.DirFS(old)); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		pg := pgTarget(t)
		table := "it_" + randomHex(6)
		sql := func(q string) {
			t.Helper()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		t.Cleanup(func() { sql("DROP TABLE IF EXISTS " + table + ", " + table + "_old") })
		in := startServerEnv(t, s3Config(endpoint, bucket, "it-"+randomHex(6))+
			fmt.Sprintf("index:\n  backend: postgres\n  postgres: {table: %s}\n", table), "RESOURCED_INDEX_POSTGRES_URL="+pg)
		checkReindexOnS3(t, in, false, func() {
			sql("CREATE TABLE " + table + "_old AS SELECT * FROM " + table)
		}, func() {
			sql("BEGIN; DELETE FROM " + table + "; INSERT INTO " + table + " SELECT * FROM " + table + "_old; COMMIT")
		})
	})
}

// checkReindexOnS3 saves reports of acme and beta through in, keeps the
// index as it is (keep), deletes one and saves two more, puts the kept
// index back (restore: the server stopped when local), and checks fsck,
// reindex and search.
func checkReindexOnS3(t *testing.T, in *instance, local bool, keep, restore func()) {
	acmeTok := in.mint(tokenClaims("acme", scopeRead+" "+scopeWrite))
	betaTok := in.mint(tokenClaims("beta", scopeRead+" "+scopeWrite))
	in.as(acmeTok).saveText(t, "a", "alphaword in acme's report")
	in.as(acmeTok).saveText(t, "b", "bravoword in acme's report")
	in.as(betaTok).saveText(t, "c", "charlieword in beta's report")
	keep()
	if r := in.as(acmeTok).call(v2025, "delete_resource", map[string]any{"uri": "report://acme/a"}); r.IsError {
		t.Fatalf("delete_resource: %s", r.raw)
	}
	in.as(betaTok).saveText(t, "d", "deltaword, beta's, saved after the copy")
	in.as(acmeTok).saveText(t, "e", "echoword, acme's, saved after the copy")
	if local {
		for _, cmd := range []string{"fsck", "reindex"} {
			if out, ok := in.command(t, cmd); ok || !strings.Contains(out, "stop it first") {
				t.Errorf("%s of a running server's bleve index on S3: ok %v\n%s", cmd, ok, out)
			}
		}
	}
	restore()

	out, ok := in.command(t, "fsck")
	for _, want := range []string{"2 objects missing from the index (", "report://beta/d", "report://acme/e",
		"1 entries whose object is gone (report://acme/a)", "run resourced reindex"} {
		if ok || !strings.Contains(out, want) {
			t.Errorf("fsck on S3 of a stale index: ok %v, want %q in\n%s", ok, want, out)
		}
	}
	if !local {
		if got := in.as(betaTok).searchHits(t, map[string]any{"query": "deltaword"}); len(got) != 0 {
			t.Fatalf("beta found deltaword in an index without it: %v", got)
		}
	}
	if out, ok := in.command(t, "reindex"); !ok || !strings.Contains(out, "indexed 4 objects, removed 1 stale entries") {
		t.Fatalf("reindex on S3: ok %v\n%s", ok, out)
	}
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "consistent (4 entries for 4 live objects)") {
		t.Fatalf("fsck on S3 after reindex: ok %v\n%s", ok, out)
	}
	if local {
		in.start()
	}
	for _, c := range []struct {
		tok, q string
		want   []string
	}{
		{betaTok, "deltaword", []string{"report://beta/d"}},
		{acmeTok, "deltaword", nil},
		{acmeTok, "echoword", []string{"report://acme/e"}},
		{betaTok, "echoword", nil},
		{acmeTok, "alphaword", nil},
		{acmeTok, "bravoword", []string{"report://acme/b"}},
		{betaTok, "bravoword", nil},
		{betaTok, "charlieword", []string{"report://beta/c"}},
		{acmeTok, "charlieword", nil},
	} {
		if got := in.as(c.tok).searchHits(t, map[string]any{"query": c.q}); !slices.Equal(got, c.want) {
			t.Errorf("searching %s after reindex on S3 = %v, want %v", c.q, got, c.want)
		}
	}
}
