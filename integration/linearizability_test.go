package integration

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability, checked: concurrent clients run seed-driven workloads
// of save_report (create-only, ifMatch, overwrite), delete_resource and
// reads (resources/read, stat_resource) on a few report paths against the
// real binary, and porcupine checks every recorded history against the
// register model of linear_model_test.go. A failing history is written as
// a porcupine visualization to a temporary file whose path is logged.
//
// Each history is a few thousand operations at most and takes seconds.
// -linear.long runs every history longer (more seeds, more operations);
// -linear.seed=N adds seed N (to replay a failure; add it to linSeeds).

var (
	linLong = flag.Bool("linear.long", false, "run the linearizability histories longer")
	linSeed = flag.Uint64("linear.seed", 0, "also run the linearizability histories with this seed")
)

// linSeeds are the seeds every run checks. A seed whose history once
// failed stays here as a regression test.
var linSeeds = []uint64{1}

func seeds() []uint64 {
	s := append([]uint64(nil), linSeeds...)
	if *linLong {
		s = append(s, 2, 3, 4, 5)
	}
	if *linSeed != 0 {
		s = append(s, *linSeed)
	}
	return s
}

// scaled is n, or 4n under -linear.long.
func scaled(n int) int {
	if *linLong {
		return 4 * n
	}
	return n
}

// fullMix exercises every rule of the model.
var fullMix = map[opKind]int{opRead: 34, opCreate: 18, opIfMatch: 20, opOverwrite: 10, opDelete: 10, opDeleteIfMatch: 8}

// everyOutcome is what a history must contain to say something about each
// rule of the model.
var everyOutcome = []string{
	"read/ok", "read/not_found",
	"create/ok", "create/conflict",
	"ifMatch/ok", "ifMatch/conflict",
	"overwrite/ok",
	"delete/ok", "delete/not_found",
	"deleteIfMatch/ok", "deleteIfMatch/conflict",
}

func requireLinearizable(t *testing.T, h *history, timeout time.Duration, outcomes []string) {
	t.Helper()
	ops := h.finish()
	t.Logf("history:%s", h.summary())
	h.requireCoverage(t, outcomes...)
	switch checkLinearizable(t, registerModel, ops, timeout) {
	case porcupine.Illegal:
		t.Errorf("the history is not linearizable (see the visualization above)")
	case porcupine.Unknown:
		t.Errorf("porcupine gave up after %v: make the history smaller", timeout)
	}
}

// TestLinearizableBolt: (a) one instance on bbolt, 16 clients, 4 paths.
func TestLinearizableBolt(t *testing.T) {
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			in := startServer(t, "")
			w := workload{Seed: seed, Keys: 4, Clients: 16, Ops: scaled(250), Mix: fullMix, Deadline: time.Duration(scaled(15)) * time.Second, Timeout: 10 * time.Second}
			requireLinearizable(t, w.run(t, in), time.Minute, everyOutcome)
		})
	}
}

// linPeer starts another process with in's config, key, token and
// environment (startPeer does not pass the environment on).
func linPeer(t *testing.T, in *instance) *instance {
	t.Helper()
	p := &instance{t: t, dataDir: filepath.Join(t.TempDir(), "data"), config: in.config, Key: in.Key, Token: in.Token, extraEnv: in.extraEnv}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// s3Mix leaves out delete_resource, which TestLinearizableS3Deletes
// covers, so that these histories test the writes on more paths.
var s3Mix = map[opKind]int{opRead: 40, opCreate: 20, opIfMatch: 25, opOverwrite: 15}

var s3Outcomes = []string{"read/ok", "read/not_found", "create/ok", "create/conflict", "ifMatch/ok", "ifMatch/conflict", "overwrite/ok"}

// s3LinConfig is the store section for prefix of bucket at endpoint.
func s3LinConfig(endpoint, bucket, prefix string, callTimeout time.Duration) string {
	return fmt.Sprintf("store:\n  backend: s3\n  s3: {bucket: %s, prefix: %s, endpoint: %q, pathStyle: true, region: us-east-1, callTimeout: %s}\n", bucket, prefix, endpoint, callTimeout)
}

// TestLinearizableS3: (b) two instances on one versitygw bucket, 8 clients
// each.
func TestLinearizableS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			a := startServer(t, s3LinConfig(endpoint, bucket, "lin-"+randomHex(6), 3*time.Second))
			b := linPeer(t, a)
			w := workload{Seed: seed, Keys: 8, Clients: 8, Ops: scaled(150), Mix: s3Mix, Deadline: time.Duration(scaled(15)) * time.Second, Timeout: 20 * time.Second}
			requireLinearizable(t, w.run(t, a, b), time.Minute, s3Outcomes)
		})
	}
}

// TestLinearizableS3Deletes is (b) with delete_resource in the mix. Its
// seed-1 history once showed two violations, both from s3store's Delete
// sending DELETE to versitygw v1.8.0 (xattr mode):
//   - two unconditional deletes of one object both answered "deleted",
//     with no write between them: S3 answers 204 for a missing key;
//   - a read answered not found while the object existed before and after
//     it with no delete taking effect in between: versitygw checks a
//     DELETE's If-Match outside the publish lock its PUTs take, so a
//     deleteIfMatch removed the newer object a concurrent PUT had just
//     published (store/s3store's TestServerDeleteIfMatchIsAtomic shows it
//     on versitygw alone).
//
// s3store now deletes by a tombstone PUT bound by If-Match (its package
// doc, "Delete").
func TestLinearizableS3Deletes(t *testing.T) {
	endpoint, bucket := s3Target(t)
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			a := startServer(t, s3LinConfig(endpoint, bucket, "lin-"+randomHex(6), 3*time.Second))
			b := linPeer(t, a)
			w := workload{Seed: seed, Keys: 4, Clients: 8, Ops: scaled(100), Mix: fullMix, Deadline: time.Duration(scaled(15)) * time.Second, Timeout: 20 * time.Second}
			requireLinearizable(t, w.run(t, a, b), time.Minute, everyOutcome)
		})
	}
}

