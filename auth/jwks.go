package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// jwksSource verifies tokens with keys from a remote JWK set.
//
// The cache is a jwkset memory storage. A jwkset HTTP storage fills it at
// start and every JWKSRefresh; a failed fetch leaves it untouched, so cached
// kids keep verifying through an outage, and a successful one replaces it,
// so removed keys are revoked. keyfunc maps a token's kid to a cached key
// and checks the JWK's alg and use.
//
// A kid that is not cached triggers a one-shot fetch into the same cache.
// Concurrent lookups share one fetch, and such fetches start at most once
// per JWKSUnknownKIDWait/2; a lookup waits at most JWKSUnknownKIDWait in
// all. The outcome of the fetch the lookup waited for decides the answer:
// kid still absent after a successful fetch → unknown_kid (401); fetch
// failed or did not finish in time → unavailable (503).
//
// jwkset's own RefreshUnknownKID is not used: it spends the rate-limiter
// wait and the fetch under one deadline, so a lookup that queued for the
// limiter could be left with no time to fetch, and its KeyRead reports "key
// not found" whether or not the fetch worked.
type jwksSource struct {
	url    string
	client *http.Client
	cache  jwkset.Storage
	kf     keyfunc.Keyfunc
	wait   time.Duration   // longest a lookup waits for an unknown-kid fetch
	gap    time.Duration   // least time between unknown-kid fetch starts
	done   <-chan struct{} // closed when ctx given to NewJWT ends or on Close
	cancel context.CancelFunc
	log    *slog.Logger

	mu        sync.Mutex
	flight    *flight   // the unknown-kid fetch in progress, if any
	last      *flight   // the last unknown-kid fetch that finished
	lastStart time.Time // when the last unknown-kid fetch started
	attempted bool      // a fetch has completed, successfully or not
	healthy   bool      // the most recent fetch succeeded
	lastErr   error     // the most recent fetch error, when !healthy
	keys      string    // fingerprint of the stored key set
	keysSeen  bool      // a key set was stored
	onChange  func()    // called when a fetch stores a different key set
}

// flight is one unknown-kid fetch; err is set before done is closed.
type flight struct {
	start time.Time
	done  chan struct{}
	err   error
}

func newJWKSSource(ctx context.Context, o JWTOptions) (*jwksSource, error) {
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: jwksFetchTimeout}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	refreshCtx, cancel := context.WithCancel(ctx)
	s := &jwksSource{
		url:     o.JWKSURL,
		client:  client,
		wait:    o.JWKSUnknownKIDWait,
		gap:     o.JWKSUnknownKIDWait / 2,
		done:    refreshCtx.Done(),
		cancel:  cancel,
		log:     log,
		lastErr: errors.New("JWK set not fetched yet"),
	}
	s.cache = recordingStorage{Storage: jwkset.NewMemoryStorage(), src: s}
	// The first fetch happens here, synchronously; then every JWKSRefresh
	// until ctx is done or Close is called.
	_, err := jwkset.NewStorageFromHTTP(o.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       refreshCtx,
		HTTPTimeout:               jwksFetchTimeout,
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler:       func(_ context.Context, err error) { s.recordFetch(err) },
		RefreshInterval:           o.JWKSRefresh,
		Storage:                   s.cache,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("auth.jwksURL: %w", err)
	}
	s.kf, err = keyfunc.New(keyfunc.Options{
		Ctx:          refreshCtx,
		Storage:      s.cache,
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("auth.jwksURL: %w", err)
	}
	return s, nil
}

func (s *jwksSource) close() { s.cancel() }

func (s *jwksSource) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// recordFetch notes the outcome of a fetch; successes come from
// recordingStorage, failures from the refresh error handler and fetch.
func (s *jwksSource) recordFetch(err error) {
	if err != nil && s.closed() {
		return // closed: not an outage
	}
	s.mu.Lock()
	first, was := !s.attempted, s.healthy
	s.attempted, s.healthy, s.lastErr = true, err == nil, err
	s.mu.Unlock()
	switch {
	case err != nil && (first || was):
		s.log.Warn("auth: JWKS fetch failed; tokens whose kid is not cached get ErrUnavailable", "url", s.url, "error", err)
	case err != nil:
		s.log.Debug("auth: JWKS fetch failed again", "url", s.url, "error", err)
	case !was:
		s.log.Info("auth: JWKS fetched", "url", s.url)
	}
}

// health returns the outcome of the most recent fetch.
func (s *jwksSource) health() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthy, s.lastErr
}

