// Package clienttest runs a real resourced in process for the tests of code
// that uses the client or the mount: the same server package the binary
// serves, on a loopback port, with the memory store and JWT auth whose HMAC
// key is made for the run. Tokens for any tenant come from Server.Token.
//
// It is for tests only: nothing is persisted and the key dies with the
// process.
package clienttest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/server"
	"github.com/resourced/resourced/store/memstore"
)

// Options configure a test server; nil means the defaults of a fresh
// resourced: schemes search (ttl 1h) and report (ttl 0), 16 MiB bodies.
type Options struct {
	// SearchTTL and ReportTTL are the ttlMs the schemes serve; 0 keeps
	// the defaults (1h and 0).
	SearchTTL time.Duration
	ReportTTL time.Duration
	// MaxBytes bounds one body; 0 means 16 MiB.
	MaxBytes int64
}

// Server is a running in-process resourced.
type Server struct {
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string
	// BaseURL is http://127.0.0.1:PORT, the token audience and issuer.
	BaseURL string

	key    []byte
	hs     *http.Server
	done   chan error
	cancel context.CancelFunc
	jwt    *auth.JWT
	once   sync.Once
}

// New starts a server and stops it when tb ends.
func New(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s, err := Start(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server; Close stops it.
func Start(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	searchTTL, reportTTL, maxBytes := time.Hour, time.Duration(0), int64(16<<20)
	if opts.SearchTTL > 0 {
		searchTTL = opts.SearchTTL
	}
	if opts.ReportTTL > 0 {
		reportTTL = opts.ReportTTL
	}
	if opts.MaxBytes > 0 {
		maxBytes = opts.MaxBytes
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := "http://" + ln.Addr().String()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	j, err := auth.NewJWT(ctx, auth.JWTOptions{
		Issuer: base, Audiences: []string{base}, HMACSecret: key, Algorithms: []string{"HS256"},
	})
	if err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	srv, err := server.New(server.Options{
		Store: memstore.New(memstore.Options{}),
		Schemes: []server.Scheme{
			{Name: "report", Kind: server.KindReport, TTL: reportTTL, Retention: 168 * time.Hour, MaxRetention: 8760 * time.Hour, MaxBytes: maxBytes},
			{Name: "search", Kind: server.KindSearch, TTL: searchTTL, Retention: 24 * time.Hour, MaxRetention: 720 * time.Hour, MaxBytes: maxBytes},
		},
		Auth:    j,
		BaseURL: base,
		Backend: "memory",
		Version: "clienttest",
	})
	if err != nil {
		j.Close()
		cancel()
		ln.Close()
		return nil, err
	}
	go srv.Run(ctx)
	s := &Server{
		URL: base + "/mcp", BaseURL: base, key: key, cancel: cancel, jwt: j,
		hs:   &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	go func() { s.done <- s.hs.Serve(ln) }()
	return s, nil
}

// Token mints a token for tenant valid for an hour, with scopes, or with
// both resources:read and resources:write when none are given. It panics
// on an invalid tenant name, which is a bug in the test.
func (s *Server) Token(tenant string, scopes ...string) string {
	if len(scopes) == 0 {
		scopes = []string{auth.ScopeRead, auth.ScopeWrite}
	}
	tok, err := auth.Mint(s.key, auth.MintClaims{
		Issuer: s.BaseURL, Audience: s.BaseURL, Tenant: tenant, Subject: "clienttest-" + tenant,
		Scopes: scopes, TTL: time.Hour,
	})
	if err != nil {
		panic(fmt.Sprintf("clienttest: minting a token for %q: %v", tenant, err))
	}
	return tok
}

// Close stops the server and waits for it; later calls do nothing.
func (s *Server) Close() {
	s.once.Do(func() {
		s.hs.Close()
		err := <-s.done
		s.cancel()
		s.jwt.Close()
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	})
}
