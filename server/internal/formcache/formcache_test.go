package formcache

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func key(i int) Key { return Key{SHA256: fmt.Sprintf("%064d", i), MIMEType: "text/plain"} }

// member is a fill of n bytes of b.
func member(n int, b byte) func() ([]byte, error) {
	return func() ([]byte, error) { return bytes.Repeat([]byte{b}, n), nil }
}

// fillRelease fills k and releases the hold at once.
func fillRelease(t *testing.T, c *Cache, k Key, n int, b byte) {
	t.Helper()
	e := c.Fill(k, int64(n), member(n, b))
	if e == nil {
		t.Fatalf("fill of %v refused", k)
	}
	e.Release()
}

func checkBound(t *testing.T, c *Cache) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var sum int64
	for _, e := range c.byKey {
		sum += e.size
	}
	if c.used != sum || c.used > c.max || c.queue.Len() != len(c.byKey) {
		t.Fatalf("used %d, entries add up to %d, max %d, queue %d, map %d", c.used, sum, c.max, c.queue.Len(), len(c.byKey))
	}
}

func TestEvictsBySizeNeverPastTheBound(t *testing.T) {
	c := New(8<<10, nil) // entries up to 1 KiB
	for i := range 100 {
		fillRelease(t, c, key(i), 500, 'a')
		checkBound(t, c)
	}
	st := c.Stats()
	if st.Entries == 0 || st.Entries >= 100 || st.Evictions != int64(100-st.Entries) || st.Misses != 100 {
		t.Fatalf("stats %+v", st)
	}
	if e := c.Get(key(99)); e == nil || len(e.Member) != 500 {
		t.Fatal("the newest entry is gone")
	} else {
		e.Release()
	}
	if c.Get(key(0)) != nil {
		t.Fatal("the oldest entry was kept past the bound")
	}
}

func TestEvictionSparesWhatIsRead(t *testing.T) {
	c := New(8<<10, nil)
	for i := range 10 {
		fillRelease(t, c, key(i), 500, 'a')
	}
	// 0 is the oldest; a read marks it visited, so the next evictions
	// take 1, 2, … instead.
	e := c.Get(key(0))
	if e == nil {
		t.Skip("entry 0 already evicted: more than 10 fit")
	}
	e.Release()
	for i := 10; i < 14; i++ {
		fillRelease(t, c, key(i), 500, 'a')
	}
	if e := c.Get(key(0)); e == nil {
		t.Fatal("the entry that was read was evicted before the unread ones")
	} else {
		e.Release()
	}
	checkBound(t, c)
}

func TestHeldEntriesAreNotEvicted(t *testing.T) {
	c := New(8<<10, nil)
	var held []*Entry
	for i := 0; ; i++ {
		e := c.Fill(key(i), 500, member(500, 'h'))
		if e == nil {
			break // full of held entries: refused, not over the bound
		}
		held = append(held, e)
		checkBound(t, c)
	}
	if len(held) == 0 || c.Stats().Refused != 1 || c.Stats().Evictions != 0 {
		t.Fatalf("held %d, stats %+v", len(held), c.Stats())
	}
	for i, e := range held {
		if !bytes.Equal(e.Member, bytes.Repeat([]byte{'h'}, 500)) {
			t.Fatalf("held entry %d changed", i)
		}
		e.Release()
	}
	fillRelease(t, c, key(1000), 500, 'n') // room again once released
	checkBound(t, c)
}

func TestEntryLimitAndBadFills(t *testing.T) {
	c := New(8<<10, nil)
	if c.Fill(key(1), 1<<10, member(1<<10, 'x')) != nil {
		t.Fatal("an entry over an eighth of the cache was kept")
	}
	if c.Fill(key(2), 10, member(11, 'x')) != nil {
		t.Fatal("a member over its bound was kept")
	}
	if c.Fill(key(3), 10, func() ([]byte, error) { return nil, errors.New("damaged") }) != nil {
		t.Fatal("a failed fill was kept")
	}
	func() {
		defer func() { recover() }()
		c.Fill(key(4), 10, func() ([]byte, error) { panic("boom") })
	}()
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("failed fills left %+v", st)
	}
	// A key that failed fills again.
	fillRelease(t, c, key(3), 10, 'y')
	fillRelease(t, c, key(4), 10, 'z')
	checkBound(t, c)
}

