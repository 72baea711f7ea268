package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// loadObjects returns n objects of tenant t1 with the variety Load must
// store as Put does: private and public listed, unlisted, expiring,
// non-ASCII metadata, an empty body, times with sub-millisecond parts.
func loadObjects(n int) []*store.Object {
	now := time.Now()
	var objs []*store.Object
	for i := range n {
		body := []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), i%7))
		m := store.Meta{
			Key:      store.MustKey("t1", "report", fmt.Sprintf("load/%d", i)),
			MIMEType: "text/markdown", Created: now, Modified: now.Add(time.Duration(i) * time.Microsecond),
			Title: fmt.Sprintf("Bericht Nr. %d – ü", i), Description: "geladen, nicht gespeichert", Visibility: store.Private,
		}
		if i%3 == 0 {
			m.Visibility, m.Listed = store.Public, true
		}
		if i%5 == 0 {
			m.Expires = now.Add(time.Hour)
		}
		objs = append(objs, &store.Object{Meta: m, Body: body})
	}
	return objs
}

// TestLoadReadsAsPut: what Load stores is what Put stores, and the store
// reads, lists, counts and indexes it as it does a Put's: every object
// reads back whole (size and sha256 checked), the listing has exactly the
// loaded keys, usage agrees with a reconcile's count, the public index has
// a marker for each public listed object and ListPublic shows them, and
// the raw S3 object (content, content type, user metadata) is a Put's but
// for the write id.
func TestLoadReadsAsPut(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	objs := loadObjects(40)
	n, err := s.Load(ctx, objs, 8)
	if err != nil || n != len(objs) {
		t.Fatalf("Load = %d, %v; want %d, nil", n, err, len(objs))
	}
	var want store.Usage
	var keys, public []store.Key
	for _, o := range objs {
		got, err := s.Get(ctx, o.Key)
		if err != nil {
			t.Fatalf("Get %s = %v", o.Key, err)
		}
		wm := o.Meta
		wm.Created, wm.Modified, wm.Expires = msUTC(wm.Created), msUTC(wm.Modified), msUTC(wm.Expires) // as every backend keeps them
		wm.Size, wm.SHA256 = int64(len(o.Body)), store.Sum(o.Body)
		if diff := cmp.Diff(wm, got.Meta, keyString); diff != "" {
			t.Errorf("Get %s: meta differs (-want +got):\n%s", o.Key, diff)
		}
		if !bytes.Equal(got.Body, o.Body) {
			t.Errorf("Get %s: body %q, want %q", o.Key, got.Body, o.Body)
		}
		want.Bytes += wm.Size
		want.Objects++
		keys = append(keys, o.Key)
		if indexed(&wm) {
			public = append(public, o.Key)
		}
	}
	slices.SortFunc(keys, func(a, b store.Key) int { return strings.Compare(s.d.objectKey(a), s.d.objectKey(b)) })

	var listed []store.Key
	for q := (store.ListQuery{Tenant: "t1", Limit: 7}); ; {
		page, err := s.List(ctx, q)
		if err != nil {
			t.Fatalf("List = %v", err)
		}
		for _, m := range page.Items {
			listed = append(listed, m.Key)
		}
		if !page.More {
			break
		}
		q.After = page.Next
	}
	if diff := cmp.Diff(keys, listed, keyString); diff != "" {
		t.Errorf("List: keys differ from the loaded ones (-want +got):\n%s", diff)
	}

	var shown []store.Key
	page, err := s.ListPublic(ctx, store.PublicPosition{}, 100)
	if err != nil {
		t.Fatalf("ListPublic = %v", err)
	}
	for _, m := range page.Items {
		shown = append(shown, m.Key)
	}
	slices.SortFunc(public, func(a, b store.Key) int { return strings.Compare(s.d.markerKey(a), s.d.markerKey(b)) })
	if diff := cmp.Diff(public, shown, keyString); diff != "" {
		t.Errorf("ListPublic: differs from the public listed objects loaded (-want +got):\n%s", diff)
	}
	if got := rawKeys(t, s, "!public/"); len(got) != len(public) {
		t.Errorf("public index: %d markers %q, want %d", len(got), got, len(public))
	}

	usage, err := s.Usage(ctx, "t1")
	if err != nil || usage != want {
		t.Errorf("Usage = %+v, %v; want %+v (the loaded objects)", usage, err, want)
	}
	before, after, err := s.Reconcile(ctx, "t1")
	if err != nil || before != want || after != want {
		t.Errorf("Reconcile = %+v -> %+v, %v; want %+v both (the usage Load committed is the listing's count)", before, after, err, want)
	}

	// The raw objects: one loaded and one Put with the same metadata and
	// body are the same bytes but for the write id.
	o := objs[3]
	put := *o
	put.Key = store.MustKey("t1", "report", "put/3")
	if _, _, err := s.Put(ctx, &put, store.Cond{}); err != nil {
		t.Fatalf("Put = %v", err)
	}
	loadedRaw, loadedHdr := rawObject(t, s, s.d.objectKey(o.Key))
	putRaw, putHdr := rawObject(t, s, s.d.objectKey(put.Key))
	lr, _, err := decodeRecord(loadedRaw)
	if err != nil {
		t.Fatalf("loaded object does not decode: %v", err)
	}
	pr, _, err := decodeRecord(putRaw)
	if err != nil {
		t.Fatalf("Put object does not decode: %v", err)
	}
	if len(lr.writeID) != len(pr.writeID) || lr.writeID == pr.writeID {
		t.Fatalf("write ids %q and %q: want two of one length", lr.writeID, pr.writeID)
	}
	if got := bytes.ReplaceAll(loadedRaw, []byte(lr.writeID), []byte(pr.writeID)); !bytes.Equal(got, putRaw) {
		t.Errorf("loaded object content\n%q\nis not the Put's but for the write id:\n%q", got, putRaw)
	}
	for _, h := range []string{"Content-Type", "X-Amz-Meta-Sha256", "X-Amz-Meta-Expires-At"} {
		if loadedHdr.Get(h) != putHdr.Get(h) {
			t.Errorf("header %s: loaded %q, Put %q", h, loadedHdr.Get(h), putHdr.Get(h))
		}
	}
	if loadedHdr.Get("X-Amz-Meta-Write-Id") != lr.writeID || putHdr.Get("X-Amz-Meta-Write-Id") != pr.writeID {
		t.Errorf("write-id user metadata: loaded %q (record %q), Put %q (record %q)",
			loadedHdr.Get("X-Amz-Meta-Write-Id"), lr.writeID, putHdr.Get("X-Amz-Meta-Write-Id"), pr.writeID)
	}
}

