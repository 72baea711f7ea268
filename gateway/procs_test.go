package gateway

import "testing"

// The gateway leaves one core to its upstreams, never goes below one, and
// an operator's GOMAXPROCS wins.
func TestSetProcs(t *testing.T) {
	for _, tc := range []struct {
		env        string
		cores      int
		want       int
		wantSet    bool
		wantCalled bool
	}{
		{cores: 2, want: 1, wantSet: true, wantCalled: true},
		{cores: 8, want: 7, wantSet: true, wantCalled: true},
		{cores: 1, want: 1},
		{env: "2", cores: 2, want: 2},
		{env: "8", cores: 8, want: 8},
	} {
		procs := tc.cores
		called := false
		gomaxprocs := func(n int) int {
			prev := procs
			if n > 0 {
				procs, called = n, true
			}
			return prev
		}
		getenv := func(k string) string {
			if k == "GOMAXPROCS" {
				return tc.env
			}
			return ""
		}
		got, set := setProcs(getenv, gomaxprocs)
		if got != tc.want || set != tc.wantSet || procs != tc.want || called != tc.wantCalled {
			t.Errorf("GOMAXPROCS=%q on %d cores: setProcs = %d, %v, the runtime's now %d (set: %v); want %d, %v",
				tc.env, tc.cores, got, set, procs, called, tc.want, tc.wantSet)
		}
	}
}
