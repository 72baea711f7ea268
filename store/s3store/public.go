package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// This file keeps the public index: one empty marker object per public
// listed object (see the package doc, "Public index").

// indexed reports whether an object with metadata m should have a marker
// (expiry aside).
func indexed(m *store.Meta) bool {
	return m.Listed && m.Visibility == store.Public
}

// emptyMD5 is the Content-MD5 of a marker.
var emptyMD5 = func() string {
	sum := md5.Sum(nil)
	return base64.StdEncoding.EncodeToString(sum[:])
}()

// putMarker writes k's marker, unconditionally.
func (s *Driver) putMarker(ctx context.Context, k store.Key) error {
	for attempt := 1; ; attempt++ {
		cctx, cancel := s.call(ctx)
		_, err := s.client.PutObject(cctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(s.markerKey(k)),
			Body:          bytes.NewReader(nil),
			ContentLength: aws.Int64(0),
			ContentMD5:    aws.String(emptyMD5),
			ContentType:   aws.String(contentType),
		}, callOptions)
		cancel()
		if err == nil || attempt == 4 || !isTransientLayout(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

// removeMarker deletes k's marker unless k's object needs it.
//
// Deleting is the one step that can lose a marker that a concurrent Put of
// a public object has just written. So after the delete, whether or not it
// worked, the object's header is read again, and the marker is written
// back if the object is live, public and listed, or if the read fails (a
// stale marker is harmless). Whatever the interleaving, the last marker
// operation after the last write of a public object is then a PUT. The
// error is non-nil only when the marker may now be missing for an object
// that needs it.
func (s *Driver) removeMarker(ctx context.Context, k store.Key, now func() time.Time) error {
	// The caller going away must not stop us between the delete and the
	// write back; every call still has its deadline.
	ctx = context.WithoutCancel(ctx)
	// A failed delete leaves the marker, stale at worst.
	_ = s.deleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.markerKey(k))})
	h, err := s.readHead(ctx, s.objectKey(k))
	if err == nil && (h == nil || !indexed(&h.rec.meta) || h.rec.meta.Expired(now())) {
		return nil
	}
	if perr := s.putMarker(ctx, k); perr != nil {
		if err != nil {
			return fmt.Errorf("public index: rereading the object: %v; writing the marker back: %w", err, perr)
		}
		return fmt.Errorf("public index: writing the marker back: %w", perr)
	}
	return nil
}

// syncMarker brings k's marker in line with m, which was just written over
// an object that may have had a marker when mayHave is set.
func (s *Driver) syncMarker(ctx context.Context, k store.Key, m *store.Meta, mayHave bool, now func() time.Time) error {
	switch {
	case indexed(m):
		if err := s.putMarker(context.WithoutCancel(ctx), k); err != nil {
			return fmt.Errorf("public index: %w", err)
		}
	case mayHave:
		return s.removeMarker(ctx, k, now)
	}
	return nil
}

// ListPublic implements store.Driver; the package doc gives its cost.
func (s *Driver) ListPublic(ctx context.Context, after store.PublicPosition, limit int, now func() time.Time) (store.PublicPage, error) {
	const op = "list public"
	if err := s.begin(ctx, op); err != nil {
		return store.PublicPage{}, err
	}
	var startAfter *string
	if after != (store.PublicPosition{}) {
		startAfter = aws.String(s.publicStartKey(after))
	}
	l := publicLister{s: s, after: after, limit: limit, now: now()}
	var token *string
	for {
		in := &s3.ListObjectsV2Input{
			Bucket:  aws.String(s.bucket),
			Prefix:  aws.String(s.publicPrefix()),
			MaxKeys: aws.Int32(maxKeys(limit)),
		}
		if token != nil {
			in.ContinuationToken = token
		} else {
			in.StartAfter = startAfter
		}
		out, err := s.listPage(ctx, s.publicPrefix(), in)
		if err != nil {
			return store.PublicPage{}, s.fail(ctx, op, "index", err)
		}
		var cands []store.Key
		for _, o := range out.Contents {
			k, ok := s.parseMarkerKey(aws.ToString(o.Key))
			if !ok || !after.Less(publicPos(k)) {
				continue // not ours, or at or before the cursor
			}
			cands = append(cands, k)
		}
		done, err := l.add(ctx, cands)
		if err != nil {
			return store.PublicPage{}, s.fail(ctx, op, "index", err)
		}
		if done || !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			break
		}
		token = out.NextContinuationToken
	}
	s.cleanMarkers(ctx, l.stale, now)
	return l.page, nil
}

func publicPos(k store.Key) store.PublicPosition {
	return store.PublicPosition{Tenant: k.Tenant(), Scheme: k.Scheme(), Path: k.Path()}
}

// publicLister collects one page of ListPublic.
type publicLister struct {
	s     *Driver
	after store.PublicPosition
	limit int
	now   time.Time
	page  store.PublicPage
	stale []store.Key // markers whose object is gone, expired, private or unlisted
}

// add reads the headers of the objects of the markers cands, in order, and
// adds the live public listed ones; done reports that the page is full and
// More is known.
func (l *publicLister) add(ctx context.Context, cands []store.Key) (done bool, err error) {
	for len(cands) > 0 {
		// As lister.add: what the page may still take, plus one to know
		// More, but at least listConcurrency.
		n := min(len(cands), 256)
		if need := l.limit - len(l.page.Items); need < n {
			n = max(need+1, min(n, listConcurrency))
		}
		heads, err := l.s.readHeads(ctx, cands[:n])
		if err != nil {
			return false, err
		}
		for i, k := range cands[:n] {
			h := heads[i]
			if h == nil || !indexed(&h.rec.meta) || h.rec.meta.Expired(l.now) {
				l.stale = append(l.stale, k)
				continue
			}
			if len(l.page.Items) == l.limit {
				l.page.More = true
				return true, nil
			}
			l.page.Items = append(l.page.Items, h.meta(k))
			l.page.Next = publicPos(k)
		}
		cands = cands[n:]
	}
	return false, nil
}

// cleanMarkers removes stale markers that ListPublic came across, best
// effort: failures leave them for the next ListPublic, and removeMarker
// keeps a marker that a concurrent Put made current again.
func (s *Driver) cleanMarkers(ctx context.Context, keys []store.Key, now func() time.Time) {
	sem := make(chan struct{}, listConcurrency)
	var wg sync.WaitGroup
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = s.removeMarker(ctx, k, now)
		})
	}
	wg.Wait()
}
