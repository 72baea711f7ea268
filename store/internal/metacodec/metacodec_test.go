package metacodec

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourced/resourced/store"
)

// golden is the encoding boltstore and s3store wrote before this package
// existed (the metadata of their records, taken from both): stored data
// depends on these bytes staying the same.
const golden = "01069ce2a4899c6eef9dffe8ae12ffdfe6a2e2a01c19746578742f706c61696e3b20636861727365743d7574662d3840626137383136626638663031636665613431343134306465356461653232323362303033363161333936313737613963623431306666363166323030313561640374c3af0164067075626c6963"

func sample() store.Meta {
	return store.Meta{MIMEType: "text/plain; charset=utf-8", Size: 3, SHA256: store.Sum([]byte("abc")),
		Created: time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC), Modified: time.Date(1960, 1, 2, 3, 4, 5, 0, time.UTC),
		Title: "tï", Description: "d", Listed: true, Visibility: store.Public}
}

func TestGolden(t *testing.T) {
	m := sample()
	if got := hex.EncodeToString(Append(nil, &m)); got != golden {
		t.Fatalf("Append = %s\nwant        %s", got, golden)
	}
	withID := hex.EncodeToString(Append(nil, &m, "w-1"))
	if want := golden + "03772d31"; withID != want {
		t.Fatalf("Append with an extra string = %s, want %s", withID, want)
	}
	b, _ := hex.DecodeString(golden)
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got, cmp.AllowUnexported(store.Key{})); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range []store.Meta{{}, sample(), {Expires: time.Unix(0, 0).UTC(), Size: 1 << 40}} {
		var id string
		b := Append(make([]byte, 0, Bound(&m, "id")), &m, "id")
		if len(b) > Bound(&m, "id") {
			t.Errorf("encoding of %d bytes exceeds Bound %d", len(b), Bound(&m, "id"))
		}
		got, err := Decode(b, &id)
		if err != nil || id != "id" {
			t.Fatalf("Decode = %v, extra %q", err, id)
		}
		if diff := cmp.Diff(Normalize(m), got, cmp.AllowUnexported(store.Key{})); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if got.Expires.IsZero() != m.Expires.IsZero() {
			t.Errorf("Expires %v decoded as %v", m.Expires, got.Expires)
		}
	}
}

func TestNormalize(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	in := store.Meta{Created: time.Date(2030, 1, 2, 3, 4, 5, 6_789_123, zone)}
	got := Normalize(in)
	want := time.Date(2030, 1, 2, 2, 4, 5, 6_000_000, time.UTC)
	if got.Created != want || !got.Modified.IsZero() || !got.Expires.IsZero() {
		t.Errorf("Normalize(%v) = %v, %v, %v; want %v and zero times", in.Created, got.Created, got.Modified, got.Expires, want)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	m := sample()
	good := Append(nil, &m, "id")
	neg := m
	neg.Size = -1
	var id string
	for name, b := range map[string][]byte{
		"empty":           {},
		"truncated":       good[:len(good)-1],
		"trailing":        append(append([]byte{}, good...), 0),
		"missing extra":   Append(nil, &m),
		"negative size":   Append(nil, &neg, "id"),
		"string too long": append(append([]byte{}, good[:len(good)-3]...), 0x7f),
	} {
		if _, err := Decode(b, &id); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%s) = %v, want %v", name, err, ErrCorrupt)
		}
	}
}
