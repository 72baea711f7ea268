package s3store

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// This file is the single-writer mode (Options.SingleWriter, resourced's
// store.s3.unsafeAllowSingleWriter): for an S3 service that fails the
// probe's concurrency guarantees, one process may still write, if no
// other does. It then
//   - holds a lease object, <prefix>/!lease, so that a second process on
//     the same prefix refuses to start (HoldLease), and stops writing
//     itself when it cannot renew the lease for half its term;
//   - serialises the writes of one key within the process (keyLock), so
//     that a conditional write never reads an object another write of
//     ours is still publishing;
//   - keeps no read cache, which would pin an ETag the service paired
//     with the wrong body.
//
// The lease is taken with If-None-Match: *, renewed with If-Match, and
// taken over only after its holder has left it unchanged for a whole
// leaseTerm, measured on the taker's clock: a holder stops writing after
// leaseTerm/2 without a renewal, so it has stopped before anyone takes
// over. On a service whose create-only PUTs are not atomic, two processes
// started in the same moment can both take it; the lease keeps out a
// second process started later, which is the mistake it is for.

// leaseTerm is how long a lease stays unchanged before another process
// may take it; leaseRenew is how often its holder renews it. Variables
// for the tests.
var (
	leaseTerm  = 30 * time.Second
	leaseRenew = 5 * time.Second
)

// leaseKey is the key segment, below the prefix, of the lease.
const leaseKey = "!lease"

// errNoLease is the error of a write in single-writer mode while the
// lease is not held.
var errNoLease = errors.New("single-writer mode (store.s3.unsafeAllowSingleWriter) and the lease on the prefix is not held")

// leaseRecord is the lease object's content: who holds it, for operators.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Renewed time.Time `json:"renewed"`
}

// lease is the state of the lease this process holds.
type lease struct {
	mu      sync.Mutex
	held    bool      // taken and not lost or released
	etag    string    // of our last write of it
	renewed time.Time // when our last successful renewal was sent
	lost    string    // why it is not held any more; "" while held
	rec     leaseRecord

	stop chan struct{}
	done chan struct{}
}

// check returns nil when writes may go ahead.
func (l *lease) check(now time.Time) error {
	if l == nil {
		return errNoLease
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.lost != "":
		return fmt.Errorf("%w: %s", errNoLease, l.lost)
	case !l.held:
		return errNoLease
	case now.Sub(l.renewed) > leaseTerm/2:
		return fmt.Errorf("%w: not renewed since %s (S3 unreachable?); writes resume once it is", errNoLease, l.renewed.UTC().Format(time.RFC3339))
	}
	return nil
}

// beginReconcile is begin for a reconcile, which writes usage objects: in
// single-writer mode it needs the lease like every write.
func (s *Driver) beginReconcile(ctx context.Context) error {
	if err := s.begin(ctx, "reconcile"); err != nil {
		return err
	}
	if s.keys != nil {
		if err := s.lease.Load().check(time.Now()); err != nil {
			return fmt.Errorf("s3store: reconcile: %w", err)
		}
	}
	return nil
}

// keyLocks serialise the writes of one key in single-writer mode.
type keyLocks struct {
	seed  maphash.Seed
	locks [64]sync.Mutex
}

// keyLock locks objKey's writes in single-writer mode and returns the
// unlock; otherwise it does nothing.
func (s *Driver) keyLock(objKey string) func() {
	if s.keys == nil {
		return func() {}
	}
	m := &s.keys.locks[maphash.String(s.keys.seed, objKey)%uint64(len(s.keys.locks))]
	m.Lock()
	return m.Unlock
}

// HoldLease takes the single-writer lease of the prefix and keeps it
// renewed until Close, which releases it. It fails when another process
// holds it: one that renews it within leaseTerm. A lease left by a
// process that died is taken over after leaseTerm (30 s). Without
// Options.SingleWriter it does nothing.
func (s *Store) HoldLease(ctx context.Context) error {
	return s.d.holdLease(ctx)
}

func (s *Driver) holdLease(ctx context.Context) error {
	if s.keys == nil {
		return nil
	}
	if err := s.begin(ctx, "lease"); err != nil {
		return err
	}
	host, _ := os.Hostname()
	l := &lease{rec: leaseRecord{Holder: newWriteID()[:16], Host: host, PID: os.Getpid()}, stop: make(chan struct{}), done: make(chan struct{})}
	etag, sent, err := s.takeLease(ctx, &l.rec)
	if err != nil {
		return fmt.Errorf("s3store: lease %s: %w", s.base+leaseKey, err)
	}
	l.held, l.etag, l.renewed = true, etag, sent
	s.lease.Store(l)
	go s.renewLease(l)
	return nil
}

