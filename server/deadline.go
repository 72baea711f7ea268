package server

import (
	"net/http"
	"time"
)

// Write deadlines. A response's deadline grows with its size: a client
// that reads at least minWriteRate bytes a second gets its whole answer; a
// client that reads more slowly, or not at all, loses the connection when
// the deadline passes, and the buffer its response held is freed.

// extendWrite sets the write deadline of w's connection for a response of
// n more bytes: writeGrace plus n at minWriteRate.
func (s *Server) extendWrite(w http.ResponseWriter, n int64) {
	d := s.writeGrace + time.Duration(float64(n)/float64(s.minWriteRate)*float64(time.Second))
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
