package s3store

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// TestSweepKeys (no server): the sweep starts after every marker and
// before every object, and parses back exactly the object keys.
func TestSweepKeys(t *testing.T) {
	for _, base := range []string{"", "prod/x/"} {
		s := &Store{d: &Driver{base: base}}
		start := s.d.sweepStart()
		for _, k := range []store.Key{
			store.MustKey("0-0", "a", "a"),
			store.MustKey("0", "a", "A"),
			store.MustKey("t1", "a+b", "x/y~"),
			store.MustKey("zzz", "z", "z"),
		} {
			if mk := s.d.markerKey(k); mk >= start {
				t.Errorf("base %q: marker key %q does not sort before the sweep start %q", base, mk, start)
			}
			ok := s.d.objectKey(k)
			if ok <= start {
				t.Errorf("base %q: object key %q does not sort after the sweep start %q", base, ok, start)
			}
			got, parsed := s.d.parseObjectKey(ok)
			if !parsed || got != k {
				t.Errorf("parseObjectKey(%q) = %v, %v; want %v", ok, got, parsed, k)
			}
			if _, parsed := s.d.parseObjectKey(s.d.markerKey(k)); parsed {
				t.Errorf("parseObjectKey(marker %q) parsed", s.d.markerKey(k))
			}
		}
		for _, bad := range []string{base + "t1", base + "t1/x", base + "T1/a!/x!", base + "t1/a!/x", "elsewhere/t1/a!/x!"} {
			if k, ok := s.d.parseObjectKey(bad); ok {
				t.Errorf("base %q: parseObjectKey(%q) = %v, want not ours", base, bad, k)
			}
		}
	}
}

// rawKeys lists every key under s's prefix that starts with sub.
func rawKeys(t *testing.T, s *Store, sub string) []string {
	t.Helper()
	var keys []string
	var token *string
	for {
		out, err := s.d.client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{
			Bucket: aws.String(s.d.bucket), Prefix: aws.String(s.d.base + sub), ContinuationToken: token,
		})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		for _, o := range out.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), s.d.base))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys
		}
		token = out.NextContinuationToken
	}
}

func sweepObject(k store.Key, body string, now, expires time.Time, public bool) *store.Object {
	o := &store.Object{
		Meta: store.Meta{
			Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
			Created: now, Modified: now, Expires: expires, Listed: true, Visibility: store.Private,
		},
		Body: []byte(body),
	}
	if public {
		o.Visibility = store.Public
	}
	return o
}

