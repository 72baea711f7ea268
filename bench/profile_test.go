package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
)

// TestProfileRead writes a CPU profile of the server alone while it serves
// reads: a server.New on bbolt with JWT auth runs in this process, and the
// load comes from resourced-bench in a separate process, so the client's
// CPU is not in the profile (the server still shares the machine with it).
//
// It runs only when RESOURCED_BENCH_PROFILE names an output directory:
//
//	RESOURCED_BENCH_PROFILE=/tmp/prof go test ./bench -run TestProfileRead -v
//	go tool pprof -top /tmp/prof/read-1KiB.cpu.prof
//
// RESOURCED_BENCH_PROFILE_SECONDS sets the measured load per size (10 by
// default), RESOURCED_BENCH_PROFILE_C the concurrency (16) and
// RESOURCED_BENCH_PROFILE_BACKEND the backend (bbolt, memory; s3 needs
// scripts/versitygw.sh's environment) and RESOURCED_BENCH_PROFILE_OP the
// load (read, or save: 1 KiB save_report, with the per-tenant save rate
// off as bench/run.sh runs it).
func TestProfileRead(t *testing.T) {
	dir := os.Getenv("RESOURCED_BENCH_PROFILE")
	if dir == "" {
		t.Skip("set RESOURCED_BENCH_PROFILE=<dir> to write CPU profiles of the server under read load")
	}
	seconds := envInt(t, "RESOURCED_BENCH_PROFILE_SECONDS", 10)
	conc := envInt(t, "RESOURCED_BENCH_PROFILE_C", 16)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(t.TempDir(), "resourced-bench")
	if out, err := exec.Command("go", "build", "-o", tool, "./cmd/resourced-bench").CombinedOutput(); err != nil {
		t.Fatalf("building resourced-bench: %v\n%s", err, out)
	}
	op := os.Getenv("RESOURCED_BENCH_PROFILE_OP")
	sizes := []int{1 << 10, 256 << 10}
	switch op {
	case "", "read":
		op = "read"
	case "save":
		sizes = sizes[:1]
	default:
		t.Fatalf("RESOURCED_BENCH_PROFILE_OP=%q: want read or save", op)
	}
	for _, size := range sizes {
		t.Run(sizeName(size), func(t *testing.T) {
			backend := os.Getenv("RESOURCED_BENCH_PROFILE_BACKEND")
			if backend == "" {
				backend = "bbolt"
			}
			ts := startServer(t, backend, true)
			path := filepath.Join(dir, op+"-"+sizeName(size)+".cpu.prof")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(tool, "-url", ts.URL, "-token", ts.Token, "-op", op,
				"-size", strconv.Itoa(size), "-c", strconv.Itoa(conc),
				"-d", strconv.Itoa(seconds)+"s", "-warmup", "1s")
			// The profile covers the measured load only: start it after the
			// tool's save and warmup would need a signal; the 1 s warmup is
			// the same load, so it is simply included.
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			pprof.StopCPUProfile()
			t.Logf("%s in %s:\n%s", cmd.Args, time.Since(start).Round(time.Millisecond), out)
			if err != nil {
				t.Fatalf("resourced-bench: %v", err)
			}
			t.Logf("wrote %s", path)
		})
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
