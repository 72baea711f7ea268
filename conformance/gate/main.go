// Command gate judges the per-check results of the official MCP conformance
// suite (@modelcontextprotocol/conformance) run against resourced. It is
// run by scripts/conformance.sh; see conformance/README.md.
//
//	gate -expected conformance/expected-failures.txt \
//	     -require 2026-07-28=caching,tools-list -run 2026-07-28=OUTDIR ...
//
// Each -run names a requirement set and the -o directory of one suite run,
// which holds one server-<scenario>-<timestamp>/checks.json per scenario.
// Every scenario not listed as a whole in the expected-failures file is
// gated: each of its checks must be SUCCESS or INFO unless that check is
// listed, and at least one must be SUCCESS. FAILURE, WARNING, SKIPPED and
// any other status fail the gate. Every -require scenario must have run
// and be gated. Exit status: 0 pass, 1 gate failure, 2 usage or input error.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
)

// Check is one entry of a scenario's checks.json.
type Check struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// Entry is one line of the expected-failures file:
//
//	SCENARIO[@REQUIREMENTS] [CHECK-ID] -- reason
//
// SCENARIO is a path.Match pattern (tools-call-*). Without CHECK-ID the
// whole scenario is not gated; with it, that check may be FAILURE,
// WARNING or SKIPPED in an otherwise gated scenario.
type Entry struct {
	Line     int
	Scenario string // pattern
	Reqs     string // "" = every requirement set
	Check    string // "" = the whole scenario
	Reason   string
	used     bool
	passes   bool // a listed check was seen and every instance of it succeeded
	failed   bool // a listed check was seen not succeeding
}

func (e *Entry) matches(req, scenario string) bool {
	if e.Reqs != "" && e.Reqs != req {
		return false
	}
	ok, _ := path.Match(e.Scenario, scenario)
	return ok
}

func (e *Entry) isPattern() bool { return strings.ContainsAny(e.Scenario, "*?[") }

func (e *Entry) String() string {
	s := e.Scenario
	if e.Reqs != "" {
		s += "@" + e.Reqs
	}
	if e.Check != "" {
		s += " " + e.Check
	}
	return s
}

