package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

// TestPrepareS3 stores 11 reports in chunks of 4, in two runs (the second
// continuing with -prepare-from), on the S3 server of the environment, and
// reads them back through s3store as the server would: every report whole
// with a save_report's metadata, the listing exactly them in order, and
// the usage the listing counts.
func TestPrepareS3(t *testing.T) {
	endpoint, bucket := os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if endpoint == "" || bucket == "" {
		if os.Getenv("RESOURCED_REQUIRE_S3") == "1" {
			t.Fatal("no S3 server (RESOURCED_REQUIRE_S3=1)")
		}
		t.Skip(`needs an S3 server: eval "$(scripts/versitygw.sh start)"`)
	}
	defer func(n int) { prepareChunk = n }(prepareChunk)
	prepareChunk = 4
	d := &s3Direct{endpoint: endpoint, bucket: bucket, prefix: "rdtest/prepare-" + strconv.FormatInt(int64(os.Getpid()), 36)}
	body := bodyText(300)
	for _, r := range [][2]int{{0, 6}, {6, 11}} {
		p, err := prepareS3(d, "t1", "report", "bench/p", "text/markdown", body, r[0], r[1], 3, io.Discard)
		if err != nil || p.Saved != int64(r[1]-r[0]) || p.Errors != 0 {
			t.Fatalf("prepareS3 [%d, %d) = %+v, %v", r[0], r[1], p, err)
		}
	}
	client, err := d.client()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3store.Open(client, s3store.Options{Bucket: bucket, Prefix: d.prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	page, err := st.List(ctx, store.ListQuery{Tenant: "t1", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page.Items {
		got = append(got, m.Key.Path())
		if m.Size != int64(len(body)) || m.MIMEType != "text/markdown" || m.Visibility != store.Private || m.Listed ||
			!strings.HasSuffix(m.Key.Path(), "/"+m.Title) || !strings.Contains(m.Description, "text/markdown, 300 bytes, saved ") {
			t.Errorf("%s: metadata %+v, not a save_report's", m.Key, m)
		}
		if err := st.Delete(ctx, m.Key, store.Cond{}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	want := []string{"bench/p/0", "bench/p/1", "bench/p/10", "bench/p/2", "bench/p/3", "bench/p/4", "bench/p/5", "bench/p/6", "bench/p/7", "bench/p/8", "bench/p/9"}
	if strings.Join(got, " ") != strings.Join(want, " ") || page.More {
		t.Errorf("listed %q (more %v), want %q", got, page.More, want)
	}
	o, err := st.Get(ctx, store.MustKey("t1", "report", "bench/p/10"))
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Get after Delete = %v, %v", o, err)
	}
}

// TestPrepareS3Failure: a chunk that fails says where -prepare-from
// continues: the first index of that chunk, all below it stored. Here the
// reports from 10 on have a key one byte too long for S3 (the prefix is
// made so), which s3store's Load refuses before it writes any of the
// chunk.
func TestPrepareS3Failure(t *testing.T) {
	endpoint, bucket := os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if endpoint == "" || bucket == "" {
		t.Skip(`needs an S3 server: eval "$(scripts/versitygw.sh start)"`)
	}
	defer func(n int) { prepareChunk = n }(prepareChunk)
	prepareChunk = 4
	d := &s3Direct{endpoint: endpoint, bucket: bucket, prefix: "rdtest/prepfail-" + strconv.FormatInt(int64(os.Getpid()), 36)}
	// The public index key of report://t1/<pre>/<i> is
	// <prefix>/!public/t1!/report!/<pre>/<i>!: 1024 bytes, S3's limit, for
	// a one-digit i.
	n := 1024 - len(d.prefix+"/!public/t1!/report!/") - len("/0!")
	pre := strings.Repeat("abcdefghi/", n/10+1)[:n]
	if strings.HasSuffix(pre, "/") {
		pre = pre[:n-1] + "z"
	}
	p, err := prepareS3(d, "t1", "report", pre, "text/markdown", []byte("x"), 0, 14, 2, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "0 of [8, 12) stored; -prepare-from 8 continues") || p.Saved != 8 {
		t.Fatalf("prepareS3 = %+v, %v; want 8 stored and an error saying -prepare-from 8 continues", p, err)
	}
	client, err := d.client()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3store.Open(client, s3store.Options{Bucket: bucket, Prefix: d.prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	page, err := st.List(ctx, store.ListQuery{Tenant: "t1", Limit: 100})
	if err != nil || len(page.Items) != 8 {
		t.Fatalf("List = %d items, %v; want the 8 stored", len(page.Items), err)
	}
	for _, m := range page.Items {
		if err := st.Delete(ctx, m.Key, store.Cond{}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}
