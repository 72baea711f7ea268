//go:build unix

package boltstore

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only: for the quick check, where
// reading a page header from the mapping costs no system call, and for
// PutStream, whose large body bbolt copies from the mapped spool at commit.
// Nothing of the mapping may be used after unmap.
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
