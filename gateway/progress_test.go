package gateway

import (
	"context"
	"encoding/json"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	defer otherDone(context.Background())
	if tok == other {
		t.Fatalf("two routes share token %q", tok)
	}
	if !r.Deliver(progressOn(cs, tok, 1)) {
		t.Fatal("Deliver of a routed token reported false")
	}
	done(context.Background())
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
	defer done(context.Background())
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
		done(context.Background())
		if !shape.MatchString(tok) {
			t.Fatalf("token %q is not rsd-gw- and 32 hex digits", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q given twice", tok)
		}
		seen[tok] = true
	}
}

// A call's done waits until the notifications a reader passed on for its
// route have been delivered (go-sdk delivers them on a goroutine of its
// own, after the call has its answer), and no longer than ctx.
func TestProgressRouterDoneWaitsForWhatWasPassed(t *testing.T) {
	var r ProgressRouter
	cs := &mcp.ClientSession{}
	var delivered atomic.Int64
	tok, done := r.Route(cs, func(*mcp.ProgressNotificationParams) { delivered.Add(1) })
	note := func(tok string) *jsonrpc.Request {
		return &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"` + tok + `","progress":1}`)}
	}
	r.Passed(note(tok))
	r.Passed(note(tok))
	r.Passed(note("rsd-gw-another"))                                                                                                        // no such route
	r.Passed(&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"` + tok + `","progress":"x"}`)}) // go-sdk cannot decode it
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.Deliver(progressOn(&mcp.ClientSession{}, tok, 1)) // another session's: handled, not delivered
		time.Sleep(100 * time.Millisecond)
		r.Deliver(progressOn(cs, tok, 2))
	}()
	done(context.Background())
	if n := delivered.Load(); n != 1 {
		t.Fatalf("done returned with %d delivered, want 1 (and the other session's handled)", n)
	}

	// Never handed on (the session ended): done returns when ctx ends.
	tok, done = r.Route(cs, func(*mcp.ProgressNotificationParams) {})
	r.Passed(note(tok))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	done(ctx)
	if took := time.Since(start); took >= progressSettle {
		t.Fatalf("done waited %s after its context ended", took)
	}
}
