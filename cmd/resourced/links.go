package main

import (
	"fmt"
	"log/slog"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/config"
)

// linksKey loads the key that signs download links: links.keyFile, which
// must exist, or <dataDir>/links-hmac.key, created (mode 0600) on first
// start. It is never the token key.
func linksKey(cfg *config.Config, log *slog.Logger) ([]byte, error) {
	if cfg.Links.KeyFile != "" {
		key, err := auth.LoadHMACKey(cfg.Links.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("links.keyFile: %w", err)
		}
		return key, nil
	}
	path := cfg.LinksKeyFile()
	key, created, err := auth.LoadOrCreateHMACKey(path)
	if err != nil {
		return nil, fmt.Errorf("links key %s: %w", path, err)
	}
	if created {
		log.Info("created a signing key for download links; instances behind one load balancer must share it (links.keyFile)", "path", path)
	}
	return key, nil
}
