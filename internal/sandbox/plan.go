package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Protected is a path resourced keeps to itself (its data directory, its
// config file, a key file), with what it is, for errors.
type Protected struct {
	Path string
	What string // "the data directory", "links.keyFile", …
}

// Allow is a path the operator lets an upstream use (its dir, its
// allowPaths): read-only unless Write.
type Allow struct {
	Path  string
	Write bool
}

// Plan is what one upstream start may use. Rules turns it into the
// helper's rules:
//
//   - system paths, read-only: /usr, /bin, /sbin, /lib*, /opt, the few
//     files of /etc that the C library, DNS and TLS read, the global
//     /proc files Node reads (meminfo, cpuinfo, stat), /dev/null and
//     friends; nothing else of /proc, /sys or /dev;
//   - the install prefix of the node on PATH (…/bin/node beside
//     …/lib/node_modules), read-only;
//   - the command itself and every argument that is the absolute path of
//     something that exists (the script it runs, the directories it is
//     told to serve), read-only; for a file inside a node_modules
//     directory, the outermost such directory (the packages it imports);
//   - Dir, read-only, and Allow as written (explicit allowances);
//   - Home and Tmp, read-write: its private HOME and TMPDIR.
//
// What resourced keeps to itself (Protected) is never allowed: an
// explicit allowance that holds one, or any allowance inside one, is
// refused (CheckExplicit says so at start); a derived one that holds one
// is allowed entry by entry around it (cut out). Private, the directories
// that hold every upstream's private HOME and TMPDIR, are cut out of
// everything but this start's own Home and Tmp, so that one upstream
// (or one tenant's process) cannot read another's.
type Plan struct {
	Command string // the absolute path of the command
	Args    []string
	Dir     string
	Allow   []Allow
	Home    string
	Tmp     string
	// PATH is the upstream's PATH, where node is looked for.
	PATH      string
	Protected []Protected
	Private   []string
}

// maxRules bounds the rules of one start: cutting a protected path out
// of a large directory allows each of its entries one by one.
const maxRules = 4096

var (
	systemDirs = []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
		"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives", "/etc/ld.so.conf.d",
		"/sys/devices/system/cpu",
	}
	systemFiles = []string{
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts",
		"/etc/resolv.conf", "/etc/gai.conf", "/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone",
		"/etc/services", "/etc/protocols", "/etc/mime.types", "/etc/os-release", "/etc/npmrc",
		"/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/sys/vm/overcommit_memory",
		"/dev/random", "/dev/urandom",
	}
	systemRWFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
)

// candidate is one allowance before it is checked against Protected.
type candidate struct {
	path     string
	dir      bool // unknown (false) until stat; kept for the system lists
	write    bool
	explicit bool   // Dir or Allow: refused when it holds a protected path
	what     string // for errors: "allowPaths /x", "dir /x", "argument /x"
	optional bool   // a system path that may not exist here
}

// CheckExplicit refuses an upstream's dir or allowPaths that holds a
// path resourced keeps to itself, or lies inside one; each error names
// both paths.
func CheckExplicit(dir string, allow []Allow, protected []Protected) error {
	prot := canonicalProtected(protected)
	var errs []error
	check := func(what, p string) {
		c, err := canonical(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", what, p, err))
			return
		}
		if err := refuse(what, p, c, prot); err != nil {
			errs = append(errs, err)
		}
	}
	if dir != "" {
		check("dir", dir)
	}
	for _, a := range allow {
		check("allowPaths", a.Path)
	}
	return errors.Join(errs...)
}

// refuse says why the allowance c (canonical of p) cannot be made: it is
// inside a protected path, or holds one.
func refuse(what, p, c string, prot []Protected) error {
	for _, q := range prot {
		if within(c, q.Path) {
			return fmt.Errorf("%s %s is inside %s %s, which resourced keeps to itself (upstreams never see it)", what, p, q.What, q.Path)
		}
		if within(q.Path, c) {
			return fmt.Errorf("%s %s holds %s %s, which an upstream must not see: allow a directory beside it, or move it out", what, p, q.What, q.Path)
		}
	}
	return nil
}

