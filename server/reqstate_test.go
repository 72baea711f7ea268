package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// TestRequestStateOneContext: below the request log the stages share one
// copy of the request, whose context is the request state itself (no
// context.WithValue and no request copy per stage), and every value a later
// stage or go-sdk's handler looks up is found there: the log entry, the
// principal (auth.FromContext, as tools and the gateway read it), the body
// and its envelope, and the body again for go-sdk.
func TestRequestStateOneContext(t *testing.T) {
	s, err := New(Options{Store: memstore.New(memstore.Options{}), BaseURL: "http://127.0.0.1", Auth: tenantAuth{},
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`
	var seen bool
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = true
		ctx := r.Context()
		if _, ok := ctx.(*reqContext); !ok {
			t.Errorf("the stages' context is a %T, not the request state's", ctx)
		}
		if p, ok := auth.FromContext(ctx); !ok || p.Tenant != "acme" {
			t.Errorf("auth.FromContext = %+v, %v", p, ok)
		}
		if req := mcpRequestOf(ctx); req == nil || string(req.body) != body || len(req.msgs) != 1 || req.msgs[0].Method != "resources/list" {
			t.Errorf("mcpRequestOf = %+v", req)
		}
		if logEntry(ctx) == nil {
			t.Error("no log entry")
		}
		if b, err := io.ReadAll(r.Body); err != nil || string(b) != body {
			t.Errorf("the body go-sdk reads = %q, %v", b, err)
		}
	})
	h := s.logRequests(s.guardHTTP(s.authenticate(probe))) // as server.New composes them
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("X-Tenant", "acme")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !seen {
		t.Fatal("the probe was not reached")
	}
	if auth.IsPrincipalKey(struct{}{}) {
		t.Error("IsPrincipalKey takes any key")
	}
}

// TestFastReadAllocations holds the server's own allocations for a hot
// read answered by the read stage (the request log, deadlines, auth, the
// walk, the store and the form cache; net/http's reading of the request
// aside) to what they were when the stages came to share one request state
// and a read's outcome stopped allocating errors.As's target. It counts
// allocations, which do not depend on the machine's load; under
// the race detector sync.Pool drops items on purpose, so it does not run.
func TestFastReadAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	ms := memstore.New(memstore.Options{})
	s, err := New(Options{Store: ms, BaseURL: "http://127.0.0.1", Auth: tenantAuth{},
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	text := bytes.Repeat([]byte("a report line\n"), 73)
	k := store.MustKey("t1", "report", "one")
	if _, _, err := ms.Put(t.Context(), &store.Object{Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: int64(len(text)),
		SHA256: store.Sum(text), Created: now, Modified: now, Visibility: store.Private}, Body: text, Encoded: s.svc.Encode("text/plain", text)}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	uri := k.String()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	r.Header = readHeaders("2026-07-28", uri)
	r.ContentLength = int64(len(body))
	rb := &replayBody{}
	w := &countingWriter{h: http.Header{}}
	serve := func() {
		rb.Reset(body)
		r.Body = rb
		clear(w.h)
		w.status, w.n = 0, 0
		s.ServeHTTP(w, r)
	}
	serve()
	if w.status != http.StatusOK || w.n < len(text) {
		t.Fatalf("read: %d, %d bytes", w.status, w.n)
	}
	const want = 25
	if got := testing.AllocsPerRun(200, serve); got > want {
		t.Errorf("a hot read allocates %v times, want at most %d", got, want)
	}
}

// countingWriter counts and discards a response and takes deadlines as
// net/http's writer does (http.ResponseController).
type countingWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}
func (w *countingWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *countingWriter) SetWriteDeadline(time.Time) error { return nil }
