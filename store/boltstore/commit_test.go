package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
)

func openTestDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := OpenDriver(filepath.Join(t.TempDir(), "resourced.db"), Options{})
	if err != nil {
		t.Fatalf("OpenDriver = %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// blockWriter queues an operation whose check waits until release is
// called, and returns once the writer runs it: what is queued next lands
// in one batch, the one after it.
func blockWriter(t *testing.T, c *committer) (release func()) {
	t.Helper()
	running, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.do(func(tx *bolt.Tx) (func() error, error) {
			close(running)
			<-gate
			return func() error { return nil }, nil
		})
	}()
	<-running
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("blocking operation = %v", err)
		}
	}
}

// waitQueued waits until n operations are queued behind the running batch.
func waitQueued(t *testing.T, c *committer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d operations queued, want %d", got, n)
		}
	}
}

// inOneBatch runs the functions in this order in one batch of d's writer
// and returns their errors.
func inOneBatch(t *testing.T, d *Driver, fns ...func() error) []error {
	t.Helper()
	release := blockWriter(t, d.writer)
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
		waitQueued(t, d.writer, i+1) // keeps the order
	}
	release()
	wg.Wait()
	return errs
}

func testObject(k store.Key, body string) *store.Object {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &store.Object{
		Meta: store.Meta{
			Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
			Created: now, Modified: now, Listed: true, Visibility: store.Public,
		},
		Body: []byte(body),
	}
}

func (d *Driver) testPut(k store.Key, body string, cond store.Cond) error {
	_, _, err := d.Put(context.Background(), testObject(k, body), cond, time.Now)
	return err
}

