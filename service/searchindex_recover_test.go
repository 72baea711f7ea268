package service

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
)

var recoverSchemes = []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20}}

// TestIndexRecoversOwedUpdates: a process killed between a store write
// and its index update (the pending record holds the key, the index does
// not follow) leaves a save and a delete the index does not know; the
// next service brings both in line when it starts, with no reindex, and
// owes nothing after. Saves through the service owe nothing once answered.
func TestIndexRecoversOwedUpdates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index-pending.db")
	st := memstore.New(memstore.Options{})
	d := memindex.New() // the index's disk: it outlives a process
	p1, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x1 := index.New(d, index.Options{Pending: p1})
	svc1, err := New(Options{Store: st, Index: x1, Schemes: recoverSchemes})
	if err != nil {
		t.Fatal(err)
	}
	if _, f := svc1.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "gone", MIMEType: "text/plain", Text: text("goneword")}); f != nil {
		t.Fatal(f)
	}
	if _, f := svc1.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "kept", MIMEType: "text/plain", Text: text("keptword")}); f != nil {
		t.Fatal(f)
	}
	// The writes a kill cuts short: begun, committed, never indexed.
	saved, gone := store.MustKey(alice, "report", "new"), store.MustKey(alice, "report", "gone")
	for _, k := range []store.Key{saved, gone} {
		if err := x1.Begin(refOf(k)); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte("newword, committed before the kill")
	now := time.Now()
	if _, _, err := st.Put(ctx, &store.Object{Meta: store.Meta{Key: saved, MIMEType: "text/plain", Created: now, Modified: now}, Body: body}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, gone, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := p1.Close(); err != nil { // the kill: the driver's data stays, nothing ended
		t.Fatal(err)
	}

	p2, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x2 := index.New(d, index.Options{Pending: p2})
	svc2, err := New(Options{Store: st, Index: x2, Schemes: recoverSchemes})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{"newword": {"report://alice/new"}, "goneword": nil, "keptword": {"report://alice/kept"}} {
		if got := searchURIs(t, svc2, alice, toolapi.SearchResourcesArgs{Query: q}); !slices.Equal(got, want) {
			t.Errorf("after the restart, searching %s = %v, want %v", q, got, want)
		}
	}
	if n, _ := x2.Count(ctx, alice); n != 2 {
		t.Errorf("the index holds %d of alice's entries after the restart, want 2", n)
	}
	if err := x2.Close(); err != nil {
		t.Fatal(err)
	}
	p3, err := index.OpenPending(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Close()
	if got, _ := p3.Owed(); len(got) != 0 {
		t.Errorf("owed after the recovery and a clean stop: %v", got)
	}
}

// TestIndexPendingRecordRefusesWrites: a write whose pending record
// cannot be written is refused before the store is touched.
func TestIndexPendingRecordRefusesWrites(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	p, err := index.OpenPending(filepath.Join(t.TempDir(), "index-pending.db"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x := index.New(memindex.New(), index.Options{Pending: p})
	svc, err := New(Options{Store: st, Index: x, Schemes: recoverSchemes})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "a", MIMEType: "text/plain", Text: text("x")})
	if f == nil || f.ErrorKind != KindUnavailable {
		t.Fatalf("save with a closed pending record = %+v, want unavailable", f)
	}
	if _, err := st.Stat(ctx, store.MustKey(alice, "report", "a")); !IsNotFound(err) {
		t.Fatalf("the refused save reached the store: %v", err)
	}
}
