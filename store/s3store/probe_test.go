package s3store

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// expectedFailures is what the probe must find on each S3 service the
// scripts start, by the RESOURCED_TEST_S3_KIND they export: the matrix of
// docs/s3.md. A service kind not listed here must pass every guarantee
// that is not advisory.
var expectedFailures = map[string][]string{
	"versitygw-xattr":   nil,
	"versitygw-sidecar": {"read-atomic"},
	"seaweedfs":         nil,
}

// TestProbe runs the probe on the test server: it finds what the matrix
// says (every guarantee kept on the servers CI starts), leaves nothing
// behind, and is cheap enough for every start.
func TestProbe(t *testing.T) {
	opts := serverOptions(t)
	s := openTest(t, opts)
	// A leftover of a probe that died; the first probe below removes it
	// (with staleProbe 0, anything older than the probe is a leftover).
	if _, err := s.d.client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(s.d.bucket),
		Key: aws.String(s.d.base + probeDir + "0123456789abcdef/create!"), Body: strings.NewReader("left")}, callOptions); err != nil {
		t.Fatal(err)
	}
	oldStale := staleProbe
	staleProbe = 0
	t.Cleanup(func() { staleProbe = oldStale })
	var took []time.Duration
	for range 3 {
		rep, err := s.Probe(t.Context())
		if err != nil {
			t.Fatalf("Probe = %v", err)
		}
		took = append(took, rep.Took)
		var failed []string
		for _, r := range rep.Results {
			switch {
			case !r.OK && r.Advisory:
				t.Logf("%s (advisory): failed: %s", r.Name, r.Detail)
			case !r.OK:
				failed = append(failed, r.Name)
				t.Logf("%s: FAILED: %s", r.Name, r.Detail)
			}
		}
		if len(rep.Results) != len(Guarantees) {
			t.Errorf("%d results, want one per guarantee (%d)", len(rep.Results), len(Guarantees))
		}
		kind := os.Getenv("RESOURCED_TEST_S3_KIND")
		if want := expectedFailures[kind]; !slices.Equal(failed, want) {
			t.Errorf("on %q the probe failed %q, want %q", kind, failed, want)
		}
		if (rep.Err() == nil) != (len(rep.Failed()) == 0) {
			t.Errorf("Err() = %v with failed %v", rep.Err(), rep.Failed())
		}
	}
	t.Logf("probe took %v", took)
	out, err := s.d.client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(s.d.bucket), Prefix: aws.String(s.d.base)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		t.Errorf("left behind: %s", aws.ToString(o.Key))
	}
}

// TestProbeRefusedSaysItOnce: a probe the service refuses from its first
// PUT (here wrong credentials: every S3 service refuses those, where some
// create a missing bucket on the first PUT) wrote nothing, so its answer
// is that refusal alone, without a second error about removing what it
// never wrote.
func TestProbeRefusedSaysItOnce(t *testing.T) {
	opts := serverOptions(t)
	s := openTest(t, opts)
	client := s.d.client
	bad := opts
	bad.credentials = credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), "not-the-secret", "")
	s.d.client = testClient(t, bad)
	_, err := s.Probe(t.Context())
	s.d.client = client
	if err == nil {
		t.Fatal("Probe with wrong credentials succeeded")
	}
	if !strings.Contains(err.Error(), "create-only") || !strings.Contains(err.Error(), "403") {
		t.Errorf("Probe = %v, want the service's 403 on the first check", err)
	}
	if strings.Contains(err.Error(), "removing the probe's") {
		t.Errorf("Probe = %v: a cleanup error after a probe that wrote nothing", err)
	}
}

// TestSingleWriterLease: in single-writer mode a store writes only while
// it holds the prefix's lease; a second store is refused while the first
// renews it, takes it at once when the first closes, and takes over one
// whose holder died after the lease's term, by when the dead holder's
// writes have stopped.
func TestSingleWriterLease(t *testing.T) {
	oldTerm, oldRenew := leaseTerm, leaseRenew
	leaseTerm, leaseRenew = 2*time.Second, 200*time.Millisecond
	t.Cleanup(func() { leaseTerm, leaseRenew = oldTerm, oldRenew })
	opts := serverOptions(t)
	opts.SingleWriter = true
	opts.ReadCache = 1 << 20
	ctx := t.Context()
	k := store.MustKey("t1", "report", "lease/one")
	save := func(s *Store, text string) error {
		_, _, err := s.Put(ctx, usageObj(k, len(text)), store.Cond{})
		return err
	}

	// Every store is closed before the cleanup above restores the lease
	// timing its renewals read.
	open := func() *Store {
		s := openTest(t, opts)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a := open()
	if a.d.cache != nil {
		t.Error("single-writer mode keeps a read cache")
	}
	if err := save(a, "before the lease"); !errors.Is(err, errNoLease) {
		t.Fatalf("Put before HoldLease = %v, want errNoLease", err)
	}
	if _, _, err := a.Reconcile(ctx, "t1"); !errors.Is(err, errNoLease) {
		t.Fatalf("Reconcile before HoldLease = %v, want errNoLease", err)
	}
	if err := a.HoldLease(ctx); err != nil {
		t.Fatalf("HoldLease = %v", err)
	}
	if _, _, err := a.Reconcile(ctx, "t1"); err != nil {
		t.Fatalf("Reconcile while holding the lease = %v", err)
	}
	if err := save(a, "a"); err != nil {
		t.Fatalf("Put while holding the lease = %v", err)
	}

	b := open()
	start := time.Now()
	err := b.HoldLease(ctx)
	if err == nil || !strings.Contains(err.Error(), "held by another process") || !strings.Contains(err.Error(), "unsafeAllowSingleWriter") {
		t.Fatalf("second HoldLease = %v, want held by another process", err)
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err := save(b, "b"); !errors.Is(err, errNoLease) {
		t.Fatalf("Put of the refused store = %v, want errNoLease", err)
	}

	if err := a.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	start = time.Now()
	if err := b.HoldLease(ctx); err != nil {
		t.Fatalf("HoldLease after the holder closed = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("HoldLease after a release took %v, want no wait", d)
	}
	if err := save(b, "b"); err != nil {
		t.Fatalf("Put of the new holder = %v", err)
	}

	// b dies: its renewals stop, the lease stays.
	l := b.d.lease.Load()
	close(l.stop)
	<-l.done
	c := open()
	start = time.Now()
	if err := c.HoldLease(ctx); err != nil {
		t.Fatalf("HoldLease over a dead holder's lease = %v", err)
	}
	if d := time.Since(start); d < leaseTerm {
		t.Errorf("took a live-looking lease over after %v, want at least %v", d, leaseTerm)
	}
	if err := save(b, "late"); !errors.Is(err, errNoLease) {
		t.Errorf("Put of the dead holder after the takeover = %v, want errNoLease", err)
	}
	if err := save(c, "c"); err != nil {
		t.Fatalf("Put of the new holder = %v", err)
	}
	l.stop = make(chan struct{}) // b's Close (in the cleanup) stops it again
	l.done = make(chan struct{})
	close(l.done)
}
