package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/resourced/resourced/grammar"
	"github.com/resourced/resourced/internal/sandbox"
)

// unixByPathABI is the Landlock ABI from which a domain refuses unix
// sockets by path itself; below it the sandbox refuses unix sockets with
// seccomp (internal/sandbox).
const unixByPathABI = 9

// account is the user and group a sandboxed upstream runs as; zero
// (set false) is the gateway's own.
type account struct {
	set      bool
	uid, gid uint32
}

// sandboxSetup checks the sandbox of every stdio upstream at NewPool and
// logs one line per upstream: on (with the Landlock ABI) or off. It
// refuses an upstream whose sandbox cannot be had: no Landlock, an
// allowance that holds or lies inside a protected path, a user that
// does not exist or needs root.
func (p *Pool) sandboxSetup() error {
	abi := sandbox.ABI()
	if p.opts.landlockABI != nil {
		abi = p.opts.landlockABI()
	}
	var errs []error
	sandboxed := false
	for _, up := range p.ups {
		u := &up.cfg
		if u.Command == "" {
			continue
		}
		if u.Sandbox.Off {
			p.log.Warn("upstream sandbox", "upstream", u.Name, "sandbox", "off",
				"note", "it runs as the gateway's user and can read what that user can, the gateway's keys and data included")
			continue
		}
		if abi < 1 {
			errs = append(errs, fmt.Errorf("gateway: upstream %q: this kernel has no Landlock (not built in, or not enabled at boot: lsm=landlock), "+
				"so it cannot be sandboxed; write sandbox: off for it to run unconfined as the gateway's user (docs/gateway.md, Trust model)", u.Name))
			continue
		}
		allow := make([]sandbox.Allow, len(u.Sandbox.AllowPaths))
		for i, a := range u.Sandbox.AllowPaths {
			allow[i] = sandbox.Allow{Path: a.Path, Write: a.Write}
		}
		if err := sandbox.CheckExplicit(u.Dir, allow, p.opts.Protected); err != nil {
			errs = append(errs, fmt.Errorf("gateway: upstream %q: %w", u.Name, err))
			continue
		}
		acct, err := lookupAccount(u.Sandbox.User, u.Sandbox.Group)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway: upstream %q: %w", u.Name, err))
			continue
		}
		up.acct = acct
		sandboxed = true
		unix := "refused (seccomp; Landlock ABI < 9 cannot refuse them by path)"
		if abi >= unixByPathABI {
			unix = "refused by path (Landlock)"
		}
		attrs := []any{"upstream", u.Name, "sandbox", "on", "landlockABI", abi, "unixSockets", unix}
		if acct.set {
			attrs = append(attrs, "uid", acct.uid, "gid", acct.gid)
		}
		p.log.Info("upstream sandbox", attrs...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if !sandboxed {
		return nil
	}
	root := p.opts.SandboxDir
	if root == "" {
		d, err := os.MkdirTemp("", "resourced-gateway-")
		if err != nil {
			return fmt.Errorf("gateway: a directory for the upstreams' private HOME and TMPDIR: %w", err)
		}
		root = d
		p.removeDirs = append(p.removeDirs, d)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("gateway: the upstreams' private directory: %w", err)
	}
	p.privateRoot = root
	p.privateRoots = []string{root}
	for _, up := range p.ups {
		if up.acct.set && p.userRoot == "" {
			// Another account must pass through to its own directories
			// (the data directory, where SandboxDir usually is, is 0700),
			// never list the others'.
			d, err := os.MkdirTemp("", "resourced-gateway-users-")
			if err != nil {
				return fmt.Errorf("gateway: a directory for the private HOME of upstreams with a user: %w", err)
			}
			if err := os.Chmod(d, 0o711); err != nil {
				return fmt.Errorf("gateway: %w", err)
			}
			p.userRoot = d
			p.removeDirs = append(p.removeDirs, d)
			p.privateRoots = append(p.privateRoots, d)
		}
	}
	return nil
}

// lookupAccount resolves an upstream's user and group (names or ids).
func lookupAccount(name, group string) (account, error) {
	if name == "" && group == "" {
		return account{}, nil
	}
	if name == "" {
		return account{}, errors.New("group needs a user")
	}
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return account{}, fmt.Errorf("user %q: no such user", name)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return account{}, fmt.Errorf("user %q: uid %q is not a number", name, u.Uid)
	}
	gidText := u.Gid
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			if g, err = user.LookupGroupId(group); err != nil {
				return account{}, fmt.Errorf("group %q: no such group", group)
			}
		}
		gidText = g.Gid
	}
	gid, err := strconv.ParseUint(gidText, 10, 32)
	if err != nil {
		return account{}, fmt.Errorf("group %q: gid %q is not a number", group, gidText)
	}
	if euid := os.Geteuid(); euid != 0 && uint64(euid) != uid {
		return account{}, fmt.Errorf("user %q: running an upstream as another user needs the gateway to run as root (it runs as uid %d)", name, euid)
	}
	return account{set: true, uid: uint32(uid), gid: uint32(gid)}, nil
}

