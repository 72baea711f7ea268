package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes dir/{a/{x,data/{db}},b,c.txt} and returns dir (canonical).
func tree(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/x", "a/data", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"c.txt", "a/data/db", "a/y.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "a", "data"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func paths(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}

func TestCheckExplicitRefusesWhatHoldsOrLiesInAProtectedPath(t *testing.T) {
	dir := tree(t)
	prot := []Protected{{Path: filepath.Join(dir, "a", "data"), What: "the data directory"}}
	for _, c := range []struct {
		allow []Allow
		dir   string
		want  string
	}{
		{allow: []Allow{{Path: dir}}, want: "allowPaths " + dir + " holds the data directory " + filepath.Join(dir, "a", "data")},
		{allow: []Allow{{Path: filepath.Join(dir, "a", "data", "db")}}, want: "is inside the data directory"},
		{dir: filepath.Join(dir, "a"), want: "dir " + filepath.Join(dir, "a") + " holds the data directory"},
		{allow: []Allow{{Path: filepath.Join(dir, "link")}}, want: "is inside the data directory"}, // through a symlink
		{allow: []Allow{{Path: filepath.Join(dir, "b"), Write: true}, {Path: filepath.Join(dir, "a", "x")}}},
	} {
		err := CheckExplicit(c.dir, c.allow, prot)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckExplicit(%q, %v) = %v, want %q", c.dir, c.allow, err, c.want)
		}
	}
	// A protected path that does not exist yet still counts.
	if err := CheckExplicit("", []Allow{{Path: dir}}, []Protected{{Path: filepath.Join(dir, "later", "key"), What: "links.keyFile"}}); err == nil {
		t.Error("an allowance over a key file not made yet was accepted")
	}
}

func TestPlanCutsProtectedPathsOutOfDerivedAllowances(t *testing.T) {
	dir := tree(t)
	data := filepath.Join(dir, "a", "data")
	home, tmp := filepath.Join(dir, "b"), filepath.Join(dir, "b")
	// A path argument that holds the data directory (server-filesystem
	// told to serve its parent): allowed around it, entry by entry.
	rules, err := Plan{
		Command: "/bin/sh", Args: []string{"-c", dir}, Home: home, Tmp: tmp,
		Protected: []Protected{{Path: data, What: "the data directory"}},
	}.Rules()
	if err != nil {
		t.Fatal(err)
	}
	got := paths(rules)
	for _, want := range []string{filepath.Join(dir, "a", "x"), filepath.Join(dir, "a", "y.txt"), filepath.Join(dir, "b"), filepath.Join(dir, "c.txt")} {
		if !slices.Contains(got, want) {
			t.Errorf("rules lack %s: %v", want, got)
		}
	}
	for _, p := range got {
		if p == dir || p == filepath.Join(dir, "a") || strings.HasPrefix(p, data) || p == filepath.Join(dir, "link") {
			t.Errorf("rules allow %s, which holds or is the data directory (or a link to it): %v", p, got)
		}
	}
	if !slices.Contains(got, "/usr") {
		t.Errorf("rules lack the system path /usr: %v", got)
	}
	for _, r := range rules {
		if r.Write && r.Path != home && !strings.HasPrefix(r.Path, "/dev/") {
			t.Errorf("%s is writable: only HOME, TMPDIR and /dev/null-like files are", r.Path)
		}
	}

	// An explicit allowance that holds it is refused, and so is any
	// allowance inside it.
	if _, err := (Plan{Command: "/bin/sh", Allow: []Allow{{Path: dir}}, Protected: []Protected{{Path: data, What: "the data directory"}}}).Rules(); err == nil {
		t.Error("an allowPaths over the data directory was accepted")
	}
	if _, err := (Plan{Command: filepath.Join(data, "db"), Protected: []Protected{{Path: data, What: "the data directory"}}}).Rules(); err == nil ||
		!strings.Contains(err.Error(), "inside the data directory") {
		t.Errorf("a command inside the data directory: %v", err)
	}
}

func TestPlanCutsOtherUpstreamsPrivateDirs(t *testing.T) {
	dir := tree(t)
	private := filepath.Join(dir, "a")
	own := filepath.Join(private, "x")
	rules, err := Plan{Command: "/bin/sh", Allow: []Allow{{Path: dir, Write: true}}, Home: own, Tmp: own, Private: []string{private}}.Rules()
	if err != nil {
		t.Fatal(err)
	}
	got := paths(rules)
	if slices.Contains(got, dir) || slices.Contains(got, filepath.Join(dir, "a", "data")) {
		t.Errorf("rules reach into another upstream's private directory: %v", got)
	}
	if !slices.Contains(got, own) || !slices.Contains(got, filepath.Join(dir, "b")) {
		t.Errorf("rules lack the upstream's own HOME or the rest of its allowance: %v", got)
	}
}

func TestNodePrefix(t *testing.T) {
	dir := tree(t)
	bin := filepath.Join(dir, "node", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "node"), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := nodePrefix(bin); got != "" {
		t.Errorf("nodePrefix without lib/node_modules = %q, want none (it could be anyone's ~/bin)", got)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node", "lib", "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := nodePrefix("relative:" + bin); got != filepath.Join(dir, "node") {
		t.Errorf("nodePrefix = %q, want %s", got, filepath.Join(dir, "node"))
	}
}

func TestPlanAllowsTheNodeModulesOfAScript(t *testing.T) {
	dir := tree(t)
	script := filepath.Join(dir, "node_modules", "@s", "pkg", "node_modules", "dep", "index.js")
	if err := os.MkdirAll(filepath.Dir(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := Plan{Command: "/usr/bin/node", Args: []string{script}}.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(rules); !slices.Contains(got, filepath.Join(dir, "node_modules")) || slices.Contains(got, dir) {
		t.Errorf("rules %v: want the outermost node_modules of the script, not its project", got)
	}
}
