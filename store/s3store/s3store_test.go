package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/storetest"
)

// testOptions are Options plus what a test needs to build the client Open
// takes (production builds it in cmd/resourced).
type testOptions struct {
	Options
	endpoint    string
	credentials aws.CredentialsProvider // nil: the standard chain
	// wrapTransport, when set, wraps the HTTP transport; tests use it to
	// lose responses.
	wrapTransport func(http.RoundTripper) http.RoundTripper
}

// testClient builds the S3 client of o: path-style, us-east-1, o.endpoint.
func testClient(t testing.TB, o testOptions) *s3.Client {
	t.Helper()
	load := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion("us-east-1")}
	if o.wrapTransport != nil {
		load = append(load, awsconfig.WithHTTPClient(&http.Client{
			Transport:     o.wrapTransport(awshttp.NewBuildableClient().GetTransport()),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}))
	}
	if o.credentials != nil {
		load = append(load, awsconfig.WithCredentialsProvider(o.credentials))
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), load...)
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.UsePathStyle = true
		so.BaseEndpoint = aws.String(o.endpoint)
	})
}

// openOptions is Open with the client of o.
func openOptions(t testing.TB, o testOptions) (*Store, error) {
	return Open(testClient(t, o), o.Options)
}

// serverOptions returns testOptions for the S3 server named by the
// environment, or skips the test when there is none (fails under
// RESOURCED_REQUIRE_S3=1). Credentials come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY through the standard chain.
func serverOptions(t testing.TB) testOptions {
	t.Helper()
	endpoint := os.Getenv("RESOURCED_TEST_S3_ENDPOINT")
	if endpoint == "" {
		const msg = `S3 tests need a server: eval "$(scripts/versitygw.sh start)" then rerun`
		if os.Getenv("RESOURCED_REQUIRE_S3") == "1" {
			t.Fatal(msg + " (RESOURCED_REQUIRE_S3=1)")
		}
		t.Skip(msg)
	}
	bucket := os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if bucket == "" {
		t.Fatal("RESOURCED_TEST_S3_ENDPOINT is set but RESOURCED_TEST_S3_BUCKET is not")
	}
	return testOptions{
		Options:  Options{Bucket: bucket, Prefix: uniquePrefix(t)},
		endpoint: endpoint,
	}
}

// uniquePrefix returns a key prefix no other test uses.
func uniquePrefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	return "rdtest/" + hex.EncodeToString(b[:]) + "-" + name
}

// openTest opens a Store on opts and removes its objects when the test
// ends (the store may be closed by then, so the raw client does it).
func openTest(t *testing.T, opts testOptions) *Store {
	t.Helper()
	s, err := openOptions(t, opts)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		removeAll(ctx, t, s)
	})
	return s
}

func removeAll(ctx context.Context, t testing.TB, s *Store) {
	var token *string
	for {
		out, err := s.d.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(s.d.bucket), Prefix: aws.String(s.d.base), ContinuationToken: token,
		})
		if _, code := apiError(err); code == "NoSuchBucket" {
			return
		}
		if err != nil {
			t.Errorf("cleanup: list %s: %v", s.d.base, err)
			return
		}
		for _, o := range out.Contents {
			if _, err := s.d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.d.bucket), Key: o.Key}); err != nil {
				t.Errorf("cleanup: delete %s: %v", aws.ToString(o.Key), err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return
		}
		token = out.NextContinuationToken
	}
}

func TestConformance(t *testing.T) {
	base := serverOptions(t)
	storetest.Run(t, func(t *testing.T) store.Driver {
		opts := base
		opts.Prefix = uniquePrefix(t)
		return openTest(t, opts).d
	})
}

