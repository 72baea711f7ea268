package gateway

import (
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func progressOn(cs *mcp.ClientSession, token any, progress float64) *mcp.ProgressNotificationClientRequest {
	return &mcp.ProgressNotificationClientRequest{Session: cs, Params: &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress}}
}

func TestProgressRouterRoutesByTokenUntilDone(t *testing.T) {
	var r ProgressRouter
	cs := &mcp.ClientSession{}
	var got []float64
	tok, done := r.Route(cs, func(p *mcp.ProgressNotificationParams) { got = append(got, p.Progress) })
	other, otherDone := r.Route(cs, func(*mcp.ProgressNotificationParams) { t.Error("delivered to the wrong route") })
	defer otherDone()
	if tok == other {
		t.Fatalf("two routes share token %q", tok)
	}
	if !r.Deliver(progressOn(cs, tok, 1)) {
		t.Fatal("Deliver of a routed token reported false")
	}
	done()
	if r.Deliver(progressOn(cs, tok, 2)) {
		t.Fatal("Deliver after done reported true")
	}
	if r.Deliver(progressOn(cs, 7, 3)) {
		t.Fatal("Deliver of a token that is not the gateway's reported true")
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("delivered %v, want [1]", got)
	}
}

// Issue 15: a notification with the right token from another upstream
// session (another tenant's process) is not delivered.
func TestProgressRouterDeliversOnlyFromTheCallsSession(t *testing.T) {
	var r ProgressRouter
	mine, theirs := &mcp.ClientSession{}, &mcp.ClientSession{}
	n := 0
	tok, done := r.Route(mine, func(*mcp.ProgressNotificationParams) { n++ })
	defer done()
	if r.Deliver(progressOn(theirs, tok, 1)) {
		t.Fatal("a notification from another session was delivered")
	}
	if r.Deliver(progressOn(nil, tok, 1)) {
		t.Fatal("a notification with no session was delivered")
	}
	if !r.Deliver(progressOn(mine, tok, 2)) || n != 1 {
		t.Fatalf("the call's own session: delivered %d, want 1", n)
	}
}

// Issue 15: tokens were rsd-gw-1, rsd-gw-2, …; they are 128 random bits.
func TestProgressRouterTokensAreUnguessable(t *testing.T) {
	var r ProgressRouter
	cs := &mcp.ClientSession{}
	shape := regexp.MustCompile(`^rsd-gw-[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		tok, done := r.Route(cs, func(*mcp.ProgressNotificationParams) {})
		done()
		if !shape.MatchString(tok) {
			t.Fatalf("token %q is not rsd-gw- and 32 hex digits", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q given twice", tok)
		}
		seen[tok] = true
	}
}
