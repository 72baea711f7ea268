package server

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/edge"
	"github.com/resourced/resourced/server/internal/envelope"
	"github.com/resourced/resourced/service"
)

// Per-tenant fairness: each tenant has at most Budgets.MaxInflight requests
// in flight (subscriptions/listen streams do not count: they live long and
// are capped by the subscription limits), and its saves (save_report and
// save_search_snapshot calls, uploads) take tokens from a bucket that fills
// at Budgets.SaveRate per second up to Budgets.SaveBurst. Past either
// limit the answer is HTTP 429 with Retry-After, counted in
// resourced_limited_total{reason}; on /mcp the body is a JSON-RPC error
// (-32000) saying which limit and when to retry.

// Defaults of Budgets.
const (
	DefaultMaxInflight = 64
	DefaultSaveRate    = 100 // saves per second
	DefaultSaveBurst   = 200
	DefaultSaveWait    = time.Second
	DefaultMaxUploads  = 64
)

// Reasons of resourced_limited_total.
const (
	limitInflight = edge.ReasonInflight
	limitSaveRate = edge.ReasonSaveRate
	limitUploads  = "uploads"
	// limitTenantUploads: a tenant holding its share of the upload slots.
	limitTenantUploads = "tenant_uploads"
	// limitConnections: a connection past the server's cap (Listener).
	limitConnections = "connections"
)

// codeLimited is the JSON-RPC code of a request refused by a limit (the
// implementation-defined server error range of JSON-RPC 2.0).
const codeLimited = -32000

// saveTools are the tools whose calls count as saves.
var saveTools = map[string]bool{"save_report": true, "save_search_snapshot": true}

// retryAfterSeconds is a Retry-After value: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}

// limitMessage says which limit refused a request and when to retry.
func (s *Server) limitMessage(reason string, retry time.Duration) string {
	secs := retryAfterSeconds(retry)
	switch reason {
	case limitInflight:
		return fmt.Sprintf("Too many requests: your tenant has %d requests in progress, the most this server runs at once for one tenant; retry in %s s", s.budgets.MaxInflight, secs)
	case limitSaveRate:
		return fmt.Sprintf("Too many requests: your tenant's saves exceed %g per second (bursts of %d); nothing was saved; retry in %s s", s.budgets.SaveRate, s.budgets.SaveBurst, secs)
	}
	return "Too many requests; retry in " + secs + " s"
}

// admit applies the fairness limits to an authenticated /mcp POST of
// tenant with messages msgs. It returns the release to call when the
// request is done, or false after answering 429. It also gives a
// subscriptions/listen its per-write deadlines.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, tenant string, body []byte, msgs []envelope.Message) (func(), bool) {
	saves, listen := 0, false
	for _, m := range msgs {
		switch {
		case m.Method == "tools/call" && saveTools[m.Tool]:
			saves++
		case m.Method == "subscriptions/listen":
			listen = true
		}
	}
	if listen {
		edge.StreamResponse(w)
	}
	release, wait, retry, reason, ok := s.limiter.Acquire(tenant, saves, !listen)
	if ok {
		return release, s.waitForTokens(w, r, release, wait)
	}
	s.refuseLimited(w, r, reason, retry, body, len(msgs) == 1)
	return nil, false
}

// admitUpload applies the save rate of tenant to an upload, answering 429
// when it is refused.
func (s *Server) admitUpload(w http.ResponseWriter, r *http.Request, tenant string) (func(), bool) {
	release, wait, retry, reason, ok := s.limiter.Acquire(tenant, 1, true)
	if ok {
		return release, s.waitForTokens(w, r, release, wait)
	}
	s.metrics.Limited.WithLabelValues(reason).Inc()
	setOutcome(r, "limited:"+reason)
	w.Header().Set("Retry-After", retryAfterSeconds(retry))
	w.Header().Set("Connection", "close") // as uploadSlot: answer before the body
	terr := service.Fail(service.KindUnavailable, s.limitMessage(reason, retry)+". Nothing was stored.")
	writeJSON(w, http.StatusTooManyRequests, terr)
	return nil, false
}

// waitForTokens waits wait before an admitted request goes on, and reports
// false (after releasing it) when the client went away meanwhile.
func (s *Server) waitForTokens(w http.ResponseWriter, r *http.Request, release func(), wait time.Duration) bool {
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		release()
		setOutcome(r, "client_gone")
		w.WriteHeader(http.StatusRequestTimeout)
		return false
	}
}

// refuseLimited answers a /mcp request refused by a limit: 429, Retry-After
// and a JSON-RPC error, with the request's id when the body is one message.
func (s *Server) refuseLimited(w http.ResponseWriter, r *http.Request, reason string, retry time.Duration, body []byte, single bool) {
	s.metrics.Limited.WithLabelValues(reason).Inc()
	if e := logEntry(r.Context()); e != nil {
		e.outcome = "limited:" + reason
	}
	b := []byte(`{"jsonrpc":"2.0",`)
	if single {
		_ = jsonwire.Members(bytes.TrimSpace(body), func(name string, v []byte) error {
			if name == "id" && string(v) != "null" {
				b = append(jsonwire.AppendID(append(b, `"id":`...), v), ',')
			}
			return nil
		})
	}
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, codeLimited, 10)
	b = append(b, `,"message":`...)
	b = jsonwire.AppendString(b, s.limitMessage(reason, retry))
	b = append(b, `,"data":{"reason":`...)
	b = jsonwire.AppendString(b, reason)
	b = append(b, `,"retryAfterSeconds":`...)
	b = append(b, retryAfterSeconds(retry)...)
	b = append(b, "}}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", retryAfterSeconds(retry))
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(b)
}
