package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

func TestEncodeForStoreAndVerify(t *testing.T) {
	s, err := New(Options{Store: memstore.New(memstore.Options{}), Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}},
		Auth: headerAuth{}, BaseURL: "http://127.0.0.1", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mime, body, member string
	}{
		{"text/markdown", "# Title\n\"quoted\" <b> & é \u2028", "text"},
		{"application/json", `{"a":[1,2]}`, "text"},
		{"text/plain", "bad \xff utf-8", "blob"},
		{"image/png", "\x89PNG\x00\x01", "blob"},
	} {
		enc := s.encodeForStore(tc.mime, []byte(tc.body))
		if enc == nil || enc[0] != encodedVersion || !bytes.HasPrefix(enc[1:], []byte(`"`+tc.member+`":`)) {
			t.Fatalf("encodeForStore(%s, %q) = %q, want the %s member after version %d", tc.mime, tc.body, enc, tc.member, encodedVersion)
		}
		m := &store.Meta{MIMEType: tc.mime}
		if err := VerifyEncoded(m, enc, []byte(tc.body)); err != nil {
			t.Errorf("VerifyEncoded(its own form of %q) = %v", tc.body, err)
		}
		if err := VerifyEncoded(m, enc, []byte(tc.body+"x")); err == nil || !strings.Contains(err.Error(), tc.member) {
			t.Errorf("VerifyEncoded(a form of another body) = %v, want an error naming the %s member", err, tc.member)
		}
		stale := append([]byte{encodedVersion + 1}, enc[1:]...)
		if err := VerifyEncoded(m, stale, []byte("anything")); err != nil {
			t.Errorf("VerifyEncoded(a form of another version) = %v, want nil: it is never served", err)
		}
	}
	// A body that would grow more than twofold keeps no form.
	if enc := s.encodeForStore("text/plain", bytes.Repeat([]byte{1}, 100)); enc != nil {
		t.Errorf("encodeForStore(control characters) = %d bytes, want none", len(enc))
	}
	// Nor does a body over maxEncodedBody.
	if enc := s.encodeForStore("application/octet-stream", make([]byte, maxEncodedBody+1)); enc != nil {
		t.Errorf("encodeForStore(%d bytes) kept a form", maxEncodedBody+1)
	}
	// A backend that cannot keep one gets none.
	s.store = hiddenViewer{s.store}
	if enc := s.encodeForStore("text/plain", []byte("x")); enc != nil {
		t.Errorf("encodeForStore without an EncodedViewer = %q, want nil", enc)
	}
}
