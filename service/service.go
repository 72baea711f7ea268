package service

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
	"github.com/resourced/resourced/uri"
)

// Links is the policy of download links: how long one lives unless the
// caller asks otherwise, and the longest it may ask for.
type Links struct {
	DefaultTTL, MaxTTL time.Duration
}

// Options configure a Service. Store and Schemes are required.
type Options struct {
	Store   store.Backend
	Schemes []Scheme
	// Limits bound one save; zero fields take the defaults.
	Limits Limits
	// Quota bounds what each tenant stores; zero fields are unlimited.
	Quota store.Quota
	// Links enables download links (LinkTTL); nil: the server signs none.
	Links *Links
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the causes of unavailable failures; nil: silent.
	Logger *slog.Logger
	// OnChange is called after a resource at k was written or deleted
	// through this service (notifications); nil: nothing.
	OnChange func(k store.Key)
	// OnSaved is called after a tenant's save of bytes to scheme
	// (metrics); nil: nothing.
	OnSaved func(scheme string, bytes int64)
	// Index is the search index the service keeps in step with the
	// store (searchindex.go); nil: no search_resources.
	Index *index.Index
	// OnIndexFailure is called for each failed index update (metrics);
	// nil: nothing.
	OnIndexFailure func()
}

// Service is what every transport calls to save, stat, delete and list.
type Service struct {
	store    store.Backend
	schemes  map[string]*Scheme
	names    []string
	limits   Limits
	quota    store.Quota
	links    *Links
	now      func() time.Time
	log      *slog.Logger
	ids      *idSource
	onChange func(store.Key)
	onSaved  func(string, int64)
	queries  *tenantSlots // query_resource evaluations (selectNodes)
	idx      *indexer     // nil: no search index
}

// New checks opts and builds a Service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("service: Options.Store is required")
	}
	if len(opts.Schemes) == 0 {
		return nil, errors.New("service: at least one scheme is required")
	}
	s := &Service{
		store: opts.Store, schemes: make(map[string]*Scheme, len(opts.Schemes)),
		limits: opts.Limits.WithDefaults(), quota: opts.Quota, links: opts.Links,
		now: opts.Now, log: opts.Logger, onChange: opts.OnChange, onSaved: opts.OnSaved,
		queries: newTenantSlots(querySlots, queryTenantSlots),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.onChange == nil {
		s.onChange = func(store.Key) {}
	}
	if s.onSaved == nil {
		s.onSaved = func(string, int64) {}
	}
	if opts.Index != nil {
		s.idx = newIndexer(opts.Index, opts.OnIndexFailure)
		opts.Index.BeforeClose(s.drainIndex)
	}
	s.ids = newIDSource(s.now)
	for i := range opts.Schemes {
		sc := opts.Schemes[i]
		if err := uri.ValidScheme(sc.Name); err != nil {
			return nil, fmt.Errorf("scheme %q: %w", sc.Name, err)
		}
		if sc.Kind != KindSearch && sc.Kind != KindReport {
			return nil, fmt.Errorf("scheme %q: unknown kind %q", sc.Name, sc.Kind)
		}
		if sc.MaxBytes <= 0 {
			return nil, fmt.Errorf("scheme %q: MaxBytes must be positive", sc.Name)
		}
		s.schemes[sc.Name] = &sc
		s.names = append(s.names, sc.Name)
	}
	slices.Sort(s.names)
	s.names = slices.Compact(s.names)
	s.recoverIndex()
	return s, nil
}

// Schemes returns the configured schemes by name (not to be modified).
func (s *Service) Schemes() map[string]*Scheme { return s.schemes }

// SchemeNames returns the configured schemes' names in order.
func (s *Service) SchemeNames() []string { return slices.Clone(s.names) }

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// Limits returns the limits in force, defaults applied.
func (s *Service) Limits() Limits { return s.limits }

// MetaValue is the success value of a save, stat or upload for m.
func MetaValue(status string, m *store.Meta) toolapi.Metadata {
	v := toolapi.Metadata{
		Status:       status,
		URI:          m.Key.String(),
		Name:         m.Key.Path(),
		Title:        m.Title,
		Description:  m.Description,
		MIMEType:     m.MIMEType,
		Size:         m.Size,
		SHA256:       m.SHA256,
		CreatedAt:    jsonwire.FormatTime(m.Created),
		LastModified: jsonwire.FormatTime(m.Modified),
		Listed:       m.Listed,
		Visibility:   string(m.Visibility),
	}
	if !m.Expires.IsZero() {
		v.ExpiresAt = jsonwire.FormatTime(m.Expires)
	}
	return v
}
