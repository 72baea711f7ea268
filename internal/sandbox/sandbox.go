// Package sandbox confines the stdio upstreams of the gateway
// (docs/gateway.md, "Trust model"): an upstream is started as a re-exec
// of resourced itself that, before it execs the upstream's command,
// enters a Landlock domain (an allow-list of paths; no ptrace, /proc
// access, signals or abstract unix sockets towards anything outside it)
// and, where Landlock cannot yet refuse unix sockets by path (ABI < 9),
// a seccomp filter that refuses new unix-domain sockets.
//
// Go cannot run code between fork and exec, hence the re-exec: Command
// builds the exec.Cmd of the helper, and Main, called first thing in
// main (and in the init of a test binary that starts upstreams), is the
// helper: it applies the Spec and execs the upstream, or exits 126 saying
// why on stderr.
//
// Plan computes the rules: what the upstream may read and write, with
// the paths resourced keeps to itself cut out (plan.go).
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// helperEnv carries the Spec to the helper; its presence is what makes a
// process the helper. The helper's environment holds nothing else: the
// upstream's own is in the Spec.
const helperEnv = "RESOURCED_SANDBOX_SPEC"

// helperArg0 is the helper's argv[0], so that ps shows what it is for
// the moment before it execs the upstream.
const helperArg0 = "resourced-sandbox"

// Rule allows one path beneath which the upstream may read (and, with
// Write, write); Dir says whether the path is a directory (the rights
// differ). A path that is gone when the helper applies the rules is
// skipped when Optional, else the start fails.
type Rule struct {
	Path     string `json:"path"`
	Dir      bool   `json:"dir,omitempty"`
	Write    bool   `json:"write,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// Spec is what the helper does: enter the domain of Rules, then exec
// Path with Args (argv, argv[0] included) and Env.
type Spec struct {
	Path  string   `json:"path"`
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Rules []Rule   `json:"rules"`
}

// Command is the exec.Cmd that runs spec inside the sandbox: exe (the
// running binary, "/proc/self/exe" on Linux: Self) re-executed with the
// spec as its only environment. The caller sets Dir, the standard
// streams, SysProcAttr (a process group, credentials) and starts it.
func Command(exe string, spec Spec) (*exec.Cmd, error) {
	if spec.Path == "" || len(spec.Args) == 0 {
		return nil, errors.New("sandbox: the spec has no command")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{helperArg0}
	cmd.Env = []string{helperEnv + "=" + string(b)}
	return cmd, nil
}

// Main is the helper when this process was started by Command: it
// applies the spec and execs the upstream, and never returns; otherwise
// it returns at once. Call it before anything else in main.
func Main() {
	raw, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	var spec Spec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fail(fmt.Errorf("the spec does not decode: %w", err))
	}
	fail(enter(spec)) // returns only when it failed
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "resourced sandbox: %v\n", err)
	os.Exit(126)
}
