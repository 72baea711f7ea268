package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Partitions: the S3 service and two resourced instances run on hosts of
// their own (network namespaces, netns_test.go); instance A is cut off
// from S3 mid-history and healed. Its callers keep reaching it and get
// answers (unavailable while it cannot reach S3); nothing an instance
// acknowledged may be lost and the histories must stay linearizable.

// partitionSchedule cuts a's link after cut and heals it heal later, in
// the background; the returned wait reports when both happened.
func partitionSchedule(t *testing.T, pn *partitionNet, cut, heal time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(cut)
		t.Logf("cutting A off from S3 at %v", cut)
		pn.cutA()
		time.Sleep(heal)
		t.Logf("healing A's link after %v", heal)
		pn.heal()
	}()
	return func() { <-done }
}

// partitionPair starts versitygw and two instances on one prefix, each on
// its own host, with a callTimeout of one second.
func partitionPair(t *testing.T, extraYAML string) (pn *partitionNet, a, b *instance) {
	t.Helper()
	requireNetns(t)
	pn = newPartitionNet(t)
	vs := startVersityIn(t, pn.s3)
	key := []byte(randomHex(32))
	prefix := "part-" + randomHex(6)
	pn.objects = filepath.Join(vs.root, "faults", prefix)
	a = startInNetns(t, pn.a, key, s3LinConfig("http://"+pn.s3ForA, "faults", prefix, time.Second)+extraYAML, vs.env())
	b = startInNetns(t, pn.b, key, s3LinConfig("http://"+pn.s3ForB, "faults", prefix, time.Second)+extraYAML, vs.env())
	return pn, a, b
}

// TestPartitionS3History: (b) of linearizability_test.go with A cut off
// from S3 for 3 s in the middle of a 12 s history. After the heal every key
// is read through both instances until they answer, so a write either
// acknowledged and lost, or resurrected, is a violation porcupine sees.
func TestPartitionS3History(t *testing.T) {
	pn, a, b := partitionPair(t, "")
	w := workload{Seed: 1, Keys: 4, Clients: 8, Ops: 100000, Mix: fullMix, Deadline: time.Duration(scaled(12)) * time.Second, Timeout: 20 * time.Second}
	wait := partitionSchedule(t, pn, 2*time.Second, 3*time.Second)
	h := w.run(t, a, b)
	wait()
	for ii, in := range []*instance{a, b} {
		c := newLinClient(in, 20*time.Second)
		for k := range w.Keys {
			path := fmt.Sprintf("lin/k%d", k)
			finalRead(t, h, c, 1000+ii, path, ii == 0)
		}
	}
	unknown := 0
	for kind, n := range h.count {
		if strings.HasSuffix(kind, "/unknown") && !strings.HasPrefix(kind, "read/") {
			unknown += n
		}
	}
	if unknown == 0 {
		t.Errorf("no write had an unknown outcome: the partition did not bite (counts %v)", h.count)
	}
	// deleteIfMatch/ok is rare in a short history on a loaded machine.
	requireLinearizable(t, h, 2*time.Minute, slices.DeleteFunc(slices.Clone(everyOutcome), func(o string) bool { return o == "deleteIfMatch/ok" }))
}

