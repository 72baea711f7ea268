//go:build linux

package gateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourced/resourced/internal/sandbox"
)

func TestPoolRefusesASandboxItCannotHave(t *testing.T) {
	data := t.TempDir()
	up := stdioUpstream(t, "fs", Shared)
	_, err := NewPool(PoolOptions{Upstreams: []Upstream{up}, landlockABI: func() int { return 0 }})
	if err == nil || !strings.Contains(err.Error(), `upstream "fs": this kernel has no Landlock`) || !strings.Contains(err.Error(), "sandbox: off") {
		t.Errorf("NewPool without Landlock = %v, want a refusal that names sandbox: off", err)
	}
	off := up
	off.Sandbox.Off = true
	p, err := NewPool(PoolOptions{Upstreams: []Upstream{off}, landlockABI: func() int { return 0 }})
	if err != nil {
		t.Fatalf("NewPool without Landlock, sandbox off: %v", err)
	}
	p.Close()

	over := up
	over.Sandbox.AllowPaths = []AllowPath{{Path: filepath.Dir(data), Write: true}}
	_, err = NewPool(PoolOptions{Upstreams: []Upstream{over}, Protected: []sandbox.Protected{{Path: data, What: "the data directory"}}})
	if err == nil || !strings.Contains(err.Error(), "allowPaths "+filepath.Dir(data)+" holds the data directory "+data) {
		t.Errorf("NewPool with allowPaths over the data directory = %v", err)
	}
	if _, err := NewPool(PoolOptions{Upstreams: []Upstream{func() Upstream { u := up; u.Sandbox.User = "no-such-user-here"; return u }()}}); err == nil ||
		!strings.Contains(err.Error(), `user "no-such-user-here"`) {
		t.Errorf("NewPool with an unknown user = %v", err)
	}
}

func TestPoolLogsTheSandboxOfEachUpstream(t *testing.T) {
	logs := newLogRecorder()
	on, off := stdioUpstream(t, "on", Shared), stdioUpstream(t, "off", Shared)
	off.Sandbox.Off = true
	newTestPool(t, logs, PoolOptions{Upstreams: []Upstream{on, off}, SandboxDir: t.TempDir()})
	if got := logs.find("upstream sandbox", map[string]string{"upstream": "on", "sandbox": "on"}); len(got) != 1 || got[0].attrs["landlockABI"] == "" {
		t.Errorf("log of the sandboxed upstream: %+v", got)
	}
	if got := logs.find("upstream sandbox", map[string]string{"upstream": "off", "sandbox": "off"}); len(got) != 1 {
		t.Errorf("log of the unconfined upstream: %+v", got)
	}
}

// TestPoolTenantsHaveTheirOwnHome: each perTenant process has a HOME of
// its own that it can write, and cannot read another tenant's; nor can it
// read the protected data directory beside them.
func TestPoolTenantsHaveTheirOwnHome(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "secret.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := stdioUpstream(t, "fs", PerTenant)
	p := newTestPool(t, nil, PoolOptions{
		Upstreams: []Upstream{up}, SandboxDir: filepath.Join(data, "gateway"),
		Protected: []sandbox.Protected{{Path: data, What: "the data directory"}}, Logger: slog.New(slog.DiscardHandler),
	})
	home := func(tenant string) string {
		for _, kv := range strings.Split(callText(t, session(t, p, "fs", tenant), "env", nil), "\n") {
			if v, ok := strings.CutPrefix(kv, "HOME="); ok {
				return v
			}
		}
		t.Fatalf("tenant %s: no HOME", tenant)
		return ""
	}
	a, b := home("a"), home("b")
	if a == b || a != filepath.Join(data, "gateway", "fs", "tenants", "a", "home") {
		t.Fatalf("HOMEs a %s, b %s", a, b)
	}
	if got := callText(t, session(t, p, "fs", "a"), "write", map[string]any{"path": filepath.Join(a, "state"), "text": "a's"}); got != "written" {
		t.Fatalf("tenant a writing its HOME: %s", got)
	}
	if got := callText(t, session(t, p, "fs", "a"), "read", map[string]any{"path": filepath.Join(a, "state")}); got != "a's" {
		t.Fatalf("tenant a reading its HOME: %s", got)
	}
	for _, path := range []string{filepath.Join(a, "state"), filepath.Join(data, "secret.key")} {
		if got := callText(t, session(t, p, "fs", "b"), "read", map[string]any{"path": path}); !strings.Contains(got, "permission denied") {
			t.Errorf("tenant b reading %s: %q, want permission denied", path, got)
		}
	}
	if got := callText(t, session(t, p, "fs", "b"), "write", map[string]any{"path": filepath.Join(data, "planted")}); !strings.Contains(got, "permission denied") {
		t.Errorf("tenant b writing into the data directory: %q, want permission denied", got)
	}
}
