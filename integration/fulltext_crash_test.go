package integration

import (
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var indexCrashRounds = flag.Int("index-crash-rounds", 8, "kill -9 rounds of TestIndexCrashSafety")

// TestIndexCrashSafety: writers save text reports, each with a word of its
// own, through the real binary (bbolt and the embedded bleve index) while
// the test kill -9s it at random moments. Afterwards every acknowledged
// save reads back and is found by its word (a save is searchable when its
// result arrives), and, with no reindex, fsck calls the index consistent:
// a save a kill cut between the store's commit and the index's update
// (never acknowledged) was brought into the index by the next start, from
// the pending record (index.Pending). Every stored object is then found
// by its word.
func TestIndexCrashSafety(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	in := startServer(t, "")
	in.stop()
	in.listen = addr
	in.start()

	type acked struct{ uri, word string }
	url, token := in.URL, in.Token
	var (
		mu       sync.Mutex
		acks     []acked
		attempts atomic.Int64
		tried    [3]atomic.Int64 // paths each writer tried: 0 to tried-1
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				word := fmt.Sprintf("crashword%dx%d", w, n)
				args := map[string]any{"path": fmt.Sprintf("crash/w%d/%06d", w, n), "mimeType": "text/plain",
					"text": strings.Repeat("filler text of the report\n", 20+mrand.IntN(200)) + word + "\n"}
				attempts.Add(1)
				tried[w].Store(int64(n + 1))
				res, ok := saveQuietly(url, token, args)
				if !ok {
					time.Sleep(5 * time.Millisecond) // the server is down; try the next one
					continue
				}
				if res.uri != "" {
					mu.Lock()
					acks = append(acks, acked{res.uri, word})
					mu.Unlock()
				}
			}
		}()
	}
	for range *indexCrashRounds {
		time.Sleep(time.Duration(50+mrand.IntN(200)) * time.Millisecond)
		in.kill()
		in.start()
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d rounds of kill -9, %d save attempts, %d acknowledged", *indexCrashRounds, attempts.Load(), len(acks))
	if len(acks) < *indexCrashRounds {
		t.Fatalf("only %d saves were acknowledged: the test did not exercise the server", len(acks))
	}

	searchAll := func(when string) {
		t.Helper()
		lost := 0
		for _, a := range acks {
			if r := in.rpc(v2025, "resources/read", map[string]any{"uri": a.uri}); r.Error != nil {
				lost++
				t.Errorf("%s: acknowledged %s is gone: %s", when, a.uri, r.Body)
				continue
			}
			if got := in.searchHits(t, map[string]any{"query": a.word}); !slices.Equal(got, []string{a.uri}) {
				lost++
				t.Errorf("%s: searching %s = %v, want %s", when, a.word, got, a.uri)
			}
		}
		if lost > 0 {
			t.Fatalf("%s: %d of %d acknowledged saves lost or not found", when, lost, len(acks))
		}
	}
	searchAll("after the kills")
	in.stop()

	// No reindex: the starts after the kills repaired the index.
	if out, ok := in.command(t, "fsck"); !ok || !strings.Contains(out, "search index") || !strings.Contains(out, ": consistent (") {
		t.Fatalf("fsck after %d kills and restarts, without reindex:\n%s", *indexCrashRounds, out)
	}
	in.start()
	// Every stored object, acknowledged or not, is found by its word.
	tenant := strings.Split(acks[0].uri, "/")[2]
	stored := 0
	for w := range 3 {
		for n := range int(tried[w].Load()) {
			uri := fmt.Sprintf("report://%s/crash/w%d/%06d", tenant, w, n)
			if r := in.rpc(v2025, "resources/read", map[string]any{"uri": uri}); r.Error != nil {
				continue // never stored
			}
			stored++
			word := fmt.Sprintf("crashword%dx%d", w, n)
			if got := in.searchHits(t, map[string]any{"query": word}); !slices.Equal(got, []string{uri}) {
				t.Errorf("stored %s: searching %s = %v", uri, word, got)
			}
		}
	}
	t.Logf("%d stored objects found by their words", stored)
	searchAll("after the restart")
}