// finalRead reads path through c into h, retrying an unknown answer for
// up to a minute (the instance may still be reconnecting after the heal).
func finalRead(t *testing.T, h *history, c *linClient, client int, path string, viaStat bool) {
	t.Helper()
	in := regInput{Key: path, Kind: opRead, Via: "resources/read"}
	deadline := time.Now().Add(time.Minute)
	for {
		call := h.now()
		out := c.readResource(t, "report://default/"+path)
		h.add(client, in, call, out)
		if out.Out != outUnknown {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: no answer but unavailable a minute after the heal", path)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// listReports is the paths of in's tenant's stored resources, from every
// page of list_resources.
func listReports(t *testing.T, in *instance) map[string]bool {
	t.Helper()
	listed := map[string]bool{}
	for cursor := ""; ; {
		args := map[string]any{"limit": 100}
		if cursor != "" {
			args["cursor"] = cursor
		}
		lr := checkSuccess(t, in.call(v2026, "list_resources", args), -1)
		for _, it := range lr["items"].([]any) {
			listed[strings.TrimPrefix(it.(map[string]any)["uri"].(string), "report://default/")] = true
		}
		if cursor, _ = lr["nextCursor"].(string); cursor == "" {
			return listed
		}
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// saveState is what a quota-race client knows of one path.
type saveState int

const (
	stored  saveState = iota // save acknowledged, no delete attempted
	deleted                  // delete acknowledged
	maybe                    // a save or delete with an unknown outcome
)

// quotaCall calls tool through c: "ok", the errorKind, or "unknown" for
// a transport failure.
func quotaCall(t *testing.T, c *linClient, tool string, args map[string]any) string {
	r, err := c.rpc("tools/call", map[string]any{"name": tool, "arguments": args})
	if errors.Is(err, errTransport) {
		return "unknown"
	}
	if err != nil || r.Error != nil {
		t.Errorf("tools/call %s: %v %v", tool, err, r)
		return "unknown"
	}
	var res linToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Errorf("tools/call %s: %v", tool, err)
		return "unknown"
	}
	if !res.IsError {
		return "ok"
	}
	return res.StructuredContent.ErrorKind
}

// TestPartitionS3Quota: the two-instance quota race with A cut off from
// S3 for 3 s in the middle. Clients on both instances save new reports
// and delete their oldest, so the quota stays contended through the cut.
// After the heal: everything acknowledged as saved and not deleted is
// stored, nothing acknowledged as deleted is, nothing else is; stored
// bytes never exceed the quota; `resourced reconcile` finds usage within
// the quota and sets it to the truth; the room left fills exactly.
func TestPartitionS3Quota(t *testing.T) {
	const quota, size = 2000, 100
	pn, a, b := partitionPair(t, fmt.Sprintf("quota: {bytes: %d}\n", quota))
	body := strings.Repeat("q", size)
	var mu sync.Mutex
	state := map[string]saveState{}
	kinds := map[string]int{}
	set := func(path string, s saveState, kind string) {
		mu.Lock()
		defer mu.Unlock()
		state[path] = s
		kinds[kind]++
	}
	stop := time.Now().Add(8 * time.Second)
	wait := partitionSchedule(t, pn, 2*time.Second, 3*time.Second)
	var wg sync.WaitGroup
	for ii, in := range []*instance{a, b} {
		c := newLinClient(in, 20*time.Second)
		for ci := range 6 {
			wg.Go(func() {
				var mine []string
				for i := 0; time.Now().Before(stop); i++ {
					path := fmt.Sprintf("q/%d-%d-%d", ii, ci, i)
					switch k := quotaCall(t, c, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": body}); k {
					case "ok":
						set(path, stored, "save/ok")
						mine = append(mine, path)
						if i%2 == 0 {
							continue
						}
					case "quota_exceeded":
						set(path, deleted, "save/quota_exceeded") // never stored
					case "unavailable", "unknown":
						set(path, maybe, "save/"+k)
						continue
					default:
						t.Errorf("save %s: %s", path, k)
						continue
					}
					if len(mine) == 0 {
						continue
					}
					old := mine[0]
					mine = mine[1:]
					switch k := quotaCall(t, c, "delete_resource", map[string]any{"uri": "report://default/" + old}); k {
					case "ok":
						set(old, deleted, "delete/ok")
					case "unavailable", "unknown":
						set(old, maybe, "delete/"+k)
					default:
						t.Errorf("delete %s (acknowledged as saved, deleted by nobody else): %s", old, k)
					}
				}
			})
		}
	}
	wg.Wait()
	wait()
	t.Logf("outcomes: %v", kinds)
	if kinds["save/unavailable"]+kinds["save/unknown"]+kinds["delete/unavailable"]+kinds["delete/unknown"] == 0 {
		t.Errorf("no call had an unknown outcome: the partition did not bite")
	}
	if kinds["save/quota_exceeded"] == 0 || kinds["delete/ok"] == 0 {
		t.Errorf("the quota was not contended: %v", kinds)
	}

	// A answers again after the heal.
	deadline := time.Now().Add(time.Minute)
	for quotaCall(t, newLinClient(a, 20*time.Second), "stat_resource", map[string]any{"uri": "report://default/q/none"}) != "not_found" {
		if time.Now().After(deadline) {
			t.Fatal("A does not reach S3 a minute after the heal")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A save answered unavailable during the cut may still land after the
	// heal (its request bytes were in a socket buffer when A gave up), so
	// the stored set is read until a reconcile between two listings saw
	// it unchanged.
	var listed map[string]bool
	var truth, before, after [2]int64
	for round := 1; ; round++ {
		first := listReports(t, a)
		before, after = reconcileUsage(t, b, "default")
		if before[0] > quota {
			t.Errorf("usage before reconcile %v, over the quota of %d", before, quota)
		}
		listed = listReports(t, a)
		if sameSet(first, listed) {
			break
		}
		if round == 6 {
			t.Fatalf("the stored reports still change %d rounds after the heal", round)
		}
		t.Logf("round %d: the stored reports changed during reconcile (a late write landed); again in 5 s", round)
		time.Sleep(5 * time.Second)
	}
	for path, s := range state {
		switch {
		case s == stored && !listed[path]:
			r := b.call(v2026, "stat_resource", map[string]any{"uri": "report://default/" + path})
			t.Errorf("%s: saved (acknowledged), never deleted, and not listed; stat_resource: %s", path, r.raw)
		case s == deleted && listed[path]:
			t.Errorf("%s: refused or deleted (acknowledged), yet stored", path)
		}
	}
	for path := range listed {
		if _, ok := state[path]; !ok {
			t.Errorf("%s is stored but was never saved", path)
		}
	}
	truth = [2]int64{int64(len(listed)) * size, int64(len(listed))}
	if truth[0] > quota {
		t.Errorf("stored %d bytes, over the quota of %d", truth[0], quota)
	}
	// Reconcile sets the committed usage to what the listing shows and
	// keeps the reservations of writes that may still land: a save of
	// unknown outcome whose PUT is not in the listing keeps its
	// reservation (its request may yet reach S3) until it is 15 min old
	// (docs/s3.md, "Partitions"). So usage after reconcile is exactly the
	// listed truth plus those reservations, each one object of one
	// unknown-outcome save whose path is not listed.
	doc := readUsageDoc(t, pn, "default")
	if c := [2]int64{doc.Committed.Bytes, doc.Committed.Objects}; c != truth {
		t.Errorf("committed usage after reconcile %v, want the listed %v", c, truth)
	}
	var reserved [2]int64
	n := int64(0)
	for _, p := range doc.Pending {
		if p.Counted || p.Bytes <= 0 && p.Objects <= 0 {
			continue
		}
		if p.Bytes != size || p.Objects != 1 {
			t.Errorf("reservation %+v kept after reconcile: not one save of %d bytes", p, size)
		}
		reserved[0], reserved[1] = reserved[0]+max(p.Bytes, 0), reserved[1]+max(p.Objects, 0)
		n++
	}
	unlisted := int64(0)
	for path, s := range state {
		if s == maybe && !listed[path] {
			unlisted++
		}
	}
	if after != [2]int64{truth[0] + reserved[0], truth[1] + reserved[1]} || n > unlisted || after[0] > quota {
		t.Errorf("usage after reconcile %v, want the listed %v plus the %d reservation(s) %v of writes that may still land (at most the %d unknown-outcome writes not listed), within the quota", after, truth, n, reserved, unlisted)
	} else if n > 0 {
		t.Logf("usage after reconcile %v: the listed %v plus %d reservation(s) of unknown-outcome saves that did not land (yet)", after, truth, n)
	}
	truth = after
	// The room left fills exactly, through either instance.
	for n := truth[0]; n < quota; n += size {
		checkSuccess(t, a.call(v2026, "save_report", map[string]any{"path": "fill/" + randomHex(4), "mimeType": "text/plain", "text": body}), 1)
	}
	for _, in := range []*instance{a, b} {
		checkFailure(t, in.call(v2026, "save_report", map[string]any{"path": "over", "mimeType": "text/plain", "text": "x"}), "quota_exceeded")
	}
}

// usageDoc is what TestPartitionS3Quota reads of s3store's usage object:
// committed usage and the writes in progress (store/s3store/usage.go).
type usageDoc struct {
	Committed struct{ Bytes, Objects int64 }
	Pending   []struct {
		Bytes, Objects int64
		Counted        bool
	}
}

// readUsageDoc reads tenant's usage object from versitygw's disk.
func readUsageDoc(t *testing.T, pn *partitionNet, tenant string) (u usageDoc) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pn.objects, "!usage", tenant))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatalf("usage object %s: %v", b, err)
	}
	return u
}
