package integration

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var crashRounds = flag.Int("crash-rounds", 20, "kill -9 rounds of TestCrashSafety (CI: 20; try 200 locally)")

// ack is one save the server acknowledged.
type ack struct{ uri, sha string }

// TestCrashSafety: writers save reports through the real binary while the
// test kill -9s it at random moments; every acknowledged save must read
// back byte-identical afterwards and the bbolt file must pass its check.
func TestCrashSafety(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// The store's crash safety alone: a kill between a commit and its
	// index update leaves the index to reindex (TestIndexCrashSafety).
	in := startServer(t, "index:\n  backend: off\n")
	in.stop()
	in.listen = addr
	in.start()

	// The writers run while the main goroutine restarts the process on the
	// same address: they use copies, never the instance itself.
	url, token := in.URL, in.Token
	const writers = 4
	var (
		mu       sync.Mutex
		acks     []ack
		attempts atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				body := make([]byte, 512+mrand.IntN(8<<10))
				rand.Read(body)
				args := map[string]any{"path": fmt.Sprintf("crash/w%d/%06d", w, n), "mimeType": "application/octet-stream",
					"blobBase64": base64.StdEncoding.EncodeToString(body)}
				attempts.Add(1)
				res, ok := saveQuietly(url, token, args)
				if !ok {
					time.Sleep(5 * time.Millisecond) // the server is down; try the next one
					continue
				}
				if res.uri != "" {
					mu.Lock()
					acks = append(acks, ack{res.uri, sum(body)})
					mu.Unlock()
				}
			}
		}()
	}
	for round := 0; round < *crashRounds; round++ {
		time.Sleep(time.Duration(20+mrand.IntN(150)) * time.Millisecond)
		in.kill()
		in.start()
	}
	stop.Store(true)
	wg.Wait()
	in.stop()

	out, err := exec.Command(binary, "fsck", "--config", in.config, "--data-dir", in.dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("resourced fsck after %d kills: %v\n%s", *crashRounds, err, out)
	}
	in.start()
	lost := 0
	for _, a := range acks {
		r := in.rpc(v2026, "resources/read", map[string]any{"uri": a.uri})
		if r.Error != nil {
			lost++
			t.Errorf("acknowledged %s is gone: %s", a.uri, r.Body)
			continue
		}
		var rr readResult
		if err := jsonUnmarshal(r.Result, &rr); err != nil || len(rr.Contents) != 1 || sum(rr.body(t)) != a.sha {
			lost++
			t.Errorf("acknowledged %s reads back different", a.uri)
		}
	}
	t.Logf("crash safety: %d rounds of kill -9, %d save attempts, %d acknowledged, %d lost", *crashRounds, attempts.Load(), len(acks), lost)
	if len(acks) < *crashRounds {
		t.Errorf("only %d saves were acknowledged in %d rounds: the test did not exercise the server", len(acks), *crashRounds)
	}
}

type saveOutcome struct{ uri string }

// saveQuietly posts a save_report and reports whether an HTTP answer came
// back; uri is set only for a successful (acknowledged) save. Transport
// errors are expected while the server is being killed.
func saveQuietly(url, token string, args map[string]any) (saveOutcome, bool) {
	body, _ := jsonMarshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "save_report", "arguments": args}})
	resp, err := postRaw(url, token, body)
	if err != nil {
		return saveOutcome{}, false
	}
	var env struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				URI string `json:"uri"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if jsonUnmarshal(resp, &env) != nil || env.Result.IsError {
		return saveOutcome{}, true
	}
	return saveOutcome{uri: env.Result.StructuredContent.URI}, true
}
