package links

import "testing"

// TestUnsatisfiableAsPastEnd covers the empty body, which no save stores
// but a backend could hold.
func TestUnsatisfiableAsPastEnd(t *testing.T) {
	for _, tc := range []struct {
		h    string
		size int64
		want string
	}{
		{"bytes=-0", 20, "bytes=20-"},
		{"bytes=-5", 0, "bytes=0-"},
		{"bytes=0-", 0, "bytes=0-"},
		{"bytes=-5", 20, "bytes=-5"},
		{"bytes=1-2,-0", 20, "bytes=1-2,20-"},
		{"bytes=--0", 20, "bytes=--0"},
		{"items=-0", 20, "items=-0"},
	} {
		if got := unsatisfiableAsPastEnd(tc.h, tc.size); got != tc.want {
			t.Errorf("unsatisfiableAsPastEnd(%q, %d) = %q, want %q", tc.h, tc.size, got, tc.want)
		}
	}
}
