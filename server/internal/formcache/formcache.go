// Package formcache is the one cache of read responses' content members
// ("text":"…" or "blob":"…", jsonwire.AppendMember), for every backend.
//
// An entry is keyed by what alone decides the member's bytes: the body's
// SHA-256 and its media type (whether a body is served as text follows
// from the type and the body). It is content-addressed, so it is never
// stale (a replaced object has another digest) and never anyone's in
// particular: who may read an object is decided on its metadata before
// the cache is asked, and two objects with one body and type share one
// member. A member is verified once, when it is filled (the stored form's
// checksum, or a body the backend checked against its digest).
//
// The cache is bounded in bytes: the entries held, and the fills under
// way, never exceed its maximum. An entry being written to a client is
// held (Entry.Release) and is not evicted meanwhile, so a member in use
// is always counted; when no room can be made (every entry held), a fill
// is refused and the read is served without the cache. Eviction is SIEVE
// (a FIFO queue with a visited bit and a moving hand: a hit only sets a
// bit, under a shared lock); an entry not read for about Idle is dropped
// too. docs/decisions.md says why this is not a library.
package formcache

import (
	"container/list"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Key names a member: the body's lower-case hex SHA-256 and media type.
type Key struct{ SHA256, MIMEType string }

// Entry is a cached member, held by its reader until Release.
type Entry struct {
	// Member is the content member; shared, never modified.
	Member []byte

	c    *Cache
	key  Key
	size int64        // bytes counted against the cache
	refs atomic.Int32 // holders: readers writing it, the filler, waiters
	bits atomic.Uint32
	elem *list.Element // in Cache.queue; nil once removed (under mu)
	// fill is closed when the entry's fill ends; nil once it has (under mu).
	fill   chan struct{}
	failed bool // the fill failed; set before fill is closed
}

const (
	visited = 1 << iota // SIEVE: read since the hand last passed it
	seen                // read since the last idle trim
)

// entryOverhead is what an entry costs besides its member and key.
const entryOverhead = 160

// Release ends a hold that Get or Fill gave.
func (e *Entry) Release() { e.refs.Add(-1) }

// Cache is the member cache; a nil *Cache caches nothing.
type Cache struct {
	max, maxEntry int64
	idle          time.Duration
	now           func() time.Time

	mu       sync.RWMutex
	used     int64          // bytes of the entries in byKey, fills included
	queue    *list.List     // of *Entry, newest first
	hand     *list.Element  // SIEVE's hand; nil: start at the oldest
	byKey    map[Key]*Entry //
	nextTrim atomic.Int64   // unix nanoseconds of the next idle trim

	hits, misses, evictions, refused atomic.Int64
}

// MaxEntryShare bounds one entry to this fraction of the cache, so that
// one large body cannot flush everything else.
const MaxEntryShare = 8

// Idle is how long an entry nobody reads stays, at most twice over.
const Idle = 10 * time.Minute

// New returns a cache of max bytes; max <= 0 gives nil, which caches
// nothing. now is the clock of the idle trim (nil: time.Now).
func New(max int64, now func() time.Time) *Cache {
	if max <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	c := &Cache{max: max, maxEntry: max / MaxEntryShare, idle: Idle, now: now, queue: list.New(), byKey: map[Key]*Entry{}}
	c.nextTrim.Store(now().Add(Idle / 2).UnixNano())
	return c
}

// Get returns the entry of k, held, or nil (a miss, or a fill under way).
func (c *Cache) Get(k Key) *Entry {
	if c == nil {
		return nil
	}
	c.maybeTrim()
	c.mu.RLock()
	e := c.byKey[k]
	if e == nil || e.fill != nil {
		c.mu.RUnlock()
		return nil
	}
	e.refs.Add(1)
	c.mu.RUnlock()
	if e.bits.Load() != visited|seen {
		e.bits.Or(visited | seen)
	}
	c.hits.Add(1)
	return e
}

// ErrTooLarge is a fill whose member came out larger than it said.
var ErrTooLarge = errors.New("formcache: member larger than its bound")

// Fill returns the entry of k, held: the cached one, or the member fill
// makes, at most n bytes. One fill of a key runs at a time: a caller that
// finds one under way waits for it (fill must not block on anything but
// the CPU). It returns nil when the cache is off, n is over the entry
// limit, no room can be made, or fill fails; the caller then serves the
// read without the cache.
func (c *Cache) Fill(k Key, n int64, fill func() ([]byte, error)) *Entry {
	if c == nil {
		return nil
	}
	size := n + int64(len(k.SHA256)+len(k.MIMEType)) + entryOverhead
	if size > c.maxEntry {
		return nil
	}
	c.mu.Lock()
	if e := c.byKey[k]; e != nil {
		e.refs.Add(1)
		done := e.fill
		c.mu.Unlock()
		if done != nil {
			<-done
			if e.failed {
				e.Release()
				return nil
			}
		}
		e.bits.Or(visited | seen)
		c.hits.Add(1)
		return e
	}
	if !c.makeRoom(size) {
		c.mu.Unlock()
		c.refused.Add(1)
		return nil
	}
	e := &Entry{c: c, key: k, size: size, fill: make(chan struct{})}
	e.refs.Store(1)
	e.bits.Store(seen)
	e.elem = c.queue.PushFront(e)
	c.byKey[k] = e
	c.used += size
	c.mu.Unlock()
	c.misses.Add(1)

	var member []byte
	err := errors.New("formcache: fill panicked")
	defer func() { // also when fill panics: waiters must not wait forever
		c.mu.Lock()
		if err == nil && int64(len(member)) > n {
			err = ErrTooLarge
		}
		if err != nil {
			e.failed = true
			c.remove(e)
		} else {
			e.Member = member
			real := size - n + int64(len(member))
			c.used += real - size
			e.size = real
		}
		close(e.fill)
		e.fill = nil
		c.mu.Unlock()
	}()
	member, err = fill()
	if err != nil {
		e.Release()
		return nil
	}
	if int64(len(member)) > n {
		e.Release()
		return nil
	}
	return e
}

// makeRoom evicts unheld entries, SIEVE's victims first, until size more
// bytes fit; false when they cannot. Under mu.
func (c *Cache) makeRoom(size int64) bool {
	for c.used+size > c.max {
		v := c.victim()
		if v == nil {
			return false
		}
		c.remove(v)
		c.evictions.Add(1)
	}
	return true
}

// victim is SIEVE's next entry to evict: from the hand toward the newest,
// clearing visited bits on the way, skipping held entries; nil when two
// rounds find none. Under mu.
func (c *Cache) victim() *Entry {
	el := c.hand
	for range 2*c.queue.Len() + 1 {
		if el == nil {
			if el = c.queue.Back(); el == nil {
				return nil
			}
		}
		e := el.Value.(*Entry)
		switch {
		case e.refs.Load() > 0:
		case e.bits.Load()&visited != 0:
			e.bits.And(^uint32(visited))
		default:
			c.hand = el.Prev()
			return e
		}
		el = el.Prev()
	}
	c.hand = el
	return nil
}

// remove takes e out of the cache. Under mu.
func (c *Cache) remove(e *Entry) {
	if e.elem == nil {
		return
	}
	if c.hand == e.elem {
		c.hand = e.elem.Prev()
	}
	c.queue.Remove(e.elem)
	e.elem = nil
	delete(c.byKey, e.key)
	c.used -= e.size
}

// maybeTrim drops the unheld entries not read since the last trim, once
// every Idle/2.
func (c *Cache) maybeTrim() {
	now := c.now().UnixNano()
	next := c.nextTrim.Load()
	if now < next || !c.nextTrim.CompareAndSwap(next, now+int64(c.idle/2)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.queue.Front(); el != nil; {
		e, next := el.Value.(*Entry), el.Next()
		if e.bits.And(^uint32(seen))&seen == 0 && e.refs.Load() == 0 && e.fill == nil {
			c.remove(e)
			c.evictions.Add(1)
		}
		el = next
	}
}

// Stats are the cache's counters and size.
type Stats struct {
	Hits, Misses, Evictions, Refused int64
	Bytes                            int64
	Entries                          int
}

// Stats returns the counters; the zero Stats for a nil cache.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Refused: c.refused.Load(), Bytes: c.used, Entries: len(c.byKey)}
}