// TestGroupCommitRefusalAlone: in one batch, each write's precondition
// and quota see the earlier writes of the batch, and a refused write fails
// alone.
func TestGroupCommitRefusalAlone(t *testing.T) {
	d := openTestDriver(t)
	a, b, c := store.MustKey("t1", "report", "a"), store.MustKey("t1", "report", "b"), store.MustKey("t1", "report", "c")
	quota := store.Cond{Quota: store.Quota{Bytes: 10}}
	errs := inOneBatch(t, d,
		func() error { return d.testPut(a, "12345", store.Cond{Kind: store.IfNone}) },
		func() error { return d.testPut(a, "xx", store.Cond{Kind: store.IfNone}) }, // a exists now
		func() error { return d.testPut(b, "12345", quota) },                       // 10 bytes: fits
		func() error { return d.testPut(c, "1", quota) },                           // 11: over
		func() error { return d.Delete(context.Background(), b, store.Cond{}, time.Now) },
		func() error { return d.testPut(c, "1", quota) }, // 6: fits again
	)
	want := []error{nil, store.ErrPreconditionFailed, nil, store.ErrQuotaExceeded, nil, nil}
	for i := range want {
		if want[i] == nil && errs[i] != nil || want[i] != nil && !errors.Is(errs[i], want[i]) {
			t.Errorf("write %d = %v, want %v", i, errs[i], want[i])
		}
	}
	if m, err := d.Stat(context.Background(), a); err != nil || m.Size != 5 {
		t.Errorf("Stat(a) = %+v, %v; want the first write's 5 bytes", m, err)
	}
	if _, err := d.Stat(context.Background(), b); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat(b) = %v, want %v", err, store.ErrNotFound)
	}
	if u, err := d.Usage(context.Background(), "t1"); err != nil || u != (store.Usage{Bytes: 6, Objects: 2}) {
		t.Errorf("Usage = %+v, %v; want 6 bytes in 2 objects", u, err)
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestGroupCommitRefusalWritesNothing: a Put refused by its precondition
// in a new tenant and scheme leaves no empty buckets behind, while the
// other writes of its batch commit.
func TestGroupCommitRefusalWritesNothing(t *testing.T) {
	d := openTestDriver(t)
	gone := store.MustKey("t2", "notes", "x")
	errs := inOneBatch(t, d,
		func() error {
			return d.testPut(gone, "x", store.Cond{Kind: store.IfMatch, SHA256: store.Sum([]byte("nope"))})
		},
		func() error { return d.testPut(store.MustKey("t1", "report", "a"), "a", store.Cond{}) },
	)
	if !errors.Is(errs[0], store.ErrPreconditionFailed) || errs[1] != nil {
		t.Fatalf("writes = %v, want [%v <nil>]", errs, store.ErrPreconditionFailed)
	}
	err := d.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(rootBucket)).Bucket([]byte("t2")) != nil {
			t.Errorf("tenant bucket t2 exists after a refused write")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitApplyFails: a write that fails after writing (or panics)
// is rolled back alone; the others of its batch commit.
func TestGroupCommitApplyFails(t *testing.T) {
	d := openTestDriver(t)
	boom := errors.New("boom")
	halfWrite := func(fail func() error) func() error {
		return func() error {
			return d.writer.do(func(tx *bolt.Tx) (func() error, error) {
				return func() error {
					sb, err := tx.Bucket([]byte(rootBucket)).CreateBucketIfNotExists([]byte("t1"))
					if err != nil {
						return err
					}
					if err := sb.Put([]byte("half"), []byte("junk")); err != nil {
						return err
					}
					return fail()
				}, nil
			})
		}
	}
	a, b := store.MustKey("t1", "report", "a"), store.MustKey("t1", "report", "b")
	errs := inOneBatch(t, d,
		func() error { return d.testPut(a, "a", store.Cond{}) },
		halfWrite(func() error { return boom }),
		halfWrite(func() error { panic("kaboom") }),
		func() error { return d.testPut(b, "b", store.Cond{Kind: store.IfNone}) },
	)
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] == nil || errs[3] != nil {
		t.Fatalf("writes = %v, want [<nil> boom panic <nil>]", errs)
	}
	for _, k := range []store.Key{a, b} {
		if _, err := d.Stat(context.Background(), k); err != nil {
			t.Errorf("Stat(%s) = %v", k, err)
		}
	}
	err := d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte(rootBucket)).Bucket([]byte("t1")).Get([]byte("half")); v != nil {
			t.Errorf("the failed writes left %q", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestGroupCommitCommitFails: a failing commit (as a failing fsync makes
// it) fails every write of the batch, the refused ones too; the next batch
// works.
func TestGroupCommitCommitFails(t *testing.T) {
	d := openTestDriver(t)
	a := store.MustKey("t1", "report", "a")
	fsync := errors.New("fsync: input/output error")
	commits := 0 // the writer's alone
	d.writer.commit = func(tx *bolt.Tx) error {
		if commits++; commits == 1 {
			return tx.Commit() // inOneBatch's blocking write
		}
		_ = tx.Rollback()
		return fsync
	}
	errs := inOneBatch(t, d,
		func() error { return d.testPut(a, "a", store.Cond{Kind: store.IfNone}) },
		func() error { return d.testPut(a, "a", store.Cond{Kind: store.IfNone}) }, // refused in the batch
		func() error {
			return d.Delete(context.Background(), store.MustKey("t1", "report", "zz"), store.Cond{}, time.Now)
		},
	)
	for i, err := range errs {
		if !errors.Is(err, fsync) {
			t.Errorf("write %d = %v, want %v", i, err, fsync)
		}
	}
	if _, err := d.Stat(context.Background(), a); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat after the failed commit = %v, want %v", err, store.ErrNotFound)
	}
	d.writer.commit = (*bolt.Tx).Commit
	if err := d.testPut(a, "a", store.Cond{Kind: store.IfNone}); err != nil {
		t.Errorf("Put after the failed commit = %v", err)
	}
}

// TestGroupCommitAnswersAfterCommit: no write returns before its commit
// has returned.
func TestGroupCommitAnswersAfterCommit(t *testing.T) {
	d := openTestDriver(t)
	entered, gate := make(chan struct{}), make(chan struct{})
	d.writer.commit = func(tx *bolt.Tx) error {
		close(entered)
		<-gate
		return tx.Commit()
	}
	done := make(chan error, 1)
	go func() { done <- d.testPut(store.MustKey("t1", "report", "a"), "a", store.Cond{}) }()
	<-entered
	select {
	case err := <-done:
		t.Fatalf("Put returned %v before its commit did", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Put = %v", err)
	}
}

// TestGroupCommitClose: Close commits what was queued before it; writes
// after it fail.
func TestGroupCommitClose(t *testing.T) {
	d := openTestDriver(t)
	release := blockWriter(t, d.writer)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = d.testPut(store.MustKey("t1", "report", string(rune('a'+i))), "x", store.Cond{}) })
	}
	waitQueued(t, d.writer, len(errs))
	closed := make(chan struct{})
	go func() {
		d.writer.close()
		close(closed)
	}()
	release()
	wg.Wait()
	<-closed
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d queued before Close = %v", i, err)
		}
	}
	if err := d.testPut(store.MustKey("t1", "report", "late"), "x", store.Cond{}); err == nil {
		t.Errorf("Put after Close = nil, want an error")
	}
	if err := d.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket([]byte(rootBucket)).Bucket([]byte("t1")).Bucket([]byte("report")).Stats().KeyN; n != len(errs) {
			t.Errorf("%d objects stored, want %d", n, len(errs))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
