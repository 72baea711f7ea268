package s3store

// Tests that need no S3 server.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error; none: valid
	}{
		{"minimal", Options{Bucket: "b-1"}, nil},
		{"full", Options{Bucket: "my.d.bucket", Prefix: "prod/resourced", CallTimeout: time.Second, ReadCache: 1 << 20}, nil},
		{"no bucket", Options{}, []string{"bucket: required"}},
		{"bad bucket", Options{Bucket: "a/b"}, []string{"bucket: "}},
		{"short bucket", Options{Bucket: "ab"}, []string{"bucket: "}},
		{"leading slash", Options{Bucket: "bbb", Prefix: "/x"}, []string{"prefix: "}},
		{"trailing slash", Options{Bucket: "bbb", Prefix: "prod/resourced/"}, []string{"prefix: \"prod/resourced/\": no leading or trailing '/'"}},
		{"only a slash", Options{Bucket: "bbb", Prefix: "/"}, []string{"prefix: "}},
		{"dot segment", Options{Bucket: "bbb", Prefix: "a/../b"}, []string{"prefix: "}},
		{"empty segment", Options{Bucket: "bbb", Prefix: "a//b"}, []string{"prefix: "}},
		{"space in prefix", Options{Bucket: "bbb", Prefix: "a b"}, []string{"prefix: "}},
		{"negative timeout", Options{Bucket: "bbb", CallTimeout: -time.Second}, []string{"callTimeout: must not be negative"}},
		{"negative cache", Options{Bucket: "bbb", ReadCache: -1}, []string{"readCache: must not be negative"}},
		{"every problem", Options{Prefix: "/x", CallTimeout: -1, ReadCache: -1},
			[]string{"bucket", "prefix", "callTimeout", "readCache"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("Validate(%+v) = %v, want nil", tc.opts, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error", tc.opts)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%+v) = %q, want it to contain %q", tc.opts, err, w)
				}
			}
			if _, err := Open(offlineClient(t, "http://127.0.0.1:1"), tc.opts); err == nil {
				t.Errorf("Open(%+v) = nil error, want the validation error", tc.opts)
			}
		})
	}
}

// offlineClient is a client of endpoint with static credentials.
func offlineClient(t testing.TB, endpoint string) *s3.Client {
	return testClient(t, testOptions{endpoint: endpoint, credentials: credentials.NewStaticCredentialsProvider("id", "secret", "")})
}

func TestOpenNeedsClient(t *testing.T) {
	if _, err := Open(nil, Options{Bucket: "bbb"}); err == nil || !strings.Contains(err.Error(), "a client is required") {
		t.Errorf("Open(nil, ...) = %v, want a client is required", err)
	}
}

