package s3store

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

// TestPutPlainHTTP: against a real S3 server, a save's object PUT is the
// plain signed PUT (the server checks the signature and Content-MD5), and
// create-only, If-Match replace and an over-sized record (the SDK's PUT)
// keep their meaning.
func TestPutPlainHTTP(t *testing.T) {
	s := openTest(t, serverOptions(t))
	ctx := t.Context()
	k := store.MustKey("t1", "report", "fast/a.b~c_d-e")
	m, _, err := s.Put(ctx, usageObj(k, 100), store.CreateOnly())
	if err != nil {
		t.Fatal(err)
	}
	// objectPUTs is the plain PUTs of objects: all but the usage PUTs.
	objectPUTs := func() int64 {
		s.d.flushUsage(10 * time.Second)
		return s.d.putter.sent.Load() - s.d.usage.puts.Load()
	}
	if n := objectPUTs(); n != 1 || s.d.usage.puts.Load() == 0 {
		t.Fatalf("%d plain object PUTs and %d usage PUTs, want 1 and some (base %q)", n, s.d.usage.puts.Load(), s.d.putter.base)
	}
	if o, err := s.Get(ctx, k); err != nil || o.SHA256 != m.SHA256 {
		t.Fatalf("Get after the plain PUT = %v, %v", o, err)
	}
	if _, _, err := s.Put(ctx, usageObj(k, 5), store.CreateOnly()); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("second create-only Put = %v, want %v", err, store.ErrPreconditionFailed)
	}
	if _, _, err := s.Put(ctx, usageObj(k, 7), store.Cond{Kind: store.IfMatch, SHA256: m.SHA256}); err != nil {
		t.Fatalf("If-Match replace = %v", err)
	}
	if _, _, err := s.Put(ctx, usageObj(k, 9), store.Cond{Kind: store.IfMatch, SHA256: m.SHA256}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("stale If-Match replace = %v, want %v", err, store.ErrPreconditionFailed)
	}
	before := objectPUTs()
	big := store.MustKey("t1", "report", "fast/big")
	if _, _, err := s.Put(ctx, usageObj(big, maxFastPut+1), store.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	if n := objectPUTs() - before; n != 0 {
		t.Errorf("a record over maxFastPut went the plain way (%d PUTs)", n)
	}
	wantUsage(t, s, "t1", store.Usage{Bytes: 7 + maxFastPut + 1, Objects: 2})
}

// TestPutPlainRetries: a 503 is sent again; an answer lost after the
// object landed is sent again, fails its If-None-Match, and the write
// finds its own write id in the object: a success, stored once. An error
// never carries the URL.
func TestPutPlainRetries(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // a wrapped transport takes none
	base := serverOptions(t)
	var mode atomic.Value // "503", "drop" or ""
	mode.Store("")
	var objectPUTs atomic.Int32
	opts := base
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodPut || strings.Contains(req.URL.Path, "!usage") || !strings.Contains(req.URL.Path, "retry") {
				return next.RoundTrip(req)
			}
			n := objectPUTs.Add(1)
			switch mode.Load() {
			case "503":
				if n == 1 {
					return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{},
						Body: io.NopCloser(strings.NewReader(`<Error><Code>SlowDown</Code><Message>slow</Message></Error>`)), Request: req}, nil
				}
			case "drop":
				if n == 1 {
					resp, err := next.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return nil, errors.New("connection reset by the test")
				}
			case "always":
				return nil, errors.New("connection reset by the test")
			}
			return next.RoundTrip(req)
		})
	}
	s, err := openOptions(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for i, m := range []string{"503", "drop"} {
		mode.Store(m)
		objectPUTs.Store(0)
		k := store.MustKey("t1", "report", "retry/"+m)
		if _, _, err := s.Put(ctx, usageObj(k, 10+i), store.CreateOnly()); err != nil {
			t.Fatalf("%s: Put = %v", m, err)
		}
		if n := objectPUTs.Load(); n != 2 {
			t.Errorf("%s: %d object PUTs, want 2", m, n)
		}
		if o, err := s.Get(ctx, k); err != nil || !bytes.Equal(o.Body, usageObj(k, 10+i).Body) {
			t.Fatalf("%s: Get = %v, %v", m, o, err)
		}
	}
	mode.Store("always")
	objectPUTs.Store(0)
	_, _, err = s.Put(ctx, usageObj(store.MustKey("t1", "report", "retry/never"), 3), store.CreateOnly())
	if err == nil || objectPUTs.Load() != putAttempts {
		t.Fatalf("Put through a broken connection = %v after %d PUTs, want an error after %d", err, objectPUTs.Load(), putAttempts)
	}
	for _, bad := range []string{"127.0.0.1", "X-Amz-", "Signature"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error %q carries %q", err, bad)
		}
	}
	// The failed write may have landed (no answer): its reservation
	// stays, an over-count, until a reconcile finds it stale.
	mode.Store("")
	wantUsage(t, s, "t1", store.Usage{Bytes: 24, Objects: 3})
}

// TestPutAny2xx: a server (or a proxy in front of it) that answers a PUT
// that stored the object with another 2xx than 200 (201, 204): the save
// succeeds and counts, as with the SDK's PutObject (it failed and
// released its reservation before: an under-count).
func TestPutAny2xx(t *testing.T) {
	for _, code := range []int{http.StatusNoContent, http.StatusCreated} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Setenv("AWS_CA_BUNDLE", "")
			opts := serverOptions(t)
			opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := next.RoundTrip(req)
					if err == nil && req.Method == http.MethodPut && resp.StatusCode == http.StatusOK {
						etag := resp.Header.Get("ETag")
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						resp.StatusCode, resp.Status = code, http.StatusText(code)
						resp.Header = http.Header{"Etag": {etag}}
						resp.Body = io.NopCloser(bytes.NewReader(nil))
					}
					return resp, err
				})
			}
			s, err := openOptions(t, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			k := store.MustKey("t1", "r", "two")
			if _, _, err := s.Put(t.Context(), usageObj(k, 10), store.CreateOnly()); err != nil {
				t.Fatalf("Put answered %d = %v, want success", code, err)
			}
			s.d.flushUsage(10 * time.Second)
			wantUsage(t, s, "t1", store.Usage{Bytes: 10, Objects: 1})
		})
	}
}
