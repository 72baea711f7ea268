// Package hostrun is the live host acceptance report (docs/fixtures.md,
// "Host runs"): a run is an MCP endpoint of its own, /mcp/runs/<id>, that
// serves exactly what /mcp serves and records what the host did there —
// which fixture tools it called, which resources it read and how
// (resources/read, read_resource and the other reading tools, signed
// links), with protocol version, client and time. /fixtures/runs/<id>
// shows the acceptance sheet of seed 000 filled from those records, takes
// the RSD-FIXTURE- markers the host's model wrote, and exports the sheet
// as Markdown and JSON.
//
// Runs live in memory on the instance that created them, bounded in
// number, life and events (Limits). The id is 128 random bits and is the
// capability for the page; the MCP endpoint also needs a token of the
// tenant that created the run. The package knows HTTP and JSON-RPC as
// bytes, never go-sdk, and learns the fixtures from server/fixtures'
// Catalogue; server wires its handlers (Runs.Route, Runs.Record,
// Runs.Create, Runs.Pages) around its own.
package hostrun

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/resourced/resourced/auth"
)

// Limits bound what runs may hold; zero fields take the defaults.
type Limits struct {
	// Runs bounds the live runs of the instance (default 256): creating
	// one more ends the oldest run of the tenant holding the most, when
	// that is more than the creator holds, and is refused (429) otherwise.
	Runs int
	// RunsPerTenant bounds one tenant's runs (default 8): creating one
	// more ends the tenant's oldest.
	RunsPerTenant int
	// TTL is a run's life from its creation (default 24h).
	TTL time.Duration
	// Events bounds the events one run keeps (default 500); later events
	// are counted, and still scored, but not listed.
	Events int
}

func (l Limits) withDefaults() Limits {
	if l.Runs <= 0 {
		l.Runs = 256
	}
	if l.RunsPerTenant <= 0 {
		l.RunsPerTenant = 8
	}
	if l.TTL <= 0 {
		l.TTL = 24 * time.Hour
	}
	if l.Events <= 0 {
		l.Events = 500
	}
	return l
}

// Bounds that are not configurable: each is far above what one host run
// produces and keeps a hostile caller's run small.
const (
	maxURIs       = 128      // distinct URIs whose repeated reads a run tracks
	maxLinks      = 64       // signed links a run remembers having minted
	maxClients    = 8        // distinct clients a run lists
	maxUnknown    = 32       // unknown RSD-FIXTURE- strings kept from a paste
	maxField      = 200      // characters of a field the user types
	maxFormBytes  = 64 << 10 // a submitted form
	maxCapture    = 1 << 20  // bytes of a tools/call response looked at
	headCapture   = 4 << 10  // bytes of other responses looked at
	tailCapture   = 1 << 10  // last bytes of a response looked at
	maxToolName   = 128
	maxURILen     = 2048
	maxUserAgent  = 200
	idBytes       = 16
	idHexLen      = 2 * idBytes
	runPathPrefix = "/mcp/runs/"
	pagePrefix    = "/fixtures/runs/"
)

