package resourced

import (
	"regexp"
	"testing"
	"time"
)

// TestRetentionIsSentAsAdvertised: retention goes out as the ISO-8601
// string the save tools' schema advertises (a string matching its
// pattern), whole seconds rounded up, not as a bare number.
func TestRetentionIsSentAsAdvertised(t *testing.T) {
	pattern := regexp.MustCompile(`^P(?:[0-9]+W)?(?:[0-9]+D)?(?:T(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?$`)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{90 * time.Minute, `"PT5400S"`},
		{time.Second + 1, `"PT2S"`},
		{time.Millisecond, `"PT1S"`},
	} {
		got := string((&SaveOptions{Retention: tc.d}).args().Retention)
		if got != tc.want || !pattern.MatchString(got[1:len(got)-1]) {
			t.Errorf("retention %v is sent as %s, want %s", tc.d, got, tc.want)
		}
	}
	if got := (&SaveOptions{}).args().Retention; got != nil {
		t.Errorf("no retention is sent as %s", got)
	}
}
