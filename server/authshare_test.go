package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/store/memstore"
)

// scopeAuth authenticates by the X-Auth header: "down" cannot be checked,
// "bad" is refused, "ro" may only read, anything else may write.
type scopeAuth struct{}

func (scopeAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	switch r.Header.Get("X-Auth") {
	case "down":
		return auth.Principal{}, fmt.Errorf("test keys: %w", auth.ErrUnavailable)
	case "bad":
		return auth.Principal{}, fmt.Errorf("test token: %w", auth.ErrUnauthenticated)
	case "ro":
		return auth.Principal{Tenant: "t1", Scopes: []string{auth.ScopeRead}}, nil
	}
	return auth.Principal{Tenant: "t1", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}}, nil
}

// TestUploadAuthAnswersLikeMCP: /mcp and PUT /v1/resources refuse a token
// with the same status, challenge and body, from the one function
// (principal, refuseScope).
func TestUploadAuthAnswersLikeMCP(t *testing.T) {
	s, err := New(Options{
		Store: memstore.New(memstore.Options{}), BaseURL: "http://127.0.0.1", Auth: scopeAuth{},
		Logger:  slog.New(slog.DiscardHandler),
		Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	do := func(method, path, body, token string) (int, string, string) {
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("X-Auth", token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	save := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"a","mimeType":"text/plain","text":"x"}}}`
	for token, want := range map[string]int{"down": 503, "bad": 401, "ro": 403} {
		mc, mh, mb := do(http.MethodPost, "/mcp", save, token)
		uc, uh, ub := do(http.MethodPut, "/v1/resources/report/a", "x", token)
		if mc != want || uc != mc || uh != mh || ub != mb {
			t.Errorf("token %q: /mcp %d %q %q, upload %d %q %q; want both %d and equal", token, mc, mh, mb, uc, uh, ub, want)
		}
	}
}
