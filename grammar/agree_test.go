package grammar_test

// One grammar: every package that takes a tenant or a scheme from outside
// accepts exactly what grammar accepts. The test imports those packages;
// grammar itself imports none of them.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/grammar"
	"github.com/resourced/resourced/mount"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/uri"
)

// names are the edge cases of both grammars.
var names = []string{
	"a", "z", "0", "9", "acme", "t1", "t10", "9lives", "a-b", "a--b", "x+y", "x.y", "x-y",
	"-", "-a", "a-", "-a-", "A", "Acme", "acmE", "a_b", "a b", "a/b", "a:b", "a@b", "a%41", "a?b", "a#b",
	"+a", ".a", "a+", "a.", "", "\u0430cme", "a\x00", "a\x7f", "a\xff",
	strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("a", 62) + "-",
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("1", 63),
}

func TestOneTenantGrammar(t *testing.T) {
	key := []byte(strings.Repeat("k", auth.MinHMACKeyBytes))
	j, err := auth.NewJWT(t.Context(), auth.JWTOptions{Audiences: []string{"aud"}, Algorithms: []string{"HS256"}, HMACSecret: key})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	now := time.Now()
	entries := map[string]func(string) error{
		"uri.ValidTenant":   uri.ValidTenant,
		"uri.New":           func(s string) error { _, err := uri.New("report", s, "x"); return err },
		"store.ValidTenant": store.ValidTenant,
		"store.NewKey":      func(s string) error { _, err := store.NewKey(s, "report", "x"); return err },
		"auth.Mint": func(s string) error {
			_, err := auth.Mint(key, auth.MintClaims{Audience: "aud", Tenant: s, Scopes: []string{auth.ScopeRead}, TTL: time.Hour, Now: now})
			return err
		},
		"auth.JWT.Verify": func(s string) error {
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
				"aud": "aud", "tenant": s, "scope": auth.ScopeRead, "exp": now.Add(time.Hour).Unix(),
			}).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.Verify(context.Background(), tok)
			return err
		},
	}
	agree(t, grammar.Tenant, entries)
}

func TestOneSchemeGrammar(t *testing.T) {
	c, err := resourced.NewClient("http://127.0.0.1:1/mcp", resourced.StaticToken("t"), nil)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]func(string) error{
		"uri.ValidScheme":   uri.ValidScheme,
		"uri.New":           func(s string) error { _, err := uri.New(s, "acme", "x"); return err },
		"store.ValidScheme": store.ValidScheme,
		"store.NewKey":      func(s string) error { _, err := store.NewKey("acme", s, "x"); return err },
		"config.Validate": func(s string) error {
			cfg := config.Default()
			cfg.Schemes = map[string]*config.Scheme{s: cfg.Schemes["report"]}
			err := cfg.Validate()
			if err != nil && !strings.Contains(err.Error(), "schemes."+s+": ") {
				t.Fatalf("config.Validate with scheme %q failed for another reason: %v", s, err)
			}
			return err
		},
		"mount.Resources": func(s string) error {
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			return mount.Resources(srv, c, mount.Options{Schemes: []string{s}, TokenFor: func(context.Context, *mcp.ReadResourceRequest) (string, error) { return "", nil }})
		},
	}
	agree(t, grammar.Scheme, entries)
}

// agree checks every entry point against the grammar on every name.
func agree(t *testing.T, rule func(string) error, entries map[string]func(string) error) {
	t.Helper()
	for _, n := range names {
		want := rule(n) == nil
		for name, f := range entries {
			if got := f(n) == nil; got != want {
				t.Errorf("%s(%q) accepts=%v, grammar accepts=%v", name, n, got, want)
			}
		}
	}
}
