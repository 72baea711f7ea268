package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/store/s3store"
)

// schemes are the built-in defaults of configs/resourced.example.yaml.
var schemes = []server.Scheme{
	{Name: "report", Kind: server.KindReport, TTL: 0, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: 16 << 20},
	{Name: "search", Kind: server.KindSearch, TTL: time.Hour, Retention: 24 * time.Hour, MaxRetention: 720 * time.Hour, MaxBytes: 16 << 20},
}

// testServer is a resourced server.Server on 127.0.0.1 in this process.
type testServer struct {
	URL   string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	Token string // bearer token for tenant "default" with both scopes; "" without auth
	Store store.Backend
	// Handler is the server itself, for benchmarks that drive it without
	// a connection (hotpath_test.go, BenchmarkReadHandler).
	Handler http.Handler
}

// startServer serves a server.Server on a loopback port until the test
// ends. backend is "memory" or "bbolt" (in a temporary directory); with
// jwt, callers authenticate with an HS256 token as `resourced serve` with
// its dev key verifies them, otherwise auth is none.
func startServer(tb testing.TB, backend string, jwt bool) *testServer {
	tb.Helper()
	var st store.Backend
	switch backend {
	case "memory":
		st = memstore.New(memstore.Options{})
	case "bbolt":
		bs, err := boltstore.Open(filepath.Join(tb.TempDir(), "resourced.db"), boltstore.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		st = bs
	case "s3":
		st = openS3(tb)
	default:
		tb.Fatalf("unknown backend %q", backend)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ts := &testServer{URL: base + "/mcp", Store: st}
	opts := server.Options{Store: st, Schemes: schemes, BaseURL: base, Backend: backend, FormCache: config.DefaultCacheMaxBytes,
		// As bench/run.sh: capacity, not the per-tenant fairness policy.
		Budgets: server.Budgets{SaveRate: -1, MaxInflight: -1}}
	if jwt {
		key := make([]byte, 32)
		rand.Read(key)
		j, err := auth.NewJWT(context.Background(), auth.JWTOptions{
			Issuer: base, Audiences: []string{base}, HMACSecret: key, Algorithms: []string{"HS256"},
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(j.Close)
		opts.Auth = j
		ts.Token, err = auth.Mint(key, auth.MintClaims{
			Issuer: base, Audience: base, Tenant: auth.DefaultTenant, Subject: "bench",
			Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, TTL: 24 * time.Hour,
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	srv, err := server.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	ts.Handler = srv
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	tb.Cleanup(func() {
		hs.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Error(err)
		}
		st.Close()
	})
	return ts
}

// openS3 opens an s3store on the server of RESOURCED_TEST_S3_ENDPOINT
// (scripts/versitygw.sh start), under a fresh prefix.
func openS3(tb testing.TB) store.Backend {
	tb.Helper()
	endpoint, bucket := os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if endpoint == "" || bucket == "" {
		tb.Skip(`the s3 backend needs a server: eval "$(scripts/versitygw.sh start)"`)
	}
	tb.Setenv("AWS_CA_BUNDLE", "")
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true, HTTPClient: s3store.NewHTTPClient(),
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
	})
	var b [4]byte
	rand.Read(b[:])
	st, err := s3store.Open(client, s3store.Options{Bucket: bucket, Prefix: fmt.Sprintf("bench-%x", b), ReadCache: s3store.DefaultReadCache})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// put stores body at report://default/<path> directly in the store.
func (ts *testServer) put(tb testing.TB, path, mimeType string, body []byte) {
	tb.Helper()
	now := time.Now()
	o := &store.Object{
		Meta: store.Meta{
			Key: store.MustKey(auth.DefaultTenant, "report", path), MIMEType: mimeType,
			Size: int64(len(body)), SHA256: store.Sum(body), Created: now, Modified: now,
			Expires: now.Add(time.Hour), Visibility: store.Private,
		},
		Body: body,
	}
	if _, _, err := ts.Store.Put(context.Background(), o, store.Cond{}); err != nil {
		tb.Fatal(err)
	}
}

// post sends one JSON-RPC request speaking 2025-11-25 (stateless, no
// initialize) and returns the response body.
func (ts *testServer) post(c *http.Client, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2025-11-25"},
	}
	if ts.Token != "" {
		req.Header["Authorization"] = []string{"Bearer " + ts.Token}
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes()[:min(buf.Len(), 64)], []byte(`"result":`)) {
		return errors.New("unexpected response: " + resp.Status + " " + buf.String()[:min(buf.Len(), 300)])
	}
	return nil
}

// text returns n bytes of printable ASCII, a stand-in for a report.
func text(n int) []byte {
	const line = "| 2026-11-30 | acme | import-dry-run | 1234 rows | ok |\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = line[i%len(line)]
	}
	return b
}
