package service

import (
	"context"
	"io"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
)

// Write is one store write: the metadata of the object (Size and SHA256
// are computed from the body), its body, the precondition and how the
// caller retries a conflict.
type Write struct {
	Meta  store.Meta
	Body  []byte
	Cond  store.Cond
	Retry Retry
	// Own marks a write of the server's own (the fixtures): no tenant
	// quota, and no OnChange or OnSaved.
	Own bool
}

// Put stores w: it builds the store.Object once (size, the one sha256,
// the stored JSON form for backends that keep one), applies the tenant
// quota, and maps every store error to a Failure (writeFailure). It
// reports whether an existing object was replaced.
func (s *Service) Put(ctx context.Context, w Write) (store.Meta, bool, *Failure) {
	obj := s.object(w.Meta, w.Body)
	cond := w.Cond
	if !w.Own {
		cond.Quota = s.quota
		if f := s.intend(ctx, obj.Key); f != nil {
			return store.Meta{}, false, f
		}
	}
	m, replaced, err := s.store.Put(ctx, obj, cond)
	if err != nil {
		if !w.Own {
			s.unintend(obj.Key)
		}
		return m, false, s.writeFailure(ctx, obj.Key, cond, w.Retry, "store put", err)
	}
	if !w.Own {
		s.saved(ctx, &m)
	}
	return m, replaced, nil
}

// Stream is one streamed store write (an upload).
type Stream struct {
	// Meta is the object's metadata; Size and SHA256 are computed while
	// Body is read.
	Meta  store.Meta
	Body  io.Reader
	Cond  store.Cond
	Retry Retry
	// Source reports whether the error of a failed write came from Body
	// or from the caller going away rather than from the store; nil: none
	// does.
	Source func(err error) bool
}

// PutStream stores w through the backend's streaming path when it has
// one, and Put's otherwise, under the tenant quota and with Put's one
// mapping of store errors: its error is a *Failure, or an error w.Source
// claims, returned as it is for the transport to answer in its terms.
func (s *Service) PutStream(ctx context.Context, w Stream) (store.Meta, bool, error) {
	cond := w.Cond
	cond.Quota = s.quota
	if f := s.intend(ctx, w.Meta.Key); f != nil {
		return store.Meta{}, false, f
	}
	m, replaced, err := s.store.PutStream(ctx, &w.Meta, w.Body, cond)
	if err != nil {
		s.unintend(w.Meta.Key)
		if w.Source != nil && w.Source(err) {
			return m, false, err
		}
		return m, false, s.writeFailure(ctx, w.Meta.Key, cond, w.Retry, "upload store put", err)
	}
	s.saved(ctx, &m)
	return m, replaced, nil
}

func (s *Service) saved(ctx context.Context, m *store.Meta) {
	s.onSaved(m.Key.Scheme(), m.Size)
	s.changed(ctx, m.Key)
}

// changed follows a committed write or delete of k: the search index's
// update is queued first (searchindex_queue.go), then OnChange, so a
// listener told of a change finds it in a search (which waits for what
// was queued before it).
func (s *Service) changed(ctx context.Context, k store.Key) {
	s.indexed(ctx, k)
	s.onChange(k)
}

// object is the one builder of a store.Object: the body's size, its
// sha256 computed once, and its stored JSON form.
func (s *Service) object(meta store.Meta, body []byte) *store.Object {
	// Size and SHA256 are left to the store, which computes them once
	// (store.Bucket) and returns them in the stored metadata.
	meta.Size, meta.SHA256 = 0, ""
	return &store.Object{Meta: meta, Body: body, Encoded: s.Encode(meta.MIMEType, body)}
}

// Encode returns the JSON form of body to keep with it, or nil when the
// backend cannot keep one (KeepsEncoded) or it would be too large.
func (s *Service) Encode(mimeType string, body []byte) []byte {
	if !s.store.KeepsEncoded() {
		return nil
	}
	return jsonwire.EncodeForm(mimeType, body)
}
