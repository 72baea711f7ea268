package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// This file holds the usage objects behind quotas and Usage, and the
// reconciler (see the package doc, "Quotas").

// usageDir is the key segment, below the prefix, of the usage objects.
// '!' is not a tenant character, so no tenant's objects live below it, and
// "!usage/" sorts before sweepStart, so DeleteExpired never lists them.
const usageDir = "!usage/"

func (s *Driver) usageKey(tenant string) string { return s.base + usageDir + tenant }

// staleReservation is the age after which the reconciler drops a
// reservation: its writer has crashed, since a live writer abandons a
// reservation older than half of it before writing (write.put).
const staleReservation = 15 * time.Minute

// maxUsageAttempts bounds the conditional writes of one batch of usage
// updates when other processes keep changing the usage object.
const maxUsageAttempts = 64

// doneRing is how many committed reservation ids a usage object
// remembers, so that a commit whose request the SDK retried is not applied
// twice.
const doneRing = 32

// delta is a change of usage.
type delta struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
}

func (d delta) positive() delta { return delta{max(d.Bytes, 0), max(d.Objects, 0)} }

func (d delta) add(e delta) delta { return delta{d.Bytes + e.Bytes, d.Objects + e.Objects} }

// reservation is a write in progress: its signed delta, made before the
// object write and committed or released after it.
type reservation struct {
	ID string `json:"id"`
	delta
	At int64 `json:"at"` // Unix milliseconds, the writer's clock
	// Straddle: a reconcile's listing ran while this write was in
	// progress, so it may or may not have seen the object write; the
	// commit then applies only the positive part.
	Straddle bool `json:"straddle,omitempty"`
	// Counted: a reconcile's listing saw the object this write wrote (its
	// write id), so its delta is in Committed already: it counts nothing
	// more, and its commit only removes it. (A version that does not know
	// the flag drops it and counts the reservation: an over-count.)
	Counted bool `json:"counted,omitempty"`
}

// grown is a commit made while a reconcile listed: its write id and the
// positive part of its delta, which Grow includes.
type grown struct {
	ID string `json:"id"`
	delta
}

// maxGrown bounds the commits an epoch names one by one (each about 50
// bytes of the usage object); past it, commits only add to Grow.
const maxGrown = 128

// usageDoc is the content of a usage object.
type usageDoc struct {
	V int `json:"v"`
	// Committed is the usage of completed writes (or a reconciler's count).
	Committed delta `json:"committed"`
	// Pending are the writes in progress.
	Pending []reservation `json:"pending,omitempty"`
	// Epoch is the id of the reconcile whose listing is running; Grow sums
	// the positive parts of the commits since it began.
	Epoch   string `json:"epoch,omitempty"`
	EpochAt int64  `json:"epochAt,omitempty"` // Unix ms, the reconciler's clock
	Grow    delta  `json:"grow"`
	// Grown names the first maxGrown commits of the epoch, so that the
	// reconcile can take out of Grow those whose object its listing saw
	// (they are in the count). A version that does not know it leaves
	// them in Grow: an over-count.
	Grown []grown `json:"grown,omitempty"`
	// Counting: the object was created by a reconcile that has not
	// finished its first count; Committed is not yet known.
	Counting bool `json:"counting,omitempty"`
	// Last is the id of the last reconcile that finished; Done the ids of
	// the last commits.
	Last string   `json:"last,omitempty"`
	Done []string `json:"done,omitempty"`
}

func (d *usageDoc) clone() *usageDoc {
	c := *d
	c.Pending = append([]reservation(nil), d.Pending...)
	c.Done = append([]string(nil), d.Done...)
	c.Grown = append([]grown(nil), d.Grown...)
	return &c
}

func (d *usageDoc) find(id string) int {
	for i := range d.Pending {
		if d.Pending[i].ID == id {
			return i
		}
	}
	return -1
}

// total is the usage the object vouches for: committed plus the positive
// part of every pending write except the one with id skip. It is never
// below what is stored.
func (d *usageDoc) total(skip string) store.Usage {
	t := d.Committed
	for _, p := range d.Pending {
		if p.ID != skip && !p.Counted {
			t = t.add(p.positive())
		}
	}
	return store.Usage{Bytes: t.Bytes, Objects: t.Objects}
}