// TestServerConditionals records what the server does with the
// conditional requests this package relies on, with the raw client.
func TestServerConditionals(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	c, bucket := s.d.client, aws.String(s.d.bucket)
	key := aws.String(s.d.base + "probe")
	put := func(body string, edit func(*s3.PutObjectInput)) (string, error) {
		in := &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader(body)}
		if edit != nil {
			edit(in)
		}
		out, err := c.PutObject(ctx, in)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	wantStatus := func(op string, err error, status int) {
		t.Helper()
		got, code := apiError(err)
		if got != status {
			t.Errorf("%s = %v (status %d, code %q), want status %d", op, err, got, code, status)
		} else {
			t.Logf("%s: status %d, code %q", op, got, code)
		}
	}

	// If-None-Match: * creates once.
	etag1, err := put("one", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
	if err != nil {
		t.Fatalf("PutObject(If-None-Match: *) of a new key = %v", err)
	}
	_, err = put("two", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
	wantStatus("PutObject(If-None-Match: *) of an existing key", err, http.StatusPreconditionFailed)

	// If-Match on PutObject.
	_, err = put("two", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0123456789abcdef0123456789abcdef"`) })
	wantStatus("PutObject(If-Match: another ETag)", err, http.StatusPreconditionFailed)
	etag2, err := put("two", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(etag1) })
	if err != nil {
		t.Fatalf("PutObject(If-Match: current ETag) = %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(s.d.base + "absent"), Body: strings.NewReader("x"), IfMatch: aws.String(etag1)})
	if err == nil {
		t.Errorf("PutObject(If-Match) of a missing key = nil, want an error")
	} else {
		status, code := apiError(err)
		t.Logf("PutObject(If-Match) of a missing key: status %d, code %q (isConflict %v)", status, code, isConflict(err))
		if !isConflict(err) {
			t.Errorf("PutObject(If-Match) of a missing key = %v, not a conflict for this package", err)
		}
	}

	// A range beyond the end returns what there is.
	buf, _, err := s.d.getRange(ctx, *key, headProbe, "")
	if err != nil || string(buf) != "two" {
		t.Errorf("GetObject(Range 0-%d) of 3 bytes = %q, %v; want \"two\"", headProbe-1, buf, err)
	}
	_, _, err = s.d.getRange(ctx, *key, headProbe, etag1)
	wantStatus("GetObject(If-Match: old ETag)", err, http.StatusPreconditionFailed)

	// If-Match on DeleteObject.
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key, IfMatch: aws.String(etag1)})
	wantStatus("DeleteObject(If-Match: old ETag)", err, http.StatusPreconditionFailed)
	if _, _, err := s.d.getRange(ctx, *key, 10, ""); err != nil {
		t.Errorf("object gone after a failed DeleteObject(If-Match): %v", err)
	}
	if _, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key, IfMatch: aws.String(etag2)}); err != nil {
		t.Errorf("DeleteObject(If-Match: current ETag) = %v", err)
	}
	if _, _, err := s.d.getRange(ctx, *key, 10, ""); !isMissing(err) {
		t.Errorf("GetObject after DeleteObject(If-Match) = %v, want a missing object", err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key, IfMatch: aws.String(etag2)})
	status, code := apiError(err)
	t.Logf("DeleteObject(If-Match) of a missing key: err %v (status %d, code %q)", err, status, code)
}

// loser makes the transport lose the response of the first request that
// matches: the server applies the request, the client sees a connection
// reset, and the SDK retries.
type loser struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	// after, when set, runs once the response is lost, before the SDK
	// retries: another writer acting in between.
	after func()

	mu   sync.Mutex
	lost int
}

func (l *loser) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	l.mu.Lock()
	lose := l.lost == 0 && l.match(req) && resp.StatusCode/100 == 2
	if lose {
		l.lost++
	}
	l.mu.Unlock()
	if !lose {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if l.after != nil {
		l.after()
	}
	return nil, errors.New("injected: connection reset by peer after the server applied the request")
}

func (l *loser) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// TestLostResponse checks the rule of CONTRACT §6: a 412 after an SDK retry
// of our own applied write is our write, not a conflict.
func TestLostResponse(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	base := serverOptions(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	obj := func(k store.Key, body string) *store.Object {
		return &store.Object{
			Meta: store.Meta{
				Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
				Created: now, Modified: now, Listed: true, Visibility: store.Private,
			},
			Body: []byte(body),
		}
	}
	type step func(t *testing.T, s *Store, k store.Key)
	tests := []struct {
		name    string
		method  string
		prepare step // runs before responses are lost
		run     step
	}{
		{"create", http.MethodPut, nil, func(t *testing.T, s *Store, k store.Key) {
			m, replaced, err := s.Put(t.Context(), obj(k, "mine"), store.CreateOnly())
			if err != nil || replaced {
				t.Fatalf("Put(IfNone) with a lost response = %v, replaced %v; want nil, false", err, replaced)
			}
			checkStat(t, s, k, m)
		}},
		{"replace", http.MethodPut, func(t *testing.T, s *Store, k store.Key) {
			if _, _, err := s.Put(t.Context(), obj(k, "old"), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store, k store.Key) {
			m, replaced, err := s.Put(t.Context(), obj(k, "new"), store.Matching(store.Sum([]byte("old"))))
			if err != nil || !replaced {
				t.Fatalf("Put(IfMatch) with a lost response = %v, replaced %v; want nil, true", err, replaced)
			}
			checkStat(t, s, k, m)
		}},
		{"always", http.MethodPut, func(t *testing.T, s *Store, k store.Key) {
			if _, _, err := s.Put(t.Context(), obj(k, "old"), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store, k store.Key) {
			m, replaced, err := s.Put(t.Context(), obj(k, "new"), store.Cond{})
			if err != nil || !replaced {
				t.Fatalf("Put(Always) with a lost response = %v, replaced %v; want nil, true", err, replaced)
			}
			checkStat(t, s, k, m)
		}},
		{"delete", http.MethodPut, func(t *testing.T, s *Store, k store.Key) {
			if _, _, err := s.Put(t.Context(), obj(k, "old"), store.CreateOnly()); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store, k store.Key) {
			if err := s.Delete(t.Context(), k, store.Matching(store.Sum([]byte("old")))); err != nil {
				t.Fatalf("Delete(IfMatch) with a lost response = %v, want nil", err)
			}
			if _, err := s.Stat(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Stat after Delete = %v, want %v", err, store.ErrNotFound)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := base
			opts.Prefix = uniquePrefix(t)
			opts.Now = func() time.Time { return now }
			var armed bool
			var armMu sync.Mutex
			l := &loser{match: func(req *http.Request) bool {
				armMu.Lock()
				defer armMu.Unlock()
				return armed && req.Method == tc.method
			}}
			opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
				l.next = next
				return l
			}
			s := openTest(t, opts)
			k := store.MustKey("t1", "report", "lost/"+tc.name)
			if tc.prepare != nil {
				tc.prepare(t, s, k)
			}
			armMu.Lock()
			armed = true
			armMu.Unlock()
			tc.run(t, s, k)
			if n := l.count(); n != 1 {
				t.Errorf("%d responses were lost, want 1: the test did not exercise a retry", n)
			}
		})
	}
}

func checkStat(t *testing.T, s *Store, k store.Key, want store.Meta) {
	t.Helper()
	got, err := s.Stat(t.Context(), k)
	if err != nil {
		t.Fatalf("Stat(%s) = %v", k, err)
	}
	if diff := cmp.Diff(want, got, cmp.Transformer("Key", store.Key.String)); diff != "" {
		t.Errorf("Put meta differs from Stat (-put +stat):\n%s", diff)
	}
}

// TestSameBodyIsNotOurs checks that an identical body written by another
// Put is a conflict: the write id, not the hash, identifies our write.
func TestSameBodyIsNotOurs(t *testing.T) {
	s := openTest(t, serverOptions(t))
	k := store.MustKey("t1", "report", "same")
	o := &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: 4, SHA256: store.Sum([]byte("same"))}, Body: []byte("same")}
	if _, _, err := s.Put(t.Context(), o, store.CreateOnly()); err != nil {
		t.Fatalf("first Put(IfNone) = %v", err)
	}
	if _, _, err := s.Put(t.Context(), o, store.CreateOnly()); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Errorf("second Put(IfNone) of the same body = %v, want %v", err, store.ErrPreconditionFailed)
	}
}

