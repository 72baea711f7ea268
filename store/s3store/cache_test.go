package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/storetest"
)

func TestReadCacheLRU(t *testing.T) {
	c := newReadCache(8 * 1000)
	entry := func(key string, n int) *cached {
		return &cached{key: key, etag: `"` + key + `"`, body: bytes.Repeat([]byte("x"), n)}
	}
	c.put(entry("a", 500))
	c.put(entry("b", 500))
	c.put(entry("big", 1000)) // over an eighth of the budget (with overhead): not cached
	if c.get("big") != nil {
		t.Error("an object over the entry bound was cached")
	}
	c.put(&cached{key: "noetag", body: []byte("x")})
	if c.get("noetag") != nil {
		t.Error("an object without an ETag was cached")
	}
	// Fill past the budget: the least recently used go first ("a" was
	// used after "b", so "b" goes).
	c.get("a")
	for i := range 12 {
		c.put(entry("f"+string(rune('a'+i)), 500))
		if n, used := c.stats(); used > c.max {
			t.Fatalf("%d objects use %d bytes, over the budget %d", n, used, c.max)
		}
	}
	if c.get("b") != nil {
		t.Error("the least recently used object survived eviction")
	}
	// A replacement is accounted once.
	c.put(entry("fl", 100))
	c.put(entry("fl", 200))
	n, used := c.stats()
	var sum int64
	for _, e := range c.m {
		sum += e.Value.(*cached).size()
	}
	if sum != used || n != len(c.m) {
		t.Errorf("stats = %d objects, %d bytes; the entries hold %d, %d", n, used, len(c.m), sum)
	}
	c.remove("fl")
	if c.get("fl") != nil {
		t.Error("remove left the object")
	}
	var nilCache *readCache
	nilCache.put(entry("x", 1))
	if nilCache.get("x") != nil || newReadCache(0) != nil {
		t.Error("a zero budget should mean no cache")
	}
}

func TestConformanceWithReadCache(t *testing.T) {
	base := serverOptions(t)
	storetest.Run(t, func(t *testing.T) store.Driver {
		opts := base
		opts.Prefix = uniquePrefix(t)
		opts.ReadCache = 1 << 20
		return openTest(t, opts).d
	})
}

// statusCounter counts the responses to GETs by status.
type statusCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[int]int
}

func (c *statusCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && !strings.Contains(req.URL.RawQuery, "list-type") {
		c.mu.Lock()
		c.n[resp.StatusCode]++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *statusCounter) take() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[int]int{}
	return n
}

// TestReadCacheScaleOut: an instance that caches never serves what
// another instance replaced or deleted, and answers unchanged objects
// from the cache after a 304.
func TestReadCacheScaleOut(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	base := serverOptions(t)
	base.Prefix = uniquePrefix(t)
	counter := &statusCounter{n: map[int]int{}}
	cachedOpts := base
	cachedOpts.ReadCache = 1 << 20
	cachedOpts.wrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	a := openTest(t, cachedOpts) // reads, with a cache
	b := openTest(t, base)       // writes, another instance
	ctx := t.Context()
	k := store.MustKey("t1", "report", "shared")
	put := func(body string) {
		t.Helper()
		now := time.Now()
		o := &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
			Created: now, Modified: now, Visibility: store.Private}, Body: []byte(body)}
		if _, _, err := b.Put(ctx, o, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(body string, statuses map[int]int) {
		t.Helper()
		o, err := a.Get(ctx, k)
		if err != nil || string(o.Body) != body || o.SHA256 != store.Sum([]byte(body)) {
			t.Fatalf("Get = %v, %v; want %q", o, err, body)
		}
		if got := counter.take(); !maps.Equal(got, statuses) {
			t.Fatalf("GET statuses %v, want %v", got, statuses)
		}
		o.Body[0] = '!' // the caller's copy, not the cache's
	}
	put("first")
	want("first", map[int]int{200: 1})
	want("first", map[int]int{304: 1})
	want("first", map[int]int{304: 1})
	put("second") // same length, new body
	want("second", map[int]int{200: 1})
	want("second", map[int]int{304: 1})
	put("second") // same body, a new write: a new ETag
	want("second", map[int]int{200: 1})

	if err := b.Delete(ctx, k, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after another instance deleted = %v, want ErrNotFound", err)
	}
	if n, _ := a.d.cache.stats(); n != 0 {
		t.Errorf("the deleted object is still cached (%d objects)", n)
	}
	counter.take()
	put("third")
	want("third", map[int]int{200: 1})
	want("third", map[int]int{304: 1})
}

