package members

import (
	"bytes"
	"fmt"
	"testing"
)

func TestMemberCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := New(800)
	m := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100) }
	for i := range 8 {
		c.Put(fmt.Sprint(i), true, m(byte('a'+i)))
	}
	if c.Get("0", true) == nil { // 0 becomes the most recently used
		t.Fatal("entry 0 evicted before the cache was full")
	}
	c.Put("8", true, m('z')) // evicts 1, the least recently used
	if c.Get("1", true) != nil || c.Get("0", true) == nil || c.Get("8", true) == nil {
		t.Fatal("the wrong entry was evicted")
	}
	if c.Get("0", false) != nil {
		t.Fatal("a text member was served as a blob")
	}
	c.Put("big", true, make([]byte, 101)) // over max/8: not cached
	if c.Get("big", true) != nil || c.size > c.max {
		t.Fatalf("a member over the share was cached (size %d of %d)", c.size, c.max)
	}
	var nilCache *Cache
	nilCache.Put("x", true, m('x'))
	if nilCache.Get("x", true) != nil || nilCache.Fits(1) {
		t.Fatal("a nil cache cached")
	}
}
