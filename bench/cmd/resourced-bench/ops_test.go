package main

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestListOpFullPages: every prefix -op list asks for matches at least 100
// of the keys prefix/0..keys-1, so each page it measures is a full one.
func TestListOpFullPages(t *testing.T) {
	m, err := newMCPRequest(v2026, "")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"prefix":"bench/scale/([0-9]*)"`)
	for _, keys := range []int{10_000, 100_000, 1_000_000} {
		o := &listOp{m: m, prefix: "bench/scale", keys: keys}
		w := newWorkers(1)[0]
		for range 2000 {
			req, _, _ := o.next(w, nil)
			sub := re.FindSubmatch(req)
			if sub == nil {
				t.Fatalf("keys %d: no prefix in %s", keys, req)
			}
			// prefix/<s> matches s00..s99, all below keys when s*100+99 is.
			s, err := strconv.Atoi(string(sub[1]))
			if err != nil || s < 1 || s*100+99 >= keys {
				t.Fatalf("keys %d: prefix stem %q does not match 100 keys", keys, sub[1])
			}
		}
	}
}

// TestPrepareS3Flags: -prepare-s3 without what it needs is refused with a
// message naming it, before anything is stored.
func TestPrepareS3Flags(t *testing.T) {
	for _, args := range [][]string{
		{"-op", "list", "-prepare-s3", "http://127.0.0.1:1"},
		{"-op", "list", "-prepare", "10", "-prepare-s3", "http://127.0.0.1:1"},
		{"-op", "search", "-prepare", "10", "-s3-bucket", "b", "-prepare-s3", "http://127.0.0.1:1"},
	} {
		var stderr strings.Builder
		if _, err := parseFlags(args, &stderr); err == nil || !strings.Contains(err.Error(), "-prepare-s3 needs") {
			t.Errorf("%q: err %v, want -prepare-s3 needs ...", args, err)
		}
	}
	if _, err := parseFlags([]string{"-op", "list", "-prepare", "10", "-s3-bucket", "b", "-prepare-s3", "http://127.0.0.1:1"}, io.Discard); err != nil {
		t.Errorf("a complete -prepare-s3: %v", err)
	}
}