// BenchmarkGet measures one Get of a 256 KiB object from the S3 server,
// without and with the read cache (a conditional GET answered 304).
func BenchmarkGet(b *testing.B) {
	opts := serverOptions(b)
	for _, cache := range []int64{0, 64 << 20} {
		name := "nocache"
		if cache > 0 {
			name = "cache"
		}
		b.Run(name+"/256KiB", func(b *testing.B) {
			o := opts
			o.Prefix = uniquePrefix(b)
			o.ReadCache = cache
			s, err := openOptions(b, o)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			defer removeAll(context.Background(), b, s)
			k := store.MustKey("t1", "report", "bench")
			body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
			now := time.Now()
			obj := &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum(body),
				Created: now, Modified: now, Visibility: store.Private}, Body: body}
			if _, _, err := s.Put(b.Context(), obj, store.Cond{}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(b.Context(), k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// as412 turns a 304 into the 412 some servers send for a GET whose
// If-None-Match matches, and counts conditional GETs.
type as412 struct {
	next        http.RoundTripper
	mu          sync.Mutex
	conditional int
}

func (a *as412) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.Header.Get("If-None-Match") != "" {
		a.mu.Lock()
		a.conditional++
		a.mu.Unlock()
	}
	resp, err := a.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusNotModified {
		return resp, err
	}
	resp.Body.Close()
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`
	resp.StatusCode, resp.Status = http.StatusPreconditionFailed, "412 Precondition Failed"
	resp.Header.Set("Content-Type", "application/xml")
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(strings.NewReader(body))
	return resp, nil
}

// TestReadCacheServerWithout304: a server that answers 412 instead of 304
// still serves every read, and the store stops sending conditional GETs.
func TestReadCacheServerWithout304(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	opts := serverOptions(t)
	opts.ReadCache = 1 << 20
	rt := &as412{}
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper { rt.next = next; return rt }
	s := openTest(t, opts)
	ctx := t.Context()
	k := store.MustKey("t1", "report", "no304")
	now := time.Now()
	body := []byte("body")
	o := &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: 4, SHA256: store.Sum(body),
		Created: now, Modified: now, Visibility: store.Private}, Body: body}
	if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		got, err := s.Get(ctx, k)
		if err != nil || string(got.Body) != "body" {
			t.Fatalf("Get %d = %v, %v", i, got, err)
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.conditional != 1 {
		t.Errorf("%d conditional GETs, want 1 (then none)", rt.conditional)
	}
}

// bodyCounter counts GET requests and the response body bytes the driver
// reads off the connection.
type bodyCounter struct {
	next       http.RoundTripper
	gets, read atomic.Int64
}

func (c *bodyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && !strings.Contains(req.URL.RawQuery, "list-type") {
		c.gets.Add(1)
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestGetIfDecidesBeforeTheBody: GetIf takes one GET whether it serves or
// refuses the object, and a refused object's body is not downloaded.
func TestGetIfDecidesBeforeTheBody(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	opts := serverOptions(t)
	opts.Prefix = uniquePrefix(t)
	c := &bodyCounter{}
	opts.wrapTransport = func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }
	s := openTest(t, opts)
	ctx := t.Context()
	k := store.MustKey("t1", "report", "big")
	body := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16) // 4 MiB
	now := time.Now()
	o := &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum(body),
		Created: now, Modified: now, Visibility: store.Private}, Body: body}
	if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	c.gets.Store(0)
	c.read.Store(0)
	_, err := store.GetIf(ctx, s, k, func(m *store.Meta) bool { return m.Visibility == store.Public })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetIf(public only) of a private object = %v, want ErrNotFound", err)
	}
	if g, n := c.gets.Load(), c.read.Load(); g != 1 || n > 256<<10 {
		t.Fatalf("refusing took %d GETs and read %d body bytes; want 1 GET and at most 256 KiB of a 4 MiB object", g, n)
	}
	c.gets.Store(0)
	got, err := store.GetIf(ctx, s, k, func(m *store.Meta) bool { return m.Visibility == store.Private })
	if err != nil || !bytes.Equal(got.Body, body) {
		t.Fatalf("GetIf(private) = %v; want the body", err)
	}
	if g := c.gets.Load(); g != 1 {
		t.Fatalf("serving took %d GETs, want 1", g)
	}
}
