package server

import (
	"testing"

	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// swapStore makes b the store of s and of its service, for tests that
// replace the backend after New.
func (s *Server) swapStore(tb testing.TB, b store.Backend) {
	tb.Helper()
	s.store = b
	o := s.svcOpts
	o.Store = b
	svc, err := service.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	s.svc = svc
	s.schemes = svc.Schemes()
}
