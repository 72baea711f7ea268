package auth

import (
	"errors"
	"strings"
	"testing"
)

// TestDescriptionsAreQuotable: every reason's description can stand in an
// RFC 6750 quoted error_description as it is.
func TestDescriptionsAreQuotable(t *testing.T) {
	for reason, d := range descriptions {
		if d == "" || strings.ContainsAny(d, "\"\\") || strings.IndexFunc(d, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			t.Errorf("descriptions[%q] = %q: empty, or not quotable", reason, d)
		}
	}
	if got := Description(nil); got != "" {
		t.Errorf("Description(nil) = %q, want \"\"", got)
	}
	if got := Description(errors.New("x")); got == "" {
		t.Error("Description of a foreign error is empty")
	}
	if got, want := Description(unavailable("down")), descriptions[reasonUnavailable]; got != want {
		t.Errorf("Description(unavailable) = %q, want %q", got, want)
	}
}
