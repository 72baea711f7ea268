package bleveindex

import (
	"testing"

	"github.com/blevesearch/bleve/v2/document"
)

// TestBatchLen: a batch stops at maxBatchBytes of text (scorch analyzes a
// batch in memory at once), takes a larger write alone, and stops at
// maxBatch writes.
func TestBatchLen(t *testing.T) {
	q := func(n, size int) []*write {
		ws := make([]*write, n)
		for i := range ws {
			ws[i] = &write{size: size}
		}
		return ws
	}
	for _, c := range []struct {
		q    []*write
		want int
	}{
		{nil, 0},
		{q(64, 1<<20), maxBatchBytes >> 20},
		{q(3, maxBatchBytes+1), 1},
		{q(maxBatch+5, 10), maxBatch},
		{append(q(1, 100), q(2, maxBatchBytes)...), 1},
	} {
		if got := batchLen(c.q); got != c.want {
			t.Errorf("batchLen of %d writes = %d, want %d", len(c.q), got, c.want)
		}
	}
}

// TestNoAllField: documents carry no composite _all field (no query
// names it; scorch would build it for every document).
func TestNoAllField(t *testing.T) {
	m, err := newMapping()
	if err != nil {
		t.Fatal(err)
	}
	doc := document.NewDocument("report://acme/a")
	if err := m.MapDocument(doc, map[string]any{"tenant": "acme", "text": "some words"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.CompositeFields {
		t.Errorf("composite field %q built", f.Name())
	}
}
