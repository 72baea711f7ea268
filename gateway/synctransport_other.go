//go:build !linux && !darwin

package gateway

import "net/http"

// syncDefault is net/http's transport where syncTransport's non-blocking
// peek is not at hand (synctransport.go).
var syncDefault http.RoundTripper = http.DefaultTransport
