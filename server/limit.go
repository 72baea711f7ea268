package server

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

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
	limitInflight = "inflight"
	limitSaveRate = "save_rate"
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

// tenantLimiter holds the per-tenant state of the fairness limits. A
// tenant's entry is dropped when it has nothing in flight and a full
// bucket, so memory follows the tenants active in the last few seconds.
type tenantLimiter struct {
	maxInflight int        // < 0: no cap
	rate        rate.Limit // rate.Inf: no save limit
	burst       int
	maxWait     time.Duration // a save that would get a token within this waits for it
	uploadShare int           // upload slots one tenant may hold; <= 0: no cap
	now         func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantState
}

type tenantState struct {
	inflight int
	uploads  int
	saves    *rate.Limiter
}

// uploadShare is how many of maxUploads upload slots one tenant may hold:
// a quarter, at least one, so that three other tenants always find one
// (docs/decisions.md, "upload share").
func uploadShare(maxUploads int) int {
	if maxUploads <= 0 {
		return 0
	}
	return max(1, maxUploads/4)
}

func newTenantLimiter(b *Budgets, now func() time.Time) *tenantLimiter {
	l := &tenantLimiter{maxInflight: b.MaxInflight, rate: rate.Limit(b.SaveRate), burst: b.SaveBurst, maxWait: b.SaveWait,
		uploadShare: uploadShare(b.MaxUploads), now: now, tenants: map[string]*tenantState{}}
	if b.SaveRate < 0 {
		l.rate = rate.Inf
	}
	return l
}

// acquire admits one request of tenant carrying saves saves, counting it in
// flight when inflight is true. When it is admitted, release must be
// called once the request is done, and the caller first waits wait (the
// time until its saves' tokens, at most maxWait: a tenant a little over
// its rate is slowed to it rather than refused, and a client that floods
// is held instead of looping on cheap refusals). When it is not,
// retryAfter says when to try again (at least a second) and reason which
// limit refused it.
func (l *tenantLimiter) acquire(tenant string, saves int, inflight bool) (release func(), wait, retryAfter time.Duration, reason string, ok bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.tenants[tenant]
	if st == nil {
		st = &tenantState{} // its bucket comes with its first save
		l.tenants[tenant] = st
	}
	if inflight && l.maxInflight >= 0 && st.inflight >= l.maxInflight {
		// Requests finish in well under a second when the server is
		// healthy; a tenant at its cap waits for some of its own.
		return nil, 0, time.Second, limitInflight, false
	}
	if saves > 0 && l.rate != rate.Inf {
		if st.saves == nil {
			st.saves = rate.NewLimiter(l.rate, l.burst)
		}
		r := st.saves.ReserveN(now, saves)
		if !r.OK() {
			// More saves in one request than the bucket holds.
			l.dropIdle(tenant, st, now)
			return nil, 0, time.Duration(math.Ceil(float64(saves)/float64(l.rate))) * time.Second, limitSaveRate, false
		}
		if d := r.DelayFrom(now); d > l.maxWait {
			r.CancelAt(now)
			l.dropIdle(tenant, st, now)
			return nil, 0, d, limitSaveRate, false
		} else {
			wait = d
		}
	}
	if !inflight {
		l.dropIdle(tenant, st, now)
		return func() {}, wait, 0, "", true
	}
	st.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			st.inflight--
			l.dropIdle(tenant, st, l.now())
		})
	}, wait, 0, "", true
}

// acquireUpload takes one of tenant's share of the upload slots, or
// reports false when it holds its share already.
func (l *tenantLimiter) acquireUpload(tenant string) (release func(), ok bool) {
	if l.uploadShare <= 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.tenants[tenant]
	if st == nil {
		st = &tenantState{}
		l.tenants[tenant] = st
	}
	if st.uploads >= l.uploadShare {
		return nil, false
	}
	st.uploads++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			st.uploads--
			l.dropIdle(tenant, st, l.now())
		})
	}, true
}

// dropIdle forgets tenant when it holds nothing: no request in flight, no
// upload slot and a full bucket. l.mu is held.
func (l *tenantLimiter) dropIdle(tenant string, st *tenantState, now time.Time) {
	if st.inflight == 0 && st.uploads == 0 && (st.saves == nil || l.rate == rate.Inf || st.saves.TokensAt(now) >= float64(l.burst)) {
		delete(l.tenants, tenant)
	}
}

// size is the number of tenants the limiter holds state for.
func (l *tenantLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tenants)
}

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
	release, wait, retry, reason, ok := s.limiter.acquire(tenant, saves, !listen)
	if ok {
		return release, s.waitForTokens(w, r, release, wait)
	}
	s.refuseLimited(w, r, reason, retry, body, len(msgs) == 1)
	return nil, false
}

// admitUpload applies the save rate of tenant to an upload, answering 429
// when it is refused.
func (s *Server) admitUpload(w http.ResponseWriter, r *http.Request, tenant string) (func(), bool) {
	release, wait, retry, reason, ok := s.limiter.acquire(tenant, 1, true)
	if ok {
		return release, s.waitForTokens(w, r, release, wait)
	}
	s.metrics.limited.WithLabelValues(reason).Inc()
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
	s.metrics.limited.WithLabelValues(reason).Inc()
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
