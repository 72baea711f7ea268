package integration

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// reconcileUsage runs `resourced reconcile` for one tenant of in's store
// and returns the usage it found before and set after.
func reconcileUsage(t *testing.T, in *instance, tenant string) (before, after [2]int64) {
	t.Helper()
	cmd := in.binCmd("reconcile", "--config", in.config, "--tenant", tenant)
	cmd.Env = append(os.Environ(), in.extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // progress and the summary; the result is stdout's
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("resourced reconcile: %v\n%s%s", err, out, stderr.Bytes())
	}
	line, _, _ := strings.Cut(string(out), "\n")
	var name string
	if _, err := fmt.Sscanf(line, "%s %d bytes in %d objects (was %d bytes in %d objects)", &name, &after[0], &after[1], &before[0], &before[1]); err != nil || name != tenant+":" {
		t.Fatalf("resourced reconcile printed %q (%v)", out, err)
	}
	return before, after
}

// storedSum is the true usage of in's tenant: the sizes list_resources
// shows.
func storedSum(t *testing.T, in *instance) (sum [2]int64) {
	t.Helper()
	lr := checkSuccess(t, in.call(v2026, "list_resources", map[string]any{"limit": 100}), -1)
	for _, it := range lr["items"].([]any) {
		sum[0] += int64(it.(map[string]any)["size"].(float64))
		sum[1]++
	}
	return sum
}

// TestQuotaTwoInstancesOnS3: two instances on one bucket race saves for
// the last bytes of a tenant's quota, then deletes and saves together:
// usage never exceeds the quota, exactly as many saves win as fit, and
// after `resourced reconcile` usage equals the true sum.
func TestQuotaTwoInstancesOnS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	const quota, size = 1000, 100
	a := startServer(t, s3Config(endpoint, bucket, "it-"+randomHex(6))+fmt.Sprintf("quota: {bytes: %d}\n", quota))
	b := startPeer(t, a)
	body := strings.Repeat("q", size)

	// race saves paths with 8 clients on each instance and returns how
	// many won; every loser is quota_exceeded.
	race := func(round string, each int, also func()) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i, in := range []*instance{a, b} {
			for c := range each {
				wg.Go(func() {
					r := in.call(v2026, "save_report", map[string]any{"path": fmt.Sprintf("%s/%d-%d", round, i, c), "mimeType": "text/plain", "text": body})
					if r.IsError {
						checkFailure(t, r, "quota_exceeded")
						return
					}
					mu.Lock()
					won++
					mu.Unlock()
				})
			}
		}
		if also != nil {
			wg.Go(also)
		}
		wg.Wait()
		return won
	}

	if won := race("r1", 8, nil); won != quota/size {
		t.Errorf("%d of 16 saves of %d bytes won a %d-byte quota, want exactly %d", won, size, quota, quota/size)
	}
	if got := storedSum(t, b); got != [2]int64{quota, quota / size} {
		t.Fatalf("stored after the race: %v, want %d bytes in %d objects", got, quota, quota/size)
	}
	before, after := reconcileUsage(t, a, "default")
	if before[0] > quota {
		t.Errorf("usage before reconcile %d bytes, over the quota of %d", before[0], quota)
	}
	if after != [2]int64{quota, quota / size} {
		t.Errorf("usage after reconcile %v, want the true %d bytes in %d objects", after, quota, quota/size)
	}

	// Deletes through A free room that both instances race for.
	lr := checkSuccess(t, a.call(v2026, "list_resources", map[string]any{"limit": 4}), -1)
	var uris []any
	for _, it := range lr["items"].([]any) {
		uris = append(uris, it.(map[string]any)["uri"])
	}
	won := race("r2", 4, func() {
		for _, u := range uris {
			checkSuccess(t, a.call(v2026, "delete_resource", map[string]any{"uri": u}), 0)
		}
	})
	if won > len(uris) {
		t.Errorf("%d saves won after %d deletes from a full quota", won, len(uris))
	}
	truth := storedSum(t, a)
	if truth[0] > quota {
		t.Errorf("stored %d bytes, over the quota of %d", truth[0], quota)
	}
	before, after = reconcileUsage(t, b, "default")
	if before[0] > quota || before[0] < truth[0] || before[1] < truth[1] {
		t.Errorf("usage before reconcile %v: over the quota, or under the true %v", before, truth)
	}
	if after != truth {
		t.Errorf("usage after reconcile %v, want the true %v", after, truth)
	}
	// With the room filled, one byte more is refused on both instances.
	for _, in := range []*instance{a, b} {
		for range (quota - truth[0]) / size {
			checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "fill/" + randomHex(4), "mimeType": "text/plain", "text": body}), 1)
			truth[0] += size
		}
		checkFailure(t, in.call(v2026, "save_report", map[string]any{"path": "over", "mimeType": "text/plain", "text": "x"}), "quota_exceeded")
	}
}
