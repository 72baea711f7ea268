package s3store

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// markers returns the keys of the index markers stored under s's prefix,
// with the raw client.
func markers(t *testing.T, s *Store) []store.Key {
	t.Helper()
	var keys []store.Key
	var token *string
	for {
		out, err := s.d.client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{
			Bucket: aws.String(s.d.bucket), Prefix: aws.String(s.d.publicPrefix()), ContinuationToken: token,
		})
		if err != nil {
			t.Fatalf("listing markers: %v", err)
		}
		for _, o := range out.Contents {
			k, ok := s.d.parseMarkerKey(aws.ToString(o.Key))
			if !ok {
				t.Errorf("foreign key %q under the index prefix", aws.ToString(o.Key))
				continue
			}
			keys = append(keys, k)
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys
		}
		token = out.NextContinuationToken
	}
}

func wantMarkers(t *testing.T, s *Store, what string, want ...store.Key) {
	t.Helper()
	got := markers(t, s)
	if len(got) != len(want) {
		t.Errorf("markers %s = %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("markers %s = %v, want %v", what, got, want)
			return
		}
	}
}

func publicObj(k store.Key, body string, vis store.Visibility, now time.Time) *store.Object {
	return &store.Object{
		Meta: store.Meta{
			Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
			Created: now, Modified: now, Listed: true, Visibility: vis,
		},
		Body: []byte(body),
	}
}

// TestPublicMarkers follows the markers themselves: written for public
// listed objects only, removed with the object or its publicity, and
// stale ones removed by ListPublic.
func TestPublicMarkers(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := serverOptions(t)
	opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := openTest(t, opts)
	ctx := t.Context()
	put := func(k store.Key, body string, vis store.Visibility, edit func(*store.Object)) {
		t.Helper()
		o := publicObj(k, body, vis, now)
		if edit != nil {
			edit(o)
		}
		if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
			t.Fatalf("Put(%s) = %v", k, err)
		}
	}
	listPublic := func() []store.Key {
		t.Helper()
		p, err := s.ListPublic(ctx, store.PublicPosition{}, 100)
		if err != nil {
			t.Fatalf("ListPublic = %v", err)
		}
		var keys []store.Key
		for _, m := range p.Items {
			keys = append(keys, m.Key)
		}
		return keys
	}
	a := store.MustKey("t1", "report", "a")
	b := store.MustKey("t1-x", "report", "b")

	put(a, "a1", store.Private, nil)
	wantMarkers(t, s, "after a private put")
	put(a, "a2", store.Public, nil)
	put(b, "b1", store.Public, nil)
	wantMarkers(t, s, "after public puts", a, b)
	put(a, "a3", store.Public, func(o *store.Object) { o.Listed = false })
	wantMarkers(t, s, "after unlisting a", b)
	put(a, "a4", store.Public, nil)
	if err := s.Delete(ctx, a, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantMarkers(t, s, "after deleting a", b)

	// A stale marker (here: written by hand for a private object) is not
	// listed, and ListPublic removes it.
	put(a, "a5", store.Private, nil)
	if err := s.d.putMarker(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantMarkers(t, s, "with a stale marker", a, b)
	if got := listPublic(); len(got) != 1 || got[0] != b {
		t.Errorf("ListPublic with a stale marker = %v, want [%v]", got, b)
	}
	wantMarkers(t, s, "after ListPublic met the stale marker", b)

	// A missing marker hides the object until a Put writes it again.
	put(a, "a6", store.Public, nil)
	if err := s.d.deleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.d.bucket), Key: aws.String(s.d.markerKey(a))}); err != nil {
		t.Fatal(err)
	}
	if got := listPublic(); len(got) != 1 || got[0] != b {
		t.Errorf("ListPublic with a missing marker = %v, want [%v]", got, b)
	}
	put(a, "a7", store.Public, nil)
	if got := listPublic(); len(got) != 2 {
		t.Errorf("ListPublic after a repairing Put = %v, want [%v %v]", got, a, b)
	}

	// Expired: ListPublic removes the marker.
	put(b, "b2", store.Public, func(o *store.Object) { o.Expires = now.Add(time.Minute) })
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if got := listPublic(); len(got) != 1 || got[0] != a {
		t.Errorf("ListPublic after b expired = %v, want [%v]", got, a)
	}
	wantMarkers(t, s, "after ListPublic met the expired object", a)
}

// gate holds the first request that matches until released.
type gate struct {
	next    http.RoundTripper
	match   func(*http.Request) bool
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.match(req) {
		hold := false
		g.once.Do(func() { hold = true })
		if hold {
			close(g.reached)
			<-g.release
		}
	}
	return g.next.RoundTrip(req)
}

// TestMarkerRaceKeepsPublic forces the interleaving that loses a marker
// without removeMarker's second read: a Put making k private removes the
// marker only after a concurrent Put has made k public again and written
// its marker.
func TestMarkerRaceKeepsPublic(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	opts := serverOptions(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	opts.Now = func() time.Time { return now }
	g := &gate{reached: make(chan struct{}), release: make(chan struct{})}
	var armed sync.Mutex
	armedOn := false
	g.match = func(req *http.Request) bool {
		armed.Lock()
		defer armed.Unlock()
		p, _ := url.PathUnescape(req.URL.EscapedPath())
		return armedOn && req.Method == http.MethodDelete && strings.Contains(p, strings.TrimSuffix(publicDir, "/"))
	}
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		g.next = next
		return g
	}
	s := openTest(t, opts)
	ctx := t.Context()
	k := store.MustKey("t1", "report", "race")
	if _, _, err := s.Put(ctx, publicObj(k, "v1", store.Public, now), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	armed.Lock()
	armedOn = true
	armed.Unlock()

	done := make(chan error, 1)
	go func() {
		_, _, err := s.Put(ctx, publicObj(k, "v2 private", store.Private, now), store.Cond{})
		done <- err
	}()
	select {
	case <-g.reached:
	case err := <-done:
		t.Fatalf("the private Put ended (%v) without removing the marker", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the private Put never removed the marker")
	}
	// The private object is stored; its Put waits to remove the marker.
	// Now a public Put lands, marker and all.
	if _, _, err := s.Put(ctx, publicObj(k, "v3 public", store.Public, now), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("private Put = %v", err)
	}
	p, err := s.ListPublic(ctx, store.PublicPosition{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Items[0].Key != k || p.Items[0].SHA256 != store.Sum([]byte("v3 public")) {
		t.Errorf("ListPublic after the race = %+v, want the public v3 of %s", p.Items, k)
	}
	wantMarkers(t, s, "after the race", k)
}
