package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

// prepareS3 is -prepare with -prepare-s3: it stores the reports of indexes
// [from, to) straight through the s3store driver resourced serves from
// (the portable store's Put, create-or-replace under a tenant quota, so the
// usage object and the public index are kept as a save keeps them), with c
// writers, instead of through the server's MCP endpoint. The metadata is a
// save_report's with the bench's arguments: media type, the path's last
// segment as title, the server's default description, private, unlisted,
// no expiry. It is a way to reach a million objects in minutes; what it
// measures is the store's write rate, not the server's.
func prepareS3(d *s3Direct, tenant, scheme, prefix, mimeType string, body []byte, from, to, c int, stderr io.Writer) (*PrepareResult, error) {
	client, err := d.client()
	if err != nil {
		return nil, err
	}
	st, err := s3store.Open(client, s3store.Options{Bucket: d.bucket, Prefix: d.prefix})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Ping(ctx); err != nil {
		return nil, fmt.Errorf("-prepare-s3: %w", err)
	}
	encoded := jsonwire.EncodeForm(mimeType, body)
	var next, saved, failed atomic.Int64
	next.Store(int64(from))
	var firstErr atomic.Value
	start := time.Now()
	done := progress(stderr, "stored", to-from, &saved, start)
	cond := store.Cond{Quota: store.Quota{Bytes: 1 << 50, Objects: 1 << 40}} // overwrite: true, under a quota as a tenant's
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(to) || failed.Load() > 100 {
					return
				}
				name := strconv.FormatInt(i, 10)
				k, err := store.NewKey(tenant, scheme, prefix+"/"+name)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				now := time.Now().UTC().Truncate(time.Millisecond)
				obj := &store.Object{
					Meta: store.Meta{Key: k, MIMEType: mimeType, Created: now, Modified: now, Title: name, Visibility: store.Private,
						Description: fmt.Sprintf("%s, %d bytes, saved %s", mimeType, len(body), now.Format(time.RFC3339))},
					Body:    body,
					Encoded: encoded,
				}
				if _, _, err := st.Put(ctx, obj, cond); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				saved.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	sec := time.Since(start).Seconds()
	p := &PrepareResult{From: from, To: to, Saved: saved.Load(), Errors: failed.Load(), Seconds: sec, PerSecond: float64(saved.Load()) / sec}
	fmt.Fprintf(stderr, "stored %d reports through s3store in %.1fs (%.0f/s, %d errors)\n", p.Saved, sec, p.PerSecond, p.Errors)
	if p.Errors > 0 {
		return p, fmt.Errorf("-prepare-s3: %d puts failed, first: %v", p.Errors, firstErr.Load())
	}
	return p, nil
}
