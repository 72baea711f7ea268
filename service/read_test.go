package service

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

func TestTextWindow(t *testing.T) {
	body := "aé日🙂z" // a(0) é(1-2) 日(3-5) 🙂(6-9) z(10)
	for _, tc := range []struct {
		off, length, budget int64
		want                string
		start               int64
		truncated           bool
	}{
		{0, -1, 100, body, 0, false},
		{0, 1, 100, "a", 0, false},
		{2, 3, 100, "é", 1, false},     // starts inside é: moved back; 日 is cut by the end: left out
		{3, 3, 100, "日", 3, false},     // exactly one character
		{4, 1, 100, "日", 3, false},     // inside 日, too short for it: it is held whole
		{6, 1, 100, "🙂", 6, false},     // a window never comes back empty
		{7, -1, 100, "🙂z", 6, false},   // from inside the emoji
		{0, -1, 3, "aé日", 0, true},     // the budget counts characters
		{1, 9, 2, "é日", 1, true},       // cut by the budget before the requested end
		{1, 5, 2, "é日", 1, false},      // the budget ends exactly at the requested end
		{11, -1, 100, "", 11, false},   // at the end
		{10, 100, 100, "z", 10, false}, // a length past the end is fine
	} {
		w, err := textWindow(strings.NewReader(body), int64(len(body)), tc.off, tc.length, tc.budget, unitCost)
		if err != nil {
			t.Fatal(err)
		}
		if string(w.data) != tc.want || w.start != tc.start || w.truncated != tc.truncated || !w.text {
			t.Errorf("textWindow(off %d, length %d, budget %d) = %q at %d, truncated %v; want %q at %d, %v",
				tc.off, tc.length, tc.budget, w.data, w.start, w.truncated, tc.want, tc.start, tc.truncated)
		}
	}
	// Not UTF-8: not text (the caller sends it as base64).
	bad := "ab\xffcd"
	w, _ := textWindow(strings.NewReader(bad), int64(len(bad)), 0, -1, 100, unitCost)
	if w.text {
		t.Errorf("textWindow of invalid UTF-8 is marked text")
	}
}

// TestTextWindowsReassemble: following nextOffset over random text gives
// the body back, window by window, each valid UTF-8 within the budget.
func TestTextWindowsReassemble(t *testing.T) {
	var b strings.Builder
	runes := []rune("aé日🙂\n ")
	for i := 0; i < 5000; i++ {
		b.WriteRune(runes[(i*7+i/3)%len(runes)])
	}
	body := b.String()
	for _, budget := range []int64{1, 2, 7, 64, 1000} {
		var got []byte
		for off := int64(0); off < int64(len(body)); {
			w, err := textWindow(strings.NewReader(body), int64(len(body)), off, -1, budget, unitCost)
			if err != nil {
				t.Fatal(err)
			}
			if w.start != off || !utf8.Valid(w.data) || int64(utf8.RuneCount(w.data)) > budget || len(w.data) == 0 {
				t.Fatalf("budget %d at %d: window at %d, %d bytes, valid %v", budget, off, w.start, len(w.data), utf8.Valid(w.data))
			}
			got = append(got, w.data...)
			off += int64(len(w.data))
		}
		if string(got) != body {
			t.Errorf("budget %d: windows do not reassemble the body", budget)
		}
	}
}

func TestLineWindow(t *testing.T) {
	body := "one\ntwo ✓\nthree\nlast without newline"
	size := int64(len(body))
	for _, tc := range []struct {
		start, count, budget int64
		want                 string
		lines, complete      int64
		truncated            bool
		err                  bool
	}{
		{start: 1, count: 1, budget: 100, want: "one\n", lines: 1, complete: 1},
		{start: 2, count: 2, budget: 100, want: "two ✓\nthree\n", lines: 2, complete: 2},
		{start: 3, count: -1, budget: 100, want: "three\nlast without newline", lines: 2, complete: 1},
		{start: 4, count: 1, budget: 100, want: "last without newline", lines: 1, complete: 0},
		{start: 1, count: -1, budget: 12, want: "one\ntwo ✓\n", lines: 2, complete: 2, truncated: true}, // ends after the last whole line
		{start: 1, count: 3, budget: 12, want: "one\ntwo ✓\n", lines: 2, complete: 2, truncated: true},
		{start: 3, count: 1, budget: 3, want: "thr", lines: 1, complete: 0, truncated: true}, // one line over the budget
		{start: 5, count: 1, budget: 100, err: true},
	} {
		w, err := lineWindow(strings.NewReader(body), size, tc.start, tc.count, tc.budget, unitCost)
		if tc.err {
			if err == nil {
				t.Errorf("lineWindow(start %d) = %q, want an error", tc.start, w.data)
			}
			continue
		}
		if err != nil {
			t.Fatalf("lineWindow(start %d, count %d) = %v", tc.start, tc.count, err)
		}
		if string(w.data) != tc.want || w.lines != tc.lines || w.complete != tc.complete || w.truncated != tc.truncated {
			t.Errorf("lineWindow(start %d, count %d, budget %d) = %q (lines %d, complete %d, truncated %v); want %q (%d, %d, %v)",
				tc.start, tc.count, tc.budget, w.data, w.lines, w.complete, w.truncated, tc.want, tc.lines, tc.complete, tc.truncated)
		}
	}
	// A body ending with "\n" has no line after it.
	if _, err := lineWindow(strings.NewReader("a\nb\n"), 4, 3, 1, 100, unitCost); err == nil {
		t.Error("line 3 of \"a\\nb\\n\" is not past the end")
	}
	// Lines longer than the scanner's buffer are counted right.
	long := strings.Repeat("x", 200<<10) + "\nsecond\n"
	w, err := lineWindow(strings.NewReader(long), int64(len(long)), 2, 1, 100, unitCost)
	if err != nil || string(w.data) != "second\n" || w.start != 200<<10+1 {
		t.Errorf("line after a 200 KiB line: %q at %d, %v", w.data, w.start, err)
	}
}

