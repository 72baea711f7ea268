package mount

import (
	"container/list"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Cache keeps recent resources/read answers in memory while their ttlMs
// lasts, least recently used first out when MaxBytes is reached. Answers
// with ttlMs 0 (resourced's default for reports) are never stored. Private
// answers are keyed by the hash of the token that read them and the URI,
// so one token's private body is never served for another token; public
// ones by the URI alone. It is safe for concurrent use.
type Cache struct {
	maxBytes int64

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *entry, most recent at the front
	bytes   int64
	stats   CacheStats
}

// CacheStats count what a Cache did.
type CacheStats struct {
	Hits, Misses, Stores, Evictions int64
	Entries                         int
	Bytes                           int64
}

type entry struct {
	key     string
	res     *mcp.ReadResourceResult
	size    int64
	expires time.Time
}

// NewCache returns a cache holding at most maxBytes of bodies; one body
// larger than a quarter of that is not cached. maxBytes <= 0 means 64 MiB.
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	return &Cache{maxBytes: maxBytes, entries: map[string]*list.Element{}}
}

// Stats returns the counters so far.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes = len(c.entries), c.bytes
	return s
}

func privateKey(tokenKey, uri string) string { return "p\x00" + tokenKey + "\x00" + uri }
func publicKey(uri string) string            { return "s\x00" + uri }

// get returns a fresh copy of the cached answer with the remaining ttlMs.
func (c *Cache) get(tokenKey, uri string, now time.Time) (*mcp.ReadResourceResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range []string{privateKey(tokenKey, uri), publicKey(uri)} {
		el, ok := c.entries[k]
		if !ok {
			continue
		}
		e := el.Value.(*entry)
		left := e.expires.Sub(now)
		if left < time.Millisecond {
			c.remove(el)
			continue
		}
		c.lru.MoveToFront(el)
		c.stats.Hits++
		out := passThrough(e.res)
		out.TTLMs = int(left / time.Millisecond)
		return out, true
	}
	c.stats.Misses++
	return nil, false
}

// put stores res if it may be cached and fits.
func (c *Cache) put(tokenKey, uri string, res *mcp.ReadResourceResult, now time.Time) {
	if res.TTLMs <= 0 {
		return
	}
	var size int64 = int64(len(uri)) + 256
	for _, ct := range res.Contents {
		size += int64(len(ct.Text) + len(ct.Blob) + len(ct.URI) + len(ct.MIMEType))
	}
	if size > c.maxBytes/4 {
		return
	}
	k := privateKey(tokenKey, uri)
	if res.CacheScope == "public" {
		k = publicKey(uri)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.remove(el)
	}
	e := &entry{key: k, res: passThrough(res), size: size, expires: now.Add(time.Duration(res.TTLMs) * time.Millisecond)}
	c.entries[k] = c.lru.PushFront(e)
	c.bytes += size
	c.stats.Stores++
	for c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
		c.stats.Evictions++
	}
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
}
