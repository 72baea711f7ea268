package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/store"
)

// payload is the body of a write: in memory, or in a spooled file.
type payload struct {
	r io.ReaderAt
	n int64
}

func memPayload(b []byte) payload { return payload{r: bytes.NewReader(b), n: int64(len(b))} }

// recordReader reads an object's content, header then body, and can seek
// (the SDK rewinds a body to hash it and to retry).
type recordReader struct {
	header []byte
	body   payload
	pos    int64
}

func newRecordReader(header []byte, body payload) *recordReader {
	return &recordReader{header: header, body: body}
}

func (r *recordReader) size() int64 { return int64(len(r.header)) + r.body.n }

func (r *recordReader) Read(p []byte) (int, error) {
	if r.pos >= r.size() {
		return 0, io.EOF
	}
	if h := int64(len(r.header)); r.pos < h {
		n := copy(p, r.header[r.pos:])
		r.pos += int64(n)
		return n, nil
	}
	off := r.pos - int64(len(r.header))
	if rest := r.body.n - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := r.body.r.ReadAt(p, off)
	r.pos += int64(n)
	if errors.Is(err, io.EOF) && n == len(p) {
		err = nil
	}
	return n, err
}

func (r *recordReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.size() + offset
	default:
		return 0, fmt.Errorf("invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("negative position %d", abs)
	}
	r.pos = abs
	return abs, nil
}

// PutStream implements store.StreamDriver; the package doc says how.
func (s *Driver) PutStream(ctx context.Context, meta *store.Meta, r io.Reader, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	if err := s.begin(ctx, "put"); err != nil {
		return store.Meta{}, false, err
	}
	k := meta.Key
	objKey, err := s.putKey(k)
	if err != nil {
		return store.Meta{}, false, err
	}
	sp, err := store.Spool(ctx, s.spool, r)
	if err != nil {
		return store.Meta{}, false, fmt.Errorf("s3store: put %s: %w", k, err)
	}
	defer sp.Close()
	want := *meta
	want.Key = store.Key{}
	want.Size, want.SHA256 = sp.Size, sp.SHA256
	w := &write{s: s, now: now, k: k, objKey: objKey, want: want, id: newWriteID(), body: payload{r: sp.ReaderAt(), n: sp.Size}}
	end, err := s.beginWrite(ctx, "put") // after the spool: Close waits for the write, not the upload
	if err != nil {
		return store.Meta{}, false, err
	}
	defer end()
	return w.run(ctx, cond)
}

// Open implements store.StreamDriver: one header read now, ranged GETs
// as the body is read.
func (s *Driver) Open(ctx context.Context, k store.Key) (store.Meta, io.ReadSeekCloser, error) {
	if err := s.begin(ctx, "open"); err != nil {
		return store.Meta{}, nil, err
	}
	objKey := s.objectKey(k)
	if len(objKey) > maxKeyLen {
		return store.Meta{}, nil, store.ErrNotFound
	}
	var h *head
	for attempt := 1; ; attempt++ {
		var err error
		if h, err = s.readHead(ctx, objKey); err != nil {
			return store.Meta{}, nil, s.fail(ctx, "open", k, err)
		}
		if h == nil {
			return store.Meta{}, nil, store.ErrNotFound
		}
		if h.etag != "" {
			break
		}
		if attempt == maxAttempts {
			return store.Meta{}, nil, fmt.Errorf("s3store: open %s: the server returned no ETag", k)
		}
		time.Sleep(etagRetryDelay) // see etagRetryDelay
	}
	m := h.meta(k)
	return m, &objectReader{s: s, ctx: ctx, k: k, objKey: objKey, etag: h.etag, off: int64(h.hlen), size: m.Size}, nil
}

// readSpan is the most one ranged GET of an objectReader asks for: each
// next GET checks the ETag again, so a download in progress stops within
// readSpan of a replace (one that made a public object private included).
const readSpan = 4 << 20