// Rules is the helper's rules for p (see Plan).
func (p Plan) Rules() ([]Rule, error) {
	prot := canonicalProtected(p.Protected)
	var cuts []string
	for _, q := range prot {
		cuts = append(cuts, q.Path)
	}
	var private []string
	for _, d := range p.Private {
		c, err := canonicalMissing(d)
		if err != nil {
			return nil, err
		}
		private = append(private, c)
		cuts = append(cuts, c)
	}
	var cands []candidate
	for _, d := range systemDirs {
		cands = append(cands, candidate{path: d, dir: true, what: "system path", optional: true})
	}
	for _, f := range systemFiles {
		cands = append(cands, candidate{path: f, what: "system path", optional: true})
	}
	for _, f := range systemRWFiles {
		cands = append(cands, candidate{path: f, write: true, what: "system path", optional: true})
	}
	if prefix := nodePrefix(p.PATH); prefix != "" {
		cands = append(cands, candidate{path: prefix, what: "node's install prefix"})
	}
	cands = append(cands, candidate{path: p.Command, what: "the command"})
	if nm := nodeModules(p.Command); nm != "" {
		cands = append(cands, candidate{path: nm, what: "the node_modules of the command"})
	}
	for _, a := range p.Args {
		if filepath.IsAbs(a) {
			if _, err := os.Stat(a); err == nil {
				cands = append(cands, candidate{path: a, what: "argument"})
				if nm := nodeModules(a); nm != "" {
					cands = append(cands, candidate{path: nm, what: "the node_modules of argument"})
				}
			}
		}
	}
	if p.Dir != "" {
		cands = append(cands, candidate{path: p.Dir, explicit: true, what: "dir"})
	}
	for _, a := range p.Allow {
		cands = append(cands, candidate{path: a.Path, write: a.Write, explicit: true, what: "allowPaths"})
	}

	var rules []Rule
	add := func(r Rule) error {
		if len(rules) >= maxRules {
			return fmt.Errorf("more than %d paths to allow one by one around what resourced keeps to itself; allow narrower paths", maxRules)
		}
		rules = append(rules, r)
		return nil
	}
	for _, c := range cands {
		cp, err := canonical(c.path)
		if err != nil {
			if c.optional {
				continue
			}
			return nil, fmt.Errorf("%s %s: %w", c.what, c.path, err)
		}
		fi, err := os.Stat(cp)
		if err != nil {
			if c.optional {
				continue
			}
			return nil, fmt.Errorf("%s %s: %w", c.what, c.path, err)
		}
		for _, q := range prot {
			if within(cp, q.Path) {
				return nil, refuse(c.what, c.path, cp, []Protected{q})
			}
			if c.explicit && within(q.Path, cp) {
				return nil, refuse(c.what, c.path, cp, []Protected{q})
			}
		}
		for _, d := range private {
			if within(cp, d) {
				return nil, fmt.Errorf("%s %s is inside the gateway's directory of the upstreams' private HOMEs %s", c.what, c.path, d)
			}
		}
		var inside []string
		for _, cut := range cuts {
			if within(cut, cp) {
				inside = append(inside, cut)
			}
		}
		if len(inside) == 0 {
			if err := add(Rule{Path: cp, Dir: fi.IsDir(), Write: c.write, Optional: c.optional}); err != nil {
				return nil, err
			}
			continue
		}
		if err := carve(cp, inside, c.write, add); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{p.Home, p.Tmp} {
		if d != "" {
			if err := add(Rule{Path: d, Dir: true, Write: true}); err != nil {
				return nil, err
			}
		}
	}
	return rules, nil
}

// carve allows every entry of dir except cuts (paths strictly inside
// dir), going down into the entries that hold one. Symbolic links and
// entries other than files and directories are left out: their targets
// are allowed, or not, on their own.
func carve(dir string, cuts []string, write bool, add func(Rule) error) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s to allow its entries around what resourced keeps to itself: %w", dir, err)
	}
	for _, e := range ents {
		child := filepath.Join(dir, e.Name())
		cut, holds := false, false
		for _, c := range cuts {
			cut = cut || c == child
			holds = holds || within(c, child)
		}
		switch {
		case cut:
		case holds:
			if e.Type().IsDir() {
				if err := carve(child, cuts, write, add); err != nil {
					return err
				}
			}
		case e.Type().IsDir():
			if err := add(Rule{Path: child, Dir: true, Write: write, Optional: true}); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if err := add(Rule{Path: child, Write: write, Optional: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeModules is the outermost node_modules directory that holds the
// file p (a script of an installed package imports its dependencies
// from there, hoisted or not), or "".
func nodeModules(p string) string {
	c, err := canonical(p)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(c); err != nil || fi.IsDir() {
		return ""
	}
	out := ""
	for d := filepath.Dir(c); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			out = d
		}
	}
	return out
}

// nodePrefix is the install prefix of the node on PATH (P of P/bin/node
// with P/lib/node_modules), or "".
func nodePrefix(path string) string {
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(d, "node"))
		if err != nil {
			continue
		}
		bin := filepath.Dir(real)
		prefix := filepath.Dir(bin)
		if filepath.Base(bin) != "bin" || prefix == "/" {
			return ""
		}
		if fi, err := os.Stat(filepath.Join(prefix, "lib", "node_modules")); err == nil && fi.IsDir() {
			return prefix
		}
		return ""
	}
	return ""
}

// canonicalProtected is prot with canonical paths (a path not made yet
// keeps its canonical parent).
func canonicalProtected(prot []Protected) []Protected {
	out := make([]Protected, 0, len(prot))
	for _, q := range prot {
		if q.Path == "" {
			continue
		}
		c, err := canonicalMissing(q.Path)
		if err != nil {
			c = filepath.Clean(q.Path)
		}
		out = append(out, Protected{Path: c, What: q.What})
	}
	return out
}

// canonical is the absolute path of p with every symbolic link resolved;
// p must exist.
func canonical(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}

// canonicalMissing is canonical for a path that may not exist yet: its
// nearest existing ancestor resolved, the rest appended.
func canonicalMissing(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for cur := a; ; cur = filepath.Dir(cur) {
		c, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				c = filepath.Join(c, rest[i])
			}
			return c, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == filepath.Dir(cur) {
			return "", err
		}
		rest = append(rest, filepath.Base(cur))
	}
}

// within reports whether p is root or beneath it (both clean and
// absolute).
func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
