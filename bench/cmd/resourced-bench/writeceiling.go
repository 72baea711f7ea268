package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// The write ceiling is the read ceiling's counterpart for saves: a plain
// net/http server in this process that reads each request body and stores
// size bytes of it, with the stored JSON form a save keeps, as a new object
// through boltstore's group commit (store/boltstore/commit.go) in a
// database of its own in dir (on the server's disk: bench/run.sh passes a
// directory beside its data directory), fsynced before it answers with the
// bytes the server answered one save with. No MCP, no JSON-RPC, no
// validation: the most a save of that size can do on this machine's HTTP
// and disk.
//
// The object carries what a save's object carries, so that the commit
// writes as much: an expiry (a report's default retention, 168 h; a save
// adds its expiry-index entry in the same transaction), a title (the
// path's last segment) and a description of the length a save's default
// has.

// reportRetention is the default retention of a report (config's
// KindReport defaults), which gives a save_report its expiry.
const reportRetention = 168 * time.Hour

// startWriteCeiling opens dir/ceiling.db and serves on 127.0.0.1.
func startWriteCeiling(dir string, size int, response []byte, contentType string) (*ceiling, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st, err := boltstore.Open(filepath.Join(dir, "ceiling.db"), boltstore.Options{})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, err
	}
	length := strconv.Itoa(len(response))
	// A new path per save, also when a later run opens the same database.
	prefix := "w/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	var n atomic.Int64
	const mimeType = "text/markdown"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = body[:min(len(body), size)]
		k, err := store.NewKey("ceiling", "report", prefix+strconv.FormatInt(n.Add(1), 10))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		obj := &store.Object{
			Meta: store.Meta{Key: k, MIMEType: mimeType, Created: now, Modified: now, Expires: now.Add(reportRetention),
				Title: k.Path()[strings.LastIndexByte(k.Path(), '/')+1:], Visibility: store.Private,
				Description: fmt.Sprintf("%s, %d bytes, saved %s", mimeType, len(body), now.Format(time.RFC3339))},
			Body:    body,
			Encoded: jsonwire.EncodeForm(mimeType, body),
		}
		cond := store.CreateOnly() // as a save_report at a new path, under a quota as a tenant's
		cond.Quota = store.Quota{Bytes: 1 << 40, Objects: 1 << 30}
		if _, _, err := st.Put(r.Context(), obj, cond); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		hd := w.Header()
		hd["Content-Type"] = []string{contentType}
		hd["Cache-Control"] = []string{"no-cache, no-transform"}
		hd["Content-Length"] = []string{length}
		_, _ = w.Write(response)
	})
	c := &ceiling{
		srv:   &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute},
		url:   "http://" + ln.Addr().String() + "/mcp",
		close: func() { st.Close() },
	}
	go c.srv.Serve(ln)
	return c, nil
}
