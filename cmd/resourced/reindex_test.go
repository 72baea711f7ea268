package main

import (
	"strings"
	"testing"

	"github.com/resourced/resourced/config"
)

// TestIndexNote: /readyz's note is there exactly for a local index on the
// shared S3 store.
func TestIndexNote(t *testing.T) {
	for _, c := range []struct {
		store, index string
		note         bool
	}{
		{"s3", "bleve", true}, {"s3", "memory", true}, {"s3", "postgres", false}, {"s3", "", false},
		{"bbolt", "", false}, {"bbolt", "bleve", false}, {"memory", "", false},
	} {
		cfg := config.Default()
		cfg.Store.Backend, cfg.Index.Backend = c.store, c.index
		if got := indexNote(cfg); (got != "") != c.note || c.note && !strings.Contains(got, "postgres") {
			t.Errorf("indexNote(store %s, index %q) = %q, want a note: %v", c.store, c.index, got, c.note)
		}
	}
}
