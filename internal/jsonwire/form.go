package jsonwire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// A resources/read answers with the body inside the JSON response, as a
// JSON string ("text") or base64 ("blob"). Encoding it costs more than
// everything else a read does at 64 KiB and up, so the server encodes each
// body once, when it saves it, and keeps that form next to the body in
// backends that can (bbolt and memory); a read then copies it into the
// response.
//
// A stored form is:
//
//	+---------+----------------------+----------------------------------+
//	| version | CRC-32C of member    | member: "text":"…" or "blob":"…" |
//	| 1 byte  | 4 bytes, big-endian  | exactly as the response has it   |
//	+---------+----------------------+----------------------------------+
//
// A read serves the member only when the version is FormVersion and the
// checksum matches (FormMember): a form damaged on disk is never served, the
// read encodes the body instead. Change FormVersion whenever Textual,
// AppendEscaped or the member's layout changes, so that forms stored by an
// older resourced are ignored rather than served stale. (Version 1 forms had
// no checksum; they are ignored.)
const FormVersion = 2

const formHeader = 5 // version byte and checksum

// MaxFormGrowth bounds a stored form to twice the body (plus a little):
// base64 is 4/3 and report text barely grows when escaped, but a body of
// control characters grows sixfold and is not worth the space.
const MaxFormGrowth = 2

// MaxFormBody is the largest body kept with a form: beyond it the copy
// costs more space than a read saves, and body and form together would
// near bbolt's largest value (2 GiB) for the largest maxBytes.
const MaxFormBody = 64 << 20

// ErrFormDamaged reports a stored form whose checksum does not match.
var ErrFormDamaged = errors.New("stored JSON form fails its checksum")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeForm returns the form of body to keep with it, or nil when it
// would be too large.
func EncodeForm(mimeType string, body []byte) []byte {
	if len(body) > MaxFormBody {
		return nil
	}
	text := Textual(mimeType, body)
	n := len(body) + len(body)/3 + 16
	if text {
		n = len(body) + len(body)/16 + 16
	}
	enc := append(make([]byte, 0, n), FormVersion, 0, 0, 0, 0)
	enc = AppendMember(enc, text, body)
	if len(enc) > MaxFormGrowth*len(body)+64 {
		return nil
	}
	binary.BigEndian.PutUint32(enc[1:formHeader], crc32.Checksum(enc[formHeader:], castagnoli))
	return enc
}

// FormMember returns the member a stored form holds, ready to copy into a
// response. It returns nil and no error when there is no form of this
// version (the caller encodes the body), and ErrFormDamaged when the form's
// checksum does not match (the caller encodes the body too, and reports
// it).
func FormMember(encoded []byte) ([]byte, error) {
	if len(encoded) <= formHeader || encoded[0] != FormVersion {
		return nil, nil
	}
	member := encoded[formHeader:]
	if crc32.Checksum(member, castagnoli) != binary.BigEndian.Uint32(encoded[1:formHeader]) {
		return nil, ErrFormDamaged
	}
	return member, nil
}

// FormLen is the length of the member a stored form holds (0 when there is
// none of this version); it does not verify the checksum.
func FormLen(encoded []byte) int {
	if len(encoded) <= formHeader || encoded[0] != FormVersion {
		return 0
	}
	return len(encoded) - formHeader
}

// VerifyForm reports whether encoded, a form stored with body by a save, is
// what a read would serve for it: resourced fsck runs it over every record.
// A form of another version is never served, so it passes.
func VerifyForm(mimeType string, encoded, body []byte) error {
	member, err := FormMember(encoded)
	if err != nil {
		return err
	}
	if member == nil {
		return nil
	}
	if want := AppendMember(nil, Textual(mimeType, body), body); !bytes.Equal(member, want) {
		return fmt.Errorf("the stored %d bytes are not the %s member of the %d-byte body (%d bytes)", len(member), memberName(want), len(body), len(want))
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

// AppendMember appends body as the text member (text: see Textual) or the
// blob member.
func AppendMember(dst []byte, text bool, body []byte) []byte {
	if text {
		dst = append(dst, `"text":`...)
		return AppendString(dst, body)
	}
	dst = append(dst, `"blob":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, body)
	return append(dst, '"')
}

// Textual reports whether a read serves body as text rather than blob: a
// textual media type and valid UTF-8.
func Textual(mimeType string, body []byte) bool {
	return TextType(mimeType) && utf8.Valid(body)
}

// TextType reports whether a body of this media type is served as text
// (when it is valid UTF-8).
func TextType(mimeType string) bool {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return false
	}
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/x-ndjson", "application/csv", "application/sql",
		"application/toml", "application/graphql":
		return true
	}
	return false
}

// AppendTime appends t in UTC as RFC 3339 with nanoseconds, the form of
// every time on resourced's wire.
func AppendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.RFC3339Nano)
}

// FormatTime is AppendTime as a string.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FormUnchecked returns the member of a form FormMember has already
// verified, without verifying it again (a chunked read takes its chunks
// from the same record); nil when there is none of this version.
func FormUnchecked(encoded []byte) []byte {
	if len(encoded) <= formHeader || encoded[0] != FormVersion {
		return nil
	}
	return encoded[formHeader:]
}
