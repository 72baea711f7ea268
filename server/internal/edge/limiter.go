package edge

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Reasons a Limiter refuses a request (resourced_limited_total{reason}).
const (
	ReasonInflight = "inflight"
	ReasonSaveRate = "save_rate"
)

// Limiter holds the per-tenant state of the fairness limits. A
// tenant's entry is dropped when it has nothing in flight and a full
// bucket, so memory follows the tenants active in the last few seconds.
type Limiter struct {
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

// UploadShare is how many of maxUploads upload slots one tenant may hold:
// a quarter, at least one, so that three other tenants always find one
// (docs/decisions.md, "upload share").
func UploadShare(maxUploads int) int {
	if maxUploads <= 0 {
		return 0
	}
	return max(1, maxUploads/4)
}

// Limits are the per-tenant fairness limits; see server.Budgets, whose
// fields they are, defaults applied.
type Limits struct {
	MaxInflight int     // requests in flight per tenant; < 0: no cap
	SaveRate    float64 // saves per second; < 0: no limit
	SaveBurst   int
	SaveWait    time.Duration // the longest a save waits for its tokens
	MaxUploads  int           // the server's upload slots (UploadShare of them per tenant)
}

// NewLimiter returns the limiter of b, on the clock now.
func NewLimiter(b Limits, now func() time.Time) *Limiter {
	l := &Limiter{maxInflight: b.MaxInflight, rate: rate.Limit(b.SaveRate), burst: b.SaveBurst, maxWait: b.SaveWait,
		uploadShare: UploadShare(b.MaxUploads), now: now, tenants: map[string]*tenantState{}}
	if b.SaveRate < 0 {
		l.rate = rate.Inf
	}
	return l
}

// Acquire admits one request of tenant carrying saves saves, counting it in
// flight when inflight is true. When it is admitted, release must be
// called once the request is done, and the caller first waits wait (the
// time until its saves' tokens, at most maxWait: a tenant a little over
// its rate is slowed to it rather than refused, and a client that floods
// is held instead of looping on cheap refusals). When it is not,
// retryAfter says when to try again (at least a second) and reason which
// limit refused it.
func (l *Limiter) Acquire(tenant string, saves int, inflight bool) (release func(), wait, retryAfter time.Duration, reason string, ok bool) {
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
		return nil, 0, time.Second, ReasonInflight, false
	}
	if saves > 0 && l.rate != rate.Inf {
		if st.saves == nil {
			st.saves = rate.NewLimiter(l.rate, l.burst)
		}
		r := st.saves.ReserveN(now, saves)
		if !r.OK() {
			// More saves in one request than the bucket holds.
			l.dropIdle(tenant, st, now)
			return nil, 0, time.Duration(math.Ceil(float64(saves)/float64(l.rate))) * time.Second, ReasonSaveRate, false
		}
		if d := r.DelayFrom(now); d > l.maxWait {
			r.CancelAt(now)
			l.dropIdle(tenant, st, now)
			return nil, 0, d, ReasonSaveRate, false
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

// AcquireUpload takes one of tenant's share of the upload slots, or
// reports false when it holds its share already.
func (l *Limiter) AcquireUpload(tenant string) (release func(), ok bool) {
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
func (l *Limiter) dropIdle(tenant string, st *tenantState, now time.Time) {
	if st.inflight == 0 && st.uploads == 0 && (st.saves == nil || l.rate == rate.Inf || st.saves.TokensAt(now) >= float64(l.burst)) {
		delete(l.tenants, tenant)
	}
}

// Size is the number of tenants the limiter holds state for.
func (l *Limiter) Size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tenants)
}
