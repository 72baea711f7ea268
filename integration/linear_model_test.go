package integration

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The register model of one report path, as CONTRACT.md §4 states it. The
// state of a key is the sha256 of its body, "" when it does not exist;
// every body a workload writes is unique, so a sha256 names one write.

// opKind is what a client asked.
type opKind uint8

const (
	opRead          opKind = iota // resources/read or stat_resource
	opCreate                      // save_report, create-only (the default)
	opIfMatch                     // save_report with ifMatch
	opOverwrite                   // save_report with overwrite: true
	opDelete                      // delete_resource
	opDeleteIfMatch               // delete_resource with ifMatch
)

var opNames = [...]string{"read", "create", "ifMatch", "overwrite", "delete", "deleteIfMatch"}

func (k opKind) String() string { return opNames[k] }

// outcome is what the client saw.
type outcome uint8

const (
	outOK       outcome = iota // success; for a read, Sha is what was read
	outConflict                // errorKind conflict
	outNotFound                // errorKind not_found, or -32602 for resources/read
	// outUnknown: the write may or may not have happened (a timeout, a
	// transport error, errorKind unavailable). Its return is left open: the
	// operation is given the end of the history as its return time, so the
	// checker may place it anywhere after its call, including after every
	// other operation, which is the same as never.
	outUnknown
)

var outNames = [...]string{"ok", "conflict", "not_found", "unknown"}

func (o outcome) String() string { return outNames[o] }

type regInput struct {
	Key   string
	Kind  opKind
	Sha   string // the body written (writes)
	Match string // the ifMatch sent
	Via   string // how a read was made: "resources/read" or "stat_resource"
}

type regOutput struct {
	Out outcome
	Sha string // the sha256 read (reads with outOK)
}

func short(sha string) string {
	if sha == "" {
		return "∅"
	}
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

// registerModel is partitioned by key; each partition's state is a string.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(regInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		return stepRegister(state.(string), input.(regInput), output.(regOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		switch in.Kind {
		case opRead:
			if out.Out == outOK {
				return fmt.Sprintf("%s %s → %s", in.Via, in.Key, short(out.Sha))
			}
			return fmt.Sprintf("%s %s → %s", in.Via, in.Key, out.Out)
		case opIfMatch, opDeleteIfMatch:
			return fmt.Sprintf("%s %s %s⇒%s → %s", in.Kind, in.Key, short(in.Match), short(in.Sha), out.Out)
		default:
			return fmt.Sprintf("%s %s %s → %s", in.Kind, in.Key, short(in.Sha), out.Out)
		}
	},
	DescribeState: func(state any) string { return short(state.(string)) },
}

// stepRegister is the sequential specification: may op, applied to st,
// answer out, and what state follows?
func stepRegister(st string, in regInput, out regOutput) (bool, string) {
	exists := st != ""
	// next is the state if the operation takes effect; ok is whether it does
	// (its precondition holds); fail is the outcome it gives otherwise.
	var next string
	var ok bool
	var fail outcome
	switch in.Kind {
	case opRead:
		if out.Out == outOK {
			return exists && out.Sha == st, st
		}
		return out.Out == outNotFound && !exists, st
	case opCreate:
		next, ok, fail = in.Sha, !exists, outConflict
	case opIfMatch:
		next, ok, fail = in.Sha, exists && st == in.Match, outConflict
	case opOverwrite:
		next, ok = in.Sha, true
	case opDelete:
		next, ok, fail = "", exists, outNotFound
	case opDeleteIfMatch:
		next, ok = "", exists && st == in.Match
		fail = outConflict
		if !exists {
			fail = outNotFound
		}
	}
	switch {
	case out.Out == outUnknown && ok:
		return true, next
	case out.Out == outUnknown:
		return true, st
	case ok:
		return out.Out == outOK, next
	default:
		return out.Out == fail, st
	}
}

// history records operations from concurrent clients.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	open  []int // indexes of outUnknown operations, closed by finish
	count map[string]int
}

