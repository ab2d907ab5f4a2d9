package broker

import (
	"testing"
	"time"
)

// A full cache evicts as Kafka's FetchSessionCacheShard.tryEvict does: the
// least recently used session if unused for longer than
// min.incremental.fetch.session.eviction.ms (2 minutes), otherwise the
// least valuable evictable one (a consumer's before a follower's, then the
// fewest partitions) if the new session is worth more; a follower's
// session and one younger than 2 minutes at its last use are evictable only
// by a follower's. Otherwise no session is created.
func TestFetchSessionEviction(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := start
	c := newFetchSessionCache(2)
	c.now = func() time.Time { return now }
	at := func(d time.Duration) { now = start.Add(d) }

	a := c.create(false, false, 3)
	b := c.create(false, false, 1)
	if a == nil || b == nil {
		t.Fatal("sessions not created with free slots")
	}
	at(time.Second)
	if s := c.create(false, false, 5); s != nil {
		t.Fatal("a consumer's session evicted one younger than the eviction age")
	}
	f := c.create(false, true, 1)
	if f == nil || c.get(b.id) != nil || c.get(a.id) == nil {
		t.Fatal("a follower's session did not evict the consumer's with the fewest partitions")
	}
	at(2 * time.Second)
	g := c.create(false, true, 1)
	if g == nil || c.get(a.id) != nil {
		t.Fatal("a follower's session did not evict a consumer's")
	}
	at(3 * time.Second)
	if s := c.create(false, true, 1); s != nil {
		t.Fatal("a follower's session evicted another follower's no larger and younger than the eviction age")
	}
	at(200 * time.Second)
	c.get(f.id) // f used: older than the eviction age since created
	h := c.create(false, false, 5)
	if h == nil || c.get(g.id) != nil || c.get(f.id) == nil {
		t.Fatal("the session unused for longer than the eviction age was not evicted first")
	}
	at(201 * time.Second)
	if s := c.create(false, false, 9); s != nil {
		t.Fatal("a consumer's session evicted a follower's")
	}
}
