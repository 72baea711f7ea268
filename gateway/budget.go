package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/prometheus/client_golang/prometheus"
)

// The in-flight budget (docs/gateway.md, "What the gateway holds"): the
// bytes of upstream answers the gateway holds at once — read from an
// upstream and not yet answered to the caller — are bounded gateway-wide
// (PoolOptions.MaxBytesInFlight) and per tenant
// (PoolOptions.MaxTenantBytesInFlight). A message is charged as it is
// read, chunk by chunk, and stays charged until its call is answered
// (ticket.release); a message that would go over either bound is not read
// into memory: its call is answered at once, in the upstream's place, by
// the gateway's busy error (busyCode), which the front turns into
// unavailable with retrySafe true, and the session goes on. Nothing
// waits for room and nothing grows past the bounds.

// busyCode is the code of the error the gateway answers in an upstream's
// place for a message that would go over the in-flight budget;
// busyMarker is the member of its data that tells it from an upstream's
// own error.
const (
	busyCode   = -32091
	busyMarker = "resourcedGatewayBusy"
)

// busyData is the data of that error: which bound was full and its size.
type busyData struct {
	Marker bool   `json:"resourcedGatewayBusy"`
	Scope  string `json:"scope"` // "gateway" or "tenant"
	Limit  int64  `json:"limit"`
}

// busyResponse is the JSON-RPC error response for id (raw JSON) standing
// in for an upstream message the budget had no room for.
func busyResponse(id []byte, d busyData) []byte {
	data, _ := json.Marshal(d)
	msg := "the gateway holds its limit of " + strconv.FormatInt(d.Limit, 10) + " bytes of upstream answers (" + d.Scope + "); retry shortly"
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": busyCode, "message": msg, "data": json.RawMessage(data)},
	})
	return b
}

// words is the caller's text for a call refused by the budget.
func (d busyData) words(up string) string {
	whose := "the gateway holds"
	if d.Scope == "tenant" {
		whose = "your tenant holds"
	}
	return fmt.Sprintf("The answer of the upstream server %s was not read: %s its limit of %s of upstream answers "+
		"in flight, so nothing of it was kept. Retry the same call in a few seconds, when calls under way have been answered.",
		up, whose, sizeWords(d.Limit))
}

// asBusy reports whether code and data are the gateway's own busy error.
func asBusy(code int64, data []byte) (busyData, bool) {
	var d busyData
	if code != busyCode || json.Unmarshal(data, &d) != nil || !d.Marker || d.Limit <= 0 {
		return busyData{}, false
	}
	return d, true
}

// memoryHeadroom is what the soft memory limit leaves past the in-flight
// budget for everything else of the process: the server's own reads and
// saves, the search index, the form cache.
const memoryHeadroom = 256 << 20

// SetSoftMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) to maxBytesInFlight plus memoryHeadroom, unless
// the operator set GOMEMLIMIT (then theirs holds), and returns the limit
// in force. The budget bounds what upstream answers keep live; without a
// limit the collector lets the heap grow to twice what was live at its
// last cycle before it runs (GOGC=100), so a full budget could cost
// twice itself. With the limit, the collector runs sooner as the heap
// nears it (issue 24).
func SetSoftMemoryLimit(maxBytesInFlight int64, getenv func(string) string) (limit int64, set bool) {
	if getenv("GOMEMLIMIT") != "" || maxBytesInFlight <= 0 || maxBytesInFlight > math.MaxInt64-memoryHeadroom {
		return debug.SetMemoryLimit(-1), false
	}
	limit = maxBytesInFlight + memoryHeadroom
	debug.SetMemoryLimit(limit)
	return limit, true
}

// MaxBytesInFlight is the pool's gateway-wide in-flight bound, its
// default applied.
func (p *Pool) MaxBytesInFlight() int64 { return p.opts.MaxBytesInFlight }

// budget is the in-flight bound: used bytes in all and per tenant. A nil
// *budget bounds nothing.
type budget struct {
	max, maxTenant int64

	mu      sync.Mutex
	used    int64
	tenants map[string]int64
	refused map[string]int64 // by scope, for the metric
	peak    int64
}

func newBudget(max, maxTenant int64) *budget {
	return &budget{max: max, maxTenant: maxTenant, tenants: map[string]int64{}, refused: map[string]int64{}}
}

