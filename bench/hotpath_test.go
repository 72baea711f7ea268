package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
	"github.com/resourced/resourced/uri"
)

// Benchmarks of the hot paths of one resources/read, bottom up. Run with
//
//	go test ./bench -run '^$' -bench . -benchmem

var sink any

// BenchmarkURIParse parses a typical report URI (the server parses each
// read's URI twice: once to validate it before dispatch, once to read).
func BenchmarkURIParse(b *testing.B) {
	const u = "report://acme/billing/2026-11/import-dry-run"
	b.ReportAllocs()
	for b.Loop() {
		p, err := uri.Parse(u)
		if err != nil {
			b.Fatal(err)
		}
		sink = p.Path
	}
}

// BenchmarkBoltGet reads one object from a bbolt store (metadata decode,
// body copy out of the mmap, expiry check).
func BenchmarkBoltGet(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			body := text(size)
			now := time.Now()
			k := store.MustKey("acme", "report", "billing/2026-11/import-dry-run")
			o := &store.Object{
				Meta: store.Meta{
					Key: k, MIMEType: "text/markdown", Size: int64(size), SHA256: store.Sum(body),
					Created: now, Modified: now, Expires: now.Add(time.Hour), Visibility: store.Private,
				},
				Body: body,
			}
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				obj, err := s.Get(ctx, k)
				if err != nil {
					b.Fatal(err)
				}
				sink = obj
			}
		})
	}
}

// BenchmarkBoltView is what a read on bbolt does since bodies are kept
// encoded: one View of an object saved with its encoded form (metadata
// decode, expiry check), copying that form out of the mmap into a reused
// buffer, as the response is built.
func BenchmarkBoltView(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 256 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			body := text(size)
			enc, _ := json.Marshal(string(body))
			now := time.Now()
			k := store.MustKey("acme", "report", "billing/2026-11/import-dry-run")
			o := &store.Object{
				Meta: store.Meta{
					Key: k, MIMEType: "text/markdown", Size: int64(size), SHA256: store.Sum(body),
					Created: now, Modified: now, Expires: now.Add(time.Hour), Visibility: store.Private,
				},
				Body:    body,
				Encoded: append([]byte("\x01\"text\":"), enc...),
			}
			if _, _, err := s.Put(ctx, o, store.Cond{}); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, len(o.Encoded)+512)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				err := s.View(ctx, k, func(m *store.Meta, encoded, _ []byte) error {
					buf = append(buf[:0], encoded...)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			sink = buf
		})
	}
}

// BenchmarkReadResultEncoding marshals a resources/read result as the
// server builds it: one content item, text or base64 blob, with _meta.
// go-sdk then wraps it in the JSON-RPC response (not measured here).
func BenchmarkReadResultEncoding(b *testing.B) {
	for _, kind := range []string{"text", "blob"} {
		for _, size := range []int{1 << 10, 256 << 10} {
			b.Run(kind+"/"+sizeName(size), func(b *testing.B) {
				body := text(size)
				c := &mcp.ResourceContents{
					URI:      "report://acme/billing/2026-11/import-dry-run",
					MIMEType: "text/markdown",
					Meta: mcp.Meta{
						"sha256":       store.Sum(body),
						"size":         int64(size),
						"lastModified": "2026-11-30T08:16:45.156Z",
						"expiresAt":    "2026-12-07T08:16:45.156Z",
					},
				}
				if kind == "text" {
					c.Text = string(body)
				} else {
					c.MIMEType = "application/octet-stream"
					c.Blob = body
				}
				res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
				res.TTLMs = 0
				res.CacheScope = "private"
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					out, err := json.Marshal(res)
					if err != nil {
						b.Fatal(err)
					}
					sink = out
				}
			})
		}
	}
}

