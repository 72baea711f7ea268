package integration

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// s3Target returns the S3-compatible server the tests use (started by
// .ci/run through scripts/versitygw.sh), or skips.
func s3Target(t *testing.T) (endpoint, bucket string) {
	t.Helper()
	endpoint, bucket = os.Getenv("RESOURCED_TEST_S3_ENDPOINT"), os.Getenv("RESOURCED_TEST_S3_BUCKET")
	if endpoint == "" || bucket == "" {
		msg := `S3 tests need an S3-compatible server: eval "$(scripts/versitygw.sh start)" in the repository root, then rerun`
		if os.Getenv("RESOURCED_REQUIRE_S3") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return endpoint, bucket
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// s3Config is the store section for a fresh prefix of the bucket.
func s3Config(endpoint, bucket, prefix string) string {
	return fmt.Sprintf("store:\n  backend: s3\n  s3: {bucket: %s, prefix: %s, endpoint: %q, pathStyle: true, region: us-east-1, callTimeout: 3s}\n", bucket, prefix, endpoint)
}

// startPeer starts another process with the same config (and so the same
// key and store) as in.
func startPeer(t *testing.T, in *instance) *instance {
	t.Helper()
	p := &instance{t: t, dataDir: filepath.Join(t.TempDir(), "data"), config: in.config, Key: in.Key, Token: in.Token}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// TestScaleOutOnS3: two stateless instances on one bucket behave as one.
func TestScaleOutOnS3(t *testing.T) {
	endpoint, bucket := s3Target(t)
	a := startServer(t, s3Config(endpoint, bucket, "it-"+randomHex(6)))
	b := startPeer(t, a)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			// Save via A, read the unlisted link via B.
			snap := checkSuccess(t, a.call(v, "save_search_snapshot", map[string]any{"query": "scale out", "hits": hits}), 1)
			rb := b.read(v, snap["uri"].(string))
			if sum(rb.body(t)) != snap["sha256"] || *rb.CacheScope != "private" {
				t.Errorf("B read of A's snapshot: sha %s cacheScope %s", sum(rb.body(t)), *rb.CacheScope)
			}
			// Replace via B, A serves the new body.
			path := "shared/" + v
			rep := checkSuccess(t, a.call(v, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "v1"}), 1)
			for range 2 { // A's form cache holds v1 from here
				if got := a.read(v, rep["uri"].(string)).body(t); string(got) != "v1" {
					t.Fatalf("A serves %q, want v1", got)
				}
			}
			checkSuccess(t, b.call(v, "save_report", map[string]any{"path": path, "mimeType": "text/plain", "text": "v2", "ifMatch": rep["sha256"]}), 1)
			if got := a.read(v, rep["uri"].(string)).body(t); string(got) != "v2" {
				t.Errorf("A serves %q after B replaced it", got)
			}
			// Delete via A, B answers -32602.
			checkSuccess(t, a.call(v, "delete_resource", map[string]any{"uri": rep["uri"]}), 0)
			for _, in := range []*instance{b, a} { // a read v2 last: cached, deleted
				if r := in.rpc(v, "resources/read", map[string]any{"uri": rep["uri"]}); r.Error == nil || r.Error.Code != -32602 {
					t.Errorf("read after A deleted: %s", r.Body)
				}
			}
		})
	}
	// Concurrent replaces of one report through A and B with the same
	// ifMatch: exactly one wins each round.
	base := checkSuccess(t, a.call(v2026, "save_report", map[string]any{"path": "race/report", "mimeType": "text/plain", "text": "round 0"}), 1)
	sha := base["sha256"].(string)
	for round := 1; round <= 10; round++ {
		var wg sync.WaitGroup
		results := make([]*toolResult, 2)
		for i, in := range []*instance{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = in.call(v2026, "save_report", map[string]any{"path": "race/report", "mimeType": "text/plain", "text": fmt.Sprintf("round %d by %d", round, i), "ifMatch": sha})
			}()
		}
		wg.Wait()
		wins := 0
		for _, r := range results {
			if r.IsError {
				checkFailure(t, r, "conflict")
			} else {
				wins++
				sha = r.structured(t)["sha256"].(string)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d saves won, want exactly 1", round, wins)
		}
		st := checkSuccess(t, b.call(v2026, "stat_resource", map[string]any{"uri": base["uri"]}), 1)
		if st["sha256"] != sha {
			t.Fatalf("round %d: stored sha256 %v is not the winner's %s", round, st["sha256"], sha)
		}
	}
}

// versity is an S3 server the test owns, so it can stop and restart it,
// in either metadata mode (sidecar: --sidecar, which the probe refuses;
// else extended attributes).
type versity struct {
	t          *testing.T
	bin, addr  string
	root, meta string
	key, sec   string
	sidecar    bool
	cmd        *exec.Cmd
	ns         *netns // the host it runs on, when not this one
}

