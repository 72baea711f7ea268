package gateway

import "runtime"

// SetProcs runs the gateway's Go code on one core fewer than the Go
// runtime would use (GOMAXPROCS, at least one), unless the operator set
// GOMAXPROCS: then theirs holds. It returns the number in force and
// whether it set it.
//
// A gateway waits far more than it computes: a call's time is its
// upstream's, a process of its own (a stdio one is the gateway's child,
// on the same machine). While one goroutine works and another P is idle,
// the Go scheduler wakes a second thread for every goroutine that
// becomes ready, and that thread finds nothing and sleeps again: on a
// 2-core VM a quarter of the gateway's CPU per call, taken from the
// upstream beside it. With a core left to the upstreams the gateway spent
// a fifth less CPU per call, and on a quiet machine its large answers came
// in as fast or faster (bench/README.md, issue 25: "a core left to the
// upstreams").
//
// Setting GOMAXPROCS stops the runtime's own updates of it (a container's
// CPU limit changing while the gateway runs); GOMAXPROCS in the
// environment keeps them, and the runtime's default, when set to it.
func SetProcs(getenv func(string) string) (procs int, set bool) {
	return setProcs(getenv, runtime.GOMAXPROCS)
}

func setProcs(getenv func(string) string, gomaxprocs func(int) int) (int, bool) {
	n := gomaxprocs(0)
	if getenv("GOMAXPROCS") != "" || n <= 1 {
		return n, false
	}
	gomaxprocs(n - 1)
	return n - 1, true
}
