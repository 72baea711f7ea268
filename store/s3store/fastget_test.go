package s3store

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/resourced/resourced/store"
)

// fakeObject is a one-object S3 server for the read GET: the record of
// fakeKey at "/bbb/t1/report!/x!", answered 200 or, on a matching
// If-None-Match, 304. script, when set, answers the n-th GET (from 1)
// instead when it returns true.
type fakeObject struct {
	t      *testing.T
	srv    *httptest.Server
	record []byte
	body   string

	mu     sync.Mutex
	gets   int
	seen   []*http.Request // each GET, with its URL and headers
	script func(n int, w http.ResponseWriter, r *http.Request) bool
}

var fakeKey = store.MustKey("t1", "report", "x")

const fakeSecret = "fake-secret-key-0123456789"

func newFakeObject(t *testing.T) *fakeObject {
	t.Helper()
	body := "hello, S3"
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := record{meta: store.Meta{MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
		Created: now, Modified: now, Visibility: store.Private}, writeID: "w1"}
	f := &fakeObject{t: t, record: encodeRecord(&rec, []byte(body)), body: body}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeObject) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/bbb/t1/report!/x!" {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.gets++
	n := f.gets
	f.seen = append(f.seen, r.Clone(context.Background()))
	script := f.script
	f.mu.Unlock()
	if script != nil && script(n, w, r) {
		return
	}
	w.Header().Set("ETag", `"e1"`)
	if r.Header.Get("If-None-Match") == `"e1"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(f.record)
}

func (f *fakeObject) setScript(script func(n int, w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	f.script = script
	f.mu.Unlock()
}

func (f *fakeObject) take() (int, []*http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, seen := f.gets, f.seen
	f.gets, f.seen = 0, nil
	return n, seen
}

func writeS3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>said the fake</Message></Error>`)
}

func (f *fakeObject) open(t *testing.T, creds aws.CredentialsProvider, opts Options) *Store {
	t.Helper()
	if creds == nil {
		creds = credentials.NewStaticCredentialsProvider("fakeid", fakeSecret, "")
	}
	opts.Bucket = "bbb"
	s, err := Open(testClient(t, testOptions{endpoint: f.srv.URL, credentials: creds}), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (f *fakeObject) mustRead(t *testing.T, s *Store) {
	t.Helper()
	o, err := s.Get(t.Context(), fakeKey)
	if err != nil || string(o.Body) != f.body {
		t.Fatalf("Get = %v, %v; want %q", o, err, f.body)
	}
}

// noCredentialIn fails when text carries the presigned URL or a secret.
func noCredentialIn(t *testing.T, text string) {
	t.Helper()
	for _, bad := range []string{"X-Amz-Signature", "X-Amz-Credential", "fakeid", fakeSecret, "127.0.0.1"} {
		if strings.Contains(text, bad) {
			t.Errorf("error %q carries %q", text, bad)
		}
	}
}

// TestReadGetPresignedAndReused: a read's GET is a presigned URL (no
// Authorization header), with If-None-Match unsigned and no transparent
// gzip; the URL is presigned once and reused until presignReuse, then
// presigned again.
func TestReadGetPresignedAndReused(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, nil, Options{ReadCache: 1 << 20})
	clock := time.Now()
	s.d.getter.now = func() time.Time { return clock }

	f.mustRead(t, s)
	f.mustRead(t, s)
	f.mustRead(t, s)
	n, seen := f.take()
	if n != 3 {
		t.Fatalf("%d GETs for 3 reads, want 3", n)
	}
	for i, r := range seen {
		if r.Header.Get("Authorization") != "" || r.URL.Query().Get("X-Amz-Signature") == "" {
			t.Errorf("GET %d: Authorization %q, query %q; want a presigned URL and no Authorization header", i, r.Header.Get("Authorization"), r.URL.RawQuery)
		}
		if got := r.Header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("GET %d: Accept-Encoding %q, want identity", i, got)
		}
		if strings.Contains(strings.ToLower(r.URL.Query().Get("X-Amz-SignedHeaders")), "if-none-match") {
			t.Errorf("GET %d signs If-None-Match", i)
		}
	}
	if inm := seen[1].Header.Get("If-None-Match"); inm != `"e1"` {
		t.Errorf("second GET: If-None-Match %q, want the cached ETag", inm)
	}
	if seen[0].URL.RawQuery != seen[2].URL.RawQuery {
		t.Error("the URL was not reused")
	}
	if got := s.d.getter.presigned.Load(); got != 1 {
		t.Errorf("%d URLs presigned for 3 reads of one key, want 1", got)
	}
	clock = clock.Add(presignReuse)
	f.mustRead(t, s)
	if got := s.d.getter.presigned.Load(); got != 2 {
		t.Errorf("%d URLs presigned after the reuse window, want 2", got)
	}
}

// expiring is a credentials provider whose credentials expire at until.
type expiring struct{ until time.Time }

func (e expiring) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "fakeid", SecretAccessKey: fakeSecret, SessionToken: "tok", CanExpire: true, Expires: e.until}, nil
}