// startVersity starts versitygw in xattr mode, or skips when the
// temporary directory's file system has no user extended attributes.
func startVersity(t *testing.T) *versity {
	t.Helper()
	v := newVersity(t)
	if err := unix.Setxattr(v.root, "user.resourced-probe", []byte("1"), 0); err != nil {
		t.Skipf("the temporary directory takes no user extended attributes (%v): versitygw's xattr mode cannot run here", err)
	}
	v.start()
	return v
}

// startVersitySidecar starts versitygw with --sidecar.
func startVersitySidecar(t *testing.T) *versity {
	t.Helper()
	v := newVersity(t)
	v.sidecar = true
	v.start()
	return v
}

func newVersity(t *testing.T) *versity {
	t.Helper()
	s3Target(t) // same skip rule as the other S3 tests
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("versitygw not found (scripts/versitygw.sh installs it): %v", err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	v := &versity{t: t, bin: bin, addr: addr, root: filepath.Join(dir, "root"), meta: filepath.Join(dir, "meta"), key: "it" + randomHex(8), sec: randomHex(16)}
	os.MkdirAll(filepath.Join(v.root, "faults"), 0o700)
	os.MkdirAll(v.meta, 0o700)
	t.Cleanup(v.stop)
	return v
}

// env is the environment an instance needs for this server's credentials.
func (v *versity) env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + v.key, "AWS_SECRET_ACCESS_KEY=" + v.sec}
}

func (v *versity) start() {
	v.t.Helper()
	args := []string{"--port", v.addr, "posix", v.root}
	if v.sidecar {
		args = []string{"--port", v.addr, "posix", "--sidecar", v.meta, v.root}
	}
	v.cmd = exec.Command(v.bin, args...)
	if v.ns != nil {
		v.cmd = v.ns.command(v.bin, args...)
	}
	v.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+v.key, "ROOT_SECRET_KEY="+v.sec)
	if err := v.cmd.Start(); err != nil {
		v.t.Fatal(err)
	}
	if v.ns != nil {
		_, port, _ := net.SplitHostPort(v.addr)
		waitAnswers(v.t, v.ns.client, "http://127.0.0.1:"+port+"/")
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + v.addr + "/"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			v.t.Fatal("versitygw did not answer within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (v *versity) stop() {
	if v.cmd != nil && v.cmd.Process != nil {
		v.cmd.Process.Kill()
		v.cmd.Wait()
		v.cmd = nil
	}
}

// TestS3OutageAndRecovery: with the S3 server gone, tools say unavailable
// (retrySafe), reads are internal errors that name no bucket or endpoint,
// /readyz fails and the process stays up; when S3 returns, all recovers.
func TestS3OutageAndRecovery(t *testing.T) {
	vs := startVersity(t)
	endpoint := "http://" + vs.addr
	// The instance needs this server's credentials, not the shared ones.
	in := startServerEnv(t, s3Config(endpoint, "faults", "p"+randomHex(4)), vs.env()...)

	rep := checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "before", "mimeType": "text/plain", "text": "kept"}), 1)
	vs.stop()

	r := in.call(v2026, "save_report", map[string]any{"path": "during", "mimeType": "text/plain", "text": "x"})
	sc := checkFailure(t, r, "unavailable")
	if sc["retrySafe"] != true {
		t.Errorf("unavailable is not retrySafe: %v", sc)
	}
	for _, v := range versions {
		rr := in.rpc(v, "resources/read", map[string]any{"uri": rep["uri"]})
		if rr.Error == nil || rr.Error.Code != -32603 {
			t.Errorf("%s read during outage: %s", v, rr.Body)
		}
		for _, leak := range []string{"faults", vs.addr, "127.0.0.1", "s3", "dial"} {
			if strings.Contains(strings.ToLower(string(rr.Body)), strings.ToLower(leak)) {
				t.Errorf("%s read error leaks %q: %s", v, leak, rr.Body)
			}
		}
	}
	if resp, err := http.Get(in.URL + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz during outage: %v %v", resp, err)
	}
	if resp, err := http.Get(in.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz during outage: %v %v", resp, err)
	}

	vs.start()
	if got := in.read(v2026, rep["uri"].(string)).body(t); string(got) != "kept" {
		t.Errorf("after recovery read %q", got)
	}
	checkSuccess(t, in.call(v2026, "save_report", map[string]any{"path": "after", "mimeType": "text/plain", "text": "x"}), 1)
	if resp, err := http.Get(in.URL + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/readyz after recovery: %v %v", resp, err)
	}
}
