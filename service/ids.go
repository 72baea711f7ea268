package service

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// idSource hands out ULIDs: time-sortable, so search snapshot URIs list in
// the order they were saved, and monotonic within one process.
type idSource struct {
	mu      sync.Mutex
	now     func() time.Time
	entropy *ulid.MonotonicEntropy
}

func newIDSource(now func() time.Time) *idSource {
	return &idSource{now: now, entropy: ulid.Monotonic(rand.Reader, 0)}
}

func (g *idSource) next() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(g.now()), g.entropy)
	if err != nil {
		return "", err
	}
	return id.String(), nil
}