// TestLongHeader stores metadata longer than the first header read.
func TestLongHeader(t *testing.T) {
	s := openTest(t, serverOptions(t))
	k := store.MustKey("t1", "report", "long")
	body := bytes.Repeat([]byte("b"), 10000)
	o := &store.Object{Meta: store.Meta{
		Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum(body),
		Title: strings.Repeat("é", 512), Description: strings.Repeat("✓", 4096), Listed: true,
	}, Body: body}
	m, _, err := s.Put(t.Context(), o, store.CreateOnly())
	if err != nil {
		t.Fatalf("Put = %v", err)
	}
	checkStat(t, s, k, m)
	p, err := s.List(t.Context(), store.ListQuery{Tenant: "t1", Limit: 10})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("List = %d items, %v; want 1", len(p.Items), err)
	}
	if p.Items[0].Description != o.Description {
		t.Errorf("List: description of %d bytes, want %d", len(p.Items[0].Description), len(o.Description))
	}
	// A replace bound to the hash reads the long header too.
	o2 := *o
	o2.Title = "short"
	if _, replaced, err := s.Put(t.Context(), &o2, store.Matching(o.SHA256)); err != nil || !replaced {
		t.Errorf("Put(IfMatch) over a long header = %v, replaced %v", err, replaced)
	}
}

// TestKeyTooLong: S3 keys are at most 1024 bytes.
func TestKeyTooLong(t *testing.T) {
	s := openTest(t, serverOptions(t))
	k := store.MustKey("t1", "report", strings.Repeat("a/", 511)+"z")
	body := []byte("x")
	o := &store.Object{Meta: store.Meta{Key: k, Size: 1, SHA256: store.Sum(body)}, Body: body}
	if _, _, err := s.Put(t.Context(), o, store.CreateOnly()); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put of a key too long for S3 = %v, want %v", err, store.ErrInvalidKey)
	}
	long := store.MustKey("t1", "report", strings.Repeat("b", 300))
	o = &store.Object{Meta: store.Meta{Key: long, Size: 1, SHA256: store.Sum(body)}, Body: body}
	if _, _, err := s.Put(t.Context(), o, store.CreateOnly()); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put of a 300-byte segment = %v, want %v", err, store.ErrInvalidKey)
	}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a key too long for S3 = %v, want %v", err, store.ErrNotFound)
	}
}

func TestPingMissingBucket(t *testing.T) {
	opts := serverOptions(t)
	opts.Bucket = "no-such-bucket-" + strings.ToLower(hex.EncodeToString([]byte(t.Name()[:4])))
	s := openTest(t, opts)
	err := s.Ping(t.Context())
	if err == nil {
		t.Fatal("Ping of a missing bucket = nil, want an error")
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Errorf("Ping of a missing bucket = %v, want a backend failure, not %v", err, store.ErrNotFound)
	}
	if _, err := s.Get(t.Context(), store.MustKey("t1", "report", "x")); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get in a missing bucket = %v, want a backend failure, not %v", err, store.ErrNotFound)
	}
}
