package auth

import (
	"sync"
	"time"
)

// Verifying a JWT (decoding its header and claims, checking the signature)
// costs more than the rest of a small resources/read together, and a
// client sends the same token with every request until it expires. So a
// JWT remembers, for a bounded time, the principal of each token that
// verified: a later request with the byte-identical token skips the work.
//
// Only successful verifications are remembered, and never beyond the
// token's exp, so a cached token is refused from the moment an uncached
// one would be (up to the leeway, which an uncached check grants and the
// cache does not). What the cache does change: a key removed from the JWKS
// (or the configuration) keeps admitting the tokens it signed that were
// seen in the last TokenCache. With a JWKS, a fetch that stores a key set
// different from the one before clears the cache, so a key removed there
// is revoked as soon as resourced fetches the set, as without a cache;
// keys removed from the configuration take a restart anyway.
//
// Cached principals are shared between requests: callers must not modify
// a Principal's Scopes.

// DefaultTokenCache is how long a verified token is remembered by default.
const DefaultTokenCache = time.Minute

// maxTokenCache is the longest TokenCache accepted.
const maxTokenCache = 10 * time.Minute

// tokenCacheEntries bounds the number of tokens remembered (each entry
// holds the token and its principal, a few hundred bytes).
const tokenCacheEntries = 10000

type cachedToken struct {
	p     Principal
	until time.Time
}

// tokenCache maps tokens to principals. The zero value is not usable: see
// newTokenCache.
type tokenCache struct {
	ttl time.Duration
	max int

	mu  sync.RWMutex
	m   map[string]cachedToken
	gen uint64 // incremented by clear
}

func newTokenCache(ttl time.Duration, max int) *tokenCache {
	return &tokenCache{ttl: ttl, max: max, m: make(map[string]cachedToken)}
}

// get returns the principal remembered for token, if any is still valid at
// now.
func (c *tokenCache) get(token string, now time.Time) (Principal, bool) {
	c.mu.RLock()
	e, ok := c.m[token]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return Principal{}, false
	}
	return e.p, true
}

// generation returns a number that changes with every clear. A verifier
// takes it before it looks up the key, and passes it to put.
func (c *tokenCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put remembers p for token, verified at now, until exp or now + the
// cache's ttl, whichever is first, unless the cache was cleared since gen
// was taken (the key that verified the token may be gone). When the cache
// is full it first drops every entry that is no longer valid, and if that
// frees nothing, all of them: the next requests verify their tokens again.
func (c *tokenCache) put(token string, p Principal, now, exp time.Time, gen uint64) {
	until := now.Add(c.ttl)
	if exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.m) >= c.max {
		for t, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, t)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[token] = cachedToken{p: p, until: until}
}

// clear forgets every token.
func (c *tokenCache) clear() {
	c.mu.Lock()
	clear(c.m)
	c.gen++
	c.mu.Unlock()
}

// len returns the number of entries (for tests).
func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