func newHistory() *history {
	return &history{start: time.Now(), count: map[string]int{}}
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records one operation. Reads whose outcome is unknown are dropped:
// they changed nothing and observed nothing.
func (h *history) add(client int, in regInput, call int64, out regOutput) {
	ret := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count[in.Kind.String()+"/"+out.Out.String()]++
	if in.Kind == opRead && out.Out == outUnknown {
		return
	}
	if out.Out == outUnknown {
		h.open = append(h.open, len(h.ops))
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// finish closes the open operations at the end of the history and returns
// it. Call it after every client has stopped.
func (h *history) finish() []porcupine.Operation {
	end := h.now() + 1
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, i := range h.open {
		h.ops[i].Return = end
	}
	h.open = nil
	return h.ops
}

// summary is the counts of kind/outcome, sorted.
func (h *history) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.count))
	for k := range h.count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%d", k, h.count[k])
	}
	return s
}

// requireCoverage fails the test unless the history holds every outcome
// the model distinguishes, so a history cannot pass by never exercising a
// rule (for instance, every read missing because the URIs are wrong).
func (h *history) requireCoverage(t *testing.T, want ...string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range want {
		if h.count[w] == 0 {
			t.Errorf("the history has no %s operation; counts: %v", w, h.count)
		}
	}
}

// checkLinearizable runs porcupine on ops. On a violation (or when the
// checker gives up) it writes the visualization to a temporary file that
// outlives the test and logs its path.
func checkLinearizable(t *testing.T, m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	t.Helper()
	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	t.Logf("porcupine: %d operations, %s in %v", len(ops), res, time.Since(began).Round(time.Millisecond))
	if res == porcupine.Illegal {
		explainViolation(t, m, ops)
	}
	if res != porcupine.Ok {
		f, err := os.CreateTemp("", "resourced-linear-*.html")
		if err != nil {
			t.Logf("visualization: %v", err)
			return res
		}
		f.Close()
		if err := porcupine.VisualizePath(m, info, f.Name()); err != nil {
			t.Logf("visualization: %v", err)
		} else {
			t.Logf("porcupine visualization of the history: %s", f.Name())
		}
	}
	return res
}

// explainViolation logs, for the first key whose history is not
// linearizable, the end of the longest linearization porcupine found and
// the operations that could have come next, none of which the model
// accepts: the place to start reading the visualization.
func explainViolation(t *testing.T, m porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	for _, part := range m.Partition(ops) {
		single := m
		single.Partition = nil
		res, info := porcupine.CheckOperationsVerbose(single, part, 10*time.Second)
		if res != porcupine.Illegal {
			continue
		}
		var longest []porcupine.Operation
		for _, l := range info.PartialLinearizationsOperations()[0] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		ms := func(ns int64) string { return fmt.Sprintf("%.3fms", float64(ns)/1e6) }
		describe := func(op porcupine.Operation) string {
			return fmt.Sprintf("client %2d [%s, %s] %s", op.ClientId, ms(op.Call), ms(op.Return), m.DescribeOperation(op.Input, op.Output))
		}
		key := part[0].Input.(regInput).Key
		t.Logf("%s: %d of %d operations linearized; the last ones, with the state after each:", key, len(longest), len(part))
		st := ""
		for i, op := range longest {
			_, next := m.Step(st, op.Input, op.Output)
			st = next.(string)
			if i >= len(longest)-8 {
				t.Logf("  %s   ⇒ %s", describe(op), short(st))
			}
		}
		done := map[int64]bool{}
		for _, op := range longest {
			done[op.Call<<8|int64(op.ClientId)] = true
		}
		first := int64(-1)
		for _, op := range part {
			if !done[op.Call<<8|int64(op.ClientId)] && (first < 0 || op.Return < first) {
				first = op.Return
			}
		}
		t.Logf("%s: none of these can come next (state %s):", key, short(st))
		for _, op := range part {
			if !done[op.Call<<8|int64(op.ClientId)] && op.Call <= first {
				t.Logf("  %s", describe(op))
			}
		}
		return
	}
}