// privateDirs makes (if needed) the private HOME and TMPDIR of up's
// process for tenant ("" for a shared upstream and the readiness probe):
// <root>/<upstream>/{home,tmp}, or <root>/<upstream>/tenants/<tenant>/…
// for a perTenant one, so that one tenant's process never shares a HOME
// (npx's cache, an upstream's saved state) with another's.
func (p *Pool) privateDirs(up *upstream, tenant string) (home, tmp string, err error) {
	root := p.privateRoot
	if up.acct.set {
		root = p.userRoot
	}
	base := filepath.Join(root, up.cfg.Name)
	dirs := []string{base}
	if tenant != "" {
		name := tenant
		if grammar.Tenant(tenant) != nil { // never a path of its own making
			sum := sha256.Sum256([]byte(tenant))
			name = "x-" + hex.EncodeToString(sum[:8])
		}
		dirs = append(dirs, filepath.Join(base, "tenants"), filepath.Join(base, "tenants", name))
		base = dirs[len(dirs)-1]
	}
	home, tmp = filepath.Join(base, "home"), filepath.Join(base, "tmp")
	for _, d := range append(dirs, home, tmp) {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", "", err
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return "", "", err
		}
		if !fi.IsDir() {
			return "", "", fmt.Errorf("%s is not a directory", d)
		}
		if up.acct.set {
			if err := os.Lchown(d, int(up.acct.uid), int(up.acct.gid)); err != nil {
				return "", "", err
			}
		}
	}
	return home, tmp, nil
}

// sandboxedCommand is the exec.Cmd of a sandboxed stdio upstream: the
// sandbox helper (resourced re-executed) that enters the Landlock domain
// of its Plan and execs the command with env, HOME and TMPDIR being its
// private ones unless its Env sets them.
func (p *Pool) sandboxedCommand(up *upstream, tenant string, env []string) (*exec.Cmd, error) {
	u := &up.cfg
	path, err := resolveCommand(u.Command, u.Dir)
	if err != nil {
		return nil, err
	}
	home, tmp, err := p.privateDirs(up, tenant)
	if err != nil {
		return nil, fmt.Errorf("its private HOME and TMPDIR: %w", err)
	}
	for k, v := range map[string]string{"HOME": home, "TMPDIR": tmp} {
		if _, set := u.Env[k]; !set {
			env = setEnv(env, k, v)
		}
	}
	allow := make([]sandbox.Allow, len(u.Sandbox.AllowPaths))
	for i, a := range u.Sandbox.AllowPaths {
		allow[i] = sandbox.Allow{Path: a.Path, Write: a.Write}
	}
	rules, err := sandbox.Plan{
		Command: path, Args: u.Args, Dir: u.Dir, Allow: allow, Home: home, Tmp: tmp,
		PATH: getEnv(env, "PATH"), Protected: p.opts.Protected, Private: p.privateRoots,
	}.Rules()
	if err != nil {
		return nil, err
	}
	cmd, err := sandbox.Command(sandbox.Self, sandbox.Spec{
		Path: path, Args: append([]string{u.Command}, u.Args...), Env: env, Rules: rules,
	})
	if err != nil {
		return nil, err
	}
	return cmd, nil
}

// resolveCommand is the absolute path of command as exec.Command would
// run it: looked up on PATH without a slash, else relative to dir (or
// the gateway's working directory).
func resolveCommand(command, dir string) (string, error) {
	if !strings.Contains(command, "/") {
		path, err := exec.LookPath(command)
		if err != nil && !errors.Is(err, exec.ErrDot) {
			return "", err
		}
		command = path
	} else if !filepath.IsAbs(command) && dir != "" {
		command = filepath.Join(dir, command)
	}
	return filepath.Abs(command)
}

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	out = append(out, k+"="+v)
	slices.Sort(out)
	return out
}

func getEnv(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}
