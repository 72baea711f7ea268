package boltstore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/internal/metacodec"
)

func TestRecordRoundTrip(t *testing.T) {
	body := []byte("hello\x00\xff")
	tests := []store.Meta{
		{},
		{
			MIMEType: "text/plain; charset=utf-8", Size: int64(len(body)), SHA256: store.Sum(body),
			Created:  time.Date(2030, 1, 2, 3, 4, 5, 6_789_000, time.UTC),
			Modified: time.Date(1960, 1, 2, 3, 4, 5, 6_000_000, time.UTC), // before 1970
			Expires:  time.Unix(0, 0).UTC(),                               // the Unix epoch is not "never"
			Title:    "t\xff\x00itle", Description: "ü", Listed: true, Visibility: store.Public,
		},
	}
	for _, tc := range []struct {
		m       store.Meta
		encoded []byte
	}{{tests[0], nil}, {tests[1], nil}, {tests[0], []byte(`"text":""`)}, {tests[1], []byte("\x00encoded\xff")}} {
		m := tc.m
		b := body
		if m.Size == 0 {
			b = nil
		}
		rec := encodeRecord(&m, tc.encoded, b)
		wantVersion := byte(recordV1)
		if tc.encoded != nil {
			wantVersion = recordV2
		}
		if rec[0] != wantVersion {
			t.Errorf("record of %d encoded bytes has version %d, want %d", len(tc.encoded), rec[0], wantVersion)
		}
		got, err := decodeMeta(rec)
		if err != nil {
			t.Fatalf("decodeMeta(encodeRecord(%+v)) = %v", m, err)
		}
		if diff := cmp.Diff(metacodec.Normalize(m), got, cmp.AllowUnexported(store.Key{})); diff != "" {
			t.Errorf("metadata round trip (-want +got):\n%s", diff)
		}
		if got.Expires.IsZero() != m.Expires.IsZero() {
			t.Errorf("Expires %v decoded as %v", m.Expires, got.Expires)
		}
		r, err := splitRecord(rec)
		if err != nil || string(r.body) != string(b) || string(r.encoded) != string(tc.encoded) {
			t.Errorf("splitRecord = body %q, encoded %q, %v; want %q, %q", r.body, r.encoded, err, b, tc.encoded)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	m := store.Meta{MIMEType: "text/plain", Size: 3, SHA256: store.Sum([]byte("abc")), Title: "x"}
	good := encodeRecord(&m, nil, []byte("abc"))
	v2 := encodeRecord(&m, []byte("E"), []byte("abc"))
	metaEnd := 2 + int(v2[1]) // version, one-byte metadata length, metadata
	tests := map[string][]byte{
		"empty":                {},
		"unknown version":      append([]byte{4}, good[1:]...),
		"v1 read as v2":        append([]byte{recordV2}, good[1:]...),
		"v2 without encoded":   append(append(append([]byte{}, v2[:metaEnd]...), 0), "abc"...),
		"v2 encoded too long":  append(append(append([]byte{}, v2[:metaEnd]...), 9, 'E'), "abc"...),
		"v2 truncated encoded": v2[:metaEnd],
		"truncated header":     good[:1],
		"length too large":     {1, 0x7f, 0},
		"truncated meta":       append([]byte{1, byte(good[1] - 1)}, good[2:good[1]+1]...),
		"size mismatch":        good[:len(good)-1],
	}
	for name, v := range tests {
		if _, err := decodeMeta(v); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeMeta(%s) = %v, want %v", name, err, errCorrupt)
		}
	}
}
