package server

import (
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

// TestBlobUnsatisfiableRanges: a signed-link GET with only unsatisfiable
// ranges is 416 with "Content-Range: bytes */SIZE" (RFC 9110 §14.1.1,
// §15.5.17), never a 206 with an empty or inverted range; satisfiable
// ranges next to them are still served.
func TestBlobUnsatisfiableRanges(t *testing.T) {
	e := newLinkEnv(t)
	const body = "0123456789abcdefghij" // 20 bytes
	m := e.put(t, "t1", "r/twenty", body, store.Private)
	link, _ := e.s.links.URL(&m, "t1", 5*time.Minute)
	for _, rg := range []string{"bytes=-0", "bytes=-00", "bytes= -0 ", "bytes=-+0", "bytes=20-", "bytes=25-30", "bytes=-0,-0", "bytes=-0, 20-"} {
		code, h, got := e.get(t, link, "Range", rg)
		if code != 416 || h.Get("Content-Range") != "bytes */20" {
			t.Errorf("Range %q: %d, Content-Range %q, body %q; want 416 with bytes */20", rg, code, h.Get("Content-Range"), got)
		}
	}
	for rg, want := range map[string]string{
		"bytes=-1": "bytes 19-19/20", "bytes=-25": "bytes 0-19/20", "bytes=0-0": "bytes 0-0/20",
		"bytes=-0,5-6": "bytes 5-6/20", "bytes=18-": "bytes 18-19/20",
	} {
		code, h, _ := e.get(t, link, "Range", rg)
		if code != 206 || h.Get("Content-Range") != want {
			t.Errorf("Range %q: %d, Content-Range %q; want 206 with %s", rg, code, h.Get("Content-Range"), want)
		}
	}
	// An empty body (no save stores one, but a backend may hold it) has
	// no satisfiable range; ServeContent then ignores Range, as RFC 9110
	// allows, and answers 200: never a 206 "bytes 0--1/0".
	empty := e.put(t, "t1", "r/empty", "", store.Private)
	elink, _ := e.s.links.URL(&empty, "t1", 5*time.Minute)
	for _, rg := range []string{"bytes=-5", "bytes=0-", "bytes=-0"} {
		if code, h, got := e.get(t, elink, "Range", rg); code != 200 || h.Get("Content-Range") != "" || got != "" {
			t.Errorf("empty body, Range %q: %d, Content-Range %q, body %q; want 200, none and empty", rg, code, h.Get("Content-Range"), got)
		}
	}
	// If-Range that does not match: the whole body, as before.
	if code, _, got := e.get(t, link, "Range", "bytes=-0", "If-Range", `"not-the-etag"`); code != 200 || got != body {
		t.Errorf("Range -0 with a stale If-Range: %d %q, want 200 and the whole body", code, got)
	}
}
