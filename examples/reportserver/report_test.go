package main

import (
	"bytes"
	"testing"
)

func TestBuildCSV(t *testing.T) {
	a, outA := buildCSV(defaultRows, 1)
	b, _ := buildCSV(defaultRows, 1)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different CSVs")
	}
	c, _ := buildCSV(defaultRows, 2)
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same CSV")
	}
	if n := len(a); n < 1900<<10 || n > 2300<<10 {
		t.Errorf("default report is %d bytes, want about 2 MB", n)
	}
	if got := bytes.Count(a, []byte("\n")); got != defaultRows+1 {
		t.Errorf("%d lines, want %d", got, defaultRows+1)
	}
	sum := 0
	for _, n := range outA.RowsBy {
		sum += n
	}
	if sum != defaultRows {
		t.Errorf("rows by region add up to %d, want %d", sum, defaultRows)
	}
	t.Logf("%d bytes", len(a))
}