// awaitFetch waits, for at most s.wait, for an unknown-kid fetch that can
// answer a lookup that missed the cache now: the fetch in progress, one that
// started since, or a new one once s.gap has passed since the last start.
// As a wait for a new start is shorter than s.gap = s.wait/2, a fetch this
// lookup starts has at least half of s.wait to finish. It returns that
// fetch's error, or errWaited when none finished in time.
func (s *jwksSource) awaitFetch(ctx context.Context) error {
	missed := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.wait)
	defer cancel()
	for {
		s.mu.Lock()
		f := s.flight
		switch {
		case f != nil: // join it
		case s.last != nil && !s.last.start.Before(missed):
			f = s.last // finished since we missed
		default:
			if delay := time.Until(s.lastStart.Add(s.gap)); delay > 0 {
				s.mu.Unlock()
				t := time.NewTimer(delay)
				select {
				case <-t.C:
					continue
				case <-ctx.Done():
					t.Stop()
					return errWaited
				}
			}
			f = &flight{done: make(chan struct{}), start: time.Now()}
			s.flight, s.lastStart = f, f.start
			go s.fetch(f)
		}
		s.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return errWaited
		}
	}
}

var errWaited = errors.New("no JWK set fetch finished in time")

// fetch performs one fetch into the cache, detached from any request.
func (s *jwksSource) fetch(f *flight) {
	// Not tied to the request that started it: others may join.
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	// Without RefreshInterval this fetches once, synchronously, into the
	// shared cache (replacing it on success) and starts no goroutine.
	_, err := jwkset.NewStorageFromHTTP(s.url, jwkset.HTTPClientStorageOptions{
		Client:      s.client,
		Ctx:         ctx,
		HTTPTimeout: jwksFetchTimeout,
		Storage:     s.cache,
	})
	if err != nil {
		s.recordFetch(err)
	}
	f.err = err
	s.mu.Lock()
	s.flight, s.last = nil, f
	s.mu.Unlock()
	close(f.done)
}

// key returns the key(s) for t from the JWK set.
func (s *jwksSource) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	kid, hasKID := t.Header["kid"]
	if hasKID {
		if _, ok := kid.(string); !ok {
			return nil, unauthenticated(reasonMalformed, "kid header is not a string")
		}
	}
	got, err := s.kf.KeyfuncCtx(ctx)(t)
	if hasKID && errors.Is(err, jwkset.ErrKeyNotFound) {
		ferr := s.awaitFetch(ctx)
		switch {
		case errors.Is(ferr, errWaited) && ctx.Err() != nil:
			return nil, unavailable("kid %.64q not cached: %v", kid, ctx.Err())
		case errors.Is(ferr, errWaited):
			return nil, unavailable("kid %.64q not cached and the JWK set was not fetched within %s", kid, s.wait)
		case ferr != nil:
			return nil, unavailable("kid %.64q not cached and fetching the JWK set failed: %v", kid, ferr)
		}
		got, err = s.kf.KeyfuncCtx(ctx)(t)
		if errors.Is(err, jwkset.ErrKeyNotFound) {
			return nil, unauthenticated(reasonUnknownKID, "kid %.64q not in the JWK set", kid)
		}
	}
	if err != nil {
		// Found, but keyfunc refused it: the JWK's alg or use does not
		// match the token.
		return nil, unauthenticated(reasonBadAlgorithm, "JWK %.64q refused: %v", kid, err)
	}
	if set, ok := got.(jwt.VerificationKeySet); ok { // no kid: every cached key
		var keys []jwt.VerificationKey
		for _, k := range set.Keys {
			if keyFits(alg, k) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			if ok, lastErr := s.health(); !ok {
				return nil, unavailable("token has no kid and no cached key fits %s: %v", alg, lastErr)
			}
			return nil, unauthenticated(reasonUnknownKID, "token has no kid and no key in the JWK set fits %s", alg)
		}
		return jwt.VerificationKeySet{Keys: keys}, nil
	}
	if !keyFits(alg, got) {
		return nil, unauthenticated(reasonBadAlgorithm, "JWK %.64q does not fit alg %s", kid, alg)
	}
	return got, nil
}

// recordingStorage notes each successful fetch: jwkset replaces the whole
// cache exactly when a fetch succeeds.
type recordingStorage struct {
	jwkset.Storage
	src *jwksSource
}

func (s recordingStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	err := s.Storage.KeyReplaceAll(ctx, given)
	if err == nil {
		s.src.recordKeys(given)
		s.src.recordFetch(nil)
	}
	return err
}

// recordKeys notes the key set a fetch stored and, when it is not the set
// stored before, calls onChange (the JWT clears its token cache, so that a
// removed key stops admitting the tokens it signed at once).
func (s *jwksSource) recordKeys(keys []jwkset.JWK) {
	fps := make([]string, 0, len(keys))
	for _, k := range keys {
		b, err := json.Marshal(k.Marshal())
		if err != nil {
			b = []byte(err.Error()) // unique enough to count as a change
		}
		fps = append(fps, string(b))
	}
	slices.Sort(fps)
	fp := strings.Join(fps, "\n")
	s.mu.Lock()
	changed := s.keysSeen && fp != s.keys
	s.keys, s.keysSeen = fp, true
	onChange := s.onChange
	s.mu.Unlock()
	if changed && onChange != nil {
		onChange()
	}
}
