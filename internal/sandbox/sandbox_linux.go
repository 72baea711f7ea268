//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Self is the running binary as Command re-executes it: the kernel's
// link to it, which still works when the file was replaced on disk.
const Self = "/proc/self/exe"

// ABI is the Landlock ABI version of the running kernel, 0 without
// Landlock (not built in, or not enabled at boot).
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// unixByPathABI is the first ABI whose domains refuse connecting to a
// unix socket by path outside them (LANDLOCK_ACCESS_FS_RESOLVE_UNIX);
// below it the seccomp filter refuses unix sockets instead.
const unixByPathABI = 9

// SetUndumpable makes this process undumpable: processes of the same
// user (not root) can no longer read its /proc/<pid>/environ, mem, maps
// or fds, nor ptrace it. Root is kept out of a sandboxed upstream's reach
// by Landlock, not by this.
func SetUndumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// enter applies spec to this process and execs the upstream; it returns
// only an error.
func enter(spec Spec) error {
	// The seccomp filter and the exec happen on this one thread (the
	// Landlock domain covers every thread).
	runtime.LockOSThread()
	abi := ABI()
	if abi < 1 {
		return errors.New("this kernel has no Landlock")
	}
	var rules []landlock.Rule
	for _, r := range spec.Rules {
		var fr landlock.FSRule
		switch {
		case r.Dir && r.Write:
			fr = landlock.RWDirs(r.Path)
		case r.Dir:
			fr = landlock.RODirs(r.Path)
		case r.Write:
			fr = landlock.RWFiles(r.Path)
		default:
			fr = landlock.ROFiles(r.Path)
		}
		if r.Optional {
			fr = fr.IgnoreIfMissing()
		}
		rules = append(rules, fr)
	}
	// Every file system right and every IPC scope this kernel knows;
	// no network rights (upstreams fetch, npx downloads).
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}
	if err := cfg.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if abi < unixByPathABI {
		if err := denyUnixSockets(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	err := syscall.Exec(spec.Path, spec.Args, spec.Env)
	return fmt.Errorf("exec %s: %w", spec.Path, err)
}

// seccompArch is the AUDIT_ARCH of this build (little-endian ones: the
// filter reads the low half of an argument at its first byte); a system
// call made under another (the 32-bit entry of an amd64 kernel) is
// refused whole.
var seccompArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
	"ppc64le": unix.AUDIT_ARCH_PPC64LE,
	"loong64": unix.AUDIT_ARCH_LOONGARCH64,
}

// denyUnixSockets installs a seccomp filter, on every thread of this
// process (which then execs), that refuses socket(AF_UNIX, …) and
// socketpairs other than stream ones with EACCES, so that the upstream
// cannot connect to a unix socket by path: resourced's admin socket
// serves a backup of every tenant's data to whoever connects. Stream
// socketpairs, which Node uses for its children's stdio, still work.
// io_uring, which could make a socket without a system call the filter
// sees, answers ENOSYS (libuv then uses threads).
func denyUnixSockets() error {
	arch, ok := seccompArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		offNr   = 0
		offArch = 4
		offArg0 = 16
		offArg1 = 24
		allow   = unix.SECCOMP_RET_ALLOW
		eacces  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		enosys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	// jeq jumps jt instructions ahead when the accumulator is v, else jf.
	jeq := func(v uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: v, Jt: jt, Jf: jf}
	}
	prog := []unix.SockFilter{
		/* 0 */ ld(offArch),
		/* 1 */ jeq(arch, 1, 0),
		/* 2 */ ret(enosys),
		/* 3 */ ld(offNr),
		/* 4 */ {Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: 0x40000000, Jt: 0, Jf: 1}, // the x32 ABI
		/* 5 */ ret(enosys),
		/* 6 */ jeq(unix.SYS_SOCKET, 6, 0), // → 13
		/* 7 */ jeq(unix.SYS_SOCKETPAIR, 8, 0), // → 16
		/* 8 */ jeq(unix.SYS_IO_URING_SETUP, 3, 0), // → 12
		/* 9 */ jeq(unix.SYS_IO_URING_ENTER, 2, 0), // → 12
		/* 10 */ jeq(unix.SYS_IO_URING_REGISTER, 1, 0), // → 12
		/* 11 */ ret(allow),
		/* 12 */ ret(enosys),
		/* 13 */ ld(offArg0), // socket(domain, …)
		/* 14 */ jeq(unix.AF_UNIX, 6, 0), // → 21
		/* 15 */ ret(allow),
		/* 16 */ ld(offArg0), // socketpair(domain, type, …)
		/* 17 */ jeq(unix.AF_UNIX, 0, 4), // ≠ → 22
		/* 18 */ ld(offArg1),
		/* 19 */ {Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 0xf}, // the type without SOCK_NONBLOCK, SOCK_CLOEXEC
		/* 20 */ jeq(unix.SOCK_STREAM, 1, 0), // → 22
		/* 21 */ ret(eacces),
		/* 22 */ ret(allow),
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return errno
	}
	return nil
}
