//go:build linux && (amd64 || arm64)

package main

import (
	"syscall"
	"unsafe"
)

// tcpState returns the kernel's TCP state of c (TCP_INFO's tcpi_state):
// 1 ESTABLISHED, 7 CLOSE (reset), 8 CLOSE_WAIT (the peer closed). It lets
// the tool see that the server dropped a connection without reading it.
func tcpState(c syscall.Conn) (state uint8, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	_ = rc.Control(func(fd uintptr) {
		var info syscall.TCPInfo
		n := uint32(unsafe.Sizeof(info))
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&n)), 0)
		if e == 0 {
			state, ok = info.State, true
		}
	})
	return state, ok
}
