package jsonwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendJSONStringMatchesEncodingJSON: the escaper agrees with
// encoding/json on every byte sequence, valid UTF-8 or not.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	samples := []string{"", "plain", "\"\\/", "<>&", "\u2028\u2029", "\x00\x1f\x7f", "é😀日本", strings.Repeat("a<", 5000), "\xff", "a\xe2\x80", "\xe2\x80\xa8\xe2\x80", "\xed\xa0\x80", "\xc0\xaf"}
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		samples = append(samples, string(b)) // invalid UTF-8 too: encoding/json writes \ufffd
	}
	// Mostly plain ASCII with sparse specials, to cross the eight-byte
	// fast skip at every offset.
	specials := []byte{'"', '\\', '<', '>', '&', '\n', 0x01, 0x1f, 0x7f, 0xc3}
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(64))
		for j := range b {
			b[j] = byte(0x20 + rng.IntN(0x5f))
			if rng.IntN(16) == 0 {
				b[j] = specials[rng.IntN(len(specials))]
			}
		}
		samples = append(samples, string(b)) // invalid UTF-8 too: encoding/json writes \ufffd
	}
	// Every lead byte from 0x80 with continuation bytes at the edges of
	// the valid ranges, as the escaper's inline UTF-8 checks see them.
	edges := []byte{0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xa8, 0xa9, 0xbf, 0xc0, 0xff}
	for lead := 0x80; lead <= 0xff; lead++ {
		for _, b1 := range edges {
			for _, b2 := range edges {
				samples = append(samples, string([]byte{'a', byte(lead), b1, b2, 'z'}), string([]byte{byte(lead), b1, b2}), string([]byte{byte(lead), b1}))
			}
		}
	}
	for _, s := range samples {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
		if got := AppendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString([]byte(%q)) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendJSONString: the escaper writes what encoding/json writes, for
// any bytes (go test -fuzz FuzzAppendJSONString ./server).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain <&>", "é日本😀\u2028\u2029", "\xff\xe2\x80", "\xed\xa0\x80\xe0\x9f\xbf", "\x00\x1f\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got := AppendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString([]byte(%q)) = %s, want %s", s, got, want)
		}
	})
}

func TestTextType(t *testing.T) {
	for mt, want := range map[string]bool{
		"text/plain": true, "text/csv; charset=utf-8": true, "application/json": true,
		"application/vnd.api+json": true, "image/svg+xml": true, "application/octet-stream": false,
		"image/png": false, "application/pdf": false, "garbage": false,
	} {
		if got := TextType(mt); got != want {
			t.Errorf("TextType(%q) = %v, want %v", mt, got, want)
		}
	}
}

func TestEncodeFormAndVerify(t *testing.T) {
	for _, tc := range []struct {
		mime, body, member string
	}{
		{"text/markdown", "# Title\n\"quoted\" <b> & é \u2028", "text"},
		{"application/json", `{"a":[1,2]}`, "text"},
		{"text/plain", "bad \xff utf-8", "blob"},
		{"image/png", "\x89PNG\x00\x01", "blob"},
	} {
		enc := EncodeForm(tc.mime, []byte(tc.body))
		member, err := FormMember(enc)
		if err != nil || !bytes.HasPrefix(member, []byte(`"`+tc.member+`":`)) || enc[0] != FormVersion {
			t.Fatalf("EncodeForm(%s, %q) = %q (%v), want the %s member after version %d and a checksum", tc.mime, tc.body, enc, err, tc.member, FormVersion)
		}
		if want := AppendMember(nil, tc.member == "text", []byte(tc.body)); !bytes.Equal(member, want) || FormLen(enc) != len(want) {
			t.Fatalf("member %q, want %q", member, want)
		}
		if err := VerifyForm(tc.mime, enc, []byte(tc.body)); err != nil {
			t.Errorf("VerifyForm(its own form of %q) = %v", tc.body, err)
		}
		if err := VerifyForm(tc.mime, enc, []byte(tc.body+"x")); err == nil || !strings.Contains(err.Error(), tc.member) {
			t.Errorf("VerifyForm(a form of another body) = %v, want an error naming the %s member", err, tc.member)
		}
		stale := append([]byte{FormVersion + 1}, enc[1:]...)
		if err := VerifyForm(tc.mime, stale, []byte("anything")); err != nil {
			t.Errorf("VerifyForm(a form of another version) = %v, want nil: it is never served", err)
		}
		if m, err := FormMember(stale); m != nil || err != nil {
			t.Errorf("FormMember(another version) = %q, %v; want nothing", m, err)
		}
		// One flipped byte anywhere after the version fails the checksum.
		for i := 1; i < len(enc); i++ {
			bad := bytes.Clone(enc)
			bad[i] ^= 0x40
			if m, err := FormMember(bad); !errors.Is(err, ErrFormDamaged) || m != nil {
				t.Fatalf("FormMember(byte %d flipped) = %q, %v; want ErrFormDamaged", i, m, err)
			}
			if err := VerifyForm(tc.mime, bad, []byte(tc.body)); !errors.Is(err, ErrFormDamaged) {
				t.Fatalf("VerifyForm(byte %d flipped) = %v; want ErrFormDamaged", i, err)
			}
		}
	}
	// Version 1 forms (no checksum) are never served.
	if m, err := FormMember([]byte("\x01\"text\":\"x\"")); m != nil || err != nil {
		t.Errorf("FormMember(version 1) = %q, %v", m, err)
	}
	// A body that would grow more than twofold keeps no form.
	if enc := EncodeForm("text/plain", bytes.Repeat([]byte{1}, 100)); enc != nil {
		t.Errorf("EncodeForm(control characters) = %d bytes, want none", len(enc))
	}
	// Nor does a body over MaxFormBody.
	if enc := EncodeForm("application/octet-stream", make([]byte, MaxFormBody+1)); enc != nil {
		t.Errorf("EncodeForm(%d bytes) kept a form", MaxFormBody+1)
	}
}
