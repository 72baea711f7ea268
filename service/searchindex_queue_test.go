package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/bleveindex"
	"github.com/resourced/resourced/index/memindex"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
)

// TestSaveThenSearchFindsIt: the answer of a save, a replace or a delete
// comes before its index update (the background indexer), yet the
// caller's next search sees it: many savers at once on the bleve index,
// each searching for its own word right after its answer.
func TestSaveThenSearchFindsIt(t *testing.T) {
	d, err := bleveindex.Open(filepath.Join(t.TempDir(), "index"))
	if err != nil {
		t.Fatal(err)
	}
	x := index.New(d, index.Options{Timeout: time.Minute})
	t.Cleanup(func() { x.Close() })
	svc, err := New(Options{Store: memstore.New(memstore.Options{}), Index: x, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	search := func(word string) ([]string, error) {
		r, f := svc.SearchResources(ctx, alice, &toolapi.SearchResourcesArgs{Query: word})
		if f != nil {
			return nil, f
		}
		var out []string
		for _, h := range r.Value.Hits {
			out = append(out, h.URI)
		}
		return out, nil
	}
	const savers, rounds = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, savers*rounds*3)
	for g := range savers {
		wg.Go(func() {
			for i := range rounds {
				path := fmt.Sprintf("s%d-%d", g, i)
				uri := "report://alice/" + path
				first, second := fmt.Sprintf("alpha%dx%d", g, i), fmt.Sprintf("beta%dx%d", g, i)
				if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text("about " + first)}); f != nil {
					errs <- f
					return
				}
				if got, err := search(first); err != nil || !slices.Equal(got, []string{uri}) {
					errs <- fmt.Errorf("right after saving %s, a search for %s = %v, %v", uri, first, got, err)
				}
				if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: text("about " + second), Overwrite: true}); f != nil {
					errs <- f
					return
				}
				if got, err := search(first); err != nil || len(got) != 0 {
					errs <- fmt.Errorf("right after replacing %s, a search for its old word %s = %v, %v", uri, first, got, err)
				}
				if got, err := search(second); err != nil || !slices.Equal(got, []string{uri}) {
					errs <- fmt.Errorf("right after replacing %s, a search for %s = %v, %v", uri, second, got, err)
				}
				if i%2 == 1 {
					if _, f := svc.Delete(ctx, alice, &toolapi.DeleteArgs{URI: uri}); f != nil {
						errs <- f
						return
					}
					if got, err := search(second); err != nil || len(got) != 0 {
						errs <- fmt.Errorf("right after deleting %s, a search for %s = %v, %v", uri, second, got, err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := svc.WaitIndexed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := x.Count(ctx, alice); err != nil || n != savers*rounds/2 {
		t.Errorf("indexed = %d, %v; want %d", n, err, savers*rounds/2)
	}
	if n := svc.IndexFailures(); n != 0 {
		t.Errorf("IndexFailures = %d", n)
	}
}

// gatedDriver is a memindex whose writes wait for open; entered counts
// the writes that began.
type gatedDriver struct {
	*memindex.Driver
	open    chan struct{}
	entered atomic.Int64
}

func (g *gatedDriver) Put(ctx context.Context, doc *index.Document) error {
	g.entered.Add(1)
	<-g.open
	return g.Driver.Put(ctx, doc)
}

// TestIndexQueueIsBounded: with the index stalled, saves are answered
// until maxOwed updates are queued (and one batch is in flight); then a
// save waits for the indexer (back-pressure) instead of growing the
// queue, and goes on once the index does.
func TestIndexQueueIsBounded(t *testing.T) {
	g := &gatedDriver{Driver: memindex.New(), open: make(chan struct{})}
	x := index.New(g, index.Options{})
	t.Cleanup(func() { x.Close() })
	svc, err := New(Options{Store: memstore.New(memstore.Options{}), Index: x, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	svc.idx.maxOwed = 3
	ctx := context.Background()
	save := func(i int) {
		if _, f := svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: fmt.Sprint("r", i), MIMEType: "text/plain", Text: text("bounded words")}); f != nil {
			t.Error(f)
		}
	}
	save(0) // taken by the indexer, which stalls writing its batch
	deadline := time.Now().Add(time.Minute)
	for g.entered.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the indexer did not write the first save")
		}
		time.Sleep(time.Millisecond)
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	for i := 1; i <= 6; i++ {
		wg.Go(func() { save(i); done.Add(1) })
	}
	for done.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d saves answered with room for 3 in the queue", done.Load())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a save past the bound would be answered by now
	svc.idx.qmu.Lock()
	queued := len(svc.idx.owed)
	svc.idx.qmu.Unlock()
	if n := done.Load(); n != 3 || queued != 3 {
		t.Errorf("with the index stalled: %d saves answered, %d queued; want 3 and 3 (the bound)", n, queued)
	}
	close(g.open)
	wg.Wait()
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "bounded"}); len(got) != 7 {
		t.Errorf("after the index went on, the search found %v, want all 7", got)
	}
}

// failingBatcher is a memindex whose Apply always fails: the indexer
// must then apply the batch key by key.
type failingBatcher struct{ *memindex.Driver }

func (failingBatcher) Apply(context.Context, []*index.Document, []index.Ref) error {
	return errors.New("batch refused")
}

// TestFailedBatchIsAppliedKeyByKey: a batch the index refuses is applied
// again key by key, so the saves are found and nothing is counted as
// failed when each key's own update succeeds.
func TestFailedBatchIsAppliedKeyByKey(t *testing.T) {
	x := index.New(failingBatcher{memindex.New()}, index.Options{})
	t.Cleanup(func() { x.Close() })
	svc, err := New(Options{Store: memstore.New(memstore.Options{}), Index: x, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, f := svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: fmt.Sprint("k", i), MIMEType: "text/plain", Text: text("keyed words")}); f != nil {
			t.Fatal(f)
		}
	}
	if got := searchURIs(t, svc, alice, toolapi.SearchResourcesArgs{Query: "keyed"}); len(got) != 5 {
		t.Errorf("search after a refused batch = %v, want 5 hits", got)
	}
	if n := svc.IndexFailures(); n != 0 {
		t.Errorf("IndexFailures = %d, want 0", n)
	}
}

