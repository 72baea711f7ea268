package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowListingAnswer: on a service whose ListObjectsV2 takes longer
// than callTimeout (versitygw's posix backend at a million objects; here
// the fault proxy holds every listing past the deadline), list_resources
// answers a retry-safe unavailable whose text says the backend's listing
// is the bound, the next pages (list_resources, resources/list) fail at
// once without asking the service again, and reads are not held.
func TestSlowListingAnswer(t *testing.T) {
	endpoint, bucket := s3Target(t)
	const callTimeout = time.Second
	proxy := startFaultProxy(t, endpoint, 1)
	proxy.Slow = callTimeout + 2*time.Second
	proxy.Rates = map[string]int{faultSlow: 100}
	proxy.Match = func(r *http.Request) bool { return r.URL.Query().Get("list-type") == "2" }
	in := startServer(t, s3LinConfig(proxy.URL, bucket, "slowlist-"+randomHex(6), callTimeout))
	rep := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "kept", "mimeType": "text/plain", "text": "still readable"}), 1)
	proxy.active.Store(true)

	const bound = "the storage backend's listing is the bound"
	first := 0
	for i := range 2 {
		r := in.call(v2026, "list_resources", map[string]any{"limit": 10})
		sc := checkFailure(t, r, "unavailable")
		msg, _ := sc["message"].(string)
		if sc["retrySafe"] != true || !strings.Contains(msg, bound) || !strings.Contains(msg, "retry") {
			t.Errorf("list page %d: %s, want a retry-safe unavailable saying %q", i+1, r.StructuredContent, bound)
		}
		for _, leak := range []string{bucket, proxy.URL, "127.0.0.1", "ListObjectsV2", "callTimeout"} {
			if strings.Contains(string(r.raw), leak) {
				t.Errorf("list page %d names %q: %s", i+1, leak, r.raw)
			}
		}
		if i == 0 {
			first = proxy.Matched() // the page that waited the deadline asked the service
		}
	}
	for _, v := range versions {
		rr := in.rpc(v, "resources/list", nil)
		if rr.Error == nil || rr.Error.Code != -32603 || !strings.Contains(rr.Error.Message, bound) {
			t.Errorf("%s resources/list while the listing is held: %s", v, rr.Body)
		}
	}
	if n := proxy.Matched() - first; n != 0 {
		t.Errorf("the service was asked for %d more listings after the first page missed the deadline: the pages after it must fail at once", n)
	}
	if got := in.read(v2026, rep["uri"].(string)).body(t); string(got) != "still readable" {
		t.Errorf("read while the listing is held: %q", got)
	}
}
