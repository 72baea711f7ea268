package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/boltstore"
)

// TestWalkReportsEveryObject: Walk reports every stored object once, of
// every tenant, expired ones included, with its key and hash, in order,
// and stops at fn's error.
func TestWalkReportsEveryObject(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []string
	shas := map[string]string{}
	for _, k := range []store.Key{store.MustKey("t1", "report", "a"), store.MustKey("t1", "search", "b"), store.MustKey("t10", "report", "a/b")} {
		o := object(k, "body of "+k.String(), now)
		if k.Tenant() == "t10" {
			o.Expires = now.Add(-time.Minute) // expired, not yet swept
		}
		m, _, err := s.Put(ctx, o, store.Cond{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, k.String())
		shas[k.String()] = m.SHA256
	}
	var got []string
	err = s.Walk(ctx, func(m *store.Meta) error {
		got = append(got, m.Key.String())
		if m.SHA256 != shas[m.Key.String()] {
			t.Errorf("Walk: %s has sha256 %s, want %s", m.Key, m.SHA256, shas[m.Key.String()])
		}
		return nil
	})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk = %v, %v; want %v", got, err, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Walk(ctx, func(*store.Meta) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Walk with an fn that fails = %v after %d calls, want its error after 1", err, n)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Walk(canceled, func(*store.Meta) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Walk with a canceled context = %v", err)
	}
}