// Options configure Runs.
type Options struct {
	// BaseURL is the server's canonical URL, without a trailing slash; the
	// URLs a new run answers with start with it.
	BaseURL string
	// ServerVersion and SDKVersion fill the sheet's server fields; an
	// empty SDKVersion is the go-sdk version the binary was built with.
	ServerVersion, SDKVersion string
	// Body returns the body of a POST /mcp request that authenticate has
	// read and checked (nil when there is none).
	Body func(*http.Request) []byte
	// Principal authenticates a request or answers it itself (reporting
	// false): the server's bearer handling.
	Principal func(http.ResponseWriter, *http.Request) (auth.Principal, bool)
	Limits    Limits
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Runs holds the host runs of one server. A nil *Runs serves no runs: its
// handlers pass everything on.
type Runs struct {
	opts Options
	lim  Limits
	mu   sync.Mutex
	runs map[string]*Run
	// seq numbers runs in creation order (their times may be equal).
	seq uint64
	// links maps the signature of a download link minted inside a run to
	// that run's id.
	links map[string]string
}

// New returns an empty set of runs.
func New(opts Options) *Runs {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SDKVersion == "" {
		opts.SDKVersion = sdkVersion
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runs{opts: opts, lim: opts.Limits.withDefaults(), runs: map[string]*Run{}, links: map[string]string{}}
}

// Run is one host run.
type Run struct {
	id      string
	seq     uint64 // creation order among the instance's runs
	tenant  string
	scopes  []string
	created time.Time
	expires time.Time

	mu      sync.Mutex
	events  []Event
	dropped int
	// calls and reads are the scoring counts, kept whole even after events
	// are dropped: per fixture tool, and per fixture path and route.
	calls map[string]*tally
	reads map[string]map[string]*tally
	// missing counts reads of the never-stored fixture URI and how they
	// were answered.
	missing       tally
	missingErrors []string
	rereads       map[string]*reread
	rereadOrder   []string
	clients       []string
	versions      []string
	links         []string
	maxResult     int64
	firstEvent    time.Time

	// What the user submitted on the page.
	reported  []string // known markers, sorted
	unknown   []string
	submitted time.Time
	fields    map[string]string
}

// tally counts one kind of event.
type tally struct {
	N      int       `json:"count"`
	Errors int       `json:"errors,omitempty"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
}

func (t *tally) add(at time.Time, failed bool) {
	if t.N == 0 {
		t.First = at
	}
	t.N++
	t.Last = at
	if failed {
		t.Errors++
	}
}

// reread tracks the reads of one URI: how often it was read again before
// the ttlMs of the previous read had passed.
type reread struct {
	URI        string    `json:"uri"`
	CacheScope string    `json:"cacheScope,omitempty"`
	TTLMs      int64     `json:"ttlMs"`
	Reads      int       `json:"reads"`
	WithinTTL  int       `json:"readsWithinTtl"`
	last       time.Time // previous successful read
	lastTTL    int64
}

// Event is one request the run saw.
type Event struct {
	At time.Time `json:"at"`
	// Method is the JSON-RPC method, or "GET /v1/blobs" for a signed link.
	Method string `json:"method"`
	Tool   string `json:"tool,omitempty"`
	URI    string `json:"uri,omitempty"`
	// Route is how a resource was read: resources/read, read_resource,
	// grep_resource, query_resource or signed link.
	Route           string `json:"route,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Client          string `json:"client,omitempty"`
	// Outcome is "ok", "isError", "error <code>" or "http <status>".
	Outcome    string `json:"outcome"`
	Bytes      int64  `json:"bytes"`
	TTLMs      *int64 `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

func newID() string {
	b := make([]byte, idBytes)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// validID reports whether s has the form of a run id.
func validID(s string) bool {
	if len(s) != idHexLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sweep removes expired runs; r.mu is held.
func (r *Runs) sweep(now time.Time) {
	for id, run := range r.runs {
		if !now.Before(run.expires) {
			r.remove(id)
		}
	}
}

// remove ends a run and forgets its links; r.mu is held.
func (r *Runs) remove(id string) {
	run := r.runs[id]
	if run == nil {
		return
	}
	delete(r.runs, id)
	run.mu.Lock()
	for _, sig := range run.links {
		delete(r.links, sig)
	}
	run.mu.Unlock()
}

// errFull is returned by create when the instance holds Limits.Runs live
// runs of other tenants.
type errFull struct{ retryAfter time.Duration }

func (e *errFull) Error() string { return "too many host runs on this server" }

// create starts a run for p, ending p's oldest run when p holds
// RunsPerTenant already.
func (r *Runs) create(p auth.Principal) (*Run, error) {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	var own []*Run
	for _, run := range r.runs {
		if run.tenant == p.Tenant {
			own = append(own, run)
		}
	}
	slices.SortFunc(own, func(a, b *Run) int { return cmp.Compare(a.seq, b.seq) })
	for len(own) >= r.lim.RunsPerTenant {
		r.remove(own[0].id)
		own = own[1:]
	}
	if len(r.runs) >= r.lim.Runs {
		// Fair shares: a tenant holding fewer runs than the largest holder
		// takes that holder's oldest, so no set of tenants can lock the
		// others out until their runs expire.
		if victim := r.largestHolder(); victim != "" && r.count(victim) > len(own) {
			r.removeOldest(victim)
		}
	}
	if len(r.runs) >= r.lim.Runs {
		soonest := now.Add(r.lim.TTL)
		for _, run := range r.runs {
			soonest = minTime(soonest, run.expires)
		}
		return nil, &errFull{retryAfter: soonest.Sub(now)}
	}
	r.seq++
	run := &Run{
		id: newID(), seq: r.seq, tenant: p.Tenant, scopes: slices.Clone(p.Scopes), created: now, expires: now.Add(r.lim.TTL),
		calls: map[string]*tally{}, reads: map[string]map[string]*tally{}, rereads: map[string]*reread{},
		fields: map[string]string{},
	}
	r.runs[run.id] = run
	return run, nil
}

// largestHolder is the tenant holding the most runs (on a tie, the one
// with the oldest run); "" when there are none. The caller holds r.mu.
func (r *Runs) largestHolder() string {
	counts := map[string]int{}
	oldest := map[string]uint64{}
	for _, run := range r.runs {
		counts[run.tenant]++
		if s, ok := oldest[run.tenant]; !ok || run.seq < s {
			oldest[run.tenant] = run.seq
		}
	}
	best := ""
	for t, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && oldest[t] < oldest[best] {
			best = t
		}
	}
	return best
}

// count is how many runs tenant holds. The caller holds r.mu.
func (r *Runs) count(tenant string) int {
	n := 0
	for _, run := range r.runs {
		if run.tenant == tenant {
			n++
		}
	}
	return n
}

// removeOldest ends tenant's oldest run. The caller holds r.mu.
func (r *Runs) removeOldest(tenant string) {
	var old *Run
	for _, run := range r.runs {
		if run.tenant == tenant && (old == nil || run.seq < old.seq) {
			old = run
		}
	}
	if old != nil {
		r.remove(old.id)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// get returns the live run with id, or nil.
func (r *Runs) get(id string) *Run {
	if r == nil || !validID(id) {
		return nil
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.runs[id]
	if run == nil {
		return nil
	}
	if !now.Before(run.expires) {
		r.remove(id)
		return nil
	}
	return run
}

// byLink returns the run that minted the download link with signature sig.
func (r *Runs) byLink(sig string) *Run {
	if r == nil || sig == "" {
		return nil
	}
	r.mu.Lock()
	id, ok := r.links[sig]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	return r.get(id)
}

// addLink remembers that run minted the link with signature sig.
func (r *Runs) addLink(run *Run, sig string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, live := r.runs[run.id]; !live {
		return
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if len(run.links) >= maxLinks || slices.Contains(run.links, sig) {
		return
	}
	run.links = append(run.links, sig)
	r.links[sig] = run.id
}
