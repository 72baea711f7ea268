//go:build unix

package gateway

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd lead a process group of its own, so that
// killGroup reaches the children it starts (npx starts node, say).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills what is left of process group pgid (0: none) once its
// leader has been stopped and reaped.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// setCredential runs cmd (the sandbox helper, and so the upstream it
// execs) as uid and gid with no supplementary groups.
func setCredential(cmd *exec.Cmd, uid, gid uint32) {
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}
