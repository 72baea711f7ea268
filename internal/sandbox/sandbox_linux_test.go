//go:build linux

package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestSetUndumpable(t *testing.T) {
	if err := SetUndumpable(); err != nil {
		t.Fatal(err)
	}
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || v != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0", v, err)
	}
}

func TestABIOnThisMachine(t *testing.T) {
	// The machines this project runs on have Landlock (docs/gateway.md,
	// Trust model); a kernel without it makes every sandboxed upstream
	// refuse to start, which the pool tests would show less clearly.
	if v := ABI(); v < 1 {
		t.Fatalf("ABI() = %d: this kernel has no Landlock", v)
	}
}
