// Command reportserver is an example MCP server backed by resourced. Its
// tool generate_report builds a sizeable CSV (about 2 MB by default, from a
// seeded generator), saves it in resourced through the Go client, and
// returns a short summary, the counts as structuredContent and a
// resource_link. resources/read for that link is answered by this server,
// through the mount, from resourced: the host reads the link back from the
// server that returned it.
//
//	go run ./examples/reportserver --listen 127.0.0.1:8080 --resourced http://127.0.0.1:8765/mcp [--token TOKEN] [--users FILE]
//
// MCP is served at /mcp (stateless Streamable HTTP, JSON responses), and
// GET /healthz answers 200.
//
// Who is the caller? With --users FILE, every request carries
// "Authorization: Bearer <user key>" and the file maps each user to the
// resourced token of the user's tenant, one user a line:
//
//	# name   user-key            resourced-token
//	alice    alice-secret-key    eyJhbGciOi...
//
// The user's key only authenticates to this server; resourced sees the
// tenant's producer token, never the user's credentials. Without --users,
// every caller acts with --token (or $RESOURCED_TOKEN): single-tenant, and
// only on a loopback address.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/mount"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reportserver:", err)
		os.Exit(1)
	}
}

type config struct {
	listen    string
	resourced string
	token     string
	usersFile string
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("reportserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address to serve MCP (/mcp) and /healthz on")
	fs.StringVar(&c.resourced, "resourced", "http://127.0.0.1:8765/mcp", "MCP endpoint of resourced")
	fs.StringVar(&c.token, "token", "", "resourced token for every caller when --users is not given (default $RESOURCED_TOKEN)")
	fs.StringVar(&c.usersFile, "users", "", "file of 'name user-key resourced-token' lines: callers authenticate with their key")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.token == "" {
		c.token = getenv("RESOURCED_TOKEN")
	}
	if c.usersFile == "" && c.token == "" {
		return nil, errors.New("give --users FILE, or --token (or $RESOURCED_TOKEN) for a single tenant")
	}
	return c, nil
}

// user is a caller of this server and the resourced token of its tenant.
type user struct {
	name  string
	token string
}

// users maps sha256(user key) to the user.
type users map[[32]byte]user

func loadUsers(path string) (users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := users{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want 'name user-key resourced-token'", path, n)
		}
		u[sha256.Sum256([]byte(fields[1]))] = user{name: fields[0], token: fields[2]}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(u) == 0 {
		return nil, fmt.Errorf("%s: no users", path)
	}
	return u, nil
}

// tokenFor is the resourced token of the caller of a request: the tenant
// token of the user this server authenticated, or the single token.
type tokenFor func(ti *sdkauth.TokenInfo) (string, error)

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	var (
		tf      tokenFor
		protect func(http.Handler) http.Handler
	)
	if cfg.usersFile != "" {
		us, err := loadUsers(cfg.usersFile)
		if err != nil {
			return err
		}
		byName := map[string]string{}
		for _, u := range us {
			byName[u.name] = u.token
		}
		verify := func(_ context.Context, key string, _ *http.Request) (*sdkauth.TokenInfo, error) {
			u, ok := us[sha256.Sum256([]byte(key))]
			if !ok {
				return nil, sdkauth.ErrInvalidToken
			}
			return &sdkauth.TokenInfo{UserID: u.name, Expiration: time.Now().Add(time.Hour)}, nil
		}
		protect = sdkauth.RequireBearerToken(verify, nil)
		tf = func(ti *sdkauth.TokenInfo) (string, error) {
			if ti == nil {
				return "", errors.New("unauthenticated")
			}
			tok, ok := byName[ti.UserID]
			if !ok {
				return "", errors.New("unknown user")
			}
			return tok, nil
		}
	} else {
		if !loopback(cfg.listen) {
			return fmt.Errorf("--listen %s: without --users every caller acts as the --token's tenant; listen on a loopback address", cfg.listen)
		}
		protect = func(h http.Handler) http.Handler { return h }
		tf = func(*sdkauth.TokenInfo) (string, error) { return cfg.token, nil }
	}

	// The client's own token source is never used: each call names the
	// caller's tenant token with WithTokenSource.
	cl, err := resourced.NewClient(cfg.resourced, resourced.StaticToken(""), &resourced.Options{Logger: log, ClientName: "reportserver"})
	if err != nil {
		return err
	}
	srv := newServer(cl, tf, log)

	mux := http.NewServeMux()
	mux.Handle("/mcp", protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "resourced", cfg.resourced, "users", cfg.usersFile != "")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newServer is the MCP server: the generate_report tool and the mount.
func newServer(cl *resourced.Client, tf tokenFor, log *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "reportserver", Title: "Report server (resourced example)", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "generate_report",
		Title: "Generate a sales report",
		Description: "Builds a CSV sales report (about 2 MB by default) from a seeded generator, stores it, and returns " +
			"the counts and a resource_link. Read the link with resources/read on this server.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in reportInput) (*mcp.CallToolResult, *reportOutput, error) {
		tok, err := tf(req.Extra.TokenInfo)
		if err != nil {
			return nil, nil, err
		}
		return generate(ctx, cl.WithTokenSource(resourced.StaticToken(tok)), in)
	})
	err := mount.Resources(s, cl, mount.Options{
		Logger: log,
		TokenFor: func(_ context.Context, req *mcp.ReadResourceRequest) (string, error) {
			return tf(req.Extra.TokenInfo)
		},
	})
	if err != nil {
		panic(err) // only for invalid options, fixed here
	}
	return s
}
