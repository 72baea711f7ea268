package s3store

import (
	"container/list"
	"sync"
)

// The read cache keeps the objects this Store read last, with their ETags,
// up to a byte budget (Options.ReadCache). A Get of a cached object still
// asks S3, with If-None-Match: the ETag: a 304 answers from the cache
// without sending the body again, anything else (a new body, a delete, an
// error) is handled as without a cache and updates it. So a cached object
// is never served after another instance replaced or deleted it, and the
// cache saves the transfer, the body's checksums and its buffer, not the
// round trip. Every write stores a new write id in the object's header, so
// no two writes share an ETag, even with equal bodies.
//
// It is an LRU by bytes, written here: hashicorp/golang-lru bounds the
// number of entries, not their size, and entries range from bytes to
// megabytes.

// cached is one object as a GET returned it. Its fields are never
// modified after it enters the cache: readers share it.
type cached struct {
	key  string // object key
	etag string
	rec  record
	body []byte
}

func (c *cached) size() int64 { return int64(len(c.body)) + int64(len(c.key)) + 256 }

type readCache struct {
	max      int64 // budget in bytes
	maxEntry int64 // larger objects are not cached

	mu   sync.Mutex
	used int64
	ll   *list.List // front: most recently used; values *cached
	m    map[string]*list.Element
}

// newReadCache returns a cache of max bytes, or nil when max is not
// positive. An object larger than an eighth of it is not cached.
func newReadCache(max int64) *readCache {
	if max <= 0 {
		return nil
	}
	return &readCache{max: max, maxEntry: max / 8, ll: list.New(), m: make(map[string]*list.Element)}
}

// get returns the cached object at key, or nil.
func (c *readCache) get(key string) *cached {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cached)
}

// put caches o (replacing what was cached at its key), evicting the least
// recently used objects beyond the budget. Objects over the entry bound
// are not cached, and remove what was.
func (c *readCache) put(o *cached) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(o.key)
	if o.etag == "" || o.size() > c.maxEntry {
		return
	}
	c.m[o.key] = c.ll.PushFront(o)
	c.used += o.size()
	for c.used > c.max {
		c.removeLocked(c.ll.Back().Value.(*cached).key)
	}
}

// remove forgets key.
func (c *readCache) remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
}

func (c *readCache) removeLocked(key string) {
	if e, ok := c.m[key]; ok {
		c.used -= e.Value.(*cached).size()
		c.ll.Remove(e)
		delete(c.m, key)
	}
}

// stats returns the number of cached objects and their accounted bytes.
func (c *readCache) stats() (n int, bytes int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.used
}
