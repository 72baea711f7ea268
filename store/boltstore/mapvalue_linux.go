//go:build linux

package boltstore

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapValue lays out a record value without a heap copy of its body: a
// few anonymous pages for the header, followed at once by the first size
// bytes of f mapped read-only. put(head) writes head (at most headMax
// bytes) just before the body and returns head and body as one slice.
// unmap releases both; nothing of the value may be used after it (bbolt
// has copied the value into its pages when its transaction is done).
func mapValue(f *os.File, size int64, headMax int) (put func(head []byte) []byte, unmap func(), err error) {
	page := os.Getpagesize()
	pre := (headMax + page - 1) / page * page
	total := uintptr(pre) + uintptr(size)
	if size <= 0 || int64(uintptr(size)) != size || total < uintptr(size) {
		return nil, nil, unix.EINVAL
	}
	base, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	unmap = func() { _ = unix.MunmapPtr(base, total) }
	if _, err := unix.MmapPtr(int(f.Fd()), 0, unsafe.Add(base, pre), uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		unmap()
		return nil, nil, err
	}
	region := unsafe.Slice((*byte)(base), total)
	return func(head []byte) []byte {
		start := pre - len(head)
		copy(region[start:pre], head)
		return region[start:]
	}, unmap, nil
}
