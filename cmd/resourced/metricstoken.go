package main

import (
	"bytes"
	"fmt"

	"github.com/resourced/resourced/config"
)

// minMetricsToken is the shortest metrics bearer token accepted.
const minMetricsToken = 16

// metricsToken reads metrics.bearerTokenFile: nil when it is not set; an
// error naming the key when the file is not a regular file of mode 0600,
// is empty or shorter than minMetricsToken, or holds more than one line.
func metricsToken(cfg *config.Config) ([]byte, error) {
	path := cfg.Metrics.BearerTokenFile
	if path == "" {
		return nil, nil
	}
	b, err := readPrivateFile(path)
	if err != nil {
		return nil, fmt.Errorf("metrics.bearerTokenFile: %w", err)
	}
	tok := bytes.TrimSpace(b)
	switch {
	case bytes.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, fmt.Errorf("metrics.bearerTokenFile: file %s holds white space or a control character inside the token; want one line holding the token", path)
	case len(tok) < minMetricsToken:
		return nil, fmt.Errorf("metrics.bearerTokenFile: file %s holds %d bytes; want a token of at least %d (e.g. openssl rand -hex 32 > %s)", path, len(tok), minMetricsToken, path)
	}
	return tok, nil
}
