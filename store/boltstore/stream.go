package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourced/resourced/store"
)

// PutStream implements store.StreamDriver; the package doc says how.
func (s *Driver) PutStream(ctx context.Context, meta *store.Meta, r io.Reader, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	k := meta.Key
	sp, err := store.Spool(ctx, s.spoolDir, r)
	if err != nil {
		return store.Meta{}, false, fmt.Errorf("boltstore: put %s: %w", k, err)
	}
	defer sp.Close()
	want := *meta
	want.Size, want.SHA256 = sp.Size, sp.SHA256
	bound := headerBound(&want)
	if sp.Size > math.MaxInt32-int64(bound) {
		return store.Meta{}, false, fmt.Errorf("boltstore: put %s: a body of %d bytes does not fit in one bbolt value", k, sp.Size)
	}
	if isLarge(0, sp.Size) {
		// A body bucket of its own (version 3), its value the spool file
		// mapped where that works: bbolt copies it from the page cache
		// into its pages at commit, the heap holds no other copy (issue 24).
		body, unmap, err := mapFile(sp.File(), sp.Size)
		if err == nil {
			defer unmap()
		} else {
			body = make([]byte, sp.Size)
			if _, err := io.ReadFull(sp.Section(), body); err != nil {
				return store.Meta{}, false, fmt.Errorf("boltstore: put %s: reading the spooled body: %w", k, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return store.Meta{}, false, fmt.Errorf("boltstore: put %s: %w", k, err)
		}
		return s.write(k, want, cond, now, value{large: true, body: body})
	}
	buf := make([]byte, bound+int(sp.Size))
	if _, err := io.ReadFull(sp.Section(), buf[bound:]); err != nil {
		return store.Meta{}, false, fmt.Errorf("boltstore: put %s: reading the spooled body: %w", k, err)
	}
	if err := ctx.Err(); err != nil {
		return store.Meta{}, false, fmt.Errorf("boltstore: put %s: %w", k, err)
	}
	return s.write(k, want, cond, now, value{record: func(m *store.Meta) []byte {
		h := appendHeader(make([]byte, 0, bound), m, nil)
		start := bound - len(h)
		copy(buf[start:], h)
		return buf[start:]
	}})
}

// Open implements store.StreamDriver.
func (s *Driver) Open(ctx context.Context, k store.Key) (store.Meta, io.ReadSeekCloser, error) {
	meta, err := s.Stat(ctx, k)
	if err != nil {
		return store.Meta{}, nil, err
	}
	return meta, &reader{s: s, ctx: ctx, k: k, sha: meta.SHA256, modified: meta.Modified, size: meta.Size}, nil
}

// reader reads one body, one short View transaction per Read.
type reader struct {
	s   *Driver
	ctx context.Context
	k   store.Key
	sha string
	// modified ends the read at any replace, the same body's included:
	// a replace may change who may read it (a public link's download).
	modified time.Time
	size     int64
	pos      int64
	closed   bool
}

var errClosedReader = errors.New("read after Close")

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fmt.Errorf("boltstore: read %s: %w", r.k, errClosedReader)
	}
	if r.pos >= r.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.ctx.Err(); err != nil {
		return 0, fmt.Errorf("boltstore: read %s: %w", r.k, err)
	}
	var n int
	err := r.s.db.View(func(tx *bolt.Tx) error {
		sb, err := schemeBucket(tx, r.k)
		if err != nil {
			return err
		}
		var v []byte
		if sb != nil {
			v = sb.Get([]byte(r.k.Path()))
		}
		if v == nil {
			return fmt.Errorf("boltstore: read %s: deleted while it was read: %w", r.k, store.ErrNotFound)
		}
		m, err := decodeMeta(v)
		if err != nil {
			return fmt.Errorf("boltstore: read %s: %w", r.k, err)
		}
		if m.SHA256 != r.sha || !m.Modified.Equal(r.modified) {
			return fmt.Errorf("boltstore: read %s: replaced while it was read", r.k)
		}
		rec, err := loadRecord(tx, v, m.Size)
		if err != nil {
			return fmt.Errorf("boltstore: read %s: %w", r.k, err)
		}
		n = copy(p, rec.body[r.pos:]) // out of the mmap before the transaction ends
		return nil
	})
	r.pos += int64(n)
	if err != nil {
		return n, err
	}
	return n, nil
}

func (r *reader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, fmt.Errorf("boltstore: seek %s: %w", r.k, errClosedReader)
	}
	abs, err := store.SeekPosition(r.pos, r.size, offset, whence)
	if err != nil {
		return 0, fmt.Errorf("boltstore: seek %s: %w", r.k, err)
	}
	r.pos = abs
	return abs, nil
}

func (r *reader) Close() error {
	r.closed = true
	return nil
}