var (
	// errNoUsage: the tenant has no usage object yet; a reconcile makes one.
	errNoUsage = errors.New("no usage object")
	// errCounting: the usage object's first count is not finished.
	errCounting = errors.New("the usage object is being counted")
	// errCountingStale: nor has its count made progress for countTakeover.
	errCountingStale = errors.New("the usage object's first count was abandoned")
	// errSuperseded: another reconcile began while this one listed.
	errSuperseded = errors.New("another reconcile of the tenant began meanwhile")
	// errCounted: a first count that is not needed any more.
	errCounted = errors.New("the usage object has been counted")
)

// usageOp is one update of a usage object, applied in a batch.
type usageOp struct {
	fn     func(*usageDoc) error
	create bool // may create a missing usage object
	async  bool // nobody waits: counted in usageState.async
	err    error
	done   chan struct{}
}

// usageEntry is the per-tenant combiner: updates queue while one
// conditional PUT of the usage object is in flight and go out together
// in the next, from one goroutine, which also caches the object and its
// ETag so that an update costs one PUT when no other process wrote.
type usageEntry struct {
	mu      sync.Mutex
	queue   []*usageOp
	running bool
	// owned by the running goroutine:
	loaded bool      // doc and etag are what the last request saw
	fresh  bool      // read in this batch
	doc    *usageDoc // nil: there is no usage object
	etag   string
}

// usageState is the Driver's per-tenant combiners.
type usageState struct {
	mu      sync.Mutex
	entries map[string]*usageEntry
	puts    atomic.Int64 // usage PUTs sent, for tests
	// async counts the updates queued without a waiter (commits that do
	// not change the total); Close waits for them.
	async sync.WaitGroup
	// counting: the reconciles reconcileShared runs, by tenant.
	counting map[string]chan struct{}
}

// maxUsageEntries bounds the combiners kept; an idle one is dropped when
// there are more.
const maxUsageEntries = 4096

func (s *Driver) usageEntry(tenant string) *usageEntry {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.entries == nil {
		u.entries = make(map[string]*usageEntry)
	}
	e := u.entries[tenant]
	if e == nil {
		if len(u.entries) >= maxUsageEntries {
			for t, old := range u.entries {
				old.mu.Lock()
				idle := !old.running && len(old.queue) == 0
				old.mu.Unlock()
				if idle {
					delete(u.entries, t)
					break
				}
			}
		}
		e = &usageEntry{}
		u.entries[tenant] = e
	}
	return e
}