// objectReader reads one body with ranged GETs bound to one ETag.
type objectReader struct {
	s      *Driver
	ctx    context.Context
	k      store.Key
	objKey string
	etag   string
	off    int64 // where the body starts in the object
	size   int64
	pos    int64
	closed bool

	// The open GET, if any: its body, where it is, where its range ends,
	// and the deadline (a timer canceling its context) armed while a call
	// is in progress.
	body    io.ReadCloser
	bodyPos int64
	bodyEnd int64
	cancel  context.CancelFunc
	timer   *time.Timer
}

var errClosedReader = errors.New("read after Close")

func (r *objectReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fmt.Errorf("s3store: read %s: %w", r.k, errClosedReader)
	}
	if r.pos >= r.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if rest := r.size - r.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	for attempt := 1; ; attempt++ {
		if r.body != nil && (r.bodyPos != r.pos || r.bodyPos >= r.bodyEnd) {
			r.closeBody()
		}
		if r.body == nil {
			if err := r.open(); err != nil {
				return 0, err
			}
		}
		r.timer.Reset(r.s.timeout)
		n, err := r.body.Read(p)
		r.timer.Stop()
		r.pos += int64(n)
		r.bodyPos += int64(n)
		if n > 0 {
			if err != nil {
				r.closeBody() // the next Read resumes with a new GET
			}
			return n, nil
		}
		if err == nil {
			continue
		}
		r.closeBody()
		if cerr := r.ctx.Err(); cerr != nil {
			return 0, fmt.Errorf("s3store: read %s: %w", r.k, cerr)
		}
		if attempt == 2 {
			if errors.Is(err, context.Canceled) {
				return 0, fmt.Errorf("s3store: read %s: no data from S3 within %v (store.s3.callTimeout)", r.k, r.s.timeout)
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("s3store: read %s: %w", r.k, err)
		}
	}
}

// open starts a GET of the rest of the body at r.pos.
func (r *objectReader) open() error {
	ctx, cancel := context.WithCancel(r.ctx)
	timer := time.AfterFunc(r.s.timeout, cancel)
	end := min(r.size, r.pos+readSpan)
	out, err := r.s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:  aws.String(r.s.bucket),
		Key:     aws.String(r.objKey),
		Range:   aws.String("bytes=" + strconv.FormatInt(r.off+r.pos, 10) + "-" + strconv.FormatInt(r.off+end-1, 10)),
		IfMatch: aws.String(r.etag),
	}, callOptions)
	timer.Stop()
	if err != nil {
		cancel()
		if isMissing(err) {
			return fmt.Errorf("s3store: read %s: deleted while it was read: %w", r.k, store.ErrNotFound)
		}
		if isConflict(err) {
			return fmt.Errorf("s3store: read %s: replaced while it was read", r.k)
		}
		if errors.Is(err, context.Canceled) && r.ctx.Err() == nil {
			return fmt.Errorf("s3store: read %s: no answer from S3 within %v (store.s3.callTimeout)", r.k, r.s.timeout)
		}
		return r.s.fail(r.ctx, "read", r.k, err)
	}
	timer.Stop()
	r.body, r.bodyPos, r.bodyEnd, r.cancel, r.timer = out.Body, r.pos, end, cancel, timer
	return nil
}

func (r *objectReader) closeBody() {
	if r.body == nil {
		return
	}
	r.timer.Stop()
	r.cancel()
	r.body.Close()
	r.body, r.cancel, r.timer = nil, nil, nil
}

func (r *objectReader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, fmt.Errorf("s3store: seek %s: %w", r.k, errClosedReader)
	}
	abs, err := store.SeekPosition(r.pos, r.size, offset, whence)
	if err != nil {
		return 0, fmt.Errorf("s3store: seek %s: %w", r.k, err)
	}
	r.pos = abs
	return abs, nil
}

func (r *objectReader) Close() error {
	r.closeBody()
	r.closed = true
	return nil
}
