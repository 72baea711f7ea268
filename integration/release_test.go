package integration

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReleaseArchive: scripts/release.sh builds the archive of this
// machine's GOOS/GOARCH (one target, to keep the cost low) into a temporary
// directory; SHA256SUMS matches it; it unpacks to one directory holding the
// binary, LICENSE, README, the example configs and the systemd unit; the
// unpacked binary's `version` names this commit and its date; started with
// the example config on the embedded default store, it serves, `health`
// says so and resourced_build_info names the same revision.
func TestReleaseArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	for _, tool := range []string{"bash", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scripts/release.sh needs %s: %v", tool, err)
		}
	}
	dist := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	name := "resourced-v0.0.0-it-" + runtime.GOOS + "-" + runtime.GOARCH
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "release.sh"), "v0.0.0-it", target)
	cmd.Env = append(os.Environ(), "DIST_DIR="+dist, "SOURCE_DATE_EPOCH=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}

	// SHA256SUMS lists exactly the archive, with its hash.
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dist, name+".tar.gz")
	body, err := os.ReadFile(archive)
	if err != nil {
		t.Fatalf("no archive for %s: %v", target, err)
	}
	sum := sha256.Sum256(body)
	if got, want := strings.TrimSpace(string(sums)), hex.EncodeToString(sum[:])+"  "+name+".tar.gz"; got != want {
		t.Errorf("SHA256SUMS = %q, want %q", got, want)
	}

	// Unpack: one top directory, no entry outside it.
	root := t.TempDir()
	unpack(t, archive, root)
	dir := filepath.Join(root, name)
	for _, f := range []string{"resourced", "LICENSE", "README.md", "CHANGELOG.md", "configs/resourced.example.yaml", "configs/gateway.example.yaml", "deploy/resourced.service", "deploy/resourced-node-upstreams.conf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the archive has no %s: %v", f, err)
		}
	}
	bin := filepath.Join(dir, "resourced")

	// version names the commit, when this is a git checkout.
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	version := strings.TrimSpace(string(out))
	rev, date, isGit := checkoutRevision(t)
	if isGit {
		want := "resourced v0.0.0-it (revision " + rev + ", " + date + ", " + runtime.Version() + ")"
		if version != want {
			t.Errorf("the unpacked binary's version = %q, want %q", version, want)
		}
	} else if !strings.HasPrefix(version, "resourced v0.0.0-it (") {
		t.Errorf("the unpacked binary's version = %q", version)
	}

	// It serves with the example config on the embedded default store.
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := filepath.Join(dir, "configs", "resourced.example.yaml")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	srv := exec.Command(bin, "serve", "--config", cfg, "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "data"))
	srv.Env = env
	logs := &syncBuffer{}
	srv.Stdout, srv.Stderr = io.Discard, logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Kill()
		srv.Wait()
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(logs.String(), `"msg":"listening"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the unpacked binary did not log listening within 60s:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `"backend":"bbolt"`) {
		t.Errorf("the example config did not start the embedded bbolt store:\n%s", logs)
	}
	health := exec.Command(bin, "health", "--config", cfg, "--listen", addr)
	health.Env = env
	if out, err := health.CombinedOutput(); err != nil {
		t.Errorf("health of the unpacked binary: %v\n%s", err, out)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if isGit && !strings.Contains(string(metrics), `revision="`+rev+`"`) {
		t.Errorf("resourced_build_info does not name revision %s", rev)
	}
}

// checkoutRevision is what release.sh stamps: HEAD, with -modified when
// the tree has changes, and the commit time; isGit is false outside a git
// checkout.
func checkoutRevision(t *testing.T) (rev, date string, isGit bool) {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil {
		return "", "", false
	}
	if st, _ := git("status", "--porcelain"); st != "" {
		rev += "-modified"
	}
	iso, err := git("log", "-1", "--format=%cI")
	if err != nil {
		t.Fatal(err)
	}
	d, err := time.Parse(time.RFC3339, iso)
	if err != nil {
		t.Fatal(err)
	}
	return rev, d.UTC().Format("2006-01-02T15:04:05Z"), true
}

// unpack extracts the gzipped tar archive into dir, refusing entries that
// would land outside it.
func unpack(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		clean := filepath.Clean(h.Name)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			t.Fatalf("archive entry %q is outside the archive's directory", h.Name)
		}
		first, _, _ := strings.Cut(clean, "/")
		if top == "" {
			top = first
		} else if first != top {
			t.Errorf("archive entry %q is not under %s/", h.Name, top)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("archive entry %q is owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		}
		p := filepath.Join(dir, clean)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode)&0o777)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			w.Close()
		default:
			t.Errorf("archive entry %q has type %c, want files and directories only", h.Name, h.Typeflag)
		}
	}
}