// BenchmarkReadEndToEnd is one whole resources/read of a 1 KiB report over
// loopback HTTP against an in-process server.New with the memory store:
// HTTP, auth, go-sdk's decoding and dispatch, the read and the encoding,
// plus the client's side of the exchange. The jwt variant verifies an
// HS256 token per request, as a default deployment does.
func BenchmarkReadEndToEnd(b *testing.B) {
	for _, authMode := range []string{"none", "jwt"} {
		b.Run("memory/"+authMode+"/1KiB", func(b *testing.B) {
			ts := startServer(b, "memory", authMode == "jwt")
			ts.put(b, "bench/one", "text/markdown", text(1<<10))
			req := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://default/bench/one"}}`)
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			var buf bytes.Buffer
			if err := ts.post(c, req, &buf); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(1 << 10)
			b.ReportAllocs()
			for b.Loop() {
				if err := ts.post(c, req, &buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return fmt.Sprint(n) + "B"
}

// BenchmarkHandler is the server's own part of one request as bench/run.sh
// sends it (bbolt, JWT, 2026-07-28 with its headers and _meta): the request
// goes straight to the server's handler, with no connection and no client,
// so its allocations are the server's alone (net/http's reading of the
// request and its response buffers aside). The writer discards the
// response and takes the deadlines as a net/http connection does. The
// reads are hot (the body is in the form cache after the first request);
// the save replaces one report of 1 KiB, through the group commit.
func BenchmarkHandler(b *testing.B) {
	const uri = "report://default/bench/one"
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"resourced-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, method, target, body string
		min                        int // response bytes at least
	}{
		{"read/1KiB", "resources/read", uri, `{"uri":"` + uri + `",` + meta + `}`, 1 << 10},
		{"read/256KiB", "resources/read", uri, `{"uri":"` + uri + `",` + meta + `}`, 256 << 10},
		{"save_report/1KiB", "tools/call", "save_report",
			`{"name":"save_report","arguments":{"path":"bench/saved","mimeType":"text/markdown","text":` + jsonText(1<<10) + `},` + meta + `}`, 100},
	} {
		b.Run("bbolt/jwt/"+tc.name, func(b *testing.B) {
			ts := startServer(b, "bbolt", true)
			ts.put(b, "bench/one", "text/markdown", text(max(tc.min, 1<<10)))
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + tc.method + `","params":` + tc.body + `}`)
			r, err := http.NewRequest(http.MethodPost, ts.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			r.Header = http.Header{
				"Content-Type":         {"application/json"},
				"Accept":               {"application/json, text/event-stream"},
				"Mcp-Protocol-Version": {"2026-07-28"},
				"Authorization":        {"Bearer " + ts.Token},
				"Mcp-Method":           {tc.method},
				"Mcp-Name":             {tc.target},
			}
			r.ContentLength = int64(len(body))
			rb := &reusedBody{}
			w := &discardWriter{h: http.Header{}}
			serve := func() {
				rb.Reset(body)
				r.Body = rb
				clear(w.h)
				w.status, w.n, w.head = 0, 0, w.head[:0]
				ts.Handler.ServeHTTP(w, r)
				if w.status != http.StatusOK || w.n < tc.min || bytes.Contains(w.head, []byte(`"isError":true`)) || bytes.Contains(w.head, []byte(`"error":`)) {
					b.Fatalf("status %d, %d bytes: %.300s", w.status, w.n, w.head)
				}
			}
			serve()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// jsonText is text(n) as a JSON string.
func jsonText(n int) string {
	b, _ := json.Marshal(string(text(n)))
	return string(b)
}

// reusedBody is a request body that can be read again after Reset.
type reusedBody struct{ bytes.Reader }

func (*reusedBody) Close() error { return nil }

// discardWriter is a ResponseWriter that counts and discards the response,
// and takes read and write deadlines as net/http's writer does
// (http.ResponseController).
type discardWriter struct {
	h      http.Header
	status int
	n      int
	head   []byte // the first bytes of the response
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	if len(w.head) < 512 {
		w.head = append(w.head, p[:min(len(p), 512-len(w.head))]...)
	}
	return len(p), nil
}
func (w *discardWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