func TestBinaryWindow(t *testing.T) {
	body := bytes.Repeat([]byte{0, 1, 2, 0xff}, 100)
	w, _ := binaryWindow(bytes.NewReader(body), 400, 10, -1, 30)
	if w.start != 10 || len(w.data) != 30 || !w.truncated || !bytes.Equal(w.data, body[10:40]) {
		t.Errorf("binaryWindow = %d bytes at %d, truncated %v", len(w.data), w.start, w.truncated)
	}
	w, _ = binaryWindow(bytes.NewReader(body), 400, 395, 100, 30)
	if len(w.data) != 5 || w.truncated {
		t.Errorf("binaryWindow at the end = %d bytes, truncated %v", len(w.data), w.truncated)
	}
}

// TestTextCostIsJSONLength: textCost charges each character once for the
// window item plus what encoding/json writes for it.
func TestTextCostIsJSONLength(t *testing.T) {
	for _, r := range []rune{'a', '"', '\\', '\n', '\r', '\t', '\b', '\f', 0, 0x1f, '<', '>', '&', '\u2028', '\u2029', 'é', '日', '🙂', 0x7f} {
		b, _ := json.Marshal(string(r))
		if want := 1 + int64(utf8.RuneCount(b)-2); textCost(r) != want {
			t.Errorf("textCost(%U) = %d, want %d (JSON %s)", r, textCost(r), want, b)
		}
	}
}

// TestReadWindowArguments: each bad window and every URI another tenant
// may not read gets its failure from the service; a good window of a
// text body and of a binary body comes back with its range.
func TestReadWindowArguments(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := t.Context()
	body := "one\ntwo\nthree\n"
	if _, f := e.svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "t", MIMEType: "text/plain", Text: &body}); f != nil {
		t.Fatal(f)
	}
	bin := "AAEC"
	if _, f := e.svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "b", MIMEType: "application/octet-stream", BlobBase64: &bin}); f != nil {
		t.Fatal(f)
	}
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		tenant string
		a      toolapi.ReadArgs
		kind   string
		field  string
	}{
		{alice, toolapi.ReadArgs{URI: "report://alice/t", Offset: n(0), StartLine: n(1)}, KindValidation, "offset"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", Offset: n(-1)}, KindValidation, "offset"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", Length: n(0)}, KindValidation, "length"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", StartLine: n(0)}, KindValidation, "startLine"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", LineCount: n(0)}, KindValidation, "lineCount"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", Offset: n(99)}, KindValidation, "offset"},
		{alice, toolapi.ReadArgs{URI: "report://alice/t", StartLine: n(9)}, KindValidation, "startLine"},
		{alice, toolapi.ReadArgs{URI: "report://alice/b", StartLine: n(1)}, KindValidation, "startLine"},
		{alice, toolapi.ReadArgs{URI: "report:alice/t"}, KindValidation, "uri"},
		{"bob", toolapi.ReadArgs{URI: "report://alice/t"}, KindNotFound, ""},
	} {
		_, f := e.svc.ReadWindow(ctx, tc.tenant, &tc.a, nil)
		if f == nil || f.ErrorKind != tc.kind || tc.field != "" && (len(f.FieldErrors) == 0 || f.FieldErrors[0].Field != tc.field) {
			t.Errorf("%+v as %s: %v, want %s of %q", tc.a, tc.tenant, f, tc.kind, tc.field)
		}
	}
	w, f := e.svc.ReadWindow(ctx, alice, &toolapi.ReadArgs{URI: "report://alice/t", StartLine: n(2), LineCount: n(1)}, nil)
	if f != nil || !w.Text || string(w.Data) != "two\n" || *w.Value.NextLine != 3 || *w.Value.Range.StartLine != 2 {
		t.Fatalf("line window: %+v %v", w, f)
	}
	w, f = e.svc.ReadWindow(ctx, alice, &toolapi.ReadArgs{URI: "report://alice/b", Offset: n(1)}, nil)
	if f != nil || w.Text || w.Value.Encoding != "base64" || !bytes.Equal(w.Data, []byte{1, 2}) || w.Value.NextOffset != nil {
		t.Fatalf("binary window: %+v %v", w, f)
	}
}
