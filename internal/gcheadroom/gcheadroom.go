// Package gcheadroom lets the Go heap grow by a fixed number of bytes past
// what the last collection found live before the next one starts, when
// that is more than GOGC=100 allows.
//
// With GOGC=100 the collector starts a cycle when the heap has grown by
// as much as was live (plus stacks and globals) after the last one. A
// server whose live heap is small but which allocates fast (resourced
// holds a few MiB live and allocates a few KiB per request) then collects
// many times a second, and the collector's work is a fifth of what each
// request costs (bench/README.md, "Issue 25: the collector's share"). A
// headroom H makes the goal live + max(live, H): GOGC=100's goal for a
// heap of H or more live, and at most H more than that goal below it, so
// the memory this spends is bounded by H, not by a factor of the heap.
//
// It is what GOGC does with a floor: after nearly every cycle (a cycle
// that starts while the hook's sentinel is new may keep it) Start's hook
// sets the runtime's percent to the one that gives that goal. One tuner
// runs in a process at a time. The operator's GOGC, when set, wins (Start
// then does nothing); GOMEMLIMIT and debug.SetMemoryLimit still bound the
// heap as they do with any GOGC.
package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// running is set while a tuner runs: the runtime has one GOGC.
var running atomic.Bool

// MinHeap is the runtime's minimum heap goal at GOGC=100, which it
// scales by GOGC/100 like the rest of the goal: a live heap below it is
// taken as this much, so that a nearly empty heap (at start) does not get
// a goal far past live + headroom through that scaling. A headroom of
// MinHeap or less changes nothing; MaxHeadroom bounds one.
const (
	MinHeap     = 4 << 20
	MaxHeadroom = 1 << 40
)

// Percent is the GOGC that gives a heap whose last collection found
// scannable bytes live (heap, stacks and globals) a goal of
// live + max(live, headroom), at least 100.
func Percent(live, headroom int64) int {
	live, headroom = max(live, MinHeap), min(headroom, MaxHeadroom)
	if headroom <= live {
		return 100
	}
	return int(headroom * 100 / live)
}

// live reads what the last collection found live and scannable, the
// base GOGC's percent applies to.
func live(samples []metrics.Sample) int64 {
	metrics.Read(samples)
	var n int64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += int64(s.Value.Uint64())
		}
	}
	return n
}

// Start sets the runtime's GOGC from headroom now and after each
// collection, until the returned stop is called (stop puts back the
// percent Start found). It does nothing and reports false when headroom
// is 0 or less, the environment sets GOGC (then the runtime's own setting
// holds) or another tuner runs.
func Start(headroom int64, getenv func(string) string) (stop func(), started bool) {
	if headroom <= 0 || getenv("GOGC") != "" || !running.CompareAndSwap(false, true) {
		return func() {}, false
	}
	t := &tuner{
		headroom: headroom,
		samples: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"},
			{Name: "/gc/scan/stack:bytes"},
			{Name: "/gc/scan/globals:bytes"},
		},
		gogc: []metrics.Sample{{Name: "/gc/gogc:percent"}},
	}
	t.before = debug.SetGCPercent(Percent(live(t.samples), headroom))
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.stopped = true
			debug.SetGCPercent(t.before)
			running.Store(false)
		}
	}, true
}

type tuner struct {
	headroom int64
	samples  []metrics.Sample // what live reads
	gogc     []metrics.Sample // the runtime's percent
	before   int
	mu       sync.Mutex // held by the hook and stop
	stopped  bool
}

// sentinel is what the hook hangs on: an object with a pointer, so that
// the runtime never puts it in a tiny block, whose cleanups may never run.
type sentinel struct{ _ *tuner }

// arm has after run once a collection finds a fresh sentinel
// unreachable: at the end of the next cycle.
func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) { t.after() }, t)
}

// after is the hook: one percent for the live heap just found, set when
// the runtime's differs (so a percent set by anything else is put right
// at the next cycle), then armed again for the next cycle.
func (t *tuner) after() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.gogc)
	if p := Percent(live(t.samples), t.headroom); uint64(p) != t.gogc[0].Value.Uint64() {
		debug.SetGCPercent(p)
	}
	t.arm()
}

// GOGC is the runtime's percent now, read without changing it.
func GOGC() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
