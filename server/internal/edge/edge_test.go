package edge

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOriginGuard: browser origins other than the base URL's are refused
// unless allowed; on a loopback listener only localhost names, the base
// URL's host and configured hosts pass (DNS rebinding); elsewhere any Host
// passes unless hosts are configured.
func TestOriginGuard(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8765}
	for _, tc := range []struct {
		name         string
		allowOrigins []string
		allowHosts   []string
		local        net.Addr
		host, origin string
		want         int
	}{
		{"loopback localhost", nil, nil, loop, "localhost:8765", "", 200},
		{"loopback 127.0.0.1", nil, nil, loop, "127.0.0.1:8765", "", 200},
		{"loopback [::1]", nil, nil, loop, "[::1]:8765", "", 200},
		{"loopback base URL host", nil, nil, loop, "Resourced.Example:443", "", 200},
		{"loopback rebinding", nil, nil, loop, "attacker.example", "", 403},
		{"loopback configured host", nil, []string{"box.lan"}, loop, "BOX.lan:8765", "", 200},
		{"public any host", nil, nil, public, "anything.example", "", 200},
		{"public configured hosts", nil, []string{"box.lan"}, public, "anything.example", "", 403},
		{"own origin", nil, nil, loop, "localhost", "https://resourced.example", 200},
		{"foreign origin", nil, nil, loop, "localhost", "https://evil.example", 403},
		{"allowed origin", []string{"https://app.example"}, nil, loop, "localhost", "https://app.example", 200},
		{"any origin", []string{"*"}, nil, loop, "localhost", "https://evil.example", 200},
		// A port that is not a decimal number is not a Host of ours, whatever
		// name precedes it: net.SplitHostPort would hand back the allowed
		// name and ignore the rest.
		{"loopback empty port", nil, nil, loop, "localhost:", "", 200},
		{"loopback port 65535", nil, nil, loop, "127.0.0.1:65535", "", 200},
		{"loopback 127.0.0.1 name port", nil, nil, loop, "127.0.0.1:evil.com", "", 403},
		{"loopback localhost name port", nil, nil, loop, "localhost:evil.com", "", 403},
		{"loopback port then name", nil, nil, loop, "127.0.0.1:18777.evil.com", "", 403},
		{"loopback [::1] name port", nil, nil, loop, "[::1]:evil.com", "", 403},
		{"loopback signed port", nil, nil, loop, "localhost:+80", "", 403},
		{"loopback port too large", nil, nil, loop, "localhost:65536", "", 403},
		{"loopback foreign host", nil, nil, loop, "evil.com:18777", "", 403},
		{"base URL host name port", nil, nil, loop, "resourced.example:evil.com", "", 403},
		{"configured host name port", nil, []string{"box.lan"}, loop, "box.lan:evil.com", "", 403},
		{"configured host:port name port", nil, []string{"box.lan:80"}, public, "box.lan:80x", "", 403},
		{"public name port", nil, nil, public, "anything.example:evil.com", "", 403},
	} {
		o := &Origin{AllowedOrigins: tc.allowOrigins, AllowedHosts: tc.allowHosts, BaseURL: "https://resourced.example", Log: slog.New(slog.DiscardHandler)}
		h := o.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
}