// ParseExpected reads the expected-failures file.
func ParseExpected(r io.Reader) ([]*Entry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lhs, reason, ok := strings.Cut(line, " -- ")
		reason = strings.TrimSpace(reason)
		if !ok || reason == "" {
			errs = append(errs, fmt.Errorf("line %d: want `SCENARIO[@REQUIREMENTS] [CHECK-ID] -- reason`", i+1))
			continue
		}
		f := strings.Fields(lhs)
		if len(f) < 1 || len(f) > 2 {
			errs = append(errs, fmt.Errorf("line %d: want one scenario and at most one check id before ` -- `", i+1))
			continue
		}
		e := &Entry{Line: i + 1, Reason: reason}
		e.Scenario, e.Reqs, _ = strings.Cut(f[0], "@")
		if len(f) == 2 {
			e.Check = f[1]
		}
		if _, err := path.Match(e.Scenario, ""); err != nil {
			errs = append(errs, fmt.Errorf("line %d: bad scenario pattern %q: %v", i+1, e.Scenario, err))
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// Scenario is one scenario's results and verdict.
type Scenario struct {
	Name     string
	Dir      string
	Checks   []Check
	LoadErr  error
	Excluded *Entry // whole scenario listed as expected

	Counts     map[string]int
	Expected   int      // non-passing checks covered by a check-level entry
	Unexpected []Check  // non-passing checks that fail the gate
	Problems   []string // scenario-level reasons the gate fails
}

// Gated reports whether the scenario counts for the gate.
func (s *Scenario) Gated() bool { return s.Excluded == nil }

// OK reports whether a gated scenario passes.
func (s *Scenario) OK() bool { return len(s.Unexpected) == 0 && len(s.Problems) == 0 }

// Run is one suite run (one requirement set).
type Run struct {
	Reqs      string
	Dir       string
	Scenarios []*Scenario
	Missing   []string // required scenarios that did not run
}

var dirRE = regexp.MustCompile(`^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$`)

// LoadRun reads every server-<scenario>-<timestamp>/checks.json of dir,
// keeping the newest directory of each scenario.
func LoadRun(reqs, dir string) (*Run, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type found struct{ stamp, dir string }
	latest := map[string]found{}
	for _, de := range ents {
		m := dirRE.FindStringSubmatch(de.Name())
		if !de.IsDir() || m == nil {
			continue
		}
		if f, ok := latest[m[1]]; !ok || m[2] > f.stamp {
			latest[m[1]] = found{m[2], filepath.Join(dir, de.Name())}
		}
	}
	run := &Run{Reqs: reqs, Dir: dir}
	for name, f := range latest {
		s := &Scenario{Name: name, Dir: f.dir}
		data, err := os.ReadFile(filepath.Join(f.dir, "checks.json"))
		if err == nil {
			err = json.Unmarshal(data, &s.Checks)
		}
		s.LoadErr = err
		run.Scenarios = append(run.Scenarios, s)
	}
	sort.Slice(run.Scenarios, func(i, j int) bool { return run.Scenarios[i].Name < run.Scenarios[j].Name })
	return run, nil
}

func passing(status string) bool { return status == "SUCCESS" || status == "INFO" }

// Judge applies the expected-failures entries and the required scenarios
// to a run.
func Judge(run *Run, entries []*Entry, required []string) {
	seen := map[string]bool{}
	for _, s := range run.Scenarios {
		seen[s.Name] = true
		s.Counts = map[string]int{}
		for _, e := range entries {
			if e.Check == "" && e.matches(run.Reqs, s.Name) {
				s.Excluded = e
				e.used = true
				break
			}
		}
		for _, c := range s.Checks {
			s.Counts[c.Status]++
		}
		if s.Excluded != nil {
			if !s.Excluded.isPattern() && s.LoadErr == nil && s.Counts["SUCCESS"] > 0 && len(s.Checks) == s.Counts["SUCCESS"]+s.Counts["INFO"] {
				s.Excluded.passes = true
			}
			continue
		}
		if s.LoadErr != nil {
			s.Problems = append(s.Problems, "no readable checks.json: "+s.LoadErr.Error())
			continue
		}
		for _, c := range s.Checks {
			var entry *Entry
			for _, e := range entries {
				if e.Check != "" && e.Check == c.ID && e.matches(run.Reqs, s.Name) {
					entry = e
					break
				}
			}
			if entry != nil {
				entry.used = true
				if passing(c.Status) {
					if !entry.failed {
						entry.passes = true
					}
				} else {
					entry.failed, entry.passes = true, false
				}
			}
			switch {
			case passing(c.Status):
			case entry != nil:
				s.Expected++
			default:
				s.Unexpected = append(s.Unexpected, c)
			}
		}
		if s.Counts["SUCCESS"] == 0 {
			s.Problems = append(s.Problems, "no check succeeded: the scenario tested nothing")
		}
	}
	for _, name := range required {
		if !seen[name] {
			run.Missing = append(run.Missing, name)
		}
	}
}

func counts(s *Scenario) string {
	return fmt.Sprintf("%d\t%d\t%d\t%d\t%d", s.Counts["SUCCESS"], s.Counts["FAILURE"], s.Counts["WARNING"], s.Counts["SKIPPED"], s.Counts["INFO"])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Report prints the summary tables and the failures; it returns the number
// of gate failures. Its branches (gocyclo 31) are the verdict table of
// conformance/README.md, one case a row, kept in one place on purpose.
func Report(w io.Writer, runs []*Run, entries []*Entry, required map[string][]string) int {
	failures := 0
	gatedTotal, gatedOK := 0, 0
	for _, run := range runs {
		fmt.Fprintf(w, "\n== requirements %s (%s)\n", run.Reqs, run.Dir)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scenario\tgate\tpass\tfail\twarn\tskip\tinfo\tlisted\tresult")
		for _, gated := range []bool{true, false} {
			for _, s := range run.Scenarios {
				if s.Gated() != gated {
					continue
				}
				if gated {
					gatedTotal++
					res := "ok"
					if !s.OK() {
						res = "FAIL"
					} else {
						gatedOK++
					}
					fmt.Fprintf(tw, "%s\tgated\t%s\t%d\t%s\n", s.Name, counts(s), s.Expected, res)
				} else {
					fmt.Fprintf(tw, "%s\tnot gated\t%s\tline %d\t-\n", s.Name, counts(s), s.Excluded.Line)
				}
			}
		}
		tw.Flush()
		for _, name := range run.Missing {
			gatedTotal++
			failures++
			fmt.Fprintf(w, "FAIL %s: required scenario %s did not run (no server-%s-*/checks.json)\n", run.Reqs, name, name)
		}
	}

	for _, run := range runs {
		for _, s := range run.Scenarios {
			if !s.Gated() || s.OK() {
				continue
			}
			failures++
			fmt.Fprintf(w, "\nFAIL %s %s (%s)\n", run.Reqs, s.Name, s.Dir)
			for _, p := range s.Problems {
				fmt.Fprintf(w, "  - %s\n", p)
			}
			for _, c := range s.Unexpected {
				fmt.Fprintf(w, "  - %s %s: %s\n", c.Status, c.ID, c.Description)
				if c.ErrorMessage != "" {
					fmt.Fprintf(w, "      error:   %s\n", truncate(c.ErrorMessage, 400))
				}
				if len(c.Details) > 0 && string(c.Details) != "null" {
					var buf bytes.Buffer
					if json.Compact(&buf, c.Details) != nil {
						buf.Reset()
						buf.Write(c.Details)
					}
					fmt.Fprintf(w, "      details: %s\n", truncate(buf.String(), 800))
				}
			}
		}
	}

	var notes []string
	for _, e := range entries {
		switch {
		case !e.used:
			notes = append(notes, fmt.Sprintf("line %d `%s` matched nothing in these runs", e.Line, e))
		case e.passes && e.Check != "":
			notes = append(notes, fmt.Sprintf("line %d `%s` now succeeds: remove the line", e.Line, e))
		case e.passes:
			notes = append(notes, fmt.Sprintf("line %d `%s`: the scenario now passes; consider gating it", e.Line, e))
		}
	}
	for reqs, names := range required {
		for _, name := range names {
			for _, e := range entries {
				if e.Check == "" && e.matches(reqs, name) {
					failures++
					fmt.Fprintf(w, "FAIL expected-failures line %d `%s` excludes required scenario %s for %s\n", e.Line, e, name, reqs)
				}
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes on conformance/expected-failures.txt:")
		for _, n := range notes {
			fmt.Fprintln(w, "  - "+n)
		}
	}
	verdict := "PASS"
	if failures > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nconformance gate %s: %d of %d gated scenario runs pass, %d failure(s)\n", verdict, gatedOK, gatedTotal, failures)
	return failures
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	expectedPath := fs.String("expected", "conformance/expected-failures.txt", "expected-failures file")
	var runFlags, requireFlags multiFlag
	fs.Var(&runFlags, "run", "REQUIREMENTS=OUTDIR of one suite run (repeatable)")
	fs.Var(&requireFlags, "require", "REQUIREMENTS=scenario,scenario that must run and be gated (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(runFlags) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: gate -expected FILE -run REQUIREMENTS=OUTDIR... [-require REQUIREMENTS=a,b...]")
		return 2
	}
	f, err := os.Open(*expectedPath)
	if err != nil {
		fmt.Fprintln(stderr, "gate:", err)
		return 2
	}
	entries, err := ParseExpected(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "gate: %s:\n%v\n", *expectedPath, err)
		return 2
	}
	required := map[string][]string{}
	for _, r := range requireFlags {
		reqs, list, ok := strings.Cut(r, "=")
		if !ok {
			fmt.Fprintf(stderr, "gate: -require %q: want REQUIREMENTS=a,b\n", r)
			return 2
		}
		for _, n := range strings.Split(list, ",") {
			if n = strings.TrimSpace(n); n != "" {
				required[reqs] = append(required[reqs], n)
			}
		}
	}
	var runs []*Run
	for _, r := range runFlags {
		reqs, dir, ok := strings.Cut(r, "=")
		if !ok {
			fmt.Fprintf(stderr, "gate: -run %q: want REQUIREMENTS=OUTDIR\n", r)
			return 2
		}
		run, err := LoadRun(reqs, dir)
		if err != nil {
			fmt.Fprintln(stderr, "gate:", err)
			return 2
		}
		Judge(run, entries, required[reqs])
		runs = append(runs, run)
	}
	if Report(stdout, runs, entries, required) > 0 {
		return 1
	}
	return 0
}
