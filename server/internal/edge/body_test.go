package edge

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// replay is a request body that can be read again.
type replay struct{ bytes.Reader }

func (*replay) Close() error { return nil }

// TestReadBody: ReadBody reads what io.ReadAll under http.MaxBytesReader
// reads, with the same errors, and a body that announces its length in one
// allocation besides the limit's reader.
func TestReadBody(t *testing.T) {
	save := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"text":"` + strings.Repeat("x", 1300) + `"}}}`
	for _, tc := range []struct {
		name  string
		body  string
		cl    int64
		limit int64
	}{
		{"announced", save, int64(len(save)), 1 << 20},
		{"unannounced", save, -1, 1 << 20},
		{"empty", "", 0, 1 << 20},
		{"shorter than announced", save[:100], int64(len(save)), 1 << 20},
		{"longer than announced", save, 100, 1 << 20},
		{"over the limit", save, int64(len(save)), 1000},
		{"over the limit, unannounced", save, -1, 1000},
		{"over the prealloc", strings.Repeat("y", BodyPrealloc+10), BodyPrealloc + 10, 1 << 20},
	} {
		req := func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(tc.body))
			r.ContentLength = tc.cl
			return r
		}
		got, err := ReadBody(req(), tc.limit)
		want, werr := io.ReadAll(http.MaxBytesReader(nil, req().Body, tc.limit))
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("%s: ReadBody = %d bytes, %v; io.ReadAll = %d bytes, %v", tc.name, len(got), err, len(want), werr)
		}
	}
	if raceEnabled {
		return
	}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	r.ContentLength = int64(len(save))
	rb, saveBytes := &replay{}, []byte(save)
	if n := testing.AllocsPerRun(100, func() {
		rb.Reset(saveBytes)
		r.Body = rb
		if b, err := ReadBody(r, 1<<20); err != nil || len(b) != len(save) {
			t.Fatal(len(b), err)
		}
	}); n > 2 {
		t.Errorf("reading a 1.4 KB body that announces its length: %v allocations, want 2 (the buffer, the limit's reader)", n)
	}
}
