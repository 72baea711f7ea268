package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit: deploy/resourced.service, alone and with the drop-in
// for Node upstreams, passes `systemd-analyze verify` with no warning (an
// unknown key is only a warning, so the output must be empty); the unit
// reads /etc/resourced/env and the drop-in relaxes MemoryDenyWriteExecute,
// which V8's JIT needs (issue 28).
func TestSystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze: apt-get install systemd to verify deploy/resourced.service")
	}
	unit, err := os.ReadFile("../deploy/resourced.service")
	if err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile("../deploy/resourced-node-upstreams.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nEnvironmentFile=-/etc/resourced/env\n") {
		t.Error("the unit has no EnvironmentFile=-/etc/resourced/env")
	}
	if !strings.Contains(string(dropIn), "\nMemoryDenyWriteExecute=no\n") {
		t.Error("the drop-in does not relax MemoryDenyWriteExecute")
	}
	const exec0 = "ExecStart=/usr/local/bin/resourced serve"
	if !strings.Contains(string(unit), exec0) {
		t.Fatalf("the unit has no %q; update this test", exec0)
	}
	// The ExecStart binary must exist for verify: the one under test.
	unit = []byte(strings.Replace(string(unit), exec0, "ExecStart="+binary+" serve", 1))
	for _, withDropIn := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "resourced.service")
		writeFile(t, path, unit)
		if withDropIn {
			writeFile(t, filepath.Join(dir, "resourced.service.d", "node-upstreams.conf"), dropIn)
		}
		out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("systemd-analyze verify (drop-in %v): %v\n%s", withDropIn, err, out)
		}
		if sec, err := exec.Command("systemd-analyze", "security", "--offline=yes", path).CombinedOutput(); err == nil {
			lines := strings.Split(strings.TrimSpace(string(sec)), "\n")
			t.Logf("drop-in %v: %s", withDropIn, lines[len(lines)-1])
		}
	}
}
