package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom int64
		want           int
	}{
		{0, 64 * mib, 1600},          // an empty heap counts as the runtime's 4 MiB minimum
		{4 * mib, 64 * mib, 1600},    // goal 4 + 64 MiB
		{16 * mib, 64 * mib, 400},    // goal 16 + 64 MiB
		{63 * mib, 64 * mib, 101},    // just below: a little more than GOGC=100
		{64 * mib, 64 * mib, 100},    // from here on GOGC=100's own goal
		{512 * mib, 64 * mib, 100},   // a large heap: never below 100
		{1 * mib, 2 * mib, 100},      // a headroom under the minimum heap adds nothing
		{4 * mib, 1 << 62, 26214400}, // 1 TiB at most, no overflow
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.headroom/mib, got, c.want)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// live32MiB allocates 32 MiB in 1 MiB pieces, for the caller to hold.
func live32MiB() [][]byte {
	hold := make([][]byte, 32)
	for i := range hold {
		hold[i] = make([]byte, 1<<20)
	}
	return hold
}

// collectUntil runs collections until the runtime's GOGC satisfies ok,
// failing with what when deadline passes first.
func collectUntil(t *testing.T, deadline time.Time, ok func(int) bool, what string) {
	t.Helper()
	for {
		runtime.GC()
		if p := GOGC(); ok(p) {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC is %d", what, p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartFollowsTheLiveHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	const headroom = 256 << 20
	stop, started := Start(headroom, env(nil))
	if !started {
		t.Fatal("Start did not start without GOGC in the environment")
	}
	// A live heap of 32 MiB held across collections: the goal the hook
	// sets is live + 256 MiB, a percent near 800 (stacks and globals add
	// a little to live).
	hold := live32MiB()
	deadline := time.Now().Add(10 * time.Second)
	near800 := func(p int) bool { return p > 600 && p <= 800 }
	collectUntil(t, deadline, near800, "after collections with 32 MiB live, want 600 to 800 (live+256 MiB)")
	runtime.KeepAlive(hold)
	// Anything else that sets the percent is put right at the next cycle.
	debug.SetGCPercent(150)
	collectUntil(t, deadline, near800, "a percent set by someone else stayed, want 600 to 800")
	runtime.KeepAlive(hold)
	// One tuner at a time: the runtime has one GOGC.
	if stop2, again := Start(headroom, env(nil)); again {
		stop2()
		t.Fatal("a second Start started while the first runs")
	}
	// Release it: the percent rises to the empty heap's.
	hold = nil
	collectUntil(t, deadline, func(p int) bool { return p > 1600 }, "after the 32 MiB were released, want more than 1600")
	stop()
	if p := GOGC(); p != 100 {
		t.Fatalf("after stop GOGC is %d, want the 100 it found", p)
	}
	// A live heap that changes after stop: a hook still running would set
	// another percent.
	hold = live32MiB()
	for range 5 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(hold)
	if p := GOGC(); p != 100 {
		t.Fatalf("collections after stop set GOGC to %d, want it left at 100", p)
	}
	stop() // twice is harmless
	// Stopped, a tuner may start again.
	stop3, started := Start(headroom, env(nil))
	if !started {
		t.Fatal("Start after stop did not start")
	}
	stop3()
}

func TestStartLeavesTheOperatorsSetting(t *testing.T) {
	before := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, c := range []struct {
		name     string
		headroom int64
		env      map[string]string
	}{
		{"GOGC set", 64 << 20, map[string]string{"GOGC": "150"}},
		{"GOGC=off", 64 << 20, map[string]string{"GOGC": "off"}},
		{"headroom 0", 0, nil},
	} {
		stop, started := Start(c.headroom, env(c.env))
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		if started || GOGC() != 150 {
			t.Errorf("%s: started %v, GOGC %d; want not started and the 150 in force", c.name, started, GOGC())
		}
		stop()
	}
}
