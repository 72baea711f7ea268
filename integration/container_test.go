package integration

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The container tests use podman (Debian: apt-get install podman), which
// builds images offline here from FROM scratch; no base image can be
// pulled and no container can be run (crun cannot set rlimits on these
// machines), so the image's filesystem is exported and its binary run
// from there with the image's environment.

func needPodman(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("no podman: apt-get install podman to test the container's build context and final stage")
	}
}

// podman runs podman and returns its stdout.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("podman", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// imageFiles builds dir with containerfile (whose context is dir), exports
// a container of the image and returns the files in it.
func imageFiles(t *testing.T, dir, containerfile, tag string) []string {
	t.Helper()
	podman(t, "build", "-q", "--format", "docker", "-f", containerfile, "-t", tag, dir)
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag).Run() })
	ctr := strings.TrimSpace(podman(t, "create", tag, "/none"))
	defer exec.Command("podman", "rm", "-f", ctr).Run()
	cmd := exec.Command("podman", "export", ctr)
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var files []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, strings.TrimPrefix(h.Name, "./"))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return files
}

// TestContainerBuildContext: what `COPY . .` takes with the repository's
// .containerignore: every tracked file podman would see, and none of the
// data directory (bbolt file and both signing keys), keys elsewhere,
// dist/, node_modules or .git (issue 28: with no .containerignore it took
// all of them).
func TestContainerBuildContext(t *testing.T) {
	needPodman(t)
	ctx := t.TempDir()
	tracked := strings.Fields(string(must(exec.Command("git", "-C", "..", "ls-files").Output())))
	if !slices.Contains(tracked, ".containerignore") {
		tracked = append(tracked, ".containerignore") // not committed yet
	}
	for _, f := range tracked {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		writeFile(t, filepath.Join(ctx, f), b)
	}
	planted := []string{
		"data/auth-hmac.key", "data/links-hmac.key", "data/resourced.db", "data/resourced.sock", "data/served.json",
		"dist/resourced-v1-linux-amd64", "dist/SHA256SUMS",
		"node_modules/x/index.js", "integration/ts/node_modules/@modelcontextprotocol/client/package.json",
		".git/HEAD", "bench/.git/config", "keys/tokens.key", "etc/tls/server.pem", "resourced", "server/server.test", ".env",
	}
	for _, f := range planted {
		writeFile(t, filepath.Join(ctx, f), []byte("secret "+f))
	}
	writeFile(t, filepath.Join(ctx, "Containerfile.context"), []byte("FROM scratch\nCOPY . /ctx/\n"))
	files := imageFiles(t, ctx, "Containerfile.context", "resourced-it-context")
	for _, f := range planted {
		if slices.Contains(files, "ctx/"+f) {
			t.Errorf("the build context holds %s", f)
		}
	}
	for _, f := range tracked {
		if strings.HasSuffix(f, ".go") || f == "go.mod" || f == "go.sum" || strings.HasPrefix(f, "configs/") {
			if !slices.Contains(files, "ctx/"+f) {
				t.Errorf("the build context lacks %s, which the build needs", f)
			}
		}
	}
	t.Logf("build context: %d files of %d tracked", len(files), len(tracked))
}

// TestContainerFinalStage builds the Containerfile's final stage on a
// locally built static binary (FROM scratch instead of distroless, which
// cannot be pulled here), then runs the image's entrypoint and command
// from its exported filesystem with the image's environment: it serves
// with no flags, the base URL the image sets, and the image's healthcheck
// passes (issue 28: the default listen 0.0.0.0:8765 became the URL
// http://0.0.0.0:8765, and the healthcheck hard-coded its port).
func TestContainerFinalStage(t *testing.T) {
	needPodman(t)
	cf, err := os.ReadFile("../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	final := string(cf)[strings.LastIndex(string(cf), "\nFROM ")+1:]
	for old, repl := range map[string]string{
		"FROM gcr.io/distroless/static-debian12:nonroot":        "FROM scratch",
		"COPY --from=build /out/resourced /resourced":           "COPY resourced /resourced",
		"COPY --from=build --chown=65532:65532 /out/data /data": "COPY --chown=65532:65532 data /data",
	} {
		if !strings.Contains(final, old) {
			t.Fatalf("the Containerfile's final stage has no %q any more; update this test", old)
		}
		final = strings.Replace(final, old, repl, 1)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "resourced"), "../cmd/resourced")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "Containerfile.final"), []byte(final))
	files := imageFiles(t, dir, "Containerfile.final", "resourced-it-final")
	if !slices.Contains(files, "resourced") {
		t.Fatalf("the image has no /resourced: %v", files)
	}
	var inspect []struct {
		Config struct {
			Env, Entrypoint, Cmd []string
			User                 string
		}
		Healthcheck struct{ Test []string } // podman has it here, beside Config
	}
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", "resourced-it-final")), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	cfg, healthcheck := inspect[0].Config, inspect[0].Healthcheck.Test
	if cfg.User != "65532:65532" || !slices.Equal(cfg.Entrypoint, []string{"/resourced"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("image config: user %q, entrypoint %v, cmd %v", cfg.User, cfg.Entrypoint, cfg.Cmd)
	}
	if len(healthcheck) < 2 || healthcheck[0] != "CMD" || healthcheck[1] != "/resourced" {
		t.Fatalf("image healthcheck %v, want CMD /resourced ...", healthcheck)
	}

	// The image's environment, /data taken from a fresh directory (the
	// volume), and nothing else of ours.
	data := t.TempDir()
	var env []string
	for _, e := range cfg.Env {
		if strings.HasPrefix(e, "RESOURCED_DATA_DIR=") {
			e = "RESOURCED_DATA_DIR=" + data
		}
		env = append(env, e)
	}
	bin := filepath.Join(dir, "resourced") // the file the image holds
	argv := append(slices.Clone(cfg.Entrypoint[1:]), cfg.Cmd...)
	srv := exec.Command(bin, argv...)
	srv.Env = env
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if strings.Contains(strings.Join(log, "\n"), "address already in use") {
					t.Skip("port 8765 is in use on this machine; the image's default listen cannot be tried")
				}
				t.Fatalf("the image's command exited:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			if strings.Contains(l, `"msg":"listening"`) {
				// Go reports a 0.0.0.0 listener as [::] (dual stack).
				if !strings.Contains(l, `:8765","url"`) || !strings.Contains(l, `"baseURL":"http://127.0.0.1:8765"`) {
					t.Errorf("listening line %s: want port 8765 and the image's base URL", l)
				}
				break wait
			}
		case <-deadline:
			t.Fatalf("no listening line in 30s:\n%s", strings.Join(log, "\n"))
		}
	}
	hc := exec.Command(bin, healthcheck[2:]...)
	hc.Env = env
	if out, err := hc.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("the image's healthcheck %v: %v, %s", healthcheck, err, out)
	}
	tok := exec.Command(bin, "token")
	tok.Env = env
	var tokErr strings.Builder
	tok.Stderr = &tokErr
	if _, err := tok.Output(); err != nil || !strings.Contains(tokErr.String(), "for audience http://127.0.0.1:8765 (asked the server running on "+data) {
		t.Errorf("token in the image's environment: %v, %s", err, tokErr.String())
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
