package server

import (
	"context"
	"time"

	"github.com/resourced/resourced/server/internal/notify"
)

// every runs f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// Defaults of Options.MaxListenURIs and MaxListensPerTenant.
const (
	DefaultMaxListenURIs       = notify.DefaultMaxListenURIs
	DefaultMaxListensPerTenant = notify.DefaultMaxListensPerTenant
)