// rawObject GETs key with the raw client: its content and headers.
func rawObject(t *testing.T, s *Store, key string) ([]byte, interface{ Get(string) string }) {
	t.Helper()
	out, err := s.d.client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(s.d.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	h := headerMap{"Content-Type": aws.ToString(out.ContentType)}
	for k, v := range out.Metadata {
		h["X-Amz-Meta-"+strings.ToUpper(k[:1])+k[1:]] = v
	}
	// The SDK lower-cases user metadata names: "write-id" -> "Write-id".
	if v, ok := h["X-Amz-Meta-Write-id"]; ok {
		h["X-Amz-Meta-Write-Id"] = v
	}
	if v, ok := h["X-Amz-Meta-Expires-at"]; ok {
		h["X-Amz-Meta-Expires-At"] = v
	}
	return b, h
}

type headerMap map[string]string

func (h headerMap) Get(k string) string { return h[k] }

// TestLoadResumed: loading objects again over themselves (a preparation
// resumed from an earlier index than it reached) stores them again and
// over-counts usage until a reconcile, which counts each once: never an
// under-count.
func TestLoadResumed(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	objs := loadObjects(10)
	for round := range 2 {
		if n, err := s.Load(ctx, objs, 4); err != nil || n != len(objs) {
			t.Fatalf("Load round %d = %d, %v", round, n, err)
		}
	}
	var once store.Usage
	for _, o := range objs {
		once.Bytes += int64(len(o.Body))
		once.Objects++
	}
	u, err := s.Usage(ctx, "t1")
	if err != nil || u != (store.Usage{Bytes: 2 * once.Bytes, Objects: 2 * once.Objects}) {
		t.Errorf("Usage after two loads = %+v, %v; want twice %+v (each load counts its objects as new)", u, err, once)
	}
	if _, after, err := s.Reconcile(ctx, "t1"); err != nil || after != once {
		t.Errorf("Reconcile = %+v, %v; want %+v", after, err, once)
	}
}

// TestLoadBadInput: Load refuses, before any request (the store's
// endpoint answers nothing), what a Put would refuse or a batch cannot be.
func TestLoadBadInput(t *testing.T) {
	s, err := Open(offlineClient(t, "http://127.0.0.1:1"), Options{Bucket: "bbb", Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ok := func() *store.Object { return loadObjects(2)[1] }
	other := ok()
	other.Key = store.MustKey("t2", "report", "x")
	badSize := ok()
	badSize.Size = 3
	badSum := ok()
	badSum.Size, badSum.SHA256 = int64(len(badSum.Body)), store.Sum([]byte("another"))
	long := ok()
	long.Key = store.MustKey("t1", "report", strings.Repeat("a/", 508)+"x")
	for _, tc := range []struct {
		name    string
		objs    []*store.Object
		workers int
		want    string
		is      error
	}{
		{"nil object", []*store.Object{ok(), nil}, 2, "object 1", store.ErrInvalidKey},
		{"zero key", []*store.Object{{Body: []byte("x")}}, 2, "zero key", store.ErrInvalidKey},
		{"two tenants", []*store.Object{ok(), other}, 2, "a batch is of one tenant", nil},
		{"size not the body's", []*store.Object{badSize}, 2, "does not match body length", nil},
		{"sha256 not the body's", []*store.Object{badSum}, 2, "sha256 does not match body", nil},
		{"key too long for S3", []*store.Object{long}, 2, "S3 allows", store.ErrInvalidKey},
		{"no workers", []*store.Object{ok()}, 0, "0 workers", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := s.Load(t.Context(), tc.objs, tc.workers)
			if n != 0 || err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("Load = %d, %v; want 0 and an error with %q (is %v)", n, err, tc.want, tc.is)
			}
		})
	}
	if n, err := s.Load(t.Context(), nil, 1); n != 0 || err != nil {
		t.Errorf("Load(nil) = %d, %v; want 0, nil", n, err)
	}
	s.Close()
	if _, err := s.Load(context.Background(), []*store.Object{ok()}, 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Load after Close = %v, want an error saying the store is closed", err)
	}
}

var keyString = cmp.Transformer("Key", store.Key.String)

func msUTC(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
