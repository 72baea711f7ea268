package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeRefusesDamagedDatabase: the reproduction. A bbolt file
// written by resourced (saves with a retention, so the expiry index has
// pages), with 16 bytes XORed at offset 8192 of a copy, made fsck say
// "damaged" while serve started and later panicked in bbolt. Now serve
// exits non-zero at once with a message that names the file, fsck and the
// README's restore steps, and the healthy file still serves.
func TestServeRefusesDamagedDatabase(t *testing.T) {
	in := startServer(t, "budgets: {tenantSaveRate: -1}\n") // 300 saves as fast as they go
	var wg sync.WaitGroup
	var mu sync.Mutex
	var uri string
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 300; i += 8 {
				r := in.call(v2026, "save_report", map[string]any{"path": fmt.Sprintf("d/%03d", i), "mimeType": "text/plain", "text": fmt.Sprint("body ", i), "retention": "P7D"})
				if i == 0 {
					mu.Lock()
					uri = checkSuccess(t, r, 1)["uri"].(string)
					mu.Unlock()
				} else if r.IsError {
					t.Errorf("save %d: %+v", i, r)
				}
			}
		}()
	}
	wg.Wait()
	in.stop()

	db := filepath.Join(in.dataDir, "resourced.db")
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	for i := 8192; i < 8192+16; i++ {
		bad[i] ^= 0xA5
	}
	if err := os.WriteFile(db, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "RESOURCED_CONFIG=", "RESOURCED_LISTEN=", "RESOURCED_DATA_DIR=", "RESOURCED_BACKEND=")

	fsck := exec.Command(binary, "fsck", "--config", in.config, "--data-dir", in.dataDir)
	fsck.Env = env
	if out, err := fsck.CombinedOutput(); err == nil || !strings.Contains(string(out), "damaged") {
		t.Fatalf("fsck of the damaged copy: %v\n%s\n(want a non-zero exit that says damaged)", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	serve := exec.CommandContext(ctx, binary, "serve", "--config", in.config, "--listen", "127.0.0.1:0", "--data-dir", in.dataDir)
	serve.Env = env
	out, err := serve.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("serve on a damaged file still ran after 30s:\n%s", out)
	}
	if err == nil || serve.ProcessState.ExitCode() == 0 {
		t.Fatalf("serve on a damaged file: exit %v, want non-zero\n%s", err, out)
	}
	for _, want := range []string{
		"the database file " + db + " is damaged",
		"resourced fsck --data-dir " + in.dataDir,
		`"Backup and restore"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("serve output does not contain %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"msg":"listening"`) {
		t.Errorf("serve listened on a damaged file:\n%s", out)
	}

	// Restored (here: the healthy original put back), it serves again.
	if err := os.WriteFile(db, good, 0o600); err != nil {
		t.Fatal(err)
	}
	in.start()
	if got := in.read(v2026, uri).body(t); string(got) != "body 0" {
		t.Errorf("read %s after the restore = %q, want %q", uri, got, "body 0")
	}
}
