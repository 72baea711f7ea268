package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// prepareBolt is -prepare with -prepare-bbolt: it stores the reports of
// indexes [from, to) straight into the bbolt database of a stopped server
// (<dir>/resourced.db, created when missing) through boltstore's Put and
// its group commit, with c writers, instead of through the server's MCP
// endpoint: what a save stores (-op search: each report with its words,
// searchWords), at the store's rate. The search index is then built in
// bulk from it by `resourced reindex --workers N` (bench/README.md): a
// server preparing 100 000 documents one save at a time takes hours on a
// loaded machine; the documents searched are the same.
func prepareBolt(dir, tenant, scheme, prefix, mimeType string, text []byte, withWords bool, from, to, c int, stderr io.Writer) (*PrepareResult, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st, err := boltstore.Open(filepath.Join(dir, "resourced.db"), boltstore.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("-prepare-bbolt: %w (is a server running on %s? stop it)", err, dir)
	}
	defer st.Close()
	ctx := context.Background()
	p, first := prepareEach(from, to, c, "stored", stderr, func(_ int, i int64) error {
		body := text
		if withWords {
			body = append(searchWords(i), text...)
		}
		obj, err := benchObject(tenant, scheme, prefix, mimeType, i, body)
		if err == nil {
			_, _, err = st.Put(ctx, obj, store.Cond{})
		}
		return err
	})
	fmt.Fprintf(stderr, "stored %d reports through boltstore in %.1fs (%.0f/s, %d errors)\n", p.Saved, p.Seconds, p.PerSecond, p.Errors)
	if p.Errors > 0 {
		return p, fmt.Errorf("-prepare-bbolt: %d puts failed, first: %v", p.Errors, first)
	}
	return p, nil
}

// benchObject is report i as a save_report of the bench's arguments
// stores it: the path's last segment as title, the server's default
// description, private, unlisted, no expiry, and the stored JSON form.
func benchObject(tenant, scheme, prefix, mimeType string, i int64, body []byte) (*store.Object, error) {
	name := strconv.FormatInt(i, 10)
	k, err := store.NewKey(tenant, scheme, prefix+"/"+name)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &store.Object{
		Meta: store.Meta{Key: k, MIMEType: mimeType, Created: now, Modified: now, Title: name, Visibility: store.Private,
			Description: fmt.Sprintf("%s, %d bytes, saved %s", mimeType, len(body), now.Format(time.RFC3339))},
		Body:    body,
		Encoded: jsonwire.EncodeForm(mimeType, body),
	}, nil
}
