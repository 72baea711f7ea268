//go:build !unix

package gateway

import "os/exec"

// setProcessGroup does nothing where there are no process groups: only
// the process itself is stopped.
func setProcessGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(int) {}

// setCredential does nothing where there are no process credentials;
// upstreams are never sandboxed there (no Landlock).
func setCredential(*exec.Cmd, uint32, uint32) {}
