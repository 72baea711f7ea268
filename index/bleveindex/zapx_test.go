package bleveindex

import (
	"testing"

	zapx "github.com/blevesearch/zapx/v17"
)

// zapx's up-front segment buffer stays off (see init). The allocation
// itself is not measured here: zapx keeps the last batch's sizes in a
// sync.Pool, so whether a test's next batch sees them depends on when the
// collector ran; the gateway's heap profile saw it (bench/README.md,
// issue 24).
func TestNoUpFrontSegmentBuffer(t *testing.T) {
	if zapx.NewSegmentBufferNumResultsFactor != 0 || zapx.NewSegmentBufferAvgBytesPerDocFactor != 0 {
		t.Errorf("zapx sizes a new segment's buffer from the last one: factors %v and %v, want 0",
			zapx.NewSegmentBufferNumResultsFactor, zapx.NewSegmentBufferAvgBytesPerDocFactor)
	}
}
