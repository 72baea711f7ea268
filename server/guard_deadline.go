package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/resourced/resourced/server/internal/edge"
)

// Deadlines per request: edge.Deadlines (server/internal/edge/deadline.go)
// says what they are; Budgets sets them.

// Defaults of Budgets.
const (
	DefaultBodyMinRate  = 64 << 10 // bytes per second
	DefaultBodyGrace    = 10 * time.Second
	DefaultWriteMinRate = 256 << 10 // bytes per second: a 32 MiB response within 158 s
	DefaultWriteGrace   = 30 * time.Second
)

// applyDefaults fills in the zero fields of b.
func (b *Budgets) applyDefaults() {
	if b.BodyMinRate <= 0 {
		b.BodyMinRate = DefaultBodyMinRate
	}
	if b.BodyGrace <= 0 {
		b.BodyGrace = DefaultBodyGrace
	}
	if b.WriteMinRate <= 0 {
		b.WriteMinRate = DefaultWriteMinRate
	}
	if b.WriteGrace <= 0 {
		b.WriteGrace = DefaultWriteGrace
	}
	if b.MaxInflight == 0 {
		b.MaxInflight = DefaultMaxInflight
	}
	if b.SaveRate == 0 {
		b.SaveRate = DefaultSaveRate
	}
	if b.SaveBurst <= 0 {
		b.SaveBurst = DefaultSaveBurst
	}
	switch {
	case b.SaveWait == 0:
		b.SaveWait = DefaultSaveWait
	case b.SaveWait < 0:
		b.SaveWait = 0
	}
	if b.MaxUploads == 0 {
		b.MaxUploads = DefaultMaxUploads
	}
}

// bodyDeadline reports whether r's body is read under a deadline: POST
// /mcp and uploads.
func bodyDeadline(r *http.Request) bool {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/mcp":
		return true
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, uploadPrefix):
		return true
	}
	return false
}

// bodyReadFailed answers a request whose body could not be read: 408 when
// it came too slowly, 400 otherwise.
func (s *Server) bodyReadFailed(w http.ResponseWriter, r *http.Request, err error) {
	if edge.IsSlowBody(err) {
		s.log.InfoContext(r.Context(), "request body too slow; dropped", "http", r.Method+" "+r.URL.Path, "err", err)
		if e := logEntry(r.Context()); e != nil {
			e.outcome = "slow_body"
		}
		w.Header().Set("Connection", "close")
		http.Error(w, s.slowBodyMessage(), http.StatusRequestTimeout)
		return
	}
	http.Error(w, "failed to read body", http.StatusBadRequest)
}

func (s *Server) slowBodyMessage() string {
	return fmt.Sprintf("Request Timeout: the request body must arrive within %s plus its length at %d bytes/s; nothing was done. Send it again.",
		s.budgets.BodyGrace, s.budgets.BodyMinRate)
}
