package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store/s3store"
)

// TestS3CheckCommandLine: `resourced s3 check` says what is wrong with its
// command line and configuration (exit 2), and exits 1 when the service
// cannot be probed. The verdicts on real services are
// integration.TestS3CheckVersitygwModes and TestS3CheckOnTarget.
func TestS3CheckCommandLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string { return writeConfig(t, dir, name, yaml) }
	bbolt := write("bbolt.yaml", "store: {backend: bbolt}\n")
	bad := write("bad.yaml", "store:\n  backend: s3\n  s3: {prefix: /x/}\n")
	down := write("down.yaml", "store:\n  backend: s3\n  s3: {bucket: bkt, endpoint: \"http://127.0.0.1:1\", pathStyle: true, callTimeout: 2s}\n")
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-never-printed")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"s3"}, 2, "s3: no subcommand"},
		{[]string{"s3", "list"}, 2, `unknown subcommand "list"`},
		{[]string{"s3", "check", "extra"}, 2, "unexpected arguments"},
		{[]string{"s3", "check", "--config", bbolt}, 2, `s3 check works on the s3 backend; store.backend is "bbolt"`},
		{[]string{"s3", "check", "--config", bad}, 2, "store.s3.bucket: required"},
		{[]string{"s3", "check", "--config", down}, 1, "the probe of the S3 service could not run"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("resourced %q = exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if strings.Contains(stdout+stderr, "test-secret-never-printed") {
			t.Errorf("resourced %q printed the secret key", tc.args)
		}
	}
	if code, stdout, _ := runCmd(t, "s3", "check", "--help"); code != 0 || !strings.Contains(stdout, "usage: resourced s3 check") {
		t.Errorf("s3 check --help = exit %d:\n%s", code, stdout)
	}
}

// writeConfig writes yaml as dir/name (0600, as a config holding secrets
// must be) and returns its path.
func writeConfig(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestS3CheckSummaryNamesAdvisoryFailures: an accepted service's last line
// names the advisory guarantees it failed (SeaweedFS: race-latency).
func TestS3CheckSummaryNamesAdvisoryFailures(t *testing.T) {
	rep := s3store.ProbeReport{Results: []s3store.ProbeResult{
		{Guarantee: s3store.Guarantee{Name: "create-only"}, OK: true},
		{Guarantee: s3store.Guarantee{Name: "race-latency", Advisory: true}},
	}}
	if got := keptSummary(&rep); !strings.Contains(got, "keeps every guarantee") || !strings.Contains(got, "fails the advisory race-latency") {
		t.Errorf("summary %q: want it to name race-latency", got)
	}
	rep.Results[1].OK = true
	if got := keptSummary(&rep); strings.Contains(got, "advisory") {
		t.Errorf("summary %q names an advisory failure, with none", got)
	}
}

// TestS3CheckTableTimesOnlyOwnChecks: a guarantee judged from an earlier
// check's requests shows no time of its own ("0ms" read as if it had not
// run).
func TestS3CheckTableTimesOnlyOwnChecks(t *testing.T) {
	rep := s3store.ProbeReport{Results: []s3store.ProbeResult{
		{Guarantee: s3store.Guarantee{Name: "create-only-race"}, OK: true, Took: 42 * time.Millisecond},
		{Guarantee: s3store.Guarantee{Name: "race-latency", Advisory: true, Derived: true}, OK: true},
	}}
	var b strings.Builder
	printProbe(&b, &rep)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Fields(lines[0])[2] != "42ms" || strings.Fields(lines[1])[2] != "-" {
		t.Errorf("table:\n%s\nwant 42ms for create-only-race and - for race-latency", b.String())
	}
}