// TestReadGetURLOutlivesNoCredentials: a URL is not reused once its
// credentials are about to expire.
func TestReadGetURLOutlivesNoCredentials(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, expiring{until: time.Now().Add(3 * time.Minute)}, Options{})
	f.mustRead(t, s)
	p, ok := s.d.getter.urls["t1/report!/x!"]
	if !ok {
		t.Fatal("no URL cached")
	}
	if limit := time.Now().Add(3*time.Minute - credsMargin); p.until.After(limit) {
		t.Errorf("URL reused until %v, after its credentials' expiry minus %v (%v)", p.until, credsMargin, limit)
	}
}

// TestReadGetRetriesTransient: a GET that fails with 500s is sent again,
// at most getAttempts times in all; the error names the failure without
// the URL.
func TestReadGetRetriesTransient(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, nil, Options{})
	f.setScript(func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n <= 2 {
			writeS3Error(w, http.StatusInternalServerError, "InternalError")
			return true
		}
		return false
	})
	f.mustRead(t, s)
	if n, _ := f.take(); n != 3 {
		t.Errorf("%d GETs, want 3 (two 500s, then 200)", n)
	}

	f.setScript(func(n int, w http.ResponseWriter, r *http.Request) bool {
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown")
		return true
	})
	_, err := s.Get(t.Context(), fakeKey)
	if err == nil || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("Get from a server answering 503 = %v, want a backend error naming SlowDown", err)
	}
	noCredentialIn(t, err.Error())
	if n, _ := f.take(); n != getAttempts {
		t.Errorf("%d GETs, want %d", n, getAttempts)
	}
}

// TestReadGetPresignsAgainOn403: a reused URL answered 403 is presigned
// again once; a fresh URL answered 403 is an error at once.
func TestReadGetPresignsAgainOn403(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, nil, Options{})
	f.mustRead(t, s)
	f.take()
	f.setScript(func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			writeS3Error(w, http.StatusForbidden, "AccessDenied")
			return true
		}
		return false
	})
	f.mustRead(t, s)
	if n, _ := f.take(); n != 2 || s.d.getter.presigned.Load() != 2 {
		t.Errorf("%d GETs and %d presigns, want 2 and 2", n, s.d.getter.presigned.Load())
	}
	f.setScript(func(n int, w http.ResponseWriter, r *http.Request) bool {
		writeS3Error(w, http.StatusForbidden, "AccessDenied")
		return true
	})
	_, err := s.Get(t.Context(), fakeKey)
	if err == nil || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("Get refused by the server = %v, want a backend error naming AccessDenied", err)
	}
	if n, _ := f.take(); n != 2 {
		t.Errorf("%d GETs, want 2 (the reused URL, then one fresh)", n)
	}
}

// TestReadGetErrors: the plain GET's answers classify as the SDK's did.
func TestReadGetErrors(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, nil, Options{})
	for _, c := range []struct {
		name     string
		answer   func(w http.ResponseWriter)
		notFound bool
	}{
		{"NoSuchKey", func(w http.ResponseWriter) { writeS3Error(w, http.StatusNotFound, "NoSuchKey") }, true},
		{"404 without a body", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) }, true},
		{"NoSuchBucket", func(w http.ResponseWriter) { writeS3Error(w, http.StatusNotFound, "NoSuchBucket") }, false},
		{"400", func(w http.ResponseWriter) { writeS3Error(w, http.StatusBadRequest, "InvalidRequest") }, false},
	} {
		f.setScript(func(_ int, w http.ResponseWriter, _ *http.Request) bool { c.answer(w); return true })
		_, err := s.Get(t.Context(), fakeKey)
		if got := errors.Is(err, store.ErrNotFound); got != c.notFound || err == nil {
			t.Errorf("%s: Get = %v; want ErrNotFound %v", c.name, err, c.notFound)
		}
		if n, _ := f.take(); n != 1 {
			t.Errorf("%s: %d GETs, want 1 (not retried)", c.name, n)
		}
	}
}

// TestReadGetTransportErrorHidesURL: a connection dropped before the
// answer is retried, and the final error wraps the transport's failure but
// not the *url.Error text, which holds the presigned URL.
func TestReadGetTransportErrorHidesURL(t *testing.T) {
	f := newFakeObject(t)
	s := f.open(t, nil, Options{})
	drop := func(n int, w http.ResponseWriter, r *http.Request) bool {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}
	f.setScript(func(n int, w http.ResponseWriter, r *http.Request) bool { return n == 1 && drop(n, w, r) })
	f.mustRead(t, s)
	if n, _ := f.take(); n < 2 || n > 3 {
		t.Errorf("%d GETs, want 2 (dropped, then 200; 3 if net/http resent on its reused connection)", n)
	}
	f.setScript(drop)
	_, err := s.Get(t.Context(), fakeKey)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get over dropped connections = %v, want a backend error", err)
	}
	noCredentialIn(t, err.Error())
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("error %q does not say what failed", err)
	}
	// net/http itself sends a GET again once when a kept-alive connection
	// it reused closes without an answer; a new connection it does not.
	if n, _ := f.take(); n < getAttempts || n > getAttempts+1 {
		t.Errorf("%d GETs, want %d (or one more, net/http's own on the reused connection)", n, getAttempts)
	}
}
