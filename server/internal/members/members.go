package members

import (
	"container/list"
	"sync"
)

// Package members is the cache of JSON content members: Cache keeps the JSON content members ("text":"…" or "blob":"…")
// of bodies read from a backend that stores no encoded form (s3store), so
// that a body read again is not escaped again. An entry is keyed by what
// alone decides the member, the body's SHA-256 and whether its media type
// is textual (jsonwire.TextType; the body's UTF-8 validity, the rest of the
// rule, follows from the body), so it is never stale: a replaced object has another digest, and two
// objects with one body share one entry. Least recently used entries go
// first once the members exceed max bytes.
type Cache struct {
	max int64

	mu    sync.Mutex
	size  int64
	order *list.List // of *memberEntry, most recently used first
	byKey map[memberKey]*list.Element
}

type memberKey struct {
	sha256   string
	textType bool
}

type memberEntry struct {
	key    memberKey
	member []byte
}

// maxMemberShare bounds one member to this fraction of the cache, so that
// one large body cannot empty it.
const maxMemberShare = 8

// newMemberCache returns a cache of max bytes; max <= 0 gives nil, which
// caches nothing.
func New(max int64) *Cache {
	if max <= 0 {
		return nil
	}
	return &Cache{max: max, order: list.New(), byKey: map[memberKey]*list.Element{}}
}

// fits reports whether a member of about n bytes may be cached.
func (c *Cache) Fits(n int64) bool { return c != nil && n <= c.max/maxMemberShare }

// get returns the cached member, or nil. The caller must not modify it.
func (c *Cache) Get(sha256 string, text bool) []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[memberKey{sha256, text}]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*memberEntry).member
}

// put caches member, which the cache owns from now on.
func (c *Cache) Put(sha256 string, text bool, member []byte) {
	if !c.Fits(int64(len(member))) {
		return
	}
	k := memberKey{sha256, text}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&memberEntry{key: k, member: member})
	c.size += int64(len(member))
	for c.size > c.max {
		last := c.order.Back()
		ent := last.Value.(*memberEntry)
		c.order.Remove(last)
		delete(c.byKey, ent.key)
		c.size -= int64(len(ent.member))
	}
}

// Len is the number of members held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}