func TestZeroIsOff(t *testing.T) {
	for _, max := range []int64{0, -1} {
		c := New(max, nil)
		if c != nil {
			t.Fatalf("New(%d) is a cache", max)
		}
		if c.Fill(key(1), 1, member(1, 'x')) != nil || c.Get(key(1)) != nil || c.Stats() != (Stats{}) {
			t.Fatal("a nil cache cached")
		}
	}
}

func TestKeyIsShaAndType(t *testing.T) {
	c := New(1<<20, nil)
	fillRelease(t, c, Key{"aa", "text/plain"}, 3, 't')
	if c.Get(Key{"aa", "application/octet-stream"}) != nil || c.Get(Key{"ab", "text/plain"}) != nil {
		t.Fatal("a member was served for another type or digest")
	}
}

func TestIdleEntriesAreDropped(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	c := New(1<<20, clock)
	fillRelease(t, c, key(1), 10, 'r') // read every few minutes
	fillRelease(t, c, key(2), 10, 'i') // never read again
	for range 6 {
		now.Add(int64(3 * time.Minute))
		if e := c.Get(key(1)); e == nil {
			t.Fatal("an entry read every 3 minutes was dropped")
		} else {
			e.Release()
		}
	}
	if e := c.Get(key(2)); e != nil {
		t.Fatal("an entry idle for 18 minutes is still there")
	}
	checkBound(t, c)
}

// TestConcurrentFillsOnce: many readers of a few keys at once fill each
// key once per residence, all see the same bytes, and the bound holds.
func TestConcurrentFillsOnce(t *testing.T) {
	c := New(64<<10, nil)
	var fills [8]atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			<-start
			for range 2000 {
				i := r.IntN(len(fills))
				k := key(i)
				e := c.Get(k)
				if e == nil {
					e = c.Fill(k, 4<<10, func() ([]byte, error) {
						fills[i].Add(1)
						time.Sleep(50 * time.Microsecond)
						return bytes.Repeat([]byte{byte('a' + i)}, 4<<10), nil
					})
				}
				if e == nil {
					t.Error("refused with room for every key")
					return
				}
				if len(e.Member) != 4<<10 || e.Member[0] != byte('a'+i) || e.Member[len(e.Member)-1] != byte('a'+i) {
					t.Errorf("key %d served other bytes", i)
				}
				e.Release()
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range fills {
		if n := fills[i].Load(); n != 1 {
			t.Errorf("key %d filled %d times, want once (8 × 4 KiB fit)", i, n)
		}
	}
	checkBound(t, c)
}

// TestConcurrentChurn: more keys than fit, readers holding entries while
// others fill: the bound is never exceeded and no reader sees another
// key's bytes.
func TestConcurrentChurn(t *testing.T) {
	c := New(32<<10, nil)
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Add(1)
	go func() { // watches the bound while the others run
		defer wg.Done()
		for !stop.Load() {
			if st := c.Stats(); st.Bytes > 32<<10 {
				t.Errorf("%d bytes held, bound %d", st.Bytes, 32<<10)
				return
			}
			time.Sleep(10 * time.Microsecond)
		}
	}()
	var readers sync.WaitGroup
	for g := range 16 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for range 3000 {
				i := r.IntN(64)
				n := 200 + i*40
				k := key(i)
				e := c.Get(k)
				if e == nil {
					e = c.Fill(k, int64(n), member(n, byte(i)))
				}
				if e == nil {
					continue // no room: every entry held
				}
				if len(e.Member) != n || e.Member[n-1] != byte(i) {
					t.Errorf("key %d served %d bytes of %d", i, len(e.Member), e.Member[0])
				}
				e.Release()
			}
		}()
	}
	readers.Wait()
	stop.Store(true)
	wg.Wait()
	checkBound(t, c)
	if st := c.Stats(); st.Evictions == 0 || st.Hits == 0 {
		t.Fatalf("no churn: %+v", st)
	}
}
