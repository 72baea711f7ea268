package server

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/resourced/resourced/store"
)

// A resources/read answers with the body inside the JSON response, as a
// JSON string ("text") or base64 ("blob"). Encoding it costs more than
// everything else a read does at 64 KiB and up, so the server encodes each
// body once, when it saves it, and keeps that form next to the body in
// backends that can (store.EncodedViewer: bbolt and memory); a read then
// copies it into the response. docs/decisions.md says what it costs.
//
// The stored form is encodedVersion, then the member exactly as the
// response carries it: "text":"…" or "blob":"…". A read uses it only when
// its first byte is encodedVersion: change the version whenever
// textual, appendEscaped or the member's layout changes, and forms stored
// by an older resourced are ignored (the read encodes the body instead)
// rather than served stale.
const encodedVersion = 1

// maxEncodedGrowth bounds the stored form to twice the body (plus a
// little): base64 is 4/3 and report text barely grows when escaped, but a
// body of control characters grows sixfold, and is not worth the space.
const maxEncodedGrowth = 2

// maxEncodedBody is the largest body kept with an encoded form: beyond it
// the copy costs more space than a read saves, and body and form together
// would near bbolt's largest value (2 GiB) for the largest maxBytes.
const maxEncodedBody = 64 << 20

// encodeForStore returns the form of body to keep with it, or nil when the
// backend cannot keep one or it would be too large.
func (s *Server) encodeForStore(mimeType string, body []byte) []byte {
	if _, ok := s.store.(store.EncodedViewer); !ok || len(body) > maxEncodedBody {
		return nil
	}
	text := textual(mimeType, body)
	n := len(body) + len(body)/3 + 16
	if text {
		n = len(body) + len(body)/16 + 16
	}
	enc := appendMember(append(make([]byte, 0, n), encodedVersion), text, body)
	if len(enc) > maxEncodedGrowth*len(body)+64 {
		return nil
	}
	return enc
}

// VerifyEncoded reports whether encoded, a form stored with body by a
// save, is what a read would serve for it: resourced fsck runs it over
// every record. A form of another encoding version is never served, so it
// passes.
func VerifyEncoded(m *store.Meta, encoded, body []byte) error {
	if !usableEncoded(encoded) {
		return nil
	}
	if want := appendMember(nil, textual(m.MIMEType, body), body); !bytes.Equal(encoded[1:], want) {
		return fmt.Errorf("the stored %d bytes are not the %s member of the %d-byte body (%d bytes)", len(encoded)-1, memberName(want), len(body), len(want))
	}
	return nil
}

// memberName is "text" or "blob", the member a form holds.
func memberName(member []byte) string {
	if bytes.HasPrefix(member, []byte(`"text"`)) {
		return "text"
	}
	return "blob"
}

// usableEncoded reports whether encoded is a stored form this version of
// the server wrote.
func usableEncoded(encoded []byte) bool {
	return len(encoded) > 1 && encoded[0] == encodedVersion
}

// appendContents appends the text or blob member of a read's contents: the
// stored form when it is usable, else body encoded now.
func appendContents(dst []byte, mimeType string, encoded, body []byte) []byte {
	if usableEncoded(encoded) {
		return append(dst, encoded[1:]...)
	}
	return appendMember(dst, textual(mimeType, body), body)
}

// appendMember appends body as the text member (text: see textual) or
// the blob member.
func appendMember(dst []byte, text bool, body []byte) []byte {
	if text {
		dst = append(dst, `"text":`...)
		return appendJSONString(dst, body)
	}
	dst = append(dst, `"blob":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, body)
	return append(dst, '"')
}

// textual reports whether a read serves body as text rather than blob.
func textual(mimeType string, body []byte) bool {
	return isTextual(mimeType) && utf8.Valid(body)
}

// appendTime appends t as formatTime formats it.
func appendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.RFC3339Nano)
}
