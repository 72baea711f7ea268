package index

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestIndexedBytesBound: what one document brings to the index is at most
// min(body bytes, MaxTextBytes) of text plus MaxTitleBytes of title and
// MaxLabelBytes of labels, whatever the body (text, JSON with escapes and
// long strings, binary), so a tenant's indexed bytes follow its stored
// bytes (docs/decisions.md, "Index bytes").
func TestIndexedBytesBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	alphabet := []string{"a", "é", "東", " ", "\n", "\"", "\\", "\t", "<", "\u2028", "x y"}
	randText := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	rec := &recorder{}
	x := New(rec, Options{MaxTextBytes: 2048})
	for i := range 500 {
		var body []byte
		mt := "text/plain"
		switch i % 3 {
		case 0:
			body = []byte(randText(rng.IntN(5000)))
		case 1:
			mt = "application/json"
			var v []any
			for range rng.IntN(40) {
				v = append(v, randText(rng.IntN(300)), rng.IntN(1000), map[string]any{randText(5): randText(rng.IntN(50))})
			}
			body, _ = json.Marshal(v)
		default:
			mt = "application/octet-stream"
			body = []byte(randText(rng.IntN(3000)))
		}
		text, _ := Extract(mt, body, x.MaxTextBytes())
		if len(text) > len(body) {
			t.Fatalf("Extract(%s) of %d bytes gave %d bytes of text", mt, len(body), len(text))
		}
		doc := &Document{Ref: Ref{Tenant: "t1", Scheme: "report", Path: "p"}, Title: randText(rng.IntN(9000)),
			Labels: []string{randText(rng.IntN(6000)), randText(rng.IntN(6000))}, Text: text, Created: time.Now()}
		if err := x.Put(context.Background(), doc); err != nil {
			t.Fatal(err)
		}
		got := rec.last
		labels := 0
		for _, l := range got.Labels {
			labels += len(l)
			if !utf8.ValidString(l) {
				t.Fatalf("a label cut inside a character")
			}
		}
		if len(got.Text) > min(len(body), x.MaxTextBytes()) || len(got.Title) > MaxTitleBytes || labels > MaxLabelBytes {
			t.Fatalf("put %d bytes of text (body %d), %d of title, %d of labels", len(got.Text), len(body), len(got.Title), labels)
		}
	}
}

// recorder is a Driver that keeps the last document put.
type recorder struct{ last Document }

func (r *recorder) Put(_ context.Context, d *Document) error      { r.last = *d; return nil }
func (r *recorder) Delete(context.Context, Ref) error             { return nil }
func (r *recorder) Walk(context.Context, func(Entry) error) error { return nil }
func (r *recorder) Count(context.Context, string) (int64, error)  { return 0, nil }
func (r *recorder) Close() error                                  { return nil }
func (r *recorder) Search(context.Context, *Plan) ([]Hit, int, bool, error) {
	return nil, 0, false, nil
}
func (r *recorder) Expired(context.Context, time.Time, int) ([]Ref, error) { return nil, nil }
