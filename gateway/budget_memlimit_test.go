package gateway

import (
	"runtime/debug"
	"testing"
)

// The soft memory limit follows the in-flight budget, and an operator's
// GOMEMLIMIT wins.
func TestSetSoftMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	limit, set := SetSoftMemoryLimit(100<<20, getenv)
	if !set || limit != 100<<20+memoryHeadroom || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("SetSoftMemoryLimit(100 MiB) = %d, %v; the runtime's limit %d; want %d, true", limit, set, debug.SetMemoryLimit(-1), 100<<20+memoryHeadroom)
	}
	env["GOMEMLIMIT"] = "1GiB"
	debug.SetMemoryLimit(1 << 30)
	if limit, set := SetSoftMemoryLimit(100<<20, getenv); set || limit != 1<<30 || debug.SetMemoryLimit(-1) != 1<<30 {
		t.Fatalf("with GOMEMLIMIT: %d, %v, the runtime's %d; want the operator's 1 GiB untouched", limit, set, debug.SetMemoryLimit(-1))
	}
	delete(env, "GOMEMLIMIT")
	for _, bad := range []int64{0, -1, 1<<63 - 1} {
		debug.SetMemoryLimit(1 << 40)
		if limit, set := SetSoftMemoryLimit(bad, getenv); set || limit != 1<<40 {
			t.Errorf("SetSoftMemoryLimit(%d) = %d, %v; want the limit untouched", bad, limit, set)
		}
	}
}
