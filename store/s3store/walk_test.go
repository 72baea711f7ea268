package s3store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// TestWalk: Walk reports every stored object of every tenant once, in
// key order, expired ones included, across pages; not tombstones, public
// index markers, usage objects or objects this package did not write;
// and stops at fn's error.
func TestWalk(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := serverOptions(t)
	opts.Now = func() time.Time { return now }
	s := openTest(t, opts)
	ctx := t.Context()
	defer func(p int32) { walkPage = p }(walkPage)
	walkPage = 3

	var want []string
	// Look-alike tenants: "t1" must not swallow "t1-x" or "t10".
	for _, tenant := range []string{"t1", "t1-x", "t10"} {
		for i := range 4 {
			k := store.MustKey(tenant, "report", fmt.Sprintf("p/%02d", i))
			exp := now.Add(time.Hour)
			if i == 1 {
				exp = now.Add(-time.Second) // expired, not swept: walked
			}
			if _, _, err := s.Put(ctx, sweepObject(k, "body "+k.String(), now.Add(-time.Hour), exp, i == 2), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
			want = append(want, k.String())
		}
		k := store.MustKey(tenant, "snapshot", "gone")
		if _, _, err := s.Put(ctx, sweepObject(k, "x", now, time.Time{}, true), store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, k, store.Cond{}); err != nil { // a tombstone
			t.Fatal(err)
		}
	}
	foreign := s.d.base + "t1/report!/foreign!"
	if _, err := s.d.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.d.bucket), Key: aws.String(foreign), Body: strings.NewReader("not a record"),
	}); err != nil {
		t.Fatal(err)
	}

	var got []string
	metas := map[string]store.Meta{}
	if err := s.Walk(ctx, func(m *store.Meta) error {
		got = append(got, m.Key.String())
		metas[m.Key.String()] = *m
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Walk reported\n%v\nwant\n%v", got, want)
	}
	m := metas["report://t1-x/p/00"]
	if body := "body report://t1-x/p/00"; m.SHA256 != store.Sum([]byte(body)) || m.Size != int64(len(body)) || m.MIMEType != "text/plain" {
		t.Errorf("Walk's metadata of report://t1-x/p/00 = %+v", m)
	}
	if m := metas["report://t10/p/02"]; m.Visibility != store.Public {
		t.Errorf("report://t10/p/02 is public, Walk says %v", m.Visibility)
	}

	stop := errors.New("stop")
	n := 0
	if err := s.Walk(ctx, func(*store.Meta) error {
		if n++; n == 5 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 5 {
		t.Errorf("Walk with fn failing at the 5th = %v after %d calls", err, n)
	}
}

// TestWalkEmptyAndClosed: an empty prefix walks nothing; a closed store
// refuses.
func TestWalkEmptyAndClosed(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	if err := s.Walk(ctx, func(m *store.Meta) error { return fmt.Errorf("reported %s", m.Key) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Walk(ctx, func(*store.Meta) error { return nil }); err == nil {
		t.Fatal("Walk of a closed store succeeded")
	}
}
