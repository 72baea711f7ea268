package service

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoTransport: the service knows neither MCP nor HTTP nor the
// server (doc.go).
func TestImportsNoTransport(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "net/http" || strings.HasPrefix(p, "github.com/modelcontextprotocol/") || strings.HasSuffix(p, "/resourced/server") {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
