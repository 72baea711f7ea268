package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestGuard: /metrics needs the exact bearer token; anything else is a
// 401 with the metrics realm's challenge, and a nil token guards nothing.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"Bearer s3cret", http.StatusOK},
		{"bearer  s3cret ", http.StatusOK},
		{"", http.StatusUnauthorized},
		{"Bearer s3cre", http.StatusUnauthorized},
		{"Bearer s3cretx", http.StatusUnauthorized},
		{"Basic s3cret", http.StatusUnauthorized},
		{"s3cret", http.StatusUnauthorized},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		Guard([]byte("s3cret"), ok).ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.header, w.Code, tc.want)
		}
		if tc.want == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") != `Bearer realm="metrics"` {
			t.Errorf("Authorization %q: challenge %q", tc.header, w.Header().Get("WWW-Authenticate"))
		}
	}
	w := httptest.NewRecorder()
	Guard(nil, ok).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Errorf("no token configured: %d", w.Code)
	}
}

// TestObserveRequestBoundsLabels: methods and tools outside the known sets
// are "other", a request refused before MCP is "none", and the label values
// of panics and limits exist at 0 from the start.
func TestObserveRequestBoundsLabels(t *testing.T) {
	m := New(prometheus.NewRegistry(), "bbolt", []string{"http"}, []string{"inflight"})
	known := func(name string) bool { return name == "save_report" }
	m.ObserveRequest("tools/call", "save_report", "ok", time.Millisecond, known)
	m.ObserveRequest("tools/call", "made_up_"+strings.Repeat("x", 10), "ok", time.Millisecond, known)
	m.ObserveRequest("weird/method", "", "-32601", time.Millisecond, known)
	m.ObserveRequest("", "", "", time.Millisecond, known)
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"tools/call", "save_report", "ok"}, 1},
		{[]string{"tools/call", "other", "ok"}, 1},
		{[]string{"other", "", "-32601"}, 1},
		{[]string{"none", "", "none"}, 1},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("requests%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 4 {
		t.Errorf("%d request series, want 4", n)
	}
	if n := testutil.CollectAndCount(m.Panics) + testutil.CollectAndCount(m.Limited); n != 2 {
		t.Errorf("%d panic and limit series before any, want 2", n)
	}
}
