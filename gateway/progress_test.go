package gateway

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestProgressRouterRoutesByTokenUntilDone(t *testing.T) {
	var r ProgressRouter
	var got []float64
	tok, done := r.Route(func(p *mcp.ProgressNotificationParams) { got = append(got, p.Progress) })
	other, otherDone := r.Route(func(*mcp.ProgressNotificationParams) { t.Error("delivered to the wrong route") })
	defer otherDone()
	if tok == other {
		t.Fatalf("two routes share token %q", tok)
	}
	if !r.Deliver(&mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1}) {
		t.Fatal("Deliver of a routed token reported false")
	}
	done()
	if r.Deliver(&mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2}) {
		t.Fatal("Deliver after done reported true")
	}
	if r.Deliver(&mcp.ProgressNotificationParams{ProgressToken: 7, Progress: 3}) {
		t.Fatal("Deliver of a token that is not the gateway's reported true")
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("delivered %v, want [1]", got)
	}
}
