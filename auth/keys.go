package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// hmacKeyBytes is the size of a key created by LoadOrCreateHMACKey.
const hmacKeyBytes = 32

// maxKeyFileBytes bounds what is read from a key file.
const maxKeyFileBytes = 64 << 10

// LoadOrCreateHMACKey returns the HMAC key in the file at path, creating the
// file (mode 0600, its directory 0700) with 32 random bytes when it does not
// exist. The file holds the key in standard base64 and a newline. Creation
// is atomic and exclusive: when two processes race, both end up with the key
// of whichever created the file first, and created is true for that one only.
// An existing file must not be readable by group or others and must hold at
// least 32 bytes.
func LoadOrCreateHMACKey(path string) (key []byte, created bool, err error) {
	key, err = LoadHMACKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, hmacKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("auth: generating HMAC key: %w", err)
	}
	created, err = createExclusive(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"))
	if err != nil {
		return nil, false, err
	}
	if !created { // another process won the race; use its key
		key, err = LoadHMACKey(path)
		return key, false, err
	}
	return key, true, nil
}

// createExclusive writes data to path only if path does not exist. The data
// is written and synced to a private temporary file first and then linked
// into place, so a concurrent reader never sees a partial key. It reports
// false, nil when path already exists.
func createExclusive(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("auth: creating key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*") // O_EXCL, mode 0600
	if err != nil {
		return false, fmt.Errorf("auth: creating key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return false, fmt.Errorf("auth: creating key file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("auth: writing key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("auth: writing key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("auth: writing key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		// No hard links on this file system: create path itself with
		// O_EXCL. A racing reader may then briefly see a short file.
		return writeExclusive(path, data)
	}
	if d, err := os.Open(dir); err == nil { // persist the new directory entry
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}

func writeExclusive(path string, data []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("auth: creating key file: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return false, fmt.Errorf("auth: writing key file: %w", err)
	}
	return true, nil
}

// LoadHMACKey returns the HMAC key in the file at path (standard base64,
// surrounding whitespace ignored). It refuses a file readable by group or
// others and a key shorter than 32 bytes. A missing file yields an error
// for which errors.Is(err, fs.ErrNotExist) is true.
func LoadHMACKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: reading HMAC key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: reading HMAC key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("auth: HMAC key %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("auth: HMAC key %s has mode %04o, readable by others; run chmod 600 %s", path, perm, path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: reading HMAC key: %w", err)
	}
	if len(raw) > maxKeyFileBytes {
		return nil, fmt.Errorf("auth: HMAC key %s is larger than %d bytes", path, maxKeyFileBytes)
	}
	key, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw)))
	if err != nil {
		return nil, fmt.Errorf("auth: HMAC key %s is not standard base64", path)
	}
	if len(key) < MinHMACKeyBytes {
		return nil, fmt.Errorf("auth: HMAC key %s holds %d bytes, want at least %d", path, len(key), MinHMACKeyBytes)
	}
	return key, nil
}

// LoadPublicKeys reads PEM files holding public keys ("PUBLIC KEY" PKIX,
// "RSA PUBLIC KEY" PKCS #1) or certificates ("CERTIFICATE"), several blocks
// per file allowed. Only RSA, ECDSA and Ed25519 keys are accepted. Private
// keys are refused.
func LoadPublicKeys(paths []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("auth: reading public key: %w", err)
		}
		n := 0
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				break
			}
			n++
			k, err := parsePublicKeyBlock(b)
			if err != nil {
				return nil, fmt.Errorf("auth: %s: PEM block %d: %w", path, n, err)
			}
			keys = append(keys, k)
		}
		if n == 0 {
			return nil, fmt.Errorf("auth: %s: no PEM block found", path)
		}
	}
	return keys, nil
}

func parsePublicKeyBlock(b *pem.Block) (crypto.PublicKey, error) {
	var k any
	var err error
	switch b.Type {
	case "PUBLIC KEY":
		k, err = x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		k, err = x509.ParsePKCS1PublicKey(b.Bytes)
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(b.Bytes); err == nil {
			k = c.PublicKey
		}
	default:
		return nil, fmt.Errorf("type %q not supported (want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)", b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Type, err)
	}
	switch k.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("%s: key type %T not supported", b.Type, k)
}
