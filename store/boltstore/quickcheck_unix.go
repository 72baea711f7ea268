//go:build unix

package boltstore

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only, for the quick check: reading a
// page header from the mapping costs no system call.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, syscall.EINVAL
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