// TestOpenOffline: Open does not contact S3.
func TestOpenOffline(t *testing.T) {
	s, err := Open(offlineClient(t, "http://127.0.0.1:1"), Options{Bucket: "bbb", Prefix: "p"})
	if err != nil {
		t.Fatalf("Open = %v, want nil", err)
	}
	if s.d.base != "p/" || s.d.timeout != DefaultCallTimeout {
		t.Errorf("Open: base %q, timeout %v; want \"p/\", %v", s.d.base, s.d.timeout, DefaultCallTimeout)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := s.Stat(t.Context(), store.MustKey("t1", "report", "x")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Stat after Close = %v, want an error saying the store is closed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestCallDeadline: a server that never answers fails the call after
// CallTimeout, as a backend failure; a canceled caller context wins.
func TestCallDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s, err := Open(offlineClient(t, srv.URL), Options{Bucket: "bbb", CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.MustKey("t1", "report", "x")

	start := time.Now()
	_, err = s.Get(t.Context(), k)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Get took %v with a 300ms call timeout", d)
	}
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get from a silent server = %v, want a backend failure (not ErrNotFound, not the caller's deadline)", err)
	} else if !strings.Contains(err.Error(), "callTimeout") {
		t.Errorf("Get from a silent server = %q, want it to name store.s3.callTimeout", err)
	} else if strings.Contains(err.Error(), "X-Amz-") {
		t.Errorf("Get from a silent server = %q, which carries the presigned URL", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, _, err = s.Put(ctx, &store.Object{Meta: store.Meta{Key: k, Size: 1, SHA256: store.Sum([]byte("x"))}, Body: []byte("x")}, store.Cond{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put canceled during the call = %v, want an error wrapping %v", err, context.Canceled)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ms := func(s int64) time.Time { return time.UnixMilli(s).UTC() }
	for _, tc := range []struct {
		name string
		meta store.Meta
		body []byte
	}{
		{"empty", store.Meta{MIMEType: "application/octet-stream", Visibility: store.Private, Created: ms(1), Modified: ms(2), Expires: time.UnixMilli(time.Time{}.UnixMilli()).UTC()}, []byte{}},
		{"full", store.Meta{MIMEType: "text/markdown; charset=utf-8", Title: "été ✓", Description: "a\nb \"c\"",
			Listed: true, Visibility: store.Public, Created: ms(-5), Modified: ms(1e12), Expires: ms(2e12)}, []byte("hello")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.meta.Size = int64(len(tc.body))
			tc.meta.SHA256 = store.Sum(tc.body)
			in := record{meta: tc.meta, writeID: "w1"}
			data := encodeRecord(&in, tc.body)
			got, body, err := decodeRecord(data)
			if err != nil {
				t.Fatalf("decodeRecord = %v", err)
			}
			if diff := cmp.Diff(in, got, cmp.AllowUnexported(record{}), cmp.Transformer("Key", store.Key.String)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if !bytes.Equal(body, tc.body) {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
			// A prefix holding the header is enough for the header.
			n, err := headerLen(data[:14])
			if err != nil || n != len(data)-len(tc.body) {
				t.Errorf("headerLen = %d, %v; want %d", n, err, len(data)-len(tc.body))
			}
			for cut := range len(data) {
				if _, _, err := decodeRecord(data[:cut]); err == nil {
					t.Errorf("decodeRecord(first %d of %d bytes) = nil error", cut, len(data))
				}
			}
		})
	}
	body := []byte("body")
	data := encodeRecord(&record{meta: store.Meta{Size: 4, SHA256: store.Sum([]byte("other"))}}, body)
	if _, _, err := decodeRecord(data); !errors.Is(err, errCorrupt) {
		t.Errorf("decodeRecord(wrong hash) = %v, want %v", err, errCorrupt)
	}
	if _, _, err := decodeRecord([]byte("plain text object")); !errors.Is(err, errCorrupt) {
		t.Errorf("decodeRecord(foreign object) = %v, want %v", err, errCorrupt)
	}
}

// TestKeyOrder: the byte order of object keys is the (scheme, path) order
// of positions, a path prefix is a key prefix, and keys parse back.
func TestKeyOrder(t *testing.T) {
	s := &Store{d: &Driver{base: "pre/fix/"}}
	r := rand.New(rand.NewPCG(3, 4))
	schemeChars := "ab+-.z0"
	pathChars := "aA-._~/0zZ"
	gen := func(chars string, n int) string {
		var b strings.Builder
		for range 1 + r.IntN(n) {
			b.WriteByte(chars[r.IntN(len(chars))])
		}
		return b.String()
	}
	var keys []store.Key
	for len(keys) < 2000 {
		k, err := store.NewKey("t1", "a"+gen(schemeChars, 3), gen(pathChars, 6))
		if err == nil {
			keys = append(keys, k)
		}
	}
	byPos := slices.Clone(keys)
	slices.SortFunc(byPos, func(a, b store.Key) int {
		if c := strings.Compare(a.Scheme(), b.Scheme()); c != 0 {
			return c
		}
		return strings.Compare(a.Path(), b.Path())
	})
	byKey := slices.Clone(keys)
	slices.SortFunc(byKey, func(a, b store.Key) int { return strings.Compare(s.d.objectKey(a), s.d.objectKey(b)) })
	str := func(ks []store.Key) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.String()
		}
		return out
	}
	if diff := cmp.Diff(str(byPos), str(byKey)); diff != "" {
		t.Errorf("key order differs from position order (-pos +key):\n%s", diff)
	}
	for i, k := range keys {
		if got, ok := s.d.parseKey("t1", s.d.objectKey(k)); !ok || got != k {
			t.Errorf("parseKey(%q) = %v, %v; want %v", s.d.objectKey(k), got, ok, k)
		}
		if _, ok := s.d.parseKey("t10", s.d.objectKey(k)); ok {
			t.Errorf("parseKey(t10, %q) matched", s.d.objectKey(k))
		}
		// positionKey is a lower bound for what follows the position and
		// an upper bound for what precedes it.
		o := keys[(i+1)%len(keys)]
		pos := store.Position{Scheme: k.Scheme(), Path: k.Path()}
		opos := store.Position{Scheme: o.Scheme(), Path: o.Path()}
		if pk := s.d.positionKey("t1", pos); pos != opos && pos.Less(opos) != (s.d.objectKey(o) > pk) {
			t.Errorf("position %v, key %v: Less %v, objectKey %q > positionKey %q: %v",
				pos, o, pos.Less(opos), s.d.objectKey(o), pk, s.d.objectKey(o) > pk)
		}
		// A path prefix of the same scheme is a key prefix.
		if strings.HasPrefix(o.Path(), k.Path()) && o.Scheme() == k.Scheme() &&
			!strings.HasPrefix(s.d.objectKey(o), s.d.schemePrefix("t1", k.Scheme())+k.Path()) {
			t.Errorf("%v has the path prefix of %v but not the key prefix", o, k)
		}
	}
	// No object key is the "directory" of another.
	for _, a := range keys {
		for _, b := range keys[:100] {
			if strings.HasPrefix(s.d.objectKey(b), s.d.objectKey(a)+"/") {
				t.Fatalf("%q is below %q", s.d.objectKey(b), s.d.objectKey(a))
			}
		}
	}
}

// TestMarkerKeyOrder: the byte order of marker keys is the (tenant, scheme,
// path) order of public positions, marker keys parse back, no tenant prefix
// covers them, and publicStartKey is a lower bound for what follows any
// position, valid or not.
func TestMarkerKeyOrder(t *testing.T) {
	s := &Store{d: &Driver{base: "pre/fix/"}}
	r := rand.New(rand.NewPCG(5, 6))
	tenantChars := "t1-x0"
	schemeChars := "ab+-.0"
	pathChars := "aA-._~/0"
	gen := func(chars string, n int) string {
		var b strings.Builder
		for range 1 + r.IntN(n) {
			b.WriteByte(chars[r.IntN(len(chars))])
		}
		return b.String()
	}
	var keys []store.Key
	for len(keys) < 2000 {
		k, err := store.NewKey(gen(tenantChars, 4), "a"+gen(schemeChars, 2), gen(pathChars, 5))
		if err == nil {
			keys = append(keys, k)
		}
	}
	keys = append(keys, store.MustKey("t1", "a", "x"), store.MustKey("t1-x", "a", "x"), store.MustKey("t10", "a", "x"))
	byPos := slices.Clone(keys)
	slices.SortFunc(byPos, func(a, b store.Key) int {
		pa, pb := publicPos(a), publicPos(b)
		switch {
		case pa.Less(pb):
			return -1
		case pb.Less(pa):
			return 1
		}
		return 0
	})
	byKey := slices.Clone(keys)
	slices.SortFunc(byKey, func(a, b store.Key) int { return strings.Compare(s.d.markerKey(a), s.d.markerKey(b)) })
	str := func(ks []store.Key) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.String()
		}
		return out
	}
	if diff := cmp.Diff(str(byPos), str(byKey)); diff != "" {
		t.Errorf("marker key order differs from position order (-pos +key):\n%s", diff)
	}

	// Positions from outside: any bytes.
	weird := []store.PublicPosition{
		{},
		{Tenant: "t1"},
		{Tenant: "t1", Scheme: "a"},
		{Tenant: "t1!", Scheme: "a"},
		{Tenant: "t1 ", Scheme: "a"},
		{Tenant: "t1\x00x"},
		{Tenant: "t1", Scheme: "a!", Path: "x"},
		{Tenant: "t1", Scheme: "a", Path: "x!"},
		{Tenant: "t1", Scheme: "a", Path: "x\xff"},
		{Tenant: "T1", Scheme: "A", Path: "X"},
		{Tenant: "t1-x", Scheme: "a", Path: "x!/y"},
	}
	for _, k := range keys {
		weird = append(weird, publicPos(k))
	}
	for i, k := range keys {
		mk := s.d.markerKey(k)
		if got, ok := s.d.parseMarkerKey(mk); !ok || got != k {
			t.Errorf("parseMarkerKey(%q) = %v, %v; want %v", mk, got, ok, k)
		}
		if _, ok := s.d.parseKey(k.Tenant(), mk); ok {
			t.Errorf("parseKey(%s, %q) matched a marker", k.Tenant(), mk)
		}
		if strings.HasPrefix(mk, s.d.tenantPrefix(k.Tenant())) {
			t.Errorf("marker %q is below tenant prefix %q", mk, s.d.tenantPrefix(k.Tenant()))
		}
		if _, ok := s.d.parseMarkerKey(s.d.objectKey(k)); ok {
			t.Errorf("parseMarkerKey(%q) matched an object key", s.d.objectKey(k))
		}
		for _, pos := range []store.PublicPosition{weird[i%len(weird)], publicPos(keys[(i+1)%len(keys)])} {
			if sk := s.d.publicStartKey(pos); pos.Less(publicPos(k)) && !(mk > sk) {
				t.Errorf("%v follows position %+q, but its marker %q is not after publicStartKey %q", k, pos, mk, sk)
			}
		}
	}
	for _, pos := range weird {
		sk := s.d.publicStartKey(pos)
		for _, k := range keys {
			if pos.Less(publicPos(k)) && !(s.d.markerKey(k) > sk) {
				t.Fatalf("%v follows position %+q, but its marker %q is not after publicStartKey %q", k, pos, s.d.markerKey(k), sk)
			}
		}
	}
	// The start key of an object's own position is its marker: StartAfter
	// skips it.
	k := store.MustKey("t1", "report", "a/b")
	if got, want := s.d.publicStartKey(publicPos(k)), s.d.markerKey(k); got != want {
		t.Errorf("publicStartKey(%v) = %q, want %q", k, got, want)
	}
}

// TestCallOptionsOnAnyClient: a client built with the SDK's defaults (which
// send CRC32 trailers on every PUT) still sends no checksum trailer, since
// the settings this package depends on are applied per call.
func TestCallOptionsOnAnyClient(t *testing.T) {
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/t1/report!/x!") && hdr == nil:
			hdr = r.Header.Clone()
		case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
			io.WriteString(w, `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNotFound) // no usage object, no object yet
		}
	}))
	defer srv.Close()
	s, err := Open(offlineClient(t, srv.URL), Options{Bucket: "bbb"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	body := []byte("hello")
	o := &store.Object{Meta: store.Meta{Key: store.MustKey("t1", "report", "x"), MIMEType: "text/plain", Size: int64(len(body)),
		SHA256: store.Sum(body), Created: now, Modified: now, Visibility: store.Private}, Body: body}
	if _, _, err := s.Put(t.Context(), o, store.CreateOnly()); err != nil {
		t.Fatalf("Put = %v", err)
	}
	if hdr == nil {
		t.Fatal("no PUT reached the server")
	}
	for k := range hdr {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum") || strings.EqualFold(k, "X-Amz-Trailer") {
			t.Errorf("PUT carries %s: %q; want no checksum beyond Content-MD5", k, hdr.Get(k))
		}
	}
	if hdr.Get("Content-Md5") == "" {
		t.Error("PUT has no Content-MD5")
	}
}
