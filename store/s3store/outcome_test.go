package s3store

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
)

// TestLostResponseSuperseded is the history of issue 18 (3): a write
// lands, its response is lost, another instance replaces the landed write
// before the SDK retries, and the retry fails its condition. The write
// happened, so it is not a conflict; the object no longer shows it, so it
// is not a success either: ErrUnknownOutcome.
func TestLostResponseSuperseded(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own client
	base := serverOptions(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	obj := func(k store.Key, body string) *store.Object {
		return &store.Object{
			Meta: store.Meta{
				Key: k, MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
				Created: now, Modified: now, Listed: true, Visibility: store.Private,
			},
			Body: []byte(body),
		}
	}
	old := func(t *testing.T, s *Store, k store.Key) {
		if _, _, err := s.Put(t.Context(), obj(k, "old"), store.CreateOnly()); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, s *Store, k store.Key)
		run     func(t *testing.T, s *Store, k store.Key) error
		// other is what the other instance does once our write landed.
		other func(t *testing.T, s *Store, k store.Key) error
	}{
		{"create", nil, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "mine"), store.CreateOnly())
			return err
		}, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "theirs"), store.Matching(store.Sum([]byte("mine"))))
			return err
		}},
		{"replace", old, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "mine"), store.Matching(store.Sum([]byte("old"))))
			return err
		}, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "theirs"), store.Matching(store.Sum([]byte("mine"))))
			return err
		}},
		{"always", old, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "mine"), store.Cond{})
			return err
		}, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "theirs"), store.Matching(store.Sum([]byte("mine"))))
			return err
		}},
		{"delete", old, func(t *testing.T, s *Store, k store.Key) error {
			return s.Delete(t.Context(), k, store.Cond{})
		}, func(t *testing.T, s *Store, k store.Key) error {
			_, _, err := s.Put(t.Context(), obj(k, "theirs"), store.CreateOnly())
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := base
			opts.Prefix = uniquePrefix(t)
			opts.Now = func() time.Time { return now }
			other := openTest(t, opts)
			var armMu sync.Mutex
			var armed bool
			k := store.MustKey("t1", "report", "superseded/"+tc.name)
			l := &loser{match: func(req *http.Request) bool {
				armMu.Lock()
				defer armMu.Unlock()
				return armed && req.Method == http.MethodPut && strings.Contains(req.URL.Path, "superseded")
			}}
			l.after = func() {
				if err := tc.other(t, other, k); err != nil {
					t.Errorf("the other instance's write = %v", err)
				}
			}
			opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
				l.next = next
				return l
			}
			s := openTest(t, opts)
			if tc.prepare != nil {
				tc.prepare(t, s, k)
			}
			armMu.Lock()
			armed = true
			armMu.Unlock()
			err := tc.run(t, s, k)
			if !errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s whose landed write was superseded = %v, want %v", tc.name, err, store.ErrUnknownOutcome)
			}
			if n := l.count(); n != 1 {
				t.Errorf("%d responses were lost, want 1: the test did not exercise a retry", n)
			}
		})
	}
}

// TestDeleteRace: two Deletes that both read the object before either
// deleted it; exactly one of them deletes it, the other finds it gone
// (issue 18 (1): both answered deleted, since a DELETE of a missing key
// answers 204).
func TestDeleteRace(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	base := serverOptions(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := base
	opts.Prefix = uniquePrefix(t)
	opts.Now = func() time.Time { return now }
	other := openTest(t, opts)
	k := store.MustKey("t1", "report", "race/delete")
	var once sync.Once
	var otherErr error
	opts.wrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			// The first write of the object after our header read: let
			// the other instance delete it first.
			if (req.Method == http.MethodPut || req.Method == http.MethodDelete) && strings.Contains(req.URL.Path, "race") {
				once.Do(func() { otherErr = other.Delete(req.Context(), k, store.Cond{}) })
			}
			return next.RoundTrip(req)
		})
	}
	s := openTest(t, opts)
	if _, _, err := other.Put(t.Context(), &store.Object{
		Meta: store.Meta{Key: k, MIMEType: "text/plain", Size: 1, SHA256: store.Sum([]byte("x")), Created: now, Modified: now, Visibility: store.Private},
		Body: []byte("x"),
	}, store.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	err := s.Delete(t.Context(), k, store.Cond{})
	if otherErr != nil {
		t.Fatalf("the other Delete = %v", otherErr)
	}
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the second of two racing Deletes = %v, want %v", err, store.ErrNotFound)
	}
	if _, err := s.Stat(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want %v", err, store.ErrNotFound)
	}
}