// TestDeleteExpiredProgress: calls examine a bounded window, continue where
// the last one stopped, and start over at the end, so objects written
// before the position are found on the next pass; markers go with their
// objects.
func TestDeleteExpiredProgress(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := serverOptions(t)
	opts.Now = func() time.Time { return now }
	s := openTest(t, opts)
	ctx := t.Context()
	past := now.Add(-time.Second)

	var expired, live []store.Key
	for i := range 30 {
		k := store.MustKey("m", "report", fmt.Sprintf("p%02d", i))
		exp := past
		if i%3 == 0 {
			exp = now.Add(time.Hour)
			live = append(live, k)
		} else {
			expired = append(expired, k)
		}
		if _, _, err := s.Put(ctx, sweepObject(k, "x", now.Add(-time.Hour), exp, i%2 == 0), store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
	}
	// An object under the prefix that is not a record of ours: skipped,
	// neither deleted nor an error.
	foreign := s.d.base + "m/report!/foreign!"
	if _, err := s.d.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.d.bucket), Key: aws.String(foreign), Body: strings.NewReader("not a record"),
	}); err != nil {
		t.Fatal(err)
	}
	// limit 1: each call examines at most 4 objects.
	sweep := func(want int) int {
		t.Helper()
		total, calls := 0, 0
		for total < want {
			if calls++; calls > 60 {
				t.Fatalf("DeleteExpired(1): %d calls removed %d, want %d", calls, total, want)
			}
			n, err := s.DeleteExpired(ctx, 1)
			if err != nil || n > 1 {
				t.Fatalf("DeleteExpired(1) = %d, %v", n, err)
			}
			total += n
		}
		return calls
	}
	if calls := sweep(len(expired)); calls < len(expired) {
		t.Errorf("%d calls of DeleteExpired(1) removed %d objects", calls, len(expired))
	}
	for _, k := range expired {
		if h, err := s.d.readHead(ctx, s.d.objectKey(k)); err != nil || h != nil {
			t.Errorf("%s after the sweep: %v, %v; want gone", k, h, err)
		}
	}
	for _, k := range live {
		if _, err := s.Stat(ctx, k); err != nil {
			t.Errorf("Stat(%s) = %v", k, err)
		}
	}
	// Markers of removed objects are gone; those of live public ones stay.
	var wantMarkers []string
	for i, k := range live {
		if i%2 == 0 { // live keys are p00, p03, ...: even i ⇔ even p
			wantMarkers = append(wantMarkers, strings.TrimPrefix(s.d.markerKey(k), s.d.base))
		}
	}
	if got := rawKeys(t, s, publicDir); strings.Join(got, " ") != strings.Join(wantMarkers, " ") {
		t.Errorf("markers after the sweep = %q, want %q", got, wantMarkers)
	}

	// Expired objects before and after the current position: found by
	// continuing and by starting over.
	var more []store.Key
	for _, tenant := range []string{"a", "z"} {
		for i := range 3 {
			k := store.MustKey(tenant, "report", fmt.Sprintf("q%d", i))
			if _, _, err := s.Put(ctx, sweepObject(k, "y", now.Add(-time.Hour), past, false), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
			more = append(more, k)
		}
	}
	sweep(len(more))
	for _, k := range more {
		if h, err := s.d.readHead(ctx, s.d.objectKey(k)); err != nil || h != nil {
			t.Errorf("%s after the second sweep: %v, %v; want gone", k, h, err)
		}
	}
	for range 10 {
		if n, err := s.DeleteExpired(ctx, 5); n != 0 || err != nil {
			t.Fatalf("DeleteExpired(5) with nothing expired = %d, %v", n, err)
		}
	}
	got := slices.DeleteFunc(rawKeys(t, s, ""), func(k string) bool { return strings.HasPrefix(k, usageDir) })
	if len(got) != len(live)+len(wantMarkers)+1 {
		t.Errorf("%d keys left, want %d objects, %d markers and the foreign object: %q", len(got), len(live), len(wantMarkers), got)
	}
	if !slices.Contains(got, strings.TrimPrefix(foreign, s.d.base)) {
		t.Errorf("the foreign object %s was deleted", foreign)
	}
}

// TestDeleteExpiredKeepsReplaced: an expired object replaced between the
// sweep's header read and its DELETE survives (If-Match on the ETag).
func TestDeleteExpiredKeepsReplaced(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	base := serverOptions(t)
	base.Now = func() time.Time { return now }
	other := openTest(t, base) // same prefix, no interception
	k := store.MustKey("t1", "report", "replaced")
	ctx := t.Context()

	var (
		mu       sync.Mutex
		replaced bool
		putErr   error
	)
	opts := base
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			// The DELETE of the object (not of its marker) comes after the
			// sweep read the header: replace the object just before.
			if req.Method == http.MethodDelete && strings.Contains(req.URL.Path, "/t1/report!/replaced!") &&
				!strings.Contains(req.URL.Path, publicDir) && !replaced {
				replaced = true
				_, _, putErr = other.Put(ctx, sweepObject(k, "new and live", now, time.Time{}, true), store.Cond{})
			}
			mu.Unlock()
			return next.RoundTrip(req)
		})
	}
	s, err := openOptions(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Put(ctx, sweepObject(k, "old", now.Add(-time.Hour), now.Add(-time.Second), true), store.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteExpired(ctx, 10)
	if putErr != nil {
		t.Fatalf("the concurrent Put = %v", putErr)
	}
	if !replaced {
		t.Fatal("no DELETE of the object was sent")
	}
	if err != nil || n != 0 {
		t.Errorf("DeleteExpired over a concurrently replaced object = %d, %v; want 0, nil", n, err)
	}
	o, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get(%s) after the sweep = %v, want the replacement", k, err)
	}
	if string(o.Body) != "new and live" {
		t.Errorf("Get(%s).Body = %q, want the replacement", k, o.Body)
	}
	p, err := s.ListPublic(ctx, store.PublicPosition{}, 10)
	if err != nil || len(p.Items) != 1 {
		t.Errorf("ListPublic = %d items, %v; want the replacement", len(p.Items), err)
	}
	// The failed DELETE gave nothing back: the replacement counts.
	if u, err := s.Usage(ctx, "t1"); err != nil || u != (store.Usage{Bytes: 12, Objects: 1}) {
		t.Errorf("Usage = %+v, %v; want the replacement's 12 bytes in 1 object", u, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