// updateUsage applies fn to the tenant's usage object atomically (a PUT
// bound by If-Match to the ETag of what fn saw, retried on 412). fn must be
// idempotent: when the SDK retried a PUT that then failed its condition,
// the earlier attempt may have landed, and fn is applied again to what it
// left. An error of fn leaves the object as it was for this update.
func (s *Driver) updateUsage(ctx context.Context, tenant string, create bool, fn func(*usageDoc) error) error {
	op := &usageOp{fn: fn, create: create, done: make(chan struct{})}
	s.queueUsage(tenant, op)
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// updateUsageLater queues fn like updateUsage but does not wait for it:
// for updates that change nothing a reader of the usage sees (a commit of
// a write that only adds, see intent.settle). Updates of one tenant by one
// process still apply in the order they were queued, and Close waits for
// them.
func (s *Driver) updateUsageLater(tenant string, fn func(*usageDoc) error) {
	s.usage.async.Add(1)
	s.queueUsage(tenant, &usageOp{fn: fn, async: true, done: make(chan struct{})})
}

func (s *Driver) queueUsage(tenant string, op *usageOp) {
	e := s.usageEntry(tenant)
	e.mu.Lock()
	e.queue = append(e.queue, op)
	if !e.running {
		e.running = true
		go s.runUsage(tenant, e)
	}
	e.mu.Unlock()
}

// flushUsage waits, at most for d, for the updates queued without a
// waiter; it reports whether they all finished.
func (s *Driver) flushUsage(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.usage.async.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// runUsage sends the queued updates of e, batch after batch, until the
// queue is empty. Its calls are bounded by the call deadline, not by a
// caller's context: an update a caller stopped waiting for still lands or
// fails as a whole.
func (s *Driver) runUsage(tenant string, e *usageEntry) {
	for {
		e.mu.Lock()
		batch := e.queue
		e.queue = nil
		if len(batch) == 0 {
			e.running = false
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		s.applyUsage(context.Background(), tenant, e, batch)
		for _, op := range batch {
			close(op.done)
			if op.async {
				s.usage.async.Done()
			}
		}
	}
}

func (s *Driver) applyUsage(ctx context.Context, tenant string, e *usageEntry, batch []*usageOp) {
	key := s.usageKey(tenant)
	failAll := func(err error) {
		for _, op := range batch {
			if op.err == nil {
				op.err = err
			}
		}
	}
	for attempt := 1; ; attempt++ {
		if !e.loaded {
			doc, etag, err := s.readUsage(ctx, key)
			if err != nil {
				failAll(fmt.Errorf("reading the usage object of tenant %s: %w", tenant, err))
				return
			}
			e.doc, e.etag, e.loaded, e.fresh = doc, etag, true, true
		}
		next := &usageDoc{V: 1}
		if e.doc != nil {
			next = e.doc.clone()
		}
		any := false
		refused := false
		for _, op := range batch {
			op.err = nil
			if e.doc == nil && !op.create {
				op.err, refused = errNoUsage, true
				continue
			}
			trial := next.clone()
			if err := op.fn(trial); err != nil {
				op.err, refused = err, true
				continue
			}
			next, any = trial, true
		}
		if refused && !e.fresh {
			// Refused by what was cached (no usage object, over the quota,
			// being counted): another process may have changed it since.
			// Look again before saying so.
			e.loaded = false
			continue
		}
		e.fresh = false
		if !any {
			return
		}
		body, err := json.Marshal(next)
		if err != nil {
			failAll(err)
			return
		}
		if e.doc != nil {
			if old, _ := json.Marshal(e.doc); bytes.Equal(old, body) {
				return // nothing changed (an update that had landed already)
			}
		}
		pc := putCond{ifNoneMatch: true}
		if e.doc != nil {
			pc = putCond{ifMatch: e.etag}
		}
		etag, err := s.putUsage(ctx, key, body, pc)
		if err == nil {
			e.doc, e.etag = next, etag
			e.loaded = etag != "" // without an ETag, read it again next time
			return
		}
		e.loaded = false
		if !isConflict(err) && !isTransientLayout(err) {
			failAll(fmt.Errorf("writing the usage object of tenant %s: %w", tenant, err))
			return
		}
		if attempt == maxUsageAttempts {
			failAll(fmt.Errorf("the usage object of tenant %s changed during every attempt", tenant))
			return
		}
		// Another process wrote it: read it again, after a short random
		// pause so that contending processes spread out.
		time.Sleep(time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond))))
	}
}

// readUsage returns the usage object at key and its ETag; nil when there
// is none.
func (s *Driver) readUsage(ctx context.Context, key string) (*usageDoc, string, error) {
	for range maxAttempts {
		cctx, cancel := s.call(ctx)
		out, err := s.client.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}, callOptions)
		if err != nil {
			cancel()
			if isMissing(err) {
				return nil, "", nil
			}
			return nil, "", err
		}
		buf, err := readAll(out.Body, aws.ToInt64(out.ContentLength))
		out.Body.Close()
		cancel()
		if err != nil {
			return nil, "", err
		}
		etag := aws.ToString(out.ETag)
		if etag == "" {
			time.Sleep(etagRetryDelay) // see etagRetryDelay
			continue
		}
		var d usageDoc
		if err := json.Unmarshal(buf, &d); err != nil || d.V != 1 {
			return nil, "", fmt.Errorf("%w: usage object %s does not decode (remove it and run resourced reconcile)", errCorrupt, key)
		}
		return &d, etag, nil
	}
	return nil, "", errors.New("the server returned no ETag")
}