// TestSearchBehindTheIndexIsUnavailable: a search whose wait for the
// updates queued before it runs past the search's time limit is
// unavailable, not a page without the caller's saves.
func TestSearchBehindTheIndexIsUnavailable(t *testing.T) {
	g := &gatedDriver{Driver: memindex.New(), open: make(chan struct{})}
	x := index.New(g, index.Options{Timeout: 10 * time.Millisecond})
	t.Cleanup(func() { x.Close() })
	t.Cleanup(func() { close(g.open) })
	svc, err := New(Options{Store: memstore.New(memstore.Options{}), Index: x, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, f := svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: "stuck", MIMEType: "text/plain", Text: text("stuck words")}); f != nil {
		t.Fatal(f)
	}
	_, f := svc.SearchResources(context.Background(), alice, &toolapi.SearchResourcesArgs{Query: "stuck"})
	if f == nil || f.ErrorKind != KindUnavailable || !strings.Contains(f.Message, "behind") {
		t.Errorf("a search while the index is stalled = %v, want unavailable saying the index is behind", f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, f := svc.SearchResources(ctx, alice, &toolapi.SearchResourcesArgs{Query: "stuck"}); f == nil {
		t.Error("a canceled search while the index is stalled succeeded")
	}
}

// TestCloseWritesWhatIsQueued: closing the index (a server that stops)
// first writes the updates queued behind the batch being written.
func TestCloseWritesWhatIsQueued(t *testing.T) {
	g := &gatedDriver{Driver: memindex.New(), open: make(chan struct{})}
	x := index.New(g, index.Options{})
	closing := make(chan struct{})
	x.BeforeClose(func() { close(closing) }) // runs before the service's
	svc, err := New(Options{Store: memstore.New(memstore.Options{}), Index: x, Schemes: []Scheme{
		{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	save := func(i int) {
		t.Helper()
		if _, f := svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: fmt.Sprint("c", i), MIMEType: "text/plain", Text: text("closing words")}); f != nil {
			t.Fatal(f)
		}
	}
	save(0)
	deadline := time.Now().Add(time.Minute)
	for g.entered.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the indexer did not write the first save")
		}
		time.Sleep(time.Millisecond)
	}
	save(1)
	save(2) // queued behind the stalled batch
	closed := make(chan error, 1)
	go func() { closed <- x.Close() }()
	<-closing
	close(g.open)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n, err := g.Driver.Count(context.Background(), alice); err != nil || n != 3 {
		t.Errorf("indexed when Close returned = %d, %v; want 3", n, err)
	}
	if n := svc.IndexFailures(); n != 0 {
		t.Errorf("IndexFailures = %d, want 0", n)
	}
}

// slowDriver is a driver whose writes take a while, as a remote
// database's do under load.
type slowDriver struct{ index.Driver }

func (d slowDriver) Put(ctx context.Context, doc *index.Document) error {
	time.Sleep(100 * time.Millisecond)
	return d.Driver.Put(ctx, doc)
}

// TestSharedIndexSaveWaitsForItsUpdate: with an index other instances
// search (PostgreSQL), a save is answered only once its update is in the
// index, so a search through another instance, which cannot wait for
// this one's queue, finds it at once.
func TestSharedIndexSaveWaitsForItsUpdate(t *testing.T) {
	st := memstore.New(memstore.Options{})
	x := index.New(slowDriver{memindex.New()}, index.Options{Shared: true})
	t.Cleanup(func() { x.Close() })
	schemes := []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20}}
	var svcs [2]*Service
	for i := range svcs {
		svc, err := New(Options{Store: st, Index: x, Schemes: schemes})
		if err != nil {
			t.Fatal(err)
		}
		svcs[i] = svc
	}
	ctx := context.Background()
	for i := range 5 {
		word := fmt.Sprintf("sharedword%d", i)
		if _, f := svcs[1].SaveReport(ctx, alice, &toolapi.ReportArgs{Path: word, MIMEType: "text/plain", Text: sp(word)}); f != nil {
			t.Fatal(f)
		}
		if got := searchURIs(t, svcs[0], alice, toolapi.SearchResourcesArgs{Query: word}); len(got) != 1 {
			t.Fatalf("a save through one instance, searched through the other at once = %v, want it", got)
		}
	}
}