// s3FaultHistory is (b) with the instances' S3 calls going through a
// fault proxy with rates, and a callTimeout of one second. Timeouts,
// transport errors and unavailable are unknown outcomes in the history.
func s3FaultHistory(t *testing.T, rates map[string]int, outcomes []string) {
	endpoint, bucket := s3Target(t)
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			const callTimeout = time.Second
			proxy := startFaultProxy(t, endpoint, seed)
			proxy.Slow = callTimeout + 500*time.Millisecond
			proxy.Rates = rates
			a := startServer(t, s3LinConfig(proxy.URL, bucket, "lin-"+randomHex(6), callTimeout))
			b := linPeer(t, a)
			proxy.active.Store(true)
			w := workload{Seed: seed, Keys: 8, Clients: 8, Ops: scaled(80), Mix: s3Mix, Deadline: time.Duration(scaled(15)) * time.Second, Timeout: 20 * time.Second}
			h := w.run(t, a, b)
			proxy.active.Store(false)
			t.Logf("S3 requests:%s", proxy.Summary())
			requireLinearizable(t, h, time.Minute, outcomes)
			if t.Failed() {
				proxy.WriteTrace(t)
			}
		})
	}
}

// TestLinearizableS3Faults: (c) S3 calls fail at random before they reach
// S3 (500 InternalError, which the SDK retries) or reach it only after the
// instance's callTimeout, so a write may land after the instance answered
// unavailable.
func TestLinearizableS3Faults(t *testing.T) {
	s3FaultHistory(t, map[string]int{faultError: 5, faultSlow: 3},
		append(s3Outcomes, "create/unknown", "ifMatch/unknown", "overwrite/unknown"))
}

// TestLinearizableS3LostResponses: (c) with responses lost after the write
// happened (the connection dropped, or 500 in place of the answer). Its
// seed-1 history once failed: a conditional PUT landed, its response was
// lost, another instance replaced it (with an ifMatch on the landed
// write), the SDK's retry got 412, and the re-read found another write id,
// so the save was answered conflict although it happened. The proxy trace
// showed: PUT If-Match E1 → 500-after (200 upstream), PUT If-Match E2 (the
// landed write's ETag, by the other instance) → 200, the retried PUT
// If-Match E1 → 412, GET → another write id. s3store now answers such a
// write store.ErrUnknownOutcome (unavailable on the wire, an unknown
// outcome in the history).
func TestLinearizableS3LostResponses(t *testing.T) {
	s3FaultHistory(t, map[string]int{faultError: 3, faultSlow: 2, faultDrop: 3, faultErrorSent: 3},
		append(s3Outcomes, "create/unknown", "ifMatch/unknown", "overwrite/unknown"))
}

// TestSidecarModeViolationIsCaught: versitygw with --sidecar stores an
// object's ETag apart from its data, so a read can pair a new ETag with
// the old body and a replace bound to it overwrite a newer write
// (store/s3store's package doc). Two instances racing ifMatch replaces on
// one report there must give a history porcupine rejects: the checker
// catches a real violation. The start-up probe refuses sidecar mode
// (TestS3CheckVersitygwModes), so the instances start on the same
// versitygw in xattr mode, which is then restarted with --sidecar under
// them: the probe runs at start only.
//
// It is bounded to sidecarBudget: one pair of instances runs short rounds
// (one report, a few hundred operations, a few seconds of clients), each
// history checked with a porcupine timeout of sidecarCheck; a round the
// checker gives up on counts as not caught, and the next round starts.
func TestSidecarModeViolationIsCaught(t *testing.T) {
	const sidecarBudget, sidecarCheck = 15 * time.Second, 2 * time.Second
	vs := startVersity(t) // xattr mode first; skips like the other S3 tests
	env := vs.env()
	mix := map[opKind]int{opRead: 30, opIfMatch: 60, opCreate: 5, opOverwrite: 5}
	a := startServerEnv(t, s3LinConfig("http://"+vs.addr, "faults", "side-"+randomHex(6), 3*time.Second), env...)
	b := linPeer(t, a)
	vs.stop()
	vs.sidecar = true
	vs.start()
	deadline := time.Now().Add(sidecarBudget)
	for round := 1; time.Now().Add(3*time.Second + sidecarCheck).Before(deadline); round++ {
		w := workload{Seed: uint64(round), Keys: 1, Clients: 4, Ops: 25, Mix: mix, Deadline: 3 * time.Second, Timeout: 10 * time.Second}
		// Each round its own report path, so histories do not share state.
		w.Prefix = fmt.Sprintf("r%d-", round)
		h := w.run(t, a, b)
		ops := h.finish()
		t.Logf("round %d:%s", round, h.summary())
		if res := checkLinearizable(t, registerModel, ops, sidecarCheck); res == porcupine.Illegal {
			return // caught
		}
	}
	t.Errorf("porcupine found no violation in sidecar mode within %v", sidecarBudget)
}
