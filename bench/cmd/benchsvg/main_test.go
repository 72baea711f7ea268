package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func results(commit string, rows ...string) string {
	return "# resourced-bench results\ndate:     2026-12-02 10:00:00 UTC\ncommit:   " + commit + " (clean export)\n\n" +
		"| scenario | req/s | p50 | p90 | p99 | max | errors | ceiling req/s | ratio | ceiling p99 | server cores | others' cores | peak RSS |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" + strings.Join(rows, "\n") + "\n"
}

// TestDraw: one bar per run and scenario measured against a ceiling, its
// width the ratio on one scale, rows without a ceiling left out.
func TestDraw(t *testing.T) {
	old, err := parse("old", strings.NewReader(results("f19491b",
		"| read 1KiB c=16 | 24685 | 506µs | 1.26ms | 3.27ms | 11.17ms | 0 | 51178 | 0.482 | 2.02ms | 1.03 | 0.00 | 32 MiB |",
		"| save_report 1KiB c=16 | 4187 | 3.70ms | 5.37ms | 7.39ms | 10.95ms | 0 | – | – | – | 1.18 | 0.00 | 284 MiB |",
		"| read 1KiB c=16 | 24685 | 506µs | 1.26ms | 3.27ms | 11.17ms | 0 | 51178 | 0.482 | 2.02ms | 1.03 | 0.00 | 32 MiB |")))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := parse("new", strings.NewReader(results("abc1234",
		"| read 1KiB c=16 | 30000 | 506µs | 1.26ms | 3.27ms | 11.17ms | 0 | 50000 | 0.600 | 2.02ms | 1.03 | 0.00 | 32 MiB |",
		"| save_report 1KiB c=16 vs write ceiling | 4187 | 3.70ms | 5.37ms | 7.39ms | 10.95ms | 0 | 8000 | 0.523 | – | 1.18 | 0.00 | 284 MiB |")))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := draw(&buf, []*run{old, cur}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rects []struct {
			Width string `xml:"width,attr"`
			Title string `xml:"title"`
		} `xml:"rect"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, &buf)
	}
	widths := map[string]float64{}
	for _, r := range doc.Rects {
		if r.Title != "" {
			w, _ := strconv.ParseFloat(r.Width, 64)
			widths[r.Title] = w
		}
	}
	want := []string{"f19491b (2026-12-02 10:00:00 UTC): 0.482", "abc1234 (2026-12-02 10:00:00 UTC): 0.600", "abc1234 (2026-12-02 10:00:00 UTC): 0.523"}
	if len(widths) != len(want) {
		t.Fatalf("bars %v, want %q", widths, want)
	}
	for _, k := range want {
		if widths[k] == 0 {
			t.Errorf("no bar %q among %v", k, widths)
		}
	}
	if a, b := widths[want[0]], widths[want[1]]; a/b < 0.482/0.6-0.01 || a/b > 0.482/0.6+0.01 {
		t.Errorf("bar widths %v and %v are not in the ratios' proportion", a, b)
	}
	// Runs of one revision share its color, another revision gets another.
	again, err := parse("again", strings.NewReader(results("f19491b",
		"| read 1KiB c=16 | 24685 | 506µs | 1.26ms | 3.27ms | 11.17ms | 0 | 51178 | 0.470 | 2.02ms | 1.03 | 0.00 | 32 MiB |")))
	if err != nil {
		t.Fatal(err)
	}
	var three bytes.Buffer
	if err := draw(&three, []*run{old, cur, again}); err != nil {
		t.Fatal(err)
	}
	fills := map[string]string{}
	for _, line := range strings.Split(three.String(), "\n") {
		if i := strings.Index(line, "<title>"); i >= 0 && strings.HasPrefix(line, "<rect") {
			commit := strings.Fields(line[i+len("<title>"):])[0]
			fill := line[strings.Index(line, `fill="`)+6:]
			fill = fill[:strings.IndexByte(fill, '"')]
			if f, ok := fills[commit]; ok && f != fill {
				t.Errorf("%s drawn in %s and %s", commit, f, fill)
			}
			fills[commit] = fill
		}
	}
	if fills["f19491b"] == "" || fills["f19491b"] == fills["abc1234"] {
		t.Errorf("colors by revision: %v", fills)
	}
	if !strings.Contains(buf.String(), "not measured") {
		t.Error("a scenario one run lacks is not marked as not measured")
	}
	empty, err := parse("empty", strings.NewReader(results("abc1234",
		"| save_report 1KiB c=16 | 4187 | 3.70ms | 5.37ms | 7.39ms | 10.95ms | 0 | – | – | – | 1.18 | 0.00 | 284 MiB |")))
	if err != nil {
		t.Fatal(err)
	}
	if err := draw(io.Discard, []*run{empty}); !errors.Is(err, errNothing) {
		t.Errorf("results without a ratio: %v, want errNothing", err)
	}
	if _, err := parse("x", strings.NewReader("| a | b |\n")); err == nil {
		t.Error("a file without a commit line was taken for a results file")
	}
}