// takeLease creates the lease, or takes over one its holder has left
// unchanged for leaseTerm, and returns its ETag and when the PUT that took
// it was sent.
func (s *Driver) takeLease(ctx context.Context, rec *leaseRecord) (string, time.Time, error) {
	put := func(pc putCond) (string, time.Time, error) {
		sent := time.Now()
		rec.Renewed = sent.UTC()
		if rec.Since.IsZero() || pc.ifMatch != "" {
			rec.Since = rec.Renewed
		}
		etag, err := s.putLease(ctx, rec, pc)
		return etag, sent, err
	}
	for range maxAttempts {
		etag, sent, err := put(putCond{ifNoneMatch: true})
		if err == nil {
			return etag, sent, nil
		}
		if !isConflict(err) {
			return "", time.Time{}, err
		}
		// Held, or left by a process that died: watch it for a term.
		theirs, seen, err := s.readLease(ctx)
		if err != nil {
			return "", time.Time{}, err
		}
		if seen == "" {
			continue // released meanwhile
		}
		deadline := time.Now().Add(leaseTerm)
		for time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return "", time.Time{}, ctx.Err()
			case <-time.After(min(leaseRenew/2, time.Until(deadline))):
			}
			now, etag, err := s.readLease(ctx)
			if err != nil {
				return "", time.Time{}, err
			}
			if etag != seen {
				if etag != "" {
					theirs = now
				}
				return "", time.Time{}, fmt.Errorf("held by another process (holder %s on host %q, pid %d, since %s, renewed %s): "+
					"with store.s3.unsafeAllowSingleWriter only one instance may use the prefix",
					theirs.Holder, theirs.Host, theirs.PID, theirs.Since.Format(time.RFC3339), theirs.Renewed.Format(time.RFC3339))
			}
		}
		etag, sent, err = put(putCond{ifMatch: seen})
		if err == nil {
			return etag, sent, nil
		}
		if !isConflict(err) {
			return "", time.Time{}, err
		}
	}
	return "", time.Time{}, errors.New("the lease kept changing hands")
}

// putLease writes rec as the lease under pc and returns its ETag.
func (s *Driver) putLease(ctx context.Context, rec *leaseRecord, pc putCond) (string, error) {
	body, _ := json.Marshal(rec) // plain struct: cannot fail
	sum := md5.Sum(body)
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.base + leaseKey),
		Body:          strings.NewReader(string(body)),
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
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.client.PutObject(cctx, in, noRetries)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// readLease returns the lease and its ETag; "" when there is none.
func (s *Driver) readLease(ctx context.Context) (leaseRecord, string, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.client.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.base + leaseKey)}, callOptions)
	if err != nil {
		if isMissing(err) {
			return leaseRecord{}, "", nil
		}
		return leaseRecord{}, "", err
	}
	defer out.Body.Close()
	var rec leaseRecord
	b, err := io.ReadAll(io.LimitReader(out.Body, 4096))
	if err != nil {
		return leaseRecord{}, "", err
	}
	_ = json.Unmarshal(b, &rec) // an unreadable lease is still a lease
	return rec, aws.ToString(out.ETag), nil
}

// renewLease renews l every leaseRenew until Close, and marks it lost when
// another process has taken it.
func (s *Driver) renewLease(l *lease) {
	defer close(l.done)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		l.mu.Lock()
		rec, etag := l.rec, l.etag
		l.mu.Unlock()
		rec.Renewed = sent.UTC()
		e, err := s.putLease(context.Background(), &rec, putCond{ifMatch: etag})
		l.mu.Lock()
		switch {
		case err == nil:
			l.etag, l.renewed, l.rec = e, sent, rec
		case isConflict(err):
			l.held, l.lost = false, "the lease was taken over by another process, or removed; restart this one once no other one runs on the prefix"
		}
		held := l.held
		l.mu.Unlock()
		if !held {
			return
		}
	}
}

// releaseLease stops the renewals and removes the lease, if held.
func (s *Driver) releaseLease() error {
	l := s.lease.Load()
	if l == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	l.mu.Lock()
	held, etag := l.held, l.etag
	l.held, l.lost = false, "the store is closed"
	l.mu.Unlock()
	if !held {
		return nil
	}
	ctx, cancel := s.call(context.Background())
	defer cancel()
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.base + leaseKey), IfMatch: aws.String(etag)}, callOptions)
	if err != nil && !isMissing(err) {
		return fmt.Errorf("s3store: releasing the lease: %w (the next instance takes it over after %v)", err, leaseTerm)
	}
	return nil
}
