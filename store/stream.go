package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spooled is a body copied to a temporary file, with the size and SHA-256
// computed while it was copied. The file is unlinked as soon as it is
// created (on systems that allow it; elsewhere Close removes it), so a
// crash leaves nothing behind.
type Spooled struct {
	f    *os.File
	name string // set when the file could not be unlinked at once
	// Size is the body length in bytes.
	Size int64
	// SHA256 is the lower-case hex SHA-256 of the body.
	SHA256 string
}

// spoolBuffer is the copy buffer of Spool.
const spoolBuffer = 256 << 10

// Spool copies r to a new temporary file in dir ("" means os.TempDir())
// until io.EOF, computing its size and SHA-256. It checks ctx between
// reads. On error nothing is left behind.
func Spool(ctx context.Context, dir string, r io.Reader) (*Spooled, error) {
	f, err := os.CreateTemp(dir, ".resourced-spool-*")
	if err != nil {
		return nil, fmt.Errorf("store: spool: %w", err)
	}
	sp := &Spooled{f: f}
	if err := os.Remove(f.Name()); err != nil {
		sp.name = f.Name()
	}
	h := sha256.New()
	buf := make([]byte, spoolBuffer)
	w := io.MultiWriter(f, h)
	for {
		if err := ctx.Err(); err != nil {
			sp.Close()
			return nil, fmt.Errorf("store: spool: %w", err)
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				sp.Close()
				return nil, fmt.Errorf("store: spool: %w", err)
			}
			sp.Size += int64(n)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			sp.Close()
			return nil, fmt.Errorf("store: reading the body: %w", rerr)
		}
	}
	sp.SHA256 = hex.EncodeToString(h.Sum(nil))
	return sp, nil
}

// File is the spool's file, for mapping it; it is closed by Close.
func (s *Spooled) File() *os.File { return s.f }

// ReaderAt returns the spooled body for random access.
func (s *Spooled) ReaderAt() io.ReaderAt { return s.f }

// Section returns a reader of the whole body, independent of other readers.
func (s *Spooled) Section() *io.SectionReader { return io.NewSectionReader(s.f, 0, s.Size) }

// Close closes and removes the file.
func (s *Spooled) Close() error {
	err := s.f.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// SeekPosition is the io.Seeker arithmetic backends' readers share: the
// new absolute position for offset and whence, given the current position
// and the size. It fails on an unknown whence or a negative result.
func SeekPosition(pos, size, offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = pos + offset
	case io.SeekEnd:
		abs = size + offset
	default:
		return 0, fmt.Errorf("invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("negative position %d", abs)
	}
	return abs, nil
}
