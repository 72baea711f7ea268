// Package archtest holds the architecture test: the import directions of
// docs/architecture.md, checked with go list over the whole module, so a
// change that makes a package reach the wrong way fails CI.
package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/resourced/resourced"

// allowed maps each package (relative to the module) to the packages of
// the module it may import (non-test imports). A package missing from the
// map fails the test: a new package needs a decision here.
var allowed = map[string][]string{
	// Leaves: the standard library only.
	"grammar":             {},
	"internal/gcheadroom": {},
	"internal/jsonwire":   {},
	"internal/sandbox":    {},
	// OpenTelemetry tracing: the provider, the spans, W3C propagation.
	"internal/telemetry": {},
	"internal/wwwauth":   {},
	"toolapi":            {},
	"mcpschema":          {},
	// The three domain packages never import each other.
	"uri":   {"grammar"},
	"auth":  {"grammar"},
	"store": {"grammar", "internal/telemetry"},
	// Store drivers: the contract and what they share, nothing above.
	"store/internal/metacodec": {"store"},
	"store/memstore":           {"store"},
	"store/boltstore":          {"store", "store/internal/metacodec"},
	"store/s3store":            {"store", "store/internal/metacodec"},
	"store/storetest":          {"store"},
	// The search index: its contract over drivers, like store's.
	"index":            {"grammar", "internal/jsonwire"},
	"index/indextest":  {"index"},
	"index/memindex":   {"index"},
	"index/bleveindex": {"index"},
	"index/pgindex":    {"index"},
	// The service layer: no transport, no backend, no configuration, no
	// tokens (it takes a tenant, never an auth.Principal).
	"service": {"index", "internal/jsonwire", "store", "toolapi", "uri"},
	// Transports over the service.
	"server/internal/mcptool":   {"auth", "internal/jsonwire", "service", "store"},
	"server/fixtures":           {"auth", "server/internal/mcptool", "service", "store", "toolapi", "uri"},
	"server/hostrun":            {"auth", "server/fixtures"},
	"server/internal/links":     {"internal/jsonwire", "service", "store", "toolapi"},
	"server/internal/edge":      {"auth"},
	"server/internal/formcache": {},
	"server/internal/metrics":   {"server/internal/formcache"},
	"server/internal/envelope":  {"internal/jsonwire", "server/internal/mcptool", "service"},
	"server/internal/notify":    {"auth", "server/internal/mcptool", "service", "store"},
	"server/internal/fulltext":  {"auth", "server/internal/mcptool", "service", "store", "toolapi"},
	// server never parses a URI itself (service.Resolve does) and knows
	// the gateway only as an Extension (cmd mounts it).
	"server": {"auth", "index", "internal/jsonwire", "internal/telemetry", "server/fixtures", "server/hostrun", "server/internal/edge", "server/internal/envelope", "server/internal/formcache", "server/internal/fulltext", "server/internal/links", "server/internal/metrics", "server/internal/notify", "server/internal/mcptool", "service", "store", "toolapi"},
	// The gateway: an MCP client of upstreams, mounted on server's MCP
	// front, saving offloaded results through the service.
	"gateway": {"auth", "grammar", "internal/jsonwire", "internal/sandbox", "internal/telemetry", "service", "store"},
	"config":  {"grammar", "internal/gcheadroom"},
	"checker": {"internal/wwwauth", "mcpschema"},
	// The binary wires everything; it is the only importer of backends.
	"cmd/resourced": {"auth", "checker", "config", "gateway", "grammar", "index", "index/bleveindex", "index/memindex", "index/pgindex", "internal/gcheadroom", "internal/jsonwire", "internal/sandbox", "internal/telemetry", "server", "server/hostrun", "service", "store", "store/boltstore", "store/memstore", "store/s3store"},
	// The Go client and what is built on it speak MCP as a client only.
	"client":                {"internal/wwwauth", "toolapi"},
	"client/clienttest":     {"auth", "server", "store/memstore"},
	"mount":                 {"client", "grammar"},
	"examples/reportserver": {"client", "mount"},
	// Test and tool packages that drive the binary from outside.
	"integration": {},
	"bench":       {},
	// The load tool's write ceiling puts through boltstore's group commit
	// itself: a save without the server (writeceiling.go).
	"bench/cmd/resourced-bench": {"internal/jsonwire", "store", "store/boltstore", "store/s3store"},
	"bench/cmd/benchsvg":        {},
	"conformance/gate":          {},
	"internal/archtest":         {},
}

// forbidden are outside packages some packages must not import.
var forbidden = map[string][]string{
	"service":           {"github.com/modelcontextprotocol/go-sdk", "net/http"},
	"store":             {"github.com/modelcontextprotocol/go-sdk"},
	"uri":               {"github.com/modelcontextprotocol/go-sdk", "net/http"},
	"grammar":           {"github.com/modelcontextprotocol/go-sdk", "net/http"},
	"internal/jsonwire": {"github.com/modelcontextprotocol/go-sdk", "net/http"},
	"toolapi":           {"github.com/modelcontextprotocol/go-sdk", "net/http"},
}

func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		seen[pkg] = true
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the architecture map (internal/archtest): decide what it may import", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if rel, in := strings.CutPrefix(imp, module+"/"); in && !slices.Contains(ok, rel) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow", pkg, rel)
			}
			for _, f := range forbidden[pkg] {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s, which it must not", pkg, imp)
				}
			}
		}
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("the architecture map names %s, which no longer exists", pkg)
		}
	}
}
