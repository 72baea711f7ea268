package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoadOrCreateHMACKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "auth-hmac.key")

	key, created, err := LoadOrCreateHMACKey(path)
	if err != nil || !created || len(key) < 32 {
		t.Fatalf("LoadOrCreateHMACKey (new) = %d bytes, %v, %v; want >= 32 bytes, true, nil", len(key), created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("key file mode = %04o, want 0600", got)
		}
		di, _ := os.Stat(dir)
		if got := di.Mode().Perm(); got != 0o700 {
			t.Errorf("key dir mode = %04o, want 0700", got)
		}
	}
	raw, _ := os.ReadFile(path)
	if want := base64.StdEncoding.EncodeToString(key) + "\n"; string(raw) != want {
		t.Errorf("key file holds %q, want base64 and a newline", raw)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("key dir holds %d entries, want 1 (no temporary files left)", len(ents))
	}

	again, created, err := LoadOrCreateHMACKey(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("LoadOrCreateHMACKey (existing) = %v, %v; want the same key, false, nil", created, err)
	}
	loaded, err := LoadHMACKey(path)
	if err != nil || !bytes.Equal(loaded, key) {
		t.Fatalf("LoadHMACKey = %v; want the same key", err)
	}
}

func TestLoadOrCreateHMACKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k", "auth-hmac.key")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		keys    [][]byte
		creates int
	)
	for range 16 {
		wg.Go(func() {
			k, created, err := LoadOrCreateHMACKey(path)
			if err != nil {
				t.Errorf("LoadOrCreateHMACKey: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, k)
			if created {
				creates++
			}
		})
	}
	wg.Wait()
	if creates != 1 {
		t.Errorf("%d callers created the key, want 1", creates)
	}
	for _, k := range keys {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("callers got different keys")
		}
	}
}

func TestLoadHMACKeyRefuses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes")
	}
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) + "\n"
	tests := []struct {
		name, path, want string
	}{
		{"world readable", write("open.key", good, 0o644), "chmod 600"},
		{"group readable", write("group.key", good, 0o640), "chmod 600"},
		{"short", write("short.key", base64.StdEncoding.EncodeToString(make([]byte, 16)), 0o600), "at least 32"},
		{"not base64", write("junk.key", "not base64 at all!", 0o600), "not standard base64"},
		{"empty", write("empty.key", "", 0o600), "at least 32"},
		{"directory", dir, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := LoadHMACKey(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadHMACKey(%s) = %v, want error containing %q", tt.name, err, tt.want)
			}
			if _, _, err := LoadOrCreateHMACKey(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadOrCreateHMACKey(%s) = %v, want error containing %q", tt.name, err, tt.want)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "open.key")); string(got) != good {
		t.Error("LoadOrCreateHMACKey replaced a refused key file")
	}
	if _, err := LoadHMACKey(filepath.Join(dir, "missing.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadHMACKey(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestLoadPublicKeys(t *testing.T) {
	k := testKeys()
	dir := t.TempDir()
	write := func(name string, blocks ...*pem.Block) string {
		var buf bytes.Buffer
		for _, b := range blocks {
			pem.Encode(&buf, b)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkixBlock := func(pub any) *pem.Block {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return &pem.Block{Type: "PUBLIC KEY", Bytes: der}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.ec.PublicKey, k.ec)
	if err != nil {
		t.Fatal(err)
	}

	paths := []string{
		write("rsa.pem", pkixBlock(&k.rsa.PublicKey)),
		write("rsa1.pem", &pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)}),
		write("two.pem", pkixBlock(&k.ec.PublicKey), pkixBlock(k.ed.Public())),
		write("cert.pem", &pem.Block{Type: "CERTIFICATE", Bytes: certDER}),
	}
	keys, err := LoadPublicKeys(paths)
	if err != nil {
		t.Fatalf("LoadPublicKeys: %v", err)
	}
	if len(keys) != 5 {
		t.Fatalf("LoadPublicKeys = %d keys, want 5", len(keys))
	}
	if !k.rsa.PublicKey.Equal(keys[0]) || !k.rsa.PublicKey.Equal(keys[1]) || !k.ec.PublicKey.Equal(keys[2]) ||
		!k.ed.Public().(ed25519.PublicKey).Equal(keys[3]) || !k.ec.PublicKey.Equal(keys[4]) {
		t.Errorf("LoadPublicKeys returned other keys: %T %T %T %T %T", keys[0], keys[1], keys[2], keys[3], keys[4])
	}
	// The loaded keys work with NewJWT.
	if _, err := NewJWT(t.Context(), JWTOptions{Algorithms: []string{"RS256", "ES256", "EdDSA"}, Audiences: []string{"a"}, PublicKeys: keys}); err != nil {
		t.Errorf("NewJWT with loaded keys: %v", err)
	}

	privDER, _ := x509.MarshalPKCS8PrivateKey(k.ec)
	bad := []struct {
		name, path, want string
	}{
		{"private key", write("priv.pem", &pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), `"PRIVATE KEY" not supported`},
		{"no PEM", write("empty.pem"), "no PEM block"},
		{"garbage DER", write("junk.pem", &pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")}), "PUBLIC KEY"},
		{"missing file", filepath.Join(dir, "nope.pem"), "no such file"},
	}
	for _, tt := range bad {
		if _, err := LoadPublicKeys([]string{tt.path}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadPublicKeys(%s) = %v, want error containing %q", tt.name, err, tt.want)
		}
	}
	var _ *ecdsa.PublicKey = keys[2].(*ecdsa.PublicKey)
	var _ *rsa.PublicKey = keys[0].(*rsa.PublicKey)
}