// take charges n bytes to the gateway and, when tenant is not "", to
// tenant; it charges nothing and returns the full bound's busyData when
// either has no room.
func (b *budget) take(tenant string, n int64) (busyData, bool) {
	if b == nil || n <= 0 {
		return busyData{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		b.refused["gateway"]++
		return busyData{Marker: true, Scope: "gateway", Limit: b.max}, false
	}
	if tenant != "" && b.tenants[tenant]+n > b.maxTenant {
		b.refused["tenant"]++
		return busyData{Marker: true, Scope: "tenant", Limit: b.maxTenant}, false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	if tenant != "" {
		b.tenants[tenant] += n
	}
	return busyData{}, true
}

// takeTenant charges n bytes already charged to the gateway to tenant
// as well.
func (b *budget) takeTenant(tenant string, n int64) (busyData, bool) {
	if b == nil || n <= 0 || tenant == "" {
		return busyData{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tenants[tenant]+n > b.maxTenant {
		b.refused["tenant"]++
		return busyData{Marker: true, Scope: "tenant", Limit: b.maxTenant}, false
	}
	b.tenants[tenant] += n
	return busyData{}, true
}

// give returns n bytes of the gateway's and tenant's ("" none) charge.
func (b *budget) give(tenant string, n, tenantN int64) {
	if b == nil || (n <= 0 && tenantN <= 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if tenant != "" && tenantN > 0 {
		if b.tenants[tenant] -= tenantN; b.tenants[tenant] <= 0 {
			delete(b.tenants, tenant)
		}
	}
	if b.used < 0 {
		panic(fmt.Sprintf("gateway: in-flight budget below zero (%d)", b.used))
	}
}

// collectors are the budget's gauges. A tenant is never a label (there
// is no bound on how many there are): the largest one tenant holds, and
// how many hold any, say whether one crowds the others; the log line of
// each refusal names the tenant.
func (b *budget) collectors() []prometheus.Collector {
	read := func(f func() float64) func() float64 {
		return func() float64 {
			b.mu.Lock()
			defer b.mu.Unlock()
			return f()
		}
	}
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "resourced_gateway_answer_bytes_in_flight_limit",
		Help: "The bounds of upstream answer bytes in flight, by scope: gateway (gateway.maxBytesInFlight) and tenant (gateway.maxTenantBytesInFlight, each tenant's).",
	}, []string{"scope"})
	limit.WithLabelValues("gateway").Set(float64(b.max))
	limit.WithLabelValues("tenant").Set(float64(b.maxTenant))
	return []prometheus.Collector{
		limit,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "resourced_gateway_answer_bytes_in_flight",
			Help: "Bytes of upstream answers the gateway holds now: read from an upstream and not yet answered to their callers.",
		}, read(func() float64 { return float64(b.used) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "resourced_gateway_answer_tenant_bytes_in_flight_max",
			Help: "The most bytes of upstream answers in flight that one tenant holds now (no tenant label: they are unbounded).",
		}, read(func() float64 {
			var m int64
			for _, n := range b.tenants {
				m = max(m, n)
			}
			return float64(m)
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "resourced_gateway_answer_tenants_in_flight",
			Help: "Tenants holding upstream answer bytes in flight now.",
		}, read(func() float64 { return float64(len(b.tenants)) })),
	}
}

// inUse is the bytes charged now, in all and for tenant.
func (b *budget) inUse(tenant string) (int64, int64) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.tenants[tenant]
}

// charge is what one message holds of the budget: bytes charged to the
// gateway, and of them to tenant.
type charge struct {
	b       *budget
	tenant  string
	n       int64 // charged to the gateway
	tenantN int64 // charged to tenant
}

// add charges n more bytes.
func (c *charge) add(n int64) (busyData, bool) {
	if d, ok := c.b.take(c.tenant, n); !ok {
		return d, false
	}
	c.n += n
	if c.tenant != "" {
		c.tenantN += n
	}
	return busyData{}, true
}

// attribute charges what is held so far to tenant as well (the message's
// call is now known); a charge already attributed is not moved.
func (c *charge) attribute(tenant string) (busyData, bool) {
	if c.tenant != "" || tenant == "" {
		return busyData{}, true
	}
	if d, ok := c.b.takeTenant(tenant, c.n); !ok {
		return d, false
	}
	c.tenant, c.tenantN = tenant, c.n
	return busyData{}, true
}

// attributeTo charges what is held to tenant, moving it from the tenant
// it was charged to while the line was read when that is another (an
// answer with two ids: go-sdk takes the last).
func (c *charge) attributeTo(tenant string) (busyData, bool) {
	if c.tenant == tenant || c.tenant == "" {
		return c.attribute(tenant)
	}
	c.b.give(c.tenant, 0, c.tenantN)
	c.tenant, c.tenantN = "", 0
	return c.attribute(tenant)
}

// release gives back everything c holds.
func (c *charge) release() {
	c.b.give(c.tenant, c.n, c.tenantN)
	c.n, c.tenantN = 0, 0
}

// ticket is one forwarded call's claim on what the pool reads for it:
// the front puts it in the call's context (withTicket), the session's
// connection registers it under the request's id as the request is
// written, and the reader hands it the answer's charge and spilled
// strings (spill.go). The front releases it when the call is answered;
// until then the answer's bytes count against the budget.
type ticket struct {
	tenant string

	mu      sync.Mutex
	charges []charge
	spills  map[string]*spill // by placeholder
	done    bool
	unhook  []func() // remove the ticket from its connections' registries
}

func newTicket(tenant string) *ticket { return &ticket{tenant: tenant} }

type ticketKey struct{}

// withTicket is ctx carrying t: the calls made with it are charged to t.
func withTicket(ctx context.Context, t *ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

func ticketFrom(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}

// hold gives t a message's charge and spills; after release it gives
// them back at once (the call was answered, or gave up, already).
func (t *ticket) hold(c charge, spills []*spill) {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		c.release()
		dropAll(spills)
		return
	}
	t.charges = append(t.charges, c)
	for _, s := range spills {
		if t.spills == nil {
			t.spills = map[string]*spill{}
		}
		t.spills[s.key] = s
	}
	t.mu.Unlock()
}

// spilled is the spilled string a placeholder stands for in t's answer,
// or nil.
func (t *ticket) spilled(placeholder string) *spill {
	if t == nil || len(placeholder) != placeholderLen {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spills[placeholder]
}

// release gives back everything t holds; it is safe to call more than
// once.
func (t *ticket) release() {
	if t == nil {
		return
	}
	t.mu.Lock()
	charges, unhook, spills := t.charges, t.unhook, t.spills
	t.charges, t.spills, t.done, t.unhook = nil, nil, true, nil
	t.mu.Unlock()
	for _, sp := range spills {
		sp.drop()
	}
	for _, f := range unhook {
		f()
	}
	for i := range charges {
		charges[i].release()
	}
}

// tickets are the ticketed calls of one connection waiting for their
// answers, by id (idKey). A nil *tickets holds none.
type tickets struct {
	mu sync.Mutex
	m  map[string]*ticket
}

// add registers t as the call with id, as its request is written.
func (r *tickets) add(id jsonrpc.ID, t *ticket) {
	raw, err := json.Marshal(id.Raw())
	if err != nil {
		return
	}
	key, ok := idKey(raw)
	if !ok {
		return
	}
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.unhook = append(t.unhook, func() { r.remove(key, t) })
	t.mu.Unlock()
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*ticket{}
	}
	r.m[key] = t
	r.mu.Unlock()
}

func (r *tickets) remove(key string, t *ticket) {
	r.mu.Lock()
	if r.m[key] == t {
		delete(r.m, key)
	}
	r.mu.Unlock()
}

// waiting reports whether any ticketed call waits for its answer.
func (r *tickets) waiting() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m) > 0
}

// takeID is take of a decoded id.
func (r *tickets) takeID(id jsonrpc.ID) *ticket {
	if r == nil || !id.IsValid() {
		return nil
	}
	raw, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return r.take(raw)
}

// peek is the ticket of the call with the raw id, or nil.
func (r *tickets) peek(raw []byte) *ticket {
	if r == nil || raw == nil {
		return nil
	}
	key, ok := idKey(raw)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[key]
}

// take is peek, and the ticket no longer waits on this connection (a
// call has one answer).
func (r *tickets) take(raw []byte) *ticket {
	if r == nil || raw == nil {
		return nil
	}
	key, ok := idKey(raw)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.m[key]
	delete(r.m, key)
	return t
}
