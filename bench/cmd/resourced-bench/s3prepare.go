package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

// prepareChunk is how many reports prepareS3 hands s3store's Load at a
// time: the unit of its usage reservation and of -prepare-from.
var prepareChunk = 5000

// prepareS3 is -prepare with -prepare-s3: it stores the reports of indexes
// [from, to) straight through resourced's S3 store, with s3store's Load:
// the objects a save stores (same keys, record, headers and usage; the
// store's own encoding, not a copy of it), written with unconditional PUTs,
// c at a time, in chunks of prepareChunk reports, one usage update each.
// The metadata is a save_report's with the bench's arguments: media type,
// the path's last segment as title, the server's default description,
// private, unlisted, no expiry. Chunks are stored in order, so the count of
// each progress line (and of a failure) plus from is where -prepare-from
// continues. What it measures is the bulk write rate of the S3 service, not
// a save's: a save's conditional writes and its tenant's usage object are
// left out (see s3store's Load).
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
	sum := store.Sum(body)
	var saved atomic.Int64
	start := time.Now()
	done := progress(stderr, "stored", to-from, &saved, start)
	var loadErr error
	for lo := from; lo < to && loadErr == nil; lo += prepareChunk {
		hi := min(lo+prepareChunk, to)
		objs := make([]*store.Object, 0, hi-lo)
		for i := lo; i < hi; i++ {
			name := strconv.Itoa(i)
			k, err := store.NewKey(tenant, scheme, prefix+"/"+name)
			if err != nil {
				loadErr = err
				break
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			objs = append(objs, &store.Object{
				Meta: store.Meta{Key: k, MIMEType: mimeType, Created: now, Modified: now, Title: name, Visibility: store.Private,
					Description: fmt.Sprintf("%s, %d bytes, saved %s", mimeType, len(body), now.Format(time.RFC3339)),
					Size:        int64(len(body)), SHA256: sum},
				Body: body,
			})
		}
		if loadErr != nil {
			break
		}
		n, err := st.Load(ctx, objs, c)
		if err != nil {
			loadErr = fmt.Errorf("%w (%d of [%d, %d) stored; -prepare-from %d continues)", err, n, lo, hi, lo)
			break
		}
		saved.Add(int64(n))
	}
	close(done)
	sec := time.Since(start).Seconds()
	p := &PrepareResult{From: from, To: to, Saved: saved.Load(), Seconds: sec, PerSecond: float64(saved.Load()) / sec}
	if loadErr != nil {
		p.Errors = 1
	}
	fmt.Fprintf(stderr, "stored %d reports through s3store's Load in %.1fs (%.0f/s)\n", p.Saved, sec, p.PerSecond)
	if loadErr != nil {
		return p, fmt.Errorf("-prepare-s3: %w", loadErr)
	}
	return p, nil
}