// putUsage writes a usage object under pc and returns its new ETag.
func (s *Driver) putUsage(ctx context.Context, key string, body []byte, pc putCond) (string, error) {
	sum := md5.Sum(body)
	if s.putter.resolve(ctx) { // fastput.go
		var sha []byte
		if !s.putter.tls {
			h := sha256.Sum256(body)
			sha = h[:]
		}
		hdr := fastPutHeader(base64.StdEncoding.EncodeToString(sum[:]), "application/json", nil, pc)
		cctx, cancel := s.call(ctx)
		defer cancel()
		s.usage.puts.Add(1)
		etag, _, err := s.putter.put(cctx, key, hdr, func() io.Reader { return bytes.NewReader(body) }, int64(len(body)), sha)
		return etag, err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		ContentLength: aws.Int64(int64(len(body))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String("application/json"),
	}
	if pc.ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if pc.ifMatch != "" {
		in.IfMatch = aws.String(pc.ifMatch)
	}
	in.Body = bytes.NewReader(body)
	cctx, cancel := s.call(ctx)
	defer cancel()
	s.usage.puts.Add(1)
	out, err := s.client.PutObject(cctx, in, callOptions)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// intent is the usage side of one write: the reservation it holds.
type intent struct {
	s      *Driver
	tenant string
	id     string
	quota  store.Quota
	held   *delta    // the delta reserved; nil: none
	at     time.Time // when it was reserved
	// maybeLanded: an object write failed in a way that does not prove
	// it did not land; a failed write then keeps its reservation (an
	// over-count, until the reconciler drops it).
	maybeLanded bool
}

// newIntent starts the usage side of a write of tenant under q. writeID
// is the write id the write stores in its record (or a fresh one for a
// write that stores none): the reservation is named by its first
// intentIDLen characters, so that a reconcile's listing can tell that the
// object it counts is this write's (see "Quotas").
func newIntent(s *Driver, tenant string, q store.Quota, writeID string) *intent {
	return &intent{s: s, tenant: tenant, id: intentID(writeID), quota: q}
}

// intentIDLen is the length of a reservation id: the first 64 bits of
// the write id.
const intentIDLen = 16

func intentID(writeID string) string { return writeID[:min(len(writeID), intentIDLen)] }

// counted is what the object whose header h is counts in usage: nothing
// for none or a tombstone.
func counted(h *head) delta {
	if h == nil || isTombstone(&h.rec.meta) {
		return delta{}
	}
	return delta{h.rec.meta.Size, 1}
}

// reserve records d as the write's reservation, checking the quota on
// the usage after it. It creates the tenant's usage object first if there
// is none, by a reconcile.
func (in *intent) reserve(ctx context.Context, d delta) error {
	if in.held != nil && *in.held == d {
		return nil
	}
	at := time.Now()
	q := in.quota
	fn := func(doc *usageDoc) error {
		if !q.IsZero() && doc.Counting {
			if time.Since(time.UnixMilli(doc.EpochAt)) > countTakeover {
				return errCountingStale
			}
			return errCounting
		}
		i := doc.find(in.id)
		if i >= 0 && doc.Pending[i].delta == d {
			return nil // landed already
		}
		cur := doc.total(in.id)
		if err := store.CheckQuota(store.Usage{Bytes: cur.Bytes + d.Bytes, Objects: cur.Objects + d.Objects}, q); err != nil {
			return err
		}
		r := reservation{ID: in.id, delta: d, At: at.UnixMilli()}
		if i >= 0 {
			doc.Pending[i] = r
		} else {
			doc.Pending = append(doc.Pending, r)
		}
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := in.s.updateUsage(ctx, in.tenant, false, fn)
		switch {
		case err == nil:
			in.held, in.at = &d, at
			return nil
		case errors.Is(err, store.ErrQuotaExceeded):
			return err
		case attempt == maxCountWaits:
			return fmt.Errorf("reserving usage: %w", err)
		case errors.Is(err, errNoUsage), errors.Is(err, errCountingStale):
			// No usage object yet, or its first count was abandoned (its
			// reconciler died): count, once per process at a time.
			err := in.s.reconcileShared(ctx, in.tenant)
			if errors.Is(err, errCounting) {
				err = in.s.reconcileWait(ctx, in.tenant)
			}
			if err != nil && !errors.Is(err, errSuperseded) && !errors.Is(err, errCounted) {
				return fmt.Errorf("reserving usage: %w", err)
			}
		case errors.Is(err, errCounting):
			// Another process is counting: wait for it (or for our own).
			if err := in.s.reconcileWait(ctx, in.tenant); err != nil {
				return fmt.Errorf("reserving usage: %w", err)
			}
		default:
			return fmt.Errorf("reserving usage: %w", err)
		}
	}
}

// countTakeover is how long a quota write waits for another process's
// first count of a tenant before it counts itself; maxCountWaits bounds
// its waits of countPoll.
const (
	countTakeover = 2 * time.Minute
	countPoll     = 25 * time.Millisecond
	maxCountWaits = int(countTakeover/countPoll) + 10
)

// reconcileShared runs one reconcile of tenant for every caller of this
// process that asks while it runs.
func (s *Driver) reconcileShared(ctx context.Context, tenant string) error {
	s.usage.mu.Lock()
	if s.usage.counting == nil {
		s.usage.counting = map[string]chan struct{}{}
	}
	ch, running := s.usage.counting[tenant]
	if !running {
		ch = make(chan struct{})
		s.usage.counting[tenant] = ch
	}
	s.usage.mu.Unlock()
	if running {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, _, err := s.reconcile(ctx, tenant, true)
	s.usage.mu.Lock()
	delete(s.usage.counting, tenant)
	s.usage.mu.Unlock()
	close(ch)
	return err
}

// reconcileWait waits for a reconcile of tenant this process runs, or
// else a moment.
func (s *Driver) reconcileWait(ctx context.Context, tenant string) error {
	s.usage.mu.Lock()
	ch := s.usage.counting[tenant]
	s.usage.mu.Unlock()
	if ch == nil {
		t := time.NewTimer(countPoll)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stale reports that the reservation is too old to write under: the
// reconciler may drop it.
func (in *intent) stale() bool {
	return in.held != nil && time.Since(in.at) > staleReservation/2
}

// settle ends the write: a stored write commits its reservation, a failed
// one releases it unless it may have landed. It runs whatever the
// caller's context, and a failure leaves an over-count, never an
// under-count, so it is not reported.
func (in *intent) settle(ctx context.Context, stored bool) {
	if in.held == nil {
		return
	}
	d, id := *in.held, in.id
	in.held = nil
	ctx = context.WithoutCancel(ctx)
	if !stored {
		if in.maybeLanded {
			return
		}
		_ = in.s.updateUsage(ctx, in.tenant, false, func(doc *usageDoc) error {
			if i := doc.find(id); i >= 0 {
				doc.Pending = append(doc.Pending[:i], doc.Pending[i+1:]...)
			}
			return nil
		})
		return
	}
	commit := func(doc *usageDoc) error {
		for _, done := range doc.Done {
			if done == id {
				return nil // landed already
			}
		}
		apply := d.positive() // dropped as stale: count it, to be safe
		if i := doc.find(id); i >= 0 {
			switch p := doc.Pending[i]; {
			case p.Counted:
				apply = delta{} // a reconcile counted the object
			case !p.Straddle:
				apply = d
			}
			doc.Pending = append(doc.Pending[:i], doc.Pending[i+1:]...)
		}
		doc.Committed = doc.Committed.add(apply)
		if g := apply.positive(); doc.Epoch != "" && g != (delta{}) {
			doc.Grow = doc.Grow.add(g)
			if len(doc.Grown) < maxGrown {
				doc.Grown = append(doc.Grown, grown{ID: id, delta: g})
			}
		}
		doc.Done = append(doc.Done, id)
		if len(doc.Done) > doneRing {
			doc.Done = doc.Done[len(doc.Done)-doneRing:]
		}
		return nil
	}
	if d.Bytes >= 0 && d.Objects >= 0 {
		// A commit of a write that only adds moves its delta from the
		// pending reservation, which counts its positive part, to
		// Committed: no reader sees a change, so the write need not wait
		// for it. It goes out with the next batch (often the next save's
		// reserve); a crash before it lands leaves the reservation, an
		// over-count.
		in.s.updateUsageLater(in.tenant, commit)
		return
	}
	_ = in.s.updateUsage(ctx, in.tenant, false, commit)
}

// Usage implements store.Driver: the usage object's committed usage plus
// the writes in progress. A tenant without a usage object (nothing written
// since this version, or nothing at all) is counted from a listing.
func (s *Driver) Usage(ctx context.Context, tenant string) (store.Usage, error) {
	if err := s.begin(ctx, "usage"); err != nil {
		return store.Usage{}, err
	}
	doc, _, err := s.readUsage(ctx, s.usageKey(tenant))
	if err != nil {
		return store.Usage{}, s.fail(ctx, "usage of tenant", tenant, err)
	}
	if doc != nil && !doc.Counting {
		return doc.total(""), nil
	}
	n, _, err := s.count(ctx, tenant, time.Time{})
	if err != nil {
		return store.Usage{}, s.fail(ctx, "usage of tenant", tenant, err)
	}
	u := store.Usage{Bytes: n.Bytes, Objects: n.Objects}
	if doc != nil {
		p := doc.total("")
		u.Bytes += p.Bytes - doc.Committed.Bytes
		u.Objects += p.Objects - doc.Committed.Objects
	}
	return u, nil
}

// count sums what the tenant's objects count in usage, from a listing and
// a header read per object: expired objects count, tombstones and objects
// this package did not write do not. With a non-zero since, seen holds
// the reservation ids (intentID) of the writes whose objects or tombstones
// it read, among those modified since then (at most maxSeen of them).
func (s *Driver) count(ctx context.Context, tenant string, since time.Time) (n delta, seen map[string]bool, err error) {
	if !since.IsZero() {
		seen = map[string]bool{}
	}
	var token *string
	for {
		out, err := s.listObjects(ctx, &s3.ListObjectsV2Input{
			Bucket:            aws.String(s.bucket),
			Prefix:            aws.String(s.tenantPrefix(tenant)),
			ContinuationToken: token,
		})
		if err != nil {
			return delta{}, nil, err
		}
		var keys []store.Key
		var recent []bool
		for _, o := range out.Contents {
			if k, ok := s.parseKey(tenant, aws.ToString(o.Key)); ok {
				keys = append(keys, k)
				recent = append(recent, o.LastModified == nil || !o.LastModified.Before(since))
			}
		}
		heads, err := s.readHeadsOpt(ctx, keys, true)
		if err != nil {
			return delta{}, nil, err
		}
		for i, h := range heads {
			n = n.add(counted(h))
			if seen != nil && h != nil && recent[i] && h.rec.writeID != "" && len(seen) < maxSeen {
				seen[intentID(h.rec.writeID)] = true
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return n, seen, nil
		}
		token = out.NextContinuationToken
	}
}

// maxSeen bounds the write ids one reconcile remembers (about 5 MiB);
// a write it does not remember is treated as unseen: an over-count.
const maxSeen = 1 << 17

// Reconcile recounts the usage of tenant from a listing and corrects its
// usage object (creating it if there is none); it returns the usage the
// object reported before (zero when there was none) and after. Writes
// running meanwhile are kept: see the package doc, "Quotas".
func (s *Driver) Reconcile(ctx context.Context, tenant string) (before, after store.Usage, err error) {
	if err := s.beginReconcile(ctx); err != nil {
		return store.Usage{}, store.Usage{}, err
	}
	if err := store.ValidTenant(tenant); err != nil {
		return store.Usage{}, store.Usage{}, fmt.Errorf("s3store: reconcile: %w", err)
	}
	before, after, err = s.reconcile(ctx, tenant, false)
	if err != nil {
		return before, after, s.fail(ctx, "reconcile tenant", tenant, err)
	}
	return before, after, nil
}

// reconcile is Reconcile. A first count (first) is not needed when the
// usage object has been counted, and waits (errCounting) for another
// process's first count unless that made no progress for countTakeover.
func (s *Driver) reconcile(ctx context.Context, tenant string, first bool) (before, after store.Usage, err error) {
	id := newWriteID()[:16]
	start := time.Now()
	// 1. Open an epoch: commits from now on add their growth to Grow.
	err = s.updateUsage(ctx, tenant, true, func(doc *usageDoc) error {
		if doc.Epoch == id {
			return nil
		}
		if first && doc.Last != "" && !doc.Counting {
			return errCounted
		}
		if first && doc.Counting && time.Since(time.UnixMilli(doc.EpochAt)) <= countTakeover {
			return errCounting
		}
		before = doc.total("")
		if doc.Committed == (delta{}) && len(doc.Pending) == 0 && doc.Epoch == "" && doc.Last == "" {
			doc.Counting = true // a new object: its count is not known yet
		}
		doc.Epoch, doc.EpochAt, doc.Grow, doc.Grown = id, start.UnixMilli(), delta{}, nil
		return nil
	})
	if err != nil {
		return before, after, err
	}
	// 2. Count, noting the writes whose objects the listing saw.
	cutoff := start.Add(-staleReservation)
	n, seen, err := s.count(ctx, tenant, cutoff.Add(-time.Minute))
	if err != nil {
		return before, after, err
	}
	// 3. Committed = the count plus the growth of every commit since the
	// epoch began (the listing may have missed it) but of those whose
	// object it saw; writes still in progress are kept, counted when the
	// listing saw their object, else marked as straddling the listing.
	err = s.updateUsage(ctx, tenant, false, func(doc *usageDoc) error {
		if doc.Last == id {
			after = doc.total("")
			return nil
		}
		if doc.Epoch != id {
			return errSuperseded
		}
		grow := doc.Grow
		for _, g := range doc.Grown {
			if seen[g.ID] {
				grow = grow.add(delta{-g.Bytes, -g.Objects})
			}
		}
		doc.Committed = n.add(grow)
		doc.Epoch, doc.EpochAt, doc.Grow, doc.Grown, doc.Counting, doc.Last = "", 0, delta{}, nil, false, id
		keep := doc.Pending[:0]
		for _, p := range doc.Pending {
			switch {
			case p.At < cutoff.UnixMilli():
				continue // its writer died long ago: the listing saw what it did
			case seen[p.ID]:
				p.Counted, p.Straddle = true, false
			case !p.Counted:
				p.Straddle = true
			}
			keep = append(keep, p)
		}
		doc.Pending = keep
		after = doc.total("")
		return nil
	})
	return before, after, err
}

// Reconciled is the outcome of one tenant's reconcile in ReconcileAll.
type Reconciled struct {
	Tenant        string
	Before, After store.Usage
	Err           error
}

// ReconcileAll reconciles every tenant that has objects or a usage
// object, one after the other, and returns what each gave; err is the
// failure to list the tenants, or the first tenant's failure.
func (s *Driver) ReconcileAll(ctx context.Context) ([]Reconciled, error) {
	if err := s.beginReconcile(ctx); err != nil {
		return nil, err
	}
	tenants, err := s.tenants(ctx)
	if err != nil {
		return nil, s.fail(ctx, "reconcile", "bucket "+s.bucket, err)
	}
	var out []Reconciled
	var first error
	for _, t := range tenants {
		b, a, err := s.Reconcile(ctx, t)
		out = append(out, Reconciled{Tenant: t, Before: b, After: a, Err: err})
		if err != nil && first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return out, first
}

// tenants lists, in order, the tenants that have objects (the common
// prefixes below the prefix) or a usage object.
func (s *Driver) tenants(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var list []string
	add := func(t string) {
		if store.ValidTenant(t) == nil && !seen[t] {
			seen[t] = true
			list = append(list, t)
		}
	}
	for _, pass := range []struct {
		prefix    string
		delimiter *string
	}{{s.base, aws.String("/")}, {s.base + usageDir, nil}} {
		var token *string
		for {
			out, err := s.listObjects(ctx, &s3.ListObjectsV2Input{
				Bucket:            aws.String(s.bucket),
				Prefix:            aws.String(pass.prefix),
				Delimiter:         pass.delimiter,
				ContinuationToken: token,
			})
			if err != nil {
				return nil, err
			}
			for _, p := range out.CommonPrefixes {
				t := aws.ToString(p.Prefix)[len(pass.prefix):]
				add(t[:max(len(t)-1, 0)])
			}
			if pass.delimiter == nil {
				for _, o := range out.Contents {
					add(aws.ToString(o.Key)[len(pass.prefix):])
				}
			}
			if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
				break
			}
			token = out.NextContinuationToken
		}
	}
	slices.Sort(list)
	return list, nil
}
